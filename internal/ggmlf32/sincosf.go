package ggmlf32

import "math"

// SinCosF returns sinf(x) and cosf(x) as glibc's libm computes them on
// x86-64 with FMA (the __sincosf_fma variant that glibc's ifunc picks on
// CPUs with FMA and AVX2). ggml's RoPE calls cosf and sinf of a float32
// angle (rope_yarn in ggml-cpu/ops.cpp; GCC merges the pair into one
// sincosf call), and glibc's float sine and cosine are not correctly
// rounded: about 2% of the RoPE angles of a 64- or 128-wide head round
// differently from float32(math.Cos(float64(x))).
//
// Checked bit for bit against Debian 12's glibc 2.36 (libm.so.6, the
// libc llama.cpp and the shared fixtures were built and run with) for
// every float32 input. The algorithm (glibc's sysdeps/ieee754/flt-32
// sincosf, from Arm's optimized-routines) works in float64:
//
//   - |x| < 2^-12: sin = x, cos = 1.
//   - |x| < π/4: no reduction; r = x, quadrant n = 0.
//   - |x| < 120: n = round(x·2/π) taken from the float64 product
//     x·(2^24·2/π) truncated to int32, +2^23, >>24 (arithmetic); the
//     reduced r = x − n·π/2 in one FMA.
//   - otherwise: a Payne–Hanek reduction with 96 bits of 2/π chosen by
//     the exponent, in 64-bit integer arithmetic (reduceLarge).
//
// Then sin(r) and cos(r) come from two short even/odd polynomials in
// r² (sincosfPoly); the quadrant picks the sign of r, whether the
// cosine coefficients are negated, and whether the two results swap.
// Each result is rounded once from float64 to float32.
func SinCosF(x float32) (sin, cos float32) {
	xi := math.Float32bits(x)
	top := (xi >> 20) & 0x7ff // abstop12 of the float32 bits
	xd := float64(x)
	switch {
	case top < 0x3f4: // |x| < π/4
		if top <= 0x397 { // |x| < 2^-12
			return x, 1
		}
		return sincosfPoly(xd, xd*xd, &sincosfTab[0], 0)
	case top < 0x42f: // |x| < 120
		n := (int32(xd*sincosfHpiInv24) + 0x800000) >> 24
		r := math.FMA(-float64(n), sincosfHpi, xd)
		t := &sincosfTab[(n>>1)&1]
		return sincosfPoly(r*sincosfSign[n&3], r*r, t, n)
	case top < 0x7f8: // finite
		r, n := sincosfReduceLarge(xi)
		q := n + int32(xi>>31)
		t := &sincosfTab[(q>>1)&1]
		return sincosfPoly(r*sincosfSign[q&3], r*r, t, n)
	}
	nan := x - x
	return nan, nan
}

// sincosfCoef are the polynomial coefficients: cos(r) ≈ c0 + c1·r² +
// c2·r⁴ + c3·r⁶ + c4·r⁸ and sin(r) ≈ r + s1·r³ + s2·r⁵ + s3·r⁷ (table 1
// negates c0..c4, for the quadrants where the cosine result is negative).
type sincosfCoef struct {
	c0, c1, c2, c3, c4, s1, s2, s3 float64
}

var sincosfTab = [2]sincosfCoef{
	{1, -0x1.ffffffd0c621cp-2, 0x1.55553e1068f19p-5, -0x1.6c087e89a359dp-10, 0x1.99343027bf8c3p-16,
		-0x1.555545995a603p-3, 0x1.1107605230bc4p-7, -0x1.994eb3774cf24p-13},
	{-1, 0x1.ffffffd0c621cp-2, -0x1.55553e1068f19p-5, 0x1.6c087e89a359dp-10, -0x1.99343027bf8c3p-16,
		-0x1.555545995a603p-3, 0x1.1107605230bc4p-7, -0x1.994eb3774cf24p-13},
}

// sincosfSign is the sign applied to the reduced argument per quadrant.
var sincosfSign = [4]float64{1, -1, -1, 1}

const (
	sincosfHpiInv24 = 0x1.45f306dc9c883p+23 // 2/π · 2^24
	sincosfHpi      = 0x1.921fb54442d18p+0  // π/2
	sincosfPi63     = 0x1.921fb54442d18p-62 // 2π · 2^-64
)

