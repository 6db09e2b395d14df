package main

import "fmt"

// AVX2 decode row kernels (one activation row against a range of weight
// rows, M = 1), printed into backends/cpu/rows_avx2_amd64.s. The Go side
// (backends/cpu/dot_kquant_amd64.go, dot_legacy_amd64.go) declares and
// wraps them; rows_asm.go checks every bound they rely on.
//
// The kernels are tuned to stream weights at the machine's read bandwidth:
// rows go two (Q5_K) or four (Q4_K: rows4_avx2.go; Q6_K: rows_q6k_avx2.go)
// at a time sharing every activation load and the per-super-block
// activation work, the integer part uses the fewest vector ops that keep
// each int32 lane exact (ggml's lane grouping), and the next step's rows
// are prefetched ahead of the hardware prefetcher.
//
// What bounds them, measured on the machine they were tuned on (a Zen 5
// class EPYC VM, ~3.4 GHz; throughput microbenchmarks of single
// instructions): 4 vector ALU ops per cycle, of which at most 2 multiplies
// (VPMADDUBSW, VPMADDWD) and 2 shifts or byte shuffles (VPSRLW, VPSHUFB;
// VPSHUFD, VPAND, VPADDD, VPBLENDW run on all 4), and 2 vector loads per
// cycle (a VPBROADCASTD from memory counts as one load and no ALU op). So
// a Q4_K chunk costs 9 ALU ops per row with two VPMADDWD by broadcast
// scale words against 12 for a pair-sum combine and one VPMADDWD; but the
// scale broadcasts must read stack records written well before (a header
// pass over the pair's super-blocks): broadcasting a slot just written by
// a 32-byte store ran about 20% slower, as did shuffling the scales out of
// registers (more ALU ops). Without the software prefetch a row pair
// streams at a fraction of the read bandwidth (the hardware prefetcher
// does not follow two interleaved streams here); its distance (2-16 KiB)
// made no measurable difference. Measured later over a 1 GiB matrix (out
// of every cache): neighbouring rows read a super-block at a time stay
// at 0.6-0.8 of a plain streaming read whatever the software prefetch
// (kind T0/T1/T2/NTA, distance 1-64 KiB, two levels), while the same rows
// taken a fraction of the range apart, each step's rows on their own
// sequential stream, reach 0.9-1.0 (rowsSpread in rows4_avx2.go). Software-pipelining the next pair's
// header pass before this pair's chunks gained nothing.
//
// Later measurements (same machine, L1-resident loops; the Q4_K quad of
// rows4_avx2.go): the Q4_K chunk's 9 ops per row run at 4 per cycle
// (~9 cycles per row and super-block), the whole kernel at ~14: the rest is
// the header pass (removing it, wrong results, ran ~40% faster), the
// per-block float steps and the loads (about 20 per row and super-block
// at 2 vector loads per cycle). VPHADDW costs ~2 cycles of throughput and
// VCVTPH2PS (YMM) ~0.8, so the quad gets its bsum pairs by VPMADDWD by
// ones + VPACKSSDW + VPERMQ and converts the four rows' d|dmin in one
// VCVTPH2PS. No cheaper exact AVX2 form of the chunk was found: the
// nibble split needs its shift and two masks (VPMADDUBSW saturates on
// unmasked or pre-shifted high nibbles), and each half needs its own
// scale multiply.

func init() {
	register("rows_avx2_amd64.s", "amd64 && !purego", func(a *Asm) {
		a.Blank()
		a.Comment(rowsAVX2Doc)
		rowsAVX2Consts(a)
		rowsQ4KAVX2(a)
		rowsQ5KAVX2(a)
		rowsQ6KAVX2(a)
	})
}

const rowsAVX2Doc = `AVX2 decode row kernels (see internal/asmgen/rows_avx2.go and the Go
declarations in dot_kquant_amd64.go / dot_legacy_amd64.go).

Rows go four at a time (Q4_K, Q6_K: rows A..D of a step share each
activation load; they are rows i, q+i, 2q+i, 3q+i of the range, q =
rows/4, so the weights stream as four sequential runs), then in pairs (row A and row B share them); a last odd
row runs the pair code with row B = row A (Q4_K, Q5_K) or its own
one-row loop (Q6_K) and stores row A only, so every row's float steps
are the same whatever its position. The integer sums are exact and grouped as in ggml's AVX2
kernels (lane k of a 32-element chunk holds its elements 4k..4k+3), so
only the float steps have to follow the oracle (quant's pure-Go dots),
and they do instruction for instruction.`

