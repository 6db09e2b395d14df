// Package ggmlf32 holds the float32 arithmetic of llama.cpp's x86 CPU
// backend (ggml-cpu built with AVX-512, plus the AVX2 dot kernels of the
// quantized formats) as scalar Go: fused multiply-adds, the lane orders of
// the SIMD accumulators and their horizontal reductions, and ggml's
// vectorized exp. Every executor (the reference, the compiled CPU backend,
// the quantized dot products) computes these through this one package, so
// they agree bit for bit; each function names the ggml code it mirrors.
//
// Everything is deterministic and independent of the host CPU and GOARCH:
// FMA32 is exact with or without a hardware FMA, and every product that
// ggml rounds before an add is converted explicitly (float32(x*y)), which
// forbids the compiler to fuse it (Go fuses x*y+z on some targets).
package ggmlf32

import "math"

// Lanes is the AVX-512 float32 vector width: GGML_F32_EPR, and the KN of
// llamafile's tinyBLAS<16, __m512>.
const Lanes = 16

// FMA32 returns a·b+c rounded once to float32, as _mm512_fmadd_ps and
// _mm256_fmadd_ps compute it for each lane. The float64 FMA of the
// operands is correct after conversion to float32 unless it lands exactly
// on a float32 rounding midpoint (double rounding) or below the float32
// normal range (where float32 keeps fewer bits); those rare cases take
// FMA32Exact.
func FMA32(a, b, c float32) float32 {
	if r, ok := FMA32Fast(a, b, c); ok {
		return r
	}
	return FMA32Exact(a, b, c)
}

// FMA32Fast is FMA32's fast path, small enough to inline into hot loops:
// the float32 rounding of the float64 FMA, and whether that is the
// correctly rounded a·b+c (not a float32 midpoint, not below 2^-126). When
// ok is false the caller must use FMA32Exact.
func FMA32Fast(a, b, c float32) (float32, bool) {
	r := math.FMA(float64(a), float64(b), float64(c))
	bits := math.Float64bits(r)
	return float32(r), bits&(1<<29-1) != 1<<28 && bits<<1 >= (1023-126)<<53
}

// FMA32Exact is FMA32 without math.FMA: the product of two float32 values
// is exact in float64, the float64 sum p+c is made round-to-odd from its
// exact TwoSum error, and a round-to-odd float64 (53 ≥ 2·24+2 bits)
// converts to a correctly rounded float32, subnormals included.
func FMA32Exact(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	q := float64(c)
	s := p + q
	// TwoSum: e is the exact error of s = p+q (NaN when s or p is infinite,
	// which leaves s as it is).
	bb := s - p
	e := (p - (s - bb)) + (q - bb)
	if e != 0 && !math.IsNaN(e) && math.Float64bits(s)&1 == 0 {
		s = math.Nextafter(s, math.Copysign(math.Inf(1), e))
	}
	return float32(s)
}

// Reduce16 is _mm512_reduce_add_ps as GCC expands it: the upper 8 lanes
// added to the lower 8, then 4, 2 and 1, each step in float32.
func Reduce16(v *[Lanes]float32) float32 {
	a0, a1, a2, a3 := v[0]+v[8], v[1]+v[9], v[2]+v[10], v[3]+v[11]
	a4, a5, a6, a7 := v[4]+v[12], v[5]+v[13], v[6]+v[14], v[7]+v[15]
	b0, b1, b2, b3 := a0+a4, a1+a5, a2+a6, a3+a7
	return (b0 + b2) + (b1 + b3)
}

// HSum8 is ggml's hsum_float_8 (ggml-cpu/arch/x86/quants.c) on an __m256:
// the upper 4 lanes added to the lower 4, then _mm_movehl_ps (lanes 2,3
// onto 0,1), then lane 1 onto lane 0, each step in float32.
func HSum8(v *[8]float32) float32 {
	a0, a1, a2, a3 := v[0]+v[4], v[1]+v[5], v[2]+v[6], v[3]+v[7]
	return (a0 + a2) + (a1 + a3)
}

// Acc8 is the __m256 float accumulator of ggml's AVX2 dot kernels for the
// quantized formats (ggml_vec_dot_q4_0_q8_0 and relatives, the k-quant
// dots): lane k is updated with _mm256_fmadd_ps once per block.
type Acc8 [8]float32

