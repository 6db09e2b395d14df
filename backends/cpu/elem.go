package cpu

import "math"

// This file holds the only transcendental arithmetic of the package, so it
// can follow the reference executor's choice of exp in one place.

// expf is the exponential used by softmax, silu and swiglu: libm exp
// rounded to float32, as the reference executor computes it.
func expf(x float32) float32 {
	return float32(math.Exp(float64(x)))
}

// silu is ggml_silu_f32: x / (1 + expf(-x)).
func silu(x float32) float32 {
	return x / (1 + expf(-x))
}

// softmaxRow is ggml_soft_max on one row: y = x·scale, the max subtracted
// before expf, the sum in float64, then a multiply by the float32-rounded
// reciprocal of the sum. y may alias x.
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
	for i := range y {
		y[i] = expf(y[i] - maxv)
		sum += float64(y[i])
	}
	inv := float32(1 / sum)
	for i := range y {
		y[i] *= inv
	}
}