// rowsAVX2Consts writes the constant tables the kernels share.
func rowsAVX2Consts(a *Asm) {
	data := func(name string, qwords ...uint64) {
		for i, q := range qwords {
			a.Raw("DATA %s<>+%d(SB)/8, $0x%016x", name, 8*i, q)
		}
		a.Raw("GLOBL %s<>(SB), RODATA|NOPTR, $%d", name, 8*len(qwords))
	}
	a.Blank()
	a.Comment("get_scale_min_k4 on two 16-byte headers at once (row A in the low\n128-bit lane, row B in the high one): shifts and masks.")
	data("rkK4Shift", 0, 0x0000000400000000, 0, 0x0000000400000000)
	data("rkK4MaskA", 0x0f0f0f0f3f3f3f3f, 0x0f0f0f0f3f3f3f3f, 0x0f0f0f0f3f3f3f3f, 0x0f0f0f0f3f3f3f3f)
	data("rkK4MaskB", 0x3030303000000000, 0x3030303000000000, 0x3030303000000000, 0x3030303000000000)
	a.Comment("rkMinsZX: bytes 8..15 of each lane (the mins) to zero-extended words.")
	data("rkMinsZX", 0x800b800a80098008, 0x800f800e800d800c, 0x800b800a80098008, 0x800f800e800d800c)
	a.Comment("rkScaleLo / rkScaleHi: scale bytes 0..3 / 4..7 of each lane to dwords\ns | s<<16 (both words the scale: a VPMADDWD multiplier once broadcast).")
	data("rkScaleLo", 0x8001800180008000, 0x8003800380028002, 0x8001800180008000, 0x8003800380028002)
	a.Comment("rkOnes: words 1 (bsum pairs by VPMADDWD).")
	data("rkOnes", 0x0001000100010001, 0x0001000100010001, 0x0001000100010001, 0x0001000100010001)
	data("rkScaleHi", 0x8005800580048004, 0x8007800780068006, 0x8005800580048004, 0x8007800780068006)
}

// rowsPF is the software prefetch distance: the next row pair's bytes are
// touched this far past their start, linearly, as the current pair is
// read (a prefetch never faults, so running past the matrix is harmless).
const rowsPF = 4096

// rowsPFOp is the prefetch instruction of the row kernels (PREFETCHT1,
// PREFETCHT2 and PREFETCHNTA measured no better over a 1 GiB matrix; on
// the Zen 4 host end to end PREFETCHT2 was slower for the Q5_0 and K-quant
// kernels and faster for Q8_0's, which set lrKernel.pf).
// rowsPFOp, rowsName, rowsSpread, rowsSpreadDist and rowsSpreadPF are
// variables so that a local experiment can print variants of the kernels
// side by side in one file (different names) and time them alternately.
var rowsPFOp = "PREFETCHT0"

// pfI writes the row kernels' prefetch of the line at addr (none if
// rowsPFOp is NOP).
func pfI(a *Asm, addr string) {
	if rowsPFOp != "NOP" {
		a.I(rowsPFOp, addr)
	}
}

// rowsName is the suffix of the row kernels' names (the generator's
// experiments print variants of a kernel under other names).
var rowsName = ""

// hsum8 writes X = hsum_float_8(Y) in lane 0 (ggml's order: the upper 4
// lanes onto the lower 4, movehl, then lane 1 onto lane 0), T scratch.
func hsum8(a *Asm, y, x, t string) {
	a.I("VEXTRACTF128", "$1", y, t)
	a.I("VADDPS", x, t, x)
	a.I("VMOVHLPS", x, x, t)
	a.I("VADDPS", t, x, x)
	a.I("VMOVSHDUP", x, t)
	a.I("VADDSS", t, x, x)
}

