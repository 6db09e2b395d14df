//go:build !purego

package cpu

// f32Tiers are the float32 SIMD tiers, best first: AVX-512
// (f32simd_amd64.s, a 16-lane accumulator is one ZMM) and AVX2+FMA
// (f32simd_avx2_amd64.s, a 16-lane accumulator is two YMMs). Both give the
// same bits.
var f32Tiers = []*f32Tier{
	{
		name: "avx512", ok: hasAVX512, why: "CPU lacks AVX-512 F/BW/VL/DQ (or MINFER_NO_AVX512 is set)",
		dots: dotsF32, vsum: vsumLanes, reduce: reduceLanes, dotsH: dotsF16, vsumH: vsumLanesF16, vaccF: vaccF32, vaccB: vaccF16, scaleMax: scaleMaxF32, mul: mulF32,
		expSum: expSumF32, silu: siluF32, swiglu: swigluF32, exp: expF32,
	},
	{
		name: "avx2", ok: hasAVX2, why: "CPU lacks AVX2+FMA+F16C (or MINFER_NO_AVX2 is set)",
		dots: dotsF32AVX2, vsum: vsumLanesAVX2, reduce: reduceLanesAVX2, dotsH: dotsF16AVX2, vsumH: vsumLanesF16AVX2, vaccF: vaccF32AVX2, vaccB: vaccF16AVX2, scaleMax: scaleMaxF32AVX2, mul: mulF32AVX2,
		expSum: expSumF32AVX2, silu: siluF32AVX2, swiglu: swigluF32AVX2, exp: expF32AVX2,
	},
}

// The AVX-512 kernels (f32simd_amd64.s).

//go:noescape
func dotsF32(sc, k *float32, kstride, n int, q *float32, hd int)

//go:noescape
func vsumLanes(acc, v *float32, vstride int, p *float32, n, L, hd int)

//go:noescape
func reduceLanes(out, acc *float32, hd, L int)

//go:noescape
func scaleMaxF32(dst, src *float32, n int, scale float32) float32

//go:noescape
func mulF32(x *float32, n int, s float32)

//go:noescape
func expSumF32(x *float32, n, nvalid int, maxv float32) float64

//go:noescape
func siluF32(y, x *float32, n int)

//go:noescape
func swigluF32(y, gate, u *float32, n int)

//go:noescape
func expF32(y, x *float32, n int)

// The AVX2+FMA kernels (f32simd_avx2_amd64.s), same contracts.

//go:noescape
func dotsF32AVX2(sc, k *float32, kstride, n int, q *float32, hd int)

//go:noescape
func vsumLanesAVX2(acc, v *float32, vstride int, p *float32, n, L, hd int)

//go:noescape
func reduceLanesAVX2(out, acc *float32, hd, L int)

//go:noescape
func scaleMaxF32AVX2(dst, src *float32, n int, scale float32) float32

//go:noescape
func mulF32AVX2(x *float32, n int, s float32)

//go:noescape
func expSumF32AVX2(x *float32, n, nvalid int, maxv float32) float64

//go:noescape
func siluF32AVX2(y, x *float32, n int)

//go:noescape
func swigluF32AVX2(y, gate, u *float32, n int)

//go:noescape
func expF32AVX2(y, x *float32, n int)

// The f16-row variants (f16attn_amd64.s): the same kernels reading f16 key
// or value rows through VCVTPH2PS (exact), then the same FMAs.

//go:noescape
func dotsF16(sc *float32, k *byte, kstride, n int, q *float32, hd int)

//go:noescape
func vsumLanesF16(acc *float32, v *byte, vstride int, p *float32, n, L, hd int)

//go:noescape
func dotsF16AVX2(sc *float32, k *byte, kstride, n int, q *float32, hd int)

//go:noescape
func vsumLanesF16AVX2(acc *float32, v *byte, vstride int, p *float32, n, L, hd int)

// The flash attention v sums (flash_amd64.s).

//go:noescape
func vaccF32(o, v *float32, vstride int, p *float32, n, hd int)

//go:noescape
func vaccF16(o *float32, v *byte, vstride int, p *float32, n, hd int)

//go:noescape
func vaccF32AVX2(o, v *float32, vstride int, p *float32, n, hd int)

//go:noescape
func vaccF16AVX2(o *float32, v *byte, vstride int, p *float32, n, hd int)
