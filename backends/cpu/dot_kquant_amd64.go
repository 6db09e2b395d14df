//go:build amd64 && !purego

package cpu

import (
	"unsafe"

	"github.com/minfer/minfer/quant"
)

// AVX2 row kernels for the K-quant weight types against Q8_K activations
// (dot_kquant_amd64.s). Each reproduces the float order of the pure-Go dot
// of its type (quant.DotQ*KQ8K, itself the order of ggml's x86 AVX2
// ggml_vec_dot_q*_K_q8_K): the integer sums are exact, so only the lane
// grouping of the 8 int32 sums and the float operations after them have to
// match, and they do instruction for instruction (one FMA per lane and
// super-block, then hsum_float_8).
//
// Every asm kernel loops over rows inside: w points at the first weight
// row, y at its output; nb is the number of 256-element super-blocks in a
// row. The Go wrappers check every bound the asm will touch. The Q4_K,
// Q5_K and Q6_K AVX2 kernels are generated (internal/asmgen/rows_avx2.go,
// rows4_avx2.go, rows_q6k_avx2.go; rows_avx2_amd64.s): Q4_K and Q6_K take
// rows four at a time (then a pair, then one) sharing the activation
// loads, the activation half of the header work and one reduction tree
// for the four results, Q5_K takes them in pairs; Q4_K/Q5_K unpack the
// headers of up to 16 super-blocks before their chunks, the Q6_K four-row
// step those of up to 4 (scale words, the bsum term, the four rows' d·d8). The four rows of
// a Q4_K/Q6_K step are a quarter of the range apart (rows i, q+i, 2q+i,
// 3q+i for q = rows/4), so the weights stream as four sequential runs the
// hardware prefetcher follows, each also prefetched 2 KiB ahead; the pair
// and single-row steps prefetch the next step's bytes 4 KiB ahead. Q4_K, Q5_K (four rows per step) and Q6_K
// also have AVX-512 VNNI kernels (ZMM, VPDPBUSD/VPDPWSSD) with the same
// bits; the Q4_K one spreads its four-row steps and the Q6_K one its
// pairs (rows i, q+i of q = rows/2) over the range as the AVX2 ones do. Measured (BenchmarkDecode, BenchmarkStreamRowsBest) the AVX2
// kernels are bound by vector ALU and load throughput (their in-L2 speed is
// within 1.1–1.5× of their streamed speed), not by the memory read.

//go:noescape
func kqRowsQ4KAVX2(w *byte, wrb int, a *byte, y *float32, rows int, nb int)

//go:noescape
func kqRowsQ6KAVX2(w *byte, wrb int, a *byte, y *float32, rows int, nb int)

//go:noescape
func kqRowsQ5KAVX2(w *byte, wrb int, a *byte, y *float32, rows int, nb int)

//go:noescape
func kqRowsQ2KAVX2(w *byte, wrb int, a *byte, y *float32, rows int, nb int)

//go:noescape
func kqRowsQ3KAVX2(w *byte, wrb int, a *byte, y *float32, rows int, nb int)

// kqRowsQ4KVNNI is the Q4_K kernel of the AVX-512 VNNI tier (ZMM, the
// row pair in one register; see dot_kquant_amd64.s), same bits.
//
//go:noescape
func kqRowsQ4KVNNI(w *byte, wrb int, a *byte, y *float32, rows int, nb int)

// kqRowsQ6KVNNI is the Q6_K kernel of the AVX-512 VNNI tier (ZMM, two
// sub-blocks of a row per register; see dot_kquant_amd64.s), same bits.
//
//go:noescape
func kqRowsQ6KVNNI(w *byte, wrb int, a *byte, y *float32, rows int, nb int)

// kqRowsQ5KVNNI is the Q5_K kernel of the AVX-512 VNNI tier (four rows
// per step on ZMM, as the Q4_K one; see dot_kquant_amd64.s), same bits. It
// takes a multiple of 4 rows: kqRowsQuad sends the rest to the AVX2
// kernel.
//
//go:noescape
func kqRowsQ5KVNNI(w *byte, wrb int, a *byte, y *float32, rows int, nb int)