// sincosfPoly evaluates both polynomials with the FMA contractions GCC
// makes in glibc's FMA build; odd quadrants swap the two results.
func sincosfPoly(x, x2 float64, p *sincosfCoef, n int32) (sin, cos float32) {
	x3 := x2 * x
	x4 := x2 * x2
	x5 := x2 * x3
	x6 := x2 * x4
	s1 := math.FMA(x2, p.s3, p.s2)
	c2 := math.FMA(x2, p.c4, p.c3)
	c1 := math.FMA(x2, p.c1, p.c0)
	s := math.FMA(x3, p.s1, x)
	c := math.FMA(x4, p.c2, c1)
	rs := float32(math.FMA(s1, x5, s))
	rc := float32(math.FMA(c2, x6, c))
	if n&1 != 0 {
		return rc, rs
	}
	return rs, rc
}

// sincosfInvPio4 holds 32-bit windows of the binary expansion of 2/π
// (0.a2f9836e4e441529fc2757d1f534ddc0db6295993c439041…₁₆): entry i is the
// 32 bits that end 8·(i+1) bits after the binary point.
var sincosfInvPio4 = func() (t [24]uint32) {
	const hex = "a2f9836e4e441529fc2757d1f534ddc0db6295993c439041"
	var bits [96]uint64 // one byte of 2/π per entry
	for i := 0; i < len(hex)/2; i++ {
		var b uint64
		for _, ch := range hex[2*i : 2*i+2] {
			d := uint64(ch - '0')
			if ch >= 'a' {
				d = uint64(ch-'a') + 10
			}
			b = b<<4 | d
		}
		bits[i] = b
	}
	for i := range t {
		var w uint32
		for j := i - 3; j <= i; j++ {
			w <<= 8
			if j >= 0 {
				w |= uint32(bits[j])
			}
		}
		t[i] = w
	}
	return t
}()

// sincosfReduceLarge reduces |x| ≥ 120 given its float32 bits: it
// multiplies the 24-bit mantissa by 96 bits of 2/π selected by the
// exponent, keeps the fraction as a signed 2.62 fixed-point number, and
// returns it times π/2 with the quadrant n (mod 4).
func sincosfReduceLarge(xi uint32) (float64, int32) {
	arr := sincosfInvPio4[(xi>>26)&15:]
	shift := (xi >> 23) & 7
	m := ((xi & 0xffffff) | 0x800000) << shift
	res0 := uint64(m * arr[0])
	res1 := uint64(m) * uint64(arr[4])
	res2 := uint64(m) * uint64(arr[8])
	res0 = res2>>32 | res0<<32
	res0 += res1
	n := (res0 + 1<<61) >> 62
	res0 -= n << 62
	return float64(int64(res0)) * sincosfPi63, int32(n)
}

// RopePair rotates the pair (x0, x1) by the angle with cosine c and sine s
// as GCC compiles ggml's rotate_pairs (ggml-cpu/ops.cpp) with -march=native:
// each output is one FMA with the other product rounded first,
// x0·c − round(x1·s) and x0·s + round(x1·c). GGML_ROPE_TYPE_NEOX runs a
// scalar loop of vfmsub/vfmadd; GGML_ROPE_TYPE_NORMAL a vectorized loop
// (vfmaddsub over 8 pairs with AVX-512, then 4 with AVX2) that computes
// the same.
func RopePair(x0, x1, c, s float32) (float32, float32) {
	return FMA32(x0, c, -float32(x1*s)), FMA32(x0, s, float32(x1*c))
}

// RopePairUnfused is the rotation of the NORMAL loop's scalar remainder
// (vaddsubps, every product rounded): x0·c − x1·s and x0·s + x1·c.
func RopePairUnfused(x0, x1, c, s float32) (float32, float32) {
	return float32(x0*c) - float32(x1*s), float32(x0*s) + float32(x1*c)
}

// RopeNormalFused reports whether pair i of a NORMAL-mode rotation over
// pairs pairs takes the vectorized FMA loop (RopePair) or the unfused
// remainder (RopePairUnfused): the last pairs%4 pairs, and every pair of
// a rotation over 6 or fewer pairs, are unfused. (Read from the compiled
// loop and checked for the rope widths of real models, 32 pairs and more;
// NEOX mode is always fused.)
func RopeNormalFused(i, pairs int) bool {
	return pairs > 6 && i < pairs-pairs%4
}
