//go:build amd64 && !purego

package cpu

import "github.com/minfer/minfer/quant"

// AVX2 activation quantizers, byte-identical to quant.QuantizeQ8_0Act and
// quant.QuantizeQ8_1Act (ggml's x86 quantize_row_q8_0/q8_1): per block of
// 32, amax by VMAXPS, d = amax/127 rounded to f16 by VCVTPS2PH, q =
// VCVTPS2DQ(x·(127/amax)) (round half to even under the default MXCSR)
// saturated to int8 by the packs; for Q8_1 s = f16(d·Σq).
//
// A block where some x·(127/amax) is NaN or ±Inf (a NaN or infinite input,
// or amax below 127/MaxFloat32, e.g. subnormal) makes VCVTPS2DQ return its
// integer indefinite 0x80000000, where quant's quantizers saturate +Inf to
// 127 and convert NaN to 0. That value packs to -128, which a normal block
// never holds (its quants are within ±127), so the kernel compares the
// packed bytes with -128 (one compare and test per block), stops at such a
// block before storing its quants and returns the blocks it finished; the
// wrappers quantize that block with quant's Go code and resume.

//go:noescape
func quantQ8_0AVX2(src *float32, dst *byte, nb int) (done int)

//go:noescape
func quantQ8_1AVX2(src *float32, dst *byte, nb int) (done int)

func actQ8_0(src []float32, dst []byte) {
	nb := len(src) / 32
	if nb == 0 {
		return
	}
	_ = dst[nb*34-1]
	for i := 0; i < nb; {
		i += quantQ8_0AVX2(&src[i*32], &dst[i*34], nb-i)
		if i < nb {
			quant.QuantizeQ8_0Act(src[i*32:(i+1)*32], dst[i*34:(i+1)*34])
			i++
		}
	}
}

func actQ8_1(src []float32, dst []byte) {
	nb := len(src) / 32
	if nb == 0 {
		return
	}
	_ = dst[nb*36-1]
	for i := 0; i < nb; {
		i += quantQ8_1AVX2(&src[i*32], &dst[i*36], nb-i)
		if i < nb {
			quant.QuantizeQ8_1Act(src[i*32:(i+1)*32], dst[i*36:(i+1)*36])
			i++
		}
	}
}

func init() {
	if !hasAVX2 {
		return
	}
	registerAct(quant.Q8_0, "avx2", actQ8_0)
	registerAct(quant.Q8_1, "avx2", actQ8_1)
}
