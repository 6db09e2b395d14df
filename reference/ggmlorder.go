package reference

// This file holds the few places where the reference executor mimics the
// SIMD arithmetic of llama.cpp's x86 CPU backend (ggml-cpu built with
// AVX-512) instead of the textbook formula. Each of them changes results by
// a few ulp only, but activation quantization is discontinuous: a value on a
// rounding boundary flips one int8 and attention carries the flip into every
// later position (≈0.1 in the logits). All of it is scalar, deterministic Go.

import "math"

// lanes is the AVX-512 float32 vector width (GGML_F32_EPR, tinyBLAS KN).
const lanes = 16

// fma32 is a float32 fused multiply-add, round(a·b+c) with one rounding, as
// _mm512_fmadd_ps computes it. a·b is exact in float64 (24+24 bits); the sum
// with c is formed exactly as s+e (TwoSum), s is made round-to-odd, and
// rounding a round-to-odd float64 to float32 is correct (53 ≥ 2·24+2).
func fma32(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	q := float64(c)
	s := p + q
	// TwoSum: e is the exact rounding error of p+q.
	bb := s - p
	e := (p - (s - bb)) + (q - bb)
	if e != 0 && math.Float64bits(s)&1 == 0 && !math.IsInf(s, 0) {
		s = math.Nextafter(s, math.Copysign(math.Inf(1), e))
	}
	return float32(s)
}

// reduce16 is _mm512_reduce_add_ps as GCC expands it: add the upper 8 lanes
// to the lower 8, then 4, 2 and 1, each step in float32.
func reduce16(v *[lanes]float32) float32 {
	var a [8]float32
	for i := range a {
		a[i] = v[i] + v[i+8]
	}
	b := [4]float32{a[0] + a[4], a[1] + a[5], a[2] + a[6], a[3] + a[7]}
	c := [2]float32{b[0] + b[2], b[1] + b[3]}
	return c[0] + c[1]
}

// expf is ggml_v_expf (ggml-cpu vec.h, the AVX-512F/DQ variant, "adapted
// from arm limited optimized routine"): a degree-5 polynomial on the reduced
// argument, scaled by 2^n with _mm512_scalef_ps. It is within 1.5 ulp of
// expf but not bit-identical to libm, and llama.cpp uses it for every
// 16-wide chunk of silu, swiglu and softmax.
func expf(x float32) float32 {
	const (
		r  = 0x1.8p23
		c1 = 0x1.ffffecp-1
		c2 = 0x1.fffdb6p-2
		c3 = 0x1.555e66p-3
		c4 = 0x1.573e2ep-5
		c5 = 0x1.0e4020p-7
	)
	z := fma32(x, 0x1.715476p+0, r)
	n := z - r
	if math.Abs(float64(n)) > 192 { // the masked blend of the kernel
		if n <= 0 {
			return 0
		}
		return float32(math.Inf(1))
	}
	b := fma32(-n, 0x1.7f7d1cp-20, fma32(-n, 0x1.62e4p-1, x))
	u := b * b
	j := fma32(fma32(fma32(c5, b, c4), u, fma32(c3, b, c2)), u, fma32(c1, b, 1))
	// scalef(j, n) = j·2^n, rounded once (to a subnormal if need be).
	return float32(float64(j) * math.Ldexp(1, int(n)))
}

// siluAt is ggml_vec_silu_f32 / the silu part of ggml_vec_swiglu_f32:
// 16-wide chunks use ggml_v_silu, x / (1 + ggml_v_expf(0 - x)); the tail
// (n mod 16 elements) uses the scalar ggml_silu_f32 with libm expf.
func siluAt(i, n int, x float32) float32 {
	if i < n-n%lanes {
		return x / (1 + expf(0-x))
	}
	return silu(x)
}

// vecDotF32 is ggml_vec_dot_f32 with AVX-512 (GGML_F32_STEP = 64,
// GGML_F32_EPR = 16): four 16-lane accumulators updated with FMA over each
// 64-element step, reduced as (acc0+acc2)+(acc1+acc3) then
// _mm512_reduce_add_ps; leftover elements are added in scalar float32. The
// attention scores k·q take this path (q is a permuted, non-contiguous view,
// so llamafile sgemm does not take the mat-mul).
func vecDotF32(x, y []float32) float32 {
	n := len(x)
	np := n &^ (4*lanes - 1)
	var acc [4][lanes]float32
	for i := 0; i < np; i += 4 * lanes {
		for j := 0; j < 4; j++ {
			for l := 0; l < lanes; l++ {
				k := i + j*lanes + l
				acc[j][l] = fma32(x[k], y[k], acc[j][l])
			}
		}
	}
	var s [lanes]float32
	for l := range s {
		s[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l])
	}
	sum := reduce16(&s)
	for i := np; i < n; i++ {
		sum += x[i] * y[i]
	}
	return sum
}

// sgemmDotF32 is one output of llamafile's tinyBLAS<16, __m512> F32 kernel
// (sgemm.cpp): one 16-lane accumulator updated with FMA (a·b + acc) for
// every 16 elements of k, then hsum = _mm512_reduce_add_ps. k must be a
// multiple of 16. The batched probability-weighted sum of v rows takes
// this path.
func sgemmDotF32(a, b []float32) float32 {
	var acc [lanes]float32
	for i := 0; i < len(a); i += lanes {
		for l := 0; l < lanes; l++ {
			acc[l] = fma32(a[i+l], b[i+l], acc[l])
		}
	}
	return reduce16(&acc)
}