// rowsQ4KAVX2 writes kqRowsQ4KAVX2.
func rowsQ4KAVX2(a *Asm) {
	a.Blank()
	a.Comment(`kqRowsQ4KAVX2(w *byte, wrb int, a *byte, y *float32, rows int, nb int)
Q4_K weights × Q8_K activations, float order of quant.DotQ4KQ8K (ggml's
AVX2 ggml_vec_dot_q4_K_q8_K): per super-block and row, 8 int32 lanes
sumi[k] = Σ_j s_2j·(low nibbles · q8, bytes 4k..4k+3 of chunk j) +
s_2j+1·(high nibbles, same bytes), then acc = FMA(cvt(sumi), d_a·d_w, acc);
the mins: 4 lanes accM = FMA(-(d_a·dmin_w), m_2k·(bsum pair) +
m_2k+1·(next bsum pair), accM). Result hsum_float_8(acc) +
((accM0+accM2)+(accM1+accM3)).
Rows go four at a time first (rows4_avx2.go: the quad loop, 256-byte
records), then in pairs (a last odd row paired with itself). Per step,
the headers of up to q4kSeg super-blocks are unpacked first into stack
records (q4kHeader: 128 bytes per pair), then their chunks run. Per chunk and row: AND
/ shift / AND for the nibbles, VPMADDUBSW against the 32+32 activations
(loaded once for both rows), VPMADDWD of each half by its scale broadcast
as 16 words from the record, VPADDD.
Registers: Y0/Y1 rows A/B float accumulators, Y2 the mins (lanes 0..3 A,
4..7 B), Y14 nibble mask, Y12/Y13 the chunk's activations, Y15/Y9 rows
A/B int32 sums, Y3, Y8, Y10, Y11 temporaries; R11 the record offset.`)
	rowsPairKernel(a, false)
}

// rowsQ5KAVX2 writes kqRowsQ5KAVX2.
func rowsQ5KAVX2(a *Asm) {
	a.Blank()
	a.Comment(`kqRowsQ5KAVX2(w *byte, wrb int, a *byte, y *float32, rows int, nb int)
Q5_K weights × Q8_K activations, float order of quant.DotQ5KQ8K (ggml's
AVX2 ggml_vec_dot_q5_K_q8_K): kqRowsQ4KAVX2 with the 5th bits and the
mins as one exact integer per super-block (the 4 lanes of mins × bsum
pairs added with two VPHADDD), summs = FMA(-(d_a·dmin_w), summ, summs) in
lane 0 (row A) / 4 (row B) of Y2; result hsum_float_8(acc) + summs.
Per chunk j and row the 5th bits of the low (high) nibbles are bit 2j
(2j+1) of the 32 qh bytes: a word shift to bit 4, AND 0x10, OR into the
nibbles (values 0..31: the VPMADDUBSW pairs stay below 2·31·128).
Registers as kqRowsQ4KAVX2, plus Y5/Y6 rows A/B qh bytes, Y4 0x10 bytes.`)
	rowsPairKernel(a, true)
}

