//go:build amd64 && !purego

package cpu

import "github.com/minfer/minfer/quant"

// AVX2 row kernels for the 32-element formats (Q8_0, Q5_0, Q4_0 against
// Q8_0 activations; Q4_1, Q5_1 against Q8_1; Q5_0 and Q4_0 are generated,
// rows_legacy_avx2_amd64.s from internal/asmgen/rows_legacy_avx2.go, the
// Q8_0 ones in internal/asmgen/rows_q80.go, the others hand-written in
// dot_legacy_amd64.s). Each asm call sweeps a whole
// range of weight rows against one activation row and gives the same bits
// as quant's pure-Go dots: per block, 8 int32 lanes each holding the
// integer dot of 4 consecutive elements (lane k<4: elements 4k..4k+3 of the
// first 16, lane k+4: the same of the last 16 for the nibble formats; lane
// k: elements 4k..4k+3 for Q8_0), converted to float32, then one FMA per
// lane with the float32 product d_w·d_a, and hsum_float_8 at the end; the
// Q4_1/Q5_1 m_w·s_a terms are added to a scalar in block order and that
// scalar is added last.
//
// The integer lanes are exact for every input of the nibble formats: the
// unsigned quants (0..15, 0..31) go through VPMADDUBSW as they are and the
// offset (8 or 16 times the activations' pair sums) is subtracted in int16,
// which cannot overflow. Q8_0 uses ggml's sign trick (|x| times y with x's
// sign), exact unless a weight byte and its activation byte are both -128,
// which the activation quantizer never produces (|q| ≤ 127).
//
// With AVX-512 VNNI, Q8_0, Q5_0 and Q4_0 use VPDPBUSD for the integer part
// (exact for every input: the weights biased to unsigned, the bias times
// the activation sums subtracted in int32) and an opmask for the Q5 5th
// bits, on two row pairs per step, each pair in one ZMM register (one
// VPDPBUSD, VCVTDQ2PS and FMA for both rows); the float part per row is
// unchanged. Q8_0 rows go two at a time (one pair), long ones eight
// (four pairs): see q80LongNB.

// rowsQ8_0AVX2R2 and rowsQ8_0AVX2R8 are the generated Q8_0 kernels with
// two and eight rows a group (internal/asmgen/rows_q80.go); same bits, as
// each row keeps its own accumulator and block order.
//
//go:noescape
func rowsQ8_0AVX2R2(w *byte, wrb int, a *byte, nb int, y *float32, rows int)

//go:noescape
func rowsQ8_0AVX2R8(w *byte, wrb int, a *byte, nb int, y *float32, rows int)

// q80LongNB is the row length (in blocks) from which the Q8_0 row kernels
// take eight rows a group; shorter rows go two at a time (both tiers).
// Weight rows stream from DRAM once per decode step, and how many rows a
// group reads side by side decides how close to a plain read they stream (1 GiB matrix, best of 12 passes, ratio to the best read pass, on
// the Zen 5 this was tuned on; AVX2, two runs each, 4 / 2 / 8 rows):
// K=896 0.82/0.89/0.79, 0.81/0.90/0.76; K=1536 0.76/0.76/0.70,
// 0.74/0.85/0.66; K=2048 0.69/0.83/0.68, 0.73/0.80/0.71; K=3072
// 0.65/0.80/0.79, 0.69/0.83/0.82; K=4864 0.73/0.77/0.82, 0.67/0.72/0.78.
const q80LongNB = 128

// rowsQ8_0AVX2 is the AVX2 Q8_0 row kernel: eight rows a group for rows
// of q80LongNB blocks or more, else two.
func rowsQ8_0AVX2(w *byte, wrb int, a *byte, nb int, y *float32, rows int) {
	if nb >= q80LongNB {
		rowsQ8_0AVX2R8(w, wrb, a, nb, y, rows)
		return
	}
	rowsQ8_0AVX2R2(w, wrb, a, nb, y, rows)
}

//go:noescape
func rowsQ4_1AVX2(w *byte, wrb int, a *byte, nb int, y *float32, rows int)

//go:noescape
func rowsQ5_1AVX2(w *byte, wrb int, a *byte, nb int, y *float32, rows int)

// rowsQ4_0AVX2 and rowsQ5_0AVX2 are generated
// (internal/asmgen/rows_legacy_avx2.go).
//
//go:noescape
func rowsQ4_0AVX2(w *byte, wrb int, a *byte, nb int, y *float32, rows int)

//go:noescape
func rowsQ5_0AVX2(w *byte, wrb int, a *byte, nb int, y *float32, rows int)

// rowsQ8_0VNNIR2 and rowsQ8_0VNNIR8 are the generated VNNI Q8_0 kernels
// with one and four row pairs a group (internal/asmgen/rows_q80.go).
//
//go:noescape
func rowsQ8_0VNNIR2(w *byte, wrb int, a *byte, nb int, y *float32, rows int)

//go:noescape
func rowsQ8_0VNNIR8(w *byte, wrb int, a *byte, nb int, y *float32, rows int)

// rowsQ8_0VNNI is the VNNI Q8_0 row kernel: eight rows a group for rows
// of q80LongNB blocks or more, else two (out of cache, best of 12 passes
// over 1 GiB, ratio to a plain read, the former hand-written four-row
// kernel / two / eight rows: K=896 0.74/0.89/0.69, 0.76/0.86/0.66;
// K=2048 0.74/0.82/0.75, 0.72/0.77/0.72; K=3072 0.73/0.80/0.79; four /
// eight rows: K=4864 0.61/0.72, 0.67/0.80).
func rowsQ8_0VNNI(w *byte, wrb int, a *byte, nb int, y *float32, rows int) {
	if nb >= q80LongNB {
		rowsQ8_0VNNIR8(w, wrb, a, nb, y, rows)
		return
	}
	rowsQ8_0VNNIR2(w, wrb, a, nb, y, rows)
}

//go:noescape
func rowsQ5_0VNNI(w *byte, wrb int, a *byte, nb int, y *float32, rows int)

//go:noescape
func rowsQ4_0VNNI(w *byte, wrb int, a *byte, nb int, y *float32, rows int)

func init() {
	if !hasAVX2 {
		return
	}
	if hasVNNI {
		registerRows(quant.Q8_0, "avx512vnni", legacyRows(rowsQ8_0VNNI, 34, 34))
		registerRows(quant.Q5_0, "avx512vnni", legacyRows(rowsQ5_0VNNI, 22, 34))
		registerRows(quant.Q4_0, "avx512vnni", legacyRows(rowsQ4_0VNNI, 18, 34))
	} else {
		registerRows(quant.Q8_0, "avx2", legacyRows(rowsQ8_0AVX2, 34, 34))
		registerRows(quant.Q5_0, "avx2", legacyRows(rowsQ5_0AVX2, 22, 34))
		registerRows(quant.Q4_0, "avx2", legacyRows(rowsQ4_0AVX2, 18, 34))
	}
	registerRows(quant.Q4_1, "avx2", legacyRows(rowsQ4_1AVX2, 20, 36))
	registerRows(quant.Q5_1, "avx2", legacyRows(rowsQ5_1AVX2, 24, 36))
}

// streamSumAVX2 and streamSumAVX512 add up n bytes at p (n a multiple of
// 256) as 64-bit lanes with nothing else to do: the memory-read ceiling the
// row kernels are measured against (stream_bench_test.go).
//
//go:noescape
func streamSumAVX2(p *byte, n int) uint64

//go:noescape
func streamSumAVX512(p *byte, n int) uint64

//go:noescape
func streamSumAVX512PF(p *byte, n int) uint64
