//go:build amd64 && !purego

package cpu

import "github.com/minfer/minfer/quant"

// AVX2 activation quantizers, byte-identical to quant.QuantizeQ8_0Act and
// quant.QuantizeQ8_1Act (ggml's x86 quantize_row_q8_0/q8_1): per block of
// 32, amax by VMAXPS, d = amax/127 rounded to f16 by VCVTPS2PH, q =
// VCVTPS2DQ(x·(127/amax)) (round half to even under the default MXCSR)
// saturated to int8 by the packs; for Q8_1 s = f16(d·Σq).

//go:noescape
func quantQ8_0AVX2(src *float32, dst *byte, nb int)

//go:noescape
func quantQ8_1AVX2(src *float32, dst *byte, nb int)

func actQ8_0(src []float32, dst []byte) {
	nb := len(src) / 32
	if nb == 0 {
		return
	}
	_ = dst[nb*34-1]
	quantQ8_0AVX2(&src[0], &dst[0], nb)
}

func actQ8_1(src []float32, dst []byte) {
	nb := len(src) / 32
	if nb == 0 {
		return
	}
	_ = dst[nb*36-1]
	quantQ8_1AVX2(&src[0], &dst[0], nb)
}

func init() {
	if !hasAVX2 {
		return
	}
	registerAct(quant.Q8_0, "avx2", actQ8_0)
	registerAct(quant.Q8_1, "avx2", actQ8_1)
}