// rowsPairKernel writes the Q4_K (five = false) or Q5_K row kernel.
func rowsPairKernel(a *Asm, five bool) {
	p, name, bs, ql, pf := "q4k", "kqRowsQ4KAVX2"+rowsName, 144, 16, 5
	if five {
		p, name, bs, ql, pf = "q5k", "kqRowsQ5KAVX2"+rowsName, 176, 48, 6
	}
	frame := q4kSeg*128 + 32
	if !five {
		frame = q4kSeg*256 + 24
	}
	a.Raw("TEXT ·%s(SB), $%d-48", name, frame)
	save := q4kSeg * 128
	a.I("MOVQ", "w+0(FP), SI")
	a.I("MOVQ", "wrb+8(FP), R8")
	a.I("MOVQ", "a+16(FP), DI")
	a.I("MOVQ", "y+24(FP), R9")
	a.I("MOVQ", "rows+32(FP), R10")
	a.I("MOVL", "$0x0f0f0f0f, AX")
	a.I("VMOVD", "AX, X14")
	a.I("VPBROADCASTD", "X14, Y14")
	if !five {
		rowsQ4KQuad(a)
	}
	// steps writes the pair loop (labels lp+...): spread (Q5_K), rows
	// i, q+i of q = rows/2 steps (R15 4·q, the step count at cnt, R8 the
	// stride q·wrb between a step's rows), going on to the plain loop
	// (spread false: neighbouring rows, then a last odd row paired with
	// itself) with the row left over.
	cnt := fmt.Sprintf("%d(SP)", save+24)
	steps := func(lp string, spread bool) {
		a.Label(lp + "pair")
		if spread {
			a.I("MOVQ", "SI, AX")
			a.I("LEAQ", "(SI)(R8*1), DX")
		} else {
			a.I("TESTQ", "R10, R10")
			a.I("JLE", p+"done")
			a.I("MOVQ", "SI, AX")
			a.I("LEAQ", "(SI)(R8*1), DX")
			a.I("CMPQ", "R10, $1")
			a.I("CMOVQEQ", "SI, DX")
			a.I("LEAQ", fmt.Sprintf("%d(SI)(R8*2), R13", rowsPF))
		}
		a.I("MOVQ", "DI, BX")
		a.I("MOVQ", "nb+40(FP), R12")
		a.I("VXORPS", "Y0, Y0, Y0")
		a.I("VXORPS", "Y1, Y1, Y1")
		a.I("VXORPS", "Y2, Y2, Y2")
		a.Label(lp + "seg")
		a.I("MOVQ", fmt.Sprintf("$%d, CX", q4kSeg))
		a.I("CMPQ", "R12, CX")
		a.I("CMOVQLT", "R12, CX")
		a.I("SUBQ", "CX, R12")
		a.I("MOVQ", fmt.Sprintf("AX, %d(SP)", save))
		a.I("MOVQ", fmt.Sprintf("DX, %d(SP)", save+8))
		a.I("MOVQ", fmt.Sprintf("BX, %d(SP)", save+16))
		a.I("MOVQ", "CX, R14")
		a.I("XORL", "R11, R11")
		a.Label(lp + "hdr")
		q4kHeader(a, five)
		a.I("ADDQ", fmt.Sprintf("$%d, AX", bs))
		a.I("ADDQ", fmt.Sprintf("$%d, DX", bs))
		a.I("ADDQ", "$292, BX")
		a.I("ADDQ", "$128, R11")
		a.I("DECQ", "R14")
		a.I("JNZ", lp+"hdr")
		a.I("MOVQ", fmt.Sprintf("%d(SP), AX", save))
		a.I("MOVQ", fmt.Sprintf("%d(SP), DX", save+8))
		a.I("MOVQ", fmt.Sprintf("%d(SP), BX", save+16))
		a.I("XORL", "R11, R11")
		if five { // the header pass used Y4
			a.I("MOVL", "$0x10101010, R14")
			a.I("VMOVD", "R14, X4")
			a.I("VPBROADCASTD", "X4, Y4")
		}
		a.Label(lp + "block")
		if spread {
			for _, w := range []string{"AX", "DX"} {
				for i := 0; i < (bs+63)/64; i++ {
					pfI(a, fmt.Sprintf("%d(%s)", rowsSpreadDist+64*i, w))
				}
			}
		} else {
			for i := 0; i < pf; i++ {
				pfI(a, fmt.Sprintf("%d(R13)", 64*i))
			}
			a.I("ADDQ", fmt.Sprintf("$%d, R13", 2*bs))
		}
		a.I("VPERMILPS", "$0x55, 64(SP)(R11*1), Y10")
		a.I("VFNMADD231PS", "96(SP)(R11*1), Y10, Y2")
		if five {
			a.I("VMOVDQU", "16(AX), Y5")
			a.I("VMOVDQU", "16(DX), Y6")
		}
		for j := 0; j < 4; j++ {
			a.I("VMOVDQU", fmt.Sprintf("%d(BX), Y12", 4+64*j))
			a.I("VMOVDQU", fmt.Sprintf("%d(BX), Y13", 36+64*j))
			for r, rr := range []struct{ w, sum, qh string }{{"AX", "Y15", "Y5"}, {"DX", "Y9", "Y6"}} {
				a.I("VMOVDQU", fmt.Sprintf("%d(%s), Y10", ql+32*j, rr.w))
				a.I("VPSRLW", "$4, Y10, Y11")
				a.I("VPAND", "Y14, Y10, Y10")
				a.I("VPAND", "Y14, Y11, Y11")
				if five {
					// bit 2j (low nibbles) and 2j+1 (high) of each qh byte to bit 4
					for h, dst := range []string{"Y10", "Y11"} {
						switch sh := 4 - (2*j + h); {
						case sh > 0:
							a.I("VPSLLW", fmt.Sprintf("$%d, %s, Y8", sh, rr.qh))
							a.I("VPAND", "Y4, Y8, Y8")
						case sh < 0:
							a.I("VPSRLW", fmt.Sprintf("$%d, %s, Y8", -sh, rr.qh))
							a.I("VPAND", "Y4, Y8, Y8")
						default:
							a.I("VPAND", "Y4", rr.qh, "Y8")
						}
						a.I("VPOR", "Y8", dst, dst)
					}
				}
				a.I("VPMADDUBSW", "Y12, Y10, Y10")
				a.I("VPMADDUBSW", "Y13, Y11, Y11")
				a.I("VPBROADCASTD", fmt.Sprintf("%d(SP)(R11*1), Y8", q4kScaleOff(2*j)+16*r))
				a.I("VPMADDWD", "Y8, Y10, Y10")
				a.I("VPBROADCASTD", fmt.Sprintf("%d(SP)(R11*1), Y8", q4kScaleOff(2*j+1)+16*r))
				a.I("VPMADDWD", "Y8, Y11, Y11")
				if j == 0 {
					a.I("VPADDD", "Y11, Y10", rr.sum)
				} else {
					a.I("VPADDD", "Y10", rr.sum, rr.sum)
					a.I("VPADDD", "Y11", rr.sum, rr.sum)
				}
			}
		}
		a.I("VCVTDQ2PS", "Y15, Y15")
		a.I("VBROADCASTSS", "64(SP)(R11*1), Y3")
		a.I("VFMADD231PS", "Y15, Y3, Y0")
		a.I("VCVTDQ2PS", "Y9, Y9")
		a.I("VBROADCASTSS", "80(SP)(R11*1), Y3")
		a.I("VFMADD231PS", "Y9, Y3, Y1")
		a.I("ADDQ", fmt.Sprintf("$%d, AX", bs))
		a.I("ADDQ", fmt.Sprintf("$%d, DX", bs))
		a.I("ADDQ", "$292, BX")
		a.I("ADDQ", "$128, R11")
		a.I("DECQ", "CX")
		a.I("JNZ", lp+"block")
		a.I("TESTQ", "R12, R12")
		a.I("JNZ", lp+"seg")
		store := func(acc, xacc, off, mem string) {
			if five {
				hsum8(a, acc, xacc, "X3")
				a.I("VADDSS", "X2", xacc, xacc)
				a.I("VMOVSS", xacc, mem)
				return
			}
			q4kStore(a, acc, xacc, "X2", off)
		}
		if spread {
			store("Y0", "X0", "", "(R9)")
			a.I("VEXTRACTF128", "$1, Y2, X2")
			store("Y1", "X1", "", "(R9)(R15*1)")
			a.I("ADDQ", "$4, R9")
			a.I("ADDQ", "wrb+8(FP), SI")
			a.I("DECQ", cnt)
			a.I("JNZ", lp+"pair")
			a.I("ADDQ", "R8, SI")
			a.I("ADDQ", "R15, R9")
			a.I("ANDQ", "$1, R10")
			a.I("MOVQ", "wrb+8(FP), R8")
			return
		}
		store("Y0", "X0", "0", "0(R9)")
		a.I("CMPQ", "R10, $1")
		a.I("JEQ", p+"done")
		a.I("VEXTRACTF128", "$1, Y2, X2")
		store("Y1", "X1", "4", "4(R9)")
		a.I("ADDQ", "$8, R9")
		a.I("LEAQ", "(SI)(R8*2), SI")
		a.I("SUBQ", "$2, R10")
		a.I("JMP", p+"pair")
	}
	if five && rowsSpread {
		a.I("MOVQ", "R10, R15")
		a.I("SHRQ", "$1, R15")
		a.I("JZ", p+"pair")
		a.I("MOVQ", "R15", cnt)
		a.I("IMULQ", "R15, R8")
		a.I("SHLQ", "$2, R15")
		steps(p+"s", true)
	}
	steps(p, false)
	a.Label(p + "done")
	a.I("VZEROUPPER")
	a.I("RET")
}