// MulAdd accumulates d·s[k] into lane k with one FMA per lane, as
// _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(s), acc).
func (a *Acc8) MulAdd(d float32, s *[8]int32) {
	for k := range a {
		r, ok := FMA32Fast(d, float32(s[k]), a[k])
		if !ok {
			r = FMA32Exact(d, float32(s[k]), a[k])
		}
		a[k] = r
	}
}

// Sum reduces the accumulator with HSum8.
func (a *Acc8) Sum() float32 { return HSum8((*[8]float32)(a)) }

// ExpF is ggml_v_expf (ggml-cpu vec.h, the __AVX512F__ && __AVX512DQ__
// variant, adapted from ARM's optimized routines) for one lane: the
// argument reduced by n = round(x·log2 e) in two FMA steps, a degree-5
// polynomial evaluated with FMAs, and _mm512_scalef_ps(j, n) = j·2^n rounded
// once (to a subnormal if need be). Lanes with |n| > 192 are replaced by
// 0 (n ≤ 0) or +Inf, as the kernel's masked blend does; NaN stays NaN. It
// is within 1.5 ulp of exp but not libm's expf, and llama.cpp uses it on
// every 16-wide chunk of silu, swiglu and soft_max.
func ExpF(x float32) float32 {
	const (
		shift = 0x1.8p23
		c1    = 0x1.ffffecp-1
		c2    = 0x1.fffdb6p-2
		c3    = 0x1.555e66p-3
		c4    = 0x1.573e2ep-5
		c5    = 0x1.0e4020p-7
	)
	z := FMA32(x, 0x1.715476p+0, shift)
	n := z - shift
	if n > 192 || n < -192 {
		if n <= 0 {
			return 0
		}
		return float32(math.Inf(1))
	}
	if n != n {
		return n
	}
	// _mm512_fnmadd_ps(n, c, x) = -(n·c) + x, an FMA of -n.
	b := FMA32(-n, 0x1.7f7d1cp-20, FMA32(-n, 0x1.62e4p-1, x))
	u := b * b
	j := FMA32(FMA32(FMA32(c5, b, c4), u, FMA32(c3, b, c2)), u, FMA32(c1, b, 1))
	// j·2^n is exact in float64 for |n| ≤ 192; the conversion rounds once.
	return float32(float64(j) * math.Ldexp(1, int(n)))
}

// ExpFLibm is the C library's expf, which ggml's scalar tails call: exp
// rounded to float32.
func ExpFLibm(x float32) float32 { return float32(math.Exp(float64(x))) }

// SiLUVec is ggml_v_silu: x / (1 + ggml_v_expf(0 - x)).
func SiLUVec(x float32) float32 { return x / (1 + ExpF(0-x)) }

// SiLUScalar is ggml_silu_f32: x / (1 + expf(-x)) with libm's expf.
func SiLUScalar(x float32) float32 { return x / (1 + ExpFLibm(-x)) }

// VecEnd is the end of the 16-wide chunks of a row of n elements in ggml's
// AVX-512 loops (n rounded down to a multiple of 16): elements before it
// take the vector formulas, the rest the scalar tail.
func VecEnd(n int) int { return n - n%Lanes }

// SiLUAt is element i of ggml_vec_silu_f32 (and the silu of
// ggml_vec_swiglu_f32) on a row of n elements: SiLUVec in the 16-wide
// chunks, SiLUScalar in the tail.
func SiLUAt(i, n int, x float32) float32 {
	if i < VecEnd(n) {
		return SiLUVec(x)
	}
	return SiLUScalar(x)
}

// VecDotF32 is ggml_vec_dot_f32 with AVX-512 (GGML_F32_STEP = 64): four
// 16-lane FMA accumulators over each 64-element step, combined and reduced
// by VecDotCombine, then the n mod 64 leftover products added in float32
// in order.
func VecDotF32(x, y []float32) float32 {
	n := len(x)
	y = y[:n]
	np := n &^ (4*Lanes - 1)
	var acc [4 * Lanes]float32
	for i := 0; i < np; i += 4 * Lanes {
		xs, ys := x[i:i+4*Lanes], y[i:i+4*Lanes]
		for k := range acc {
			r, ok := FMA32Fast(xs[k], ys[k], acc[k])
			if !ok {
				r = FMA32Exact(xs[k], ys[k], acc[k])
			}
			acc[k] = r
		}
	}
	sum := VecDotCombine(&acc)
	for i := np; i < n; i++ {
		sum += float32(x[i] * y[i])
	}
	return sum
}