// kqRowsQuad runs f4 on the rows in groups of 4 and f1 on the 0..3 left.
func kqRowsQuad(f4, f1 kqRowsAsm) kqRowsAsm {
	return func(w *byte, wrb int, a *byte, y *float32, rows int, nb int) {
		r4 := rows &^ 3
		if r4 > 0 {
			f4(w, wrb, a, y, r4, nb)
		}
		if rows > r4 {
			// The wrapper checked every byte of these rows; the
			// offsets stay inside the slices it took w and y from.
			f1((*byte)(unsafe.Add(unsafe.Pointer(w), r4*wrb)), wrb, a,
				(*float32)(unsafe.Add(unsafe.Pointer(y), r4*4)), rows-r4, nb)
		}
	}
}

func init() {
	if !hasAVX2 {
		return
	}
	if hasVNNI {
		registerRows(quant.Q4_K, "avx512vnni", kqRows(kqRowsQ4KVNNI, 144))
	} else {
		registerRows(quant.Q4_K, "avx2", kqRows(kqRowsQ4KAVX2, 144))
	}
	if hasVNNI {
		registerRows(quant.Q6_K, "avx512vnni", kqRows(kqRowsQ6KVNNI, 210))
	} else {
		registerRows(quant.Q6_K, "avx2", kqRows(kqRowsQ6KAVX2, 210))
	}
	if hasVNNI {
		registerRows(quant.Q5_K, "avx512vnni", kqRows(kqRowsQuad(kqRowsQ5KVNNI, kqRowsQ5KAVX2), 176))
	} else {
		registerRows(quant.Q5_K, "avx2", kqRows(kqRowsQ5KAVX2, 176))
	}
	registerRows(quant.Q2_K, "avx2", kqRows(kqRowsQ2KAVX2, 84))
	registerRows(quant.Q3_K, "avx2", kqRows(kqRowsQ3KAVX2, 110))
}

// rowKernelTable lists every row kernel of every tier, whether or not the
// CPU has the tier (callers check hasAVX2 / hasAVX512 / hasVNNI /
// hasAVXVNNI).
func rowKernelTable() []rowKernel {
	return []rowKernel{
		{quant.Q4_K, "avx2", kqRows(kqRowsQ4KAVX2, 144)},
		{quant.Q4_K, "avx512vnni", kqRows(kqRowsQ4KVNNI, 144)},
		{quant.Q5_K, "avx2", kqRows(kqRowsQ5KAVX2, 176)},
		{quant.Q5_K, "avx512vnni", kqRows(kqRowsQuad(kqRowsQ5KVNNI, kqRowsQ5KAVX2), 176)},
		{quant.Q6_K, "avx2", kqRows(kqRowsQ6KAVX2, 210)},
		{quant.Q6_K, "avx512vnni", kqRows(kqRowsQ6KVNNI, 210)},
		{quant.Q2_K, "avx2", kqRows(kqRowsQ2KAVX2, 84)},
		{quant.Q3_K, "avx2", kqRows(kqRowsQ3KAVX2, 110)},
		{quant.Q8_0, "avx2", legacyRows(rowsQ8_0AVX2, 34, 34)},
		{quant.Q8_0, "avx512vnni", legacyRows(rowsQ8_0VNNI, 34, 34)},
		{quant.Q5_0, "avx2", legacyRows(rowsQ5_0AVX2, 22, 34)},
		{quant.Q5_0, "avx512vnni", legacyRows(rowsQ5_0VNNI, 22, 34)},
		{quant.Q4_0, "avx2", legacyRows(rowsQ4_0AVX2, 18, 34)},
		{quant.Q4_0, "avx512vnni", legacyRows(rowsQ4_0VNNI, 18, 34)},
		{quant.Q5_0, "avxvnni", legacyRows(rowsQ5_0AVXVNNI, 22, 34)},
		{quant.Q4_0, "avxvnni", legacyRows(rowsQ4_0AVXVNNI, 18, 34)},
		{quant.Q4_1, "avx2", legacyRows(rowsQ4_1AVX2, 20, 36)},
		{quant.Q5_1, "avx2", legacyRows(rowsQ5_1AVX2, 24, 36)},
	}
}