// q4kSeg is the number of super-blocks whose headers kqRowsQ4KAVX2
// unpacks in one pass before their chunks (128 bytes of stack each).
const q4kSeg = 16

// q4kScaleOff is the offset of row A's scale i in a super-block's
// header record (row B's is 16 on).
func q4kScaleOff(i int) int {
	if i < 4 {
		return 4 * i
	}
	return 32 + 4*(i-4)
}

// q4kHeader writes the header pass of one super-block of rows A (at AX)
// and B (at DX) against the activation block at BX into the 128-byte
// record at 0(SP)(R11*1):
//
//	0..63    the scales as dwords s | s<<16 (A's s0..s3, B's s0..s3, A's
//	         s4..s7, B's s4..s7), broadcast by the chunks;
//	64..95   [dA·d8, dmA·d8, -, -, dB·d8, dmB·d8, -, -];
//	96..127  cvt(mins·(bsum pairs)) (lanes 0..3 A, 4..7 B).
//
// Temporaries Y3..Y8, Y13. The chunks read the records a whole header
// pass later: broadcasts from a just-written stack slot (or scales
// shuffled out of registers) measured about 20% slower on the machine
// this was tuned on (store-to-load forwarding, vector ALU ops).
func q4kHeader(a *Asm, five bool) {
	a.I("VMOVDQU", "260(BX), X13")
	a.I("VPHADDW", "276(BX), X13, X13")
	a.I("VPERMQ", "$0x44, Y13, Y13")
	a.I("VMOVDQU", "(AX), X3")
	a.I("VINSERTI128", "$1, (DX), Y3, Y3")
	a.I("VPERMQ", "$0x08, Y3, Y4")
	a.I("VCVTPH2PS", "X4, Y4")
	a.I("VBROADCASTSS", "(BX), Y5")
	a.I("VMULPS", "Y5, Y4, Y4")
	a.I("VMOVUPS", "Y4, 64(SP)(R11*1)")
	a.I("VPSHUFD", "$0xED, Y3, Y6")
	a.I("VPSRLVD", "rkK4Shift<>(SB), Y6, Y6")
	a.I("VPAND", "rkK4MaskA<>(SB), Y6, Y6")
	a.I("VPSHUFD", "$0xA5, Y3, Y7")
	a.I("VPSRLD", "$2, Y7, Y7")
	a.I("VPAND", "rkK4MaskB<>(SB), Y7, Y7")
	a.I("VPOR", "Y7, Y6, Y6")
	a.I("VPSHUFB", "rkMinsZX<>(SB), Y6, Y7")
	a.I("VPMADDWD", "Y13, Y7, Y7")
	if five {
		a.I("VPHADDD", "Y7, Y7, Y7")
		a.I("VPHADDD", "Y7, Y7, Y7")
	}
	a.I("VCVTDQ2PS", "Y7, Y7")
	a.I("VMOVUPS", "Y7, 96(SP)(R11*1)")
	a.I("VPSHUFB", "rkScaleLo<>(SB), Y6, Y7")
	a.I("VPSHUFB", "rkScaleHi<>(SB), Y6, Y8")
	a.I("VMOVDQU", "Y7, 0(SP)(R11*1)")
	a.I("VMOVDQU", "Y8, 32(SP)(R11*1)")
}

// q4kStore stores hsum_float_8(ACC) + ((m0+m2)+(m1+m3)) of the 4 mins
// lanes M to OFF(R9); uses X3, X5.
func q4kStore(a *Asm, acc, xacc, m, off string) {
	a.I("VMOVAPS", m, "X5")
	hsum8(a, acc, xacc, "X3")
	a.I("VMOVHLPS", "X5, X5, X3")
	a.I("VADDPS", "X3, X5, X5")
	a.I("VMOVSHDUP", "X5, X3")
	a.I("VADDSS", "X3, X5, X5")
	a.I("VADDSS", "X5", xacc, xacc)
	a.I("VMOVSS", xacc, off+"(R9)")
}
