//go:build amd64 && !purego

package cpu

import "github.com/minfer/minfer/quant"

// AVX2 row kernels for the 32-element formats (Q8_0, Q5_0, Q4_0 against
// Q8_0 activations; Q4_1, Q5_1 against Q8_1; Q8_0, Q5_0 and Q4_0 are
// generated, internal/asmgen/rows_q80.go and rows_legacy_avx2.go around
// the loops of rows_legacy_steps.go, the others hand-written in
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
// unchanged.
//
// The Q8_0, Q5_0 and Q4_0 kernels of both tiers take four rows a step,
// rows i, q+i, 2q+i, 3q+i of q = rows/4 steps: four sequential streams,
// which the hardware prefetcher follows (and each prefetched 2 KiB ahead),
// where neighbouring rows read a block at a time stayed well below a plain
// streaming read out of DRAM. BenchmarkDecode dram ratios (kernel GB/s over
// a streaming read's, thread CPU time; main's test binary and this one
// alternated 5 times, medians), K = 896 / 1024 / 3072 / 4864:
//
//	AVX2 Q8_0 (2 or 8 neighbouring rows)  0.86 0.75 0.85 0.79 -> 1.26 0.92 1.22 1.27
//	AVX2 Q5_0                             0.57 0.59 0.56 0.56 -> 0.70 0.62 0.66 0.70
//	AVX2 Q4_0                             0.71 0.73 0.68 0.67 -> 0.69 0.73 0.71 0.75
//	VNNI Q8_0 (2 or 8 neighbouring rows)  0.80 0.84 0.81 0.75 -> 1.22 1.16 1.21 1.21
//	VNNI Q5_0                             0.83 0.82 0.73 0.67 -> 0.96 0.99 1.03 1.00
//	VNNI Q4_0                             0.88 0.83 0.73 0.66 -> 0.93 0.89 0.96 0.97
//
// (above 1: the read has no software prefetch). Among spread steps, two
// rows (0.98 / 0.86 / 1.06 / 0.90 for AVX2 Q8_0) and eight (0.91 / 0.92
// / 0.94 / 0.87) did worse than four (1.23 / 1.10 / 1.19 / 1.12), and four
// without the software prefetch a little worse (1.06 / 1.05 / 1.16 /
// 1.09; the variants alternated within each pass, medians of 5). The AVX2
// Q5_0 and Q4_0 kernels are bound by their own work (about 18 and 21 GB/s
// on rows that stay in L2).

//go:noescape
func rowsQ8_0AVX2(w *byte, wrb int, a *byte, nb int, y *float32, rows int)

//go:noescape
func rowsQ4_1AVX2(w *byte, wrb int, a *byte, nb int, y *float32, rows int)

//go:noescape
func rowsQ5_1AVX2(w *byte, wrb int, a *byte, nb int, y *float32, rows int)

//go:noescape
func rowsQ4_0AVX2(w *byte, wrb int, a *byte, nb int, y *float32, rows int)

//go:noescape
func rowsQ5_0AVX2(w *byte, wrb int, a *byte, nb int, y *float32, rows int)

//go:noescape
func rowsQ8_0VNNI(w *byte, wrb int, a *byte, nb int, y *float32, rows int)

//go:noescape
func rowsQ5_0VNNI(w *byte, wrb int, a *byte, nb int, y *float32, rows int)

//go:noescape
func rowsQ4_0VNNI(w *byte, wrb int, a *byte, nb int, y *float32, rows int)

// The AVX-VNNI kernels (VEX VPDPBUSD, 256-bit: internal/asmgen/
// rows_legacy_avx2.go, lxKernel): the AVX2 kernels' steps with the integer
// part on VPDPBUSD; Q4_0 in 5 vector ops per row and block (AVX2: 7), Q5_0
// in 9 (11).

//go:noescape
func rowsQ5_0AVXVNNI(w *byte, wrb int, a *byte, nb int, y *float32, rows int)

//go:noescape
func rowsQ4_0AVXVNNI(w *byte, wrb int, a *byte, nb int, y *float32, rows int)

func init() {
	if !hasAVX2 {
		return
	}
	if hasVNNI {
		registerRows(quant.Q8_0, "avx512vnni", legacyRows(rowsQ8_0VNNI, 34, 34))
		registerRows(quant.Q5_0, "avx512vnni", legacyRows(rowsQ5_0VNNI, 22, 34))
		registerRows(quant.Q4_0, "avx512vnni", legacyRows(rowsQ4_0VNNI, 18, 34))
	} else if hasAVXVNNI {
		registerRows(quant.Q8_0, "avx2", legacyRows(rowsQ8_0AVX2, 34, 34))
		registerRows(quant.Q5_0, "avxvnni", legacyRows(rowsQ5_0AVXVNNI, 22, 34))
		registerRows(quant.Q4_0, "avxvnni", legacyRows(rowsQ4_0AVXVNNI, 18, 34))
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
