package cpu

import "math"

// This file holds the package's transcendental arithmetic and the SIMD
// lane orders that go with it, mirroring the reference executor, which
// reproduces llama.cpp's x86 CPU backend built with AVX-512: ggml_v_expf on
// 16-wide chunks, libm expf on the scalar tails.

// lanes is the AVX-512 float32 vector width the reference's orders assume.
const lanes = 16

// expfVec is ggml_v_expf (AVX-512 variant): a degree-5 polynomial on the
// reduced argument scaled by 2^n (within 1.5 ulp of expf, not identical).
func expfVec(x float32) float32 {
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
	if math.Abs(float64(n)) > 192 { // the kernel's masked blend
		if n <= 0 {
			return 0
		}
		return float32(math.Inf(1))
	}
	b := fma32(-n, 0x1.7f7d1cp-20, fma32(-n, 0x1.62e4p-1, x))
	u := b * b
	j := fma32(fma32(fma32(c5, b, c4), u, fma32(c3, b, c2)), u, fma32(c1, b, 1))
	// scalef(j, n): j·2^n rounded once.
	return float32(float64(j) * math.Ldexp(1, int(n)))
}

// expfScalar is libm expf (exp rounded to float32), used on scalar tails.
func expfScalar(x float32) float32 {
	return float32(math.Exp(float64(x)))
}

// siluVec is ggml_v_silu: x / (1 + ggml_v_expf(0 - x)).
func siluVec(x float32) float32 { return x / (1 + expfVec(0-x)) }

// siluScalar is ggml_silu_f32: x / (1 + expf(-x)).
func siluScalar(x float32) float32 { return x / (1 + expfScalar(-x)) }

// vecEnd is the end of the 16-wide chunks of a row of cols elements: columns
// before it take the vector formulas, the ones after the scalar tail.
func vecEnd(cols int) int { return cols - cols%lanes }

// softmaxRow is ggml_soft_max on one row without a mask: y = x·scale, the max
// subtracted, ggml_v_expf on 16-wide chunks (each chunk summed in float32
// by reduce16, then added to a float64 sum), libm expf on the tail (added
// to the sum one by one), then a multiply by the float32-rounded 1/sum.
// y may alias x.
func softmaxRow(x, y []float32, scale float32) {
	y = y[:len(x)]
	maxv := float32(math.Inf(-1))
	for i, v := range x {
		y[i] = v * scale
		if y[i] > maxv {
			maxv = y[i]
		}
	}
	var sum float64
	var chunk [lanes]float32
	i := 0
	for ; i+lanes <= len(y); i += lanes {
		for l := range chunk {
			y[i+l] = expfVec(y[i+l] - maxv)
			chunk[l] = y[i+l]
		}
		sum += float64(reduce16(&chunk))
	}
	for ; i < len(y); i++ {
		y[i] = expfScalar(y[i] - maxv)
		sum += float64(y[i])
	}
	inv := float32(1 / sum)
	for i := range y {
		y[i] *= inv
	}
}

// softmaxMasked is the attention softmax (ggml_soft_max with the causal
// mask) in place on x[:n] of a row whose entries from n on are masked:
// x·scale, the max, ggml_v_expf on 16-wide chunks padded with the masked
// entries (exact zeros), each chunk summed by reduce16 into a float64 sum,
// then a multiply by the float32-rounded 1/sum. It writes the zeros of the
// padding too, so x must hold roundUp(n, 16) values; padding chunks beyond
// that only add zeros, so the result equals the reference's for any padded
// cache length that is a multiple of 16.
func softmaxMasked(x []float32, n int, scale float32) {
	n16 := (n + lanes - 1) &^ (lanes - 1)
	x = x[:n16]
	maxv := float32(math.Inf(-1))
	for i := range x[:n] {
		x[i] *= scale
		maxv = max(maxv, x[i])
	}
	var sum float64
	var chunk [lanes]float32
	for i := 0; i < n16; i += lanes {
		for l := range chunk {
			v := float32(0)
			if i+l < n {
				v = expfVec(x[i+l] - maxv)
			}
			x[i+l] = v
			chunk[l] = v
		}
		sum += float64(reduce16(&chunk))
	}
	inv := float32(1 / sum)
	for i := range x {
		x[i] *= inv
	}
}
