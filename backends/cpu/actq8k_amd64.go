//go:build amd64 && !purego

package cpu

import "github.com/minfer/minfer/quant"

// kqQuantQ8KAVX2 quantizes nb blocks of 256 floats at x to Q8_K at y
// (actq8k_amd64.s), byte for byte what quant.QuantizeQ8KAct (ggml's
// quantize_row_q8_K_ref) writes: the signed value of largest magnitude
// (first one on ties; NaNs never win), iscale = -127/max, q =
// min(127, nearest_int(iscale·x)) truncated to int8, d = 1/iscale, bsums
// of the stored bytes; an all-zero block (amax = 0) is all zero bytes.
//
//go:noescape
func kqQuantQ8KAVX2(x *float32, y *byte, nb int)

func actQ8KAVX2(src []float32, dst []byte) {
	nb := len(src) / 256
	if nb == 0 {
		return
	}
	_ = src[nb*256-1]
	_ = dst[nb*292-1]
	kqQuantQ8KAVX2(&src[0], &dst[0], nb)
}

func init() {
	if hasAVX2 {
		registerAct(quant.Q8_K, "avx2", actQ8KAVX2)
	}
}