// VecDotCombine finishes ggml_vec_dot_f32's vector part: the four
// accumulators (acc[16·j+l] is lane l of accumulator j) combined lane-wise
// as (acc0+acc2)+(acc1+acc3) (GGML_F32_VEC_REDUCE), then Reduce16.
func VecDotCombine(acc *[4 * Lanes]float32) float32 {
	var s [Lanes]float32
	for l := range s {
		s[l] = (acc[l] + acc[2*Lanes+l]) + (acc[Lanes+l] + acc[3*Lanes+l])
	}
	return Reduce16(&s)
}

// SgemmDotF32 is one output of llamafile's tinyBLAS<16, __m512> float32
// kernel (sgemm.cpp, gemm/gemm_bloc): one 16-lane accumulator updated with
// FMA (a·b + acc) for each 16 elements of k, then hsum =
// _mm512_reduce_add_ps. len(a) must be a multiple of 16.
func SgemmDotF32(a, b []float32) float32 {
	b = b[:len(a)]
	var acc [Lanes]float32
	for i := 0; i < len(a); i += Lanes {
		as, bs := a[i:i+Lanes], b[i:i+Lanes]
		for l := range acc {
			r, ok := FMA32Fast(as[l], bs[l], acc[l])
			if !ok {
				r = FMA32Exact(as[l], bs[l], acc[l])
			}
			acc[l] = r
		}
	}
	return Reduce16(&acc)
}

// SoftmaxMasked is ggml_compute_forward_soft_max_f32 on one row of
// attention scores whose entries from n on are masked with -Inf (the
// causal mask and llama.cpp's padding of the cache), in place: x·scale,
// the max, ggml_vec_soft_max_f32 with AVX-512 (ggml_v_expf on each 16-wide
// chunk, the chunk summed in float32 by _mm512_reduce_add_ps and added to a
// float64 sum), then a multiply by the float32-rounded 1/sum. The masked
// entries become exact zeros, as ggml_v_expf(-Inf) does; len(x) must be a
// multiple of 16 (ggml pads the cache so), and chunks of zeros only add
// zeros, so any padded length gives the same bits for x[:n].
func SoftmaxMasked(x []float32, n int, scale float32) {
	x = x[:len(x)&^(Lanes-1)]
	maxv := float32(math.Inf(-1))
	for i := range x[:n] {
		x[i] *= scale
		maxv = max(maxv, x[i])
	}
	var sum float64
	var chunk [Lanes]float32
	for i := 0; i < len(x); i += Lanes {
		for l := range chunk {
			v := float32(0)
			if i+l < n {
				v = ExpF(x[i+l] - maxv)
			}
			x[i+l] = v
			chunk[l] = v
		}
		sum += float64(Reduce16(&chunk))
	}
	inv := float32(1 / sum)
	for i := range x {
		x[i] *= inv
	}
}

// Softmax is ggml_soft_max on one row without a mask: y = x·scale, the max
// subtracted, ggml_v_expf on the 16-wide chunks (each chunk summed by
// _mm512_reduce_add_ps into a float64 sum), libm expf on the n mod 16 tail
// (added to the sum one by one), then a multiply by the float32-rounded
// 1/sum. y may alias x.
func Softmax(y, x []float32, scale float32) {
	y = y[:len(x)]
	maxv := float32(math.Inf(-1))
	for i, v := range x {
		y[i] = v * scale
		if y[i] > maxv {
			maxv = y[i]
		}
	}
	var sum float64
	var chunk [Lanes]float32
	ve := VecEnd(len(y))
	for i := 0; i < ve; i += Lanes {
		for l := range chunk {
			y[i+l] = ExpF(y[i+l] - maxv)
			chunk[l] = y[i+l]
		}
		sum += float64(Reduce16(&chunk))
	}
	for i := ve; i < len(y); i++ {
		y[i] = ExpFLibm(y[i] - maxv)
		sum += float64(y[i])
	}
	inv := float32(1 / sum)
	for i := range y {
		y[i] *= inv
	}
}
