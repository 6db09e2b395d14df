//go:build arm64 && !purego

package cpu

import "github.com/minfer/minfer/quant"

// The arm64 activation quantizers (actq8_arm64.s, generated from
// internal/asmgen/arm64act.go): byte-identical to quant.QuantizeQ8_0Act and
// quant.QuantizeQ8_1Act for every finite input (amax by FMAX, d = amax/127
// rounded to f16 by FCVT, q = FCVTNS(x·(127/amax)) saturated to int8 by
// SQXTN; Q8_1's s = f16(d·Σq)), and the Q8_K one byte-identical to
// quant.QuantizeQ8KAct. Base NEON, so both arm64 tiers use them.

//go:noescape
func quantQ8_0NEON(src *float32, dst *byte, nb int)

//go:noescape
func quantQ8_1NEON(src *float32, dst *byte, nb int)

func actQ8_0NEON(src []float32, dst []byte) {
	nb := len(src) / 32
	if nb == 0 {
		return
	}
	_ = dst[nb*34-1]
	quantQ8_0NEON(&src[0], &dst[0], nb)
}

func actQ8_1NEON(src []float32, dst []byte) {
	nb := len(src) / 32
	if nb == 0 {
		return
	}
	_ = dst[nb*36-1]
	quantQ8_1NEON(&src[0], &dst[0], nb)
}

func init() {
	if hasNEON {
		registerAct(quant.Q8_0, "neon", actQ8_0NEON)
		registerAct(quant.Q8_1, "neon", actQ8_1NEON)
	}
}

// quantQ8KNEON quantizes nb blocks of 256 floats to Q8_K, byte for byte
// quant.QuantizeQ8KAct (see internal/asmgen/arm64act.go).
//
//go:noescape
func quantQ8KNEON(src *float32, dst *byte, nb int)

func actQ8KNEON(src []float32, dst []byte) {
	nb := len(src) / 256
	if nb == 0 {
		return
	}
	_ = src[nb*256-1]
	_ = dst[nb*292-1]
	quantQ8KNEON(&src[0], &dst[0], nb)
}

func init() {
	if hasNEON {
		registerAct(quant.Q8_K, "neon", actQ8KNEON)
	}
}
