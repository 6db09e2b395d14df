package cpu

import "math"

// The accumulation orders of ggml's AVX-512 float32 kernels, in scalar Go,
// as the reference executor reproduces them.

// fma32 is a float32 fused multiply-add, a·b+c rounded once. The float64
// FMA (one rounding, in hardware where there is one) is correct after
// conversion to float32 unless it lands exactly on a float32 rounding
// midpoint or in the float32 subnormal range; those rare cases take the
// exact path.
func fma32(a, b, c float32) float32 {
	r := math.FMA(float64(a), float64(b), float64(c))
	bits := math.Float64bits(r)
	if bits&(1<<29-1) != 1<<28 && bits&(0x7ff<<52) >= (1023-126)<<52 {
		return float32(r)
	}
	return fma32Exact(a, b, c)
}

// fma32Exact is fma32 without hardware: the product is exact in float64;
// the float64 sum is made round-to-odd from its exact TwoSum error, so its
// conversion to float32 rounds correctly.
func fma32Exact(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	q := float64(c)
	s := p + q
	bb := s - p
	e := (p - (s - bb)) + (q - bb)
	if e != 0 && math.Float64bits(s)&1 == 0 && !math.IsInf(s, 0) {
		s = math.Nextafter(s, math.Copysign(math.Inf(1), e))
	}
	return float32(s)
}

// reduce16 is _mm512_reduce_add_ps: the upper 8 lanes added to the lower 8,
// then 4, 2 and 1, each step in float32.
func reduce16(v *[lanes]float32) float32 {
	var a [8]float32
	for i := range a {
		a[i] = v[i] + v[i+8]
	}
	b0, b1, b2, b3 := a[0]+a[4], a[1]+a[5], a[2]+a[6], a[3]+a[7]
	c0, c1 := b0+b2, b1+b3
	return c0 + c1
}

// vecDotF32 is ggml_vec_dot_f32 (AVX-512): four 16-lane FMA accumulators
// over each 64-element step, combined as (acc0+acc2)+(acc1+acc3) and
// reduced by reduce16; leftover elements added in float32 in order.
func vecDotF32(x, y []float32) float32 {
	n := len(x)
	y = y[:n]
	np := n &^ (4*lanes - 1)
	var acc [4 * lanes]float32
	for i := 0; i < np; i += 4 * lanes {
		xs, ys := x[i:i+4*lanes], y[i:i+4*lanes]
		for k := range acc {
			acc[k] = fma32(xs[k], ys[k], acc[k])
		}
	}
	sum := finishVecDot(&acc)
	for i := np; i < n; i++ {
		sum += x[i] * y[i]
	}
	return sum
}

// finishVecDot combines vecDotF32's four accumulators and reduces them.
func finishVecDot(acc *[4 * lanes]float32) float32 {
	var s [lanes]float32
	for l := range s {
		s[l] = (acc[l] + acc[2*lanes+l]) + (acc[lanes+l] + acc[3*lanes+l])
	}
	return reduce16(&s)
}
