package main

import "fmt"

// flasht_amd64.s: the score tiles of flash attention over an f16 cache
// (backends/cpu/flash.go, flashDot) and two small helpers of its f16 path
// (the merge of the block partials and the rounding of the queries through
// f16). The scores are register-blocked over queries and keys: each
// converted key piece feeds the rq queries held in registers, and the
// accumulators of four keys are reduced together by VHADDPS, the four
// scores of a query stored at once. flashDot's order per score: eight lanes,
// lane l the FMA chain over d ≡ l (mod 8) in increasing d from +0, then
// ((l0+l1)+(l2+l3)) + ((l4+l5)+(l6+l7)) — which the VHADDPS tree computes
// for each of the four accumulators at once. AVX2 instructions only (VEX):
// the AVX-512 tier runs them for the keys past its ZMM tiles' groups of
// eight (flashz.go, two keys' lanes per ZMM register).
func init() {
	register("flasht_amd64.s", "!purego", func(a *Asm) {
		a.Blank()
		a.Comment(`Score tiles, partial merge and query rounding of flash attention over an
f16 cache (flash.go). Generated: one score kernel per number of queries per
pass (rq), listed in f32simd_amd64.go.`)
		for rq := 1; rq <= scoresTMax; rq++ {
			scoresT(a, rq)
		}
		mergeT(a)
		roundF16T(a)
	})
}

// scoresTMax is the most queries per pass of the score tiles: 4 keys × 3
// queries of accumulators, 3 query pieces and one converted key piece fill
// the 16 YMM registers.
const scoresTMax = 3

// scoresT writes scoresF16T<rq>AVX2(sc *float32, scs int, k *byte, kstride,
// n int, q *float32, hd int): sc[r*scs+j] = flashDot(float32(k_j), q_r) for
// r < rq, j < n, k_j the hd halves at k + 2·j·kstride, q_r = q[r*hd:], hd a
// positive multiple of 8. Keys in groups of four (accumulator Y(4r+c) for
// query r, key c), then the n mod 4 last keys one at a time (Y(4r)).
func scoresT(a *Asm, rq int) {
	name := fmt.Sprintf("scoresF16T%dAVX2", rq)
	acc := func(r, c int) string { return fmt.Sprintf("Y%d", 4*r+c) }
	accx := func(r, c int) string { return fmt.Sprintf("X%d", 4*r+c) }
	qr := func(r int) string { return fmt.Sprintf("Y%d", 12+r) }
	const tmp = "Y15"
	kaddr := func(c int) string {
		return []string{"(R11)", "(R11)(R9*1)", "(R11)(R9*2)", "(R11)(R13*1)"}[c]
	}
	qaddr := func(r int) string { return []string{"(R12)", "(R12)(BX*1)", "(R12)(BX*2)"}[r] }
	saddr := func(r int) string { return []string{"(DI)", "(DI)(R8*1)", "(DI)(R8*2)"}[r] }
	a.Blank()
	a.Comment(fmt.Sprintf(`func %s(sc *float32, scs int, k *byte, kstride, n int, q *float32, hd int)
Scores of %d queries over n f16 rows in flashDot's order (see scoresT in
internal/asmgen/flasht.go). Registers: DI sc at key j, R8 scs bytes, SI k_j,
R9 kstride bytes (R13 three times it), CX keys left, DX q, BX hd·4 (query
stride), R10 hd/8, AX piece counter, R11 piece of k_j, R12 piece of q.
Accumulators Y0..Y%d (query r, key c in Y(4r+c)), query pieces Y12.., the
converted key piece in Y15.`, name, rq, 4*rq-1))
	fmt.Fprintf(&a.b, "TEXT ·%s(SB), NOSPLIT, $0-56\n", name)
	a.I("MOVQ", "sc+0(FP), DI")
	a.I("MOVQ", "scs+8(FP), R8")
	a.I("SHLQ", "$2, R8")
	a.I("MOVQ", "k+16(FP), SI")
	a.I("MOVQ", "kstride+24(FP), R9")
	a.I("SHLQ", "$1, R9")
	a.I("LEAQ", "(R9)(R9*2), R13")
	a.I("MOVQ", "n+32(FP), CX")
	a.I("MOVQ", "q+40(FP), DX")
	a.I("MOVQ", "hd+48(FP), BX")
	a.I("MOVQ", "BX, R10")
	a.I("SHRQ", "$3, R10")
	a.I("SHLQ", "$2, BX")
	a.Blank()
	a.Label(name + "_group")
	a.I("CMPQ", "CX, $4")
	a.I("JLT", name+"_tail")
	for r := 0; r < rq; r++ {
		for c := 0; c < 4; c++ {
			a.I("VXORPS", acc(r, c)+", "+acc(r, c)+", "+acc(r, c))
		}
	}
	// The next group's rows (the first 256 bytes of each).
	a.I("LEAQ", "(SI)(R9*4), R11")
	for c := 0; c < 4; c++ {
		for off := 0; off < 256; off += 64 {
			a.I("PREFETCHT0", fmt.Sprintf("%d%s", off, kaddr(c)))
		}
	}
	a.I("MOVQ", "SI, R11")
	a.I("MOVQ", "DX, R12")
	a.I("MOVQ", "R10, AX")
	a.Label(name + "_gd")
	for r := 0; r < rq; r++ {
		a.I("VMOVUPS", qaddr(r)+", "+qr(r))
	}
	for c := 0; c < 4; c++ {
		a.I("VCVTPH2PS", kaddr(c)+", "+tmp)
		for r := 0; r < rq; r++ {
			a.I("VFMADD231PS", qr(r)+", "+tmp+", "+acc(r, c))
		}
	}
	a.I("ADDQ", "$16, R11")
	a.I("ADDQ", "$32, R12")
	a.I("DECQ", "AX")
	a.I("JNZ", name+"_gd")
	// Y(4r) = hadd(hadd(A0, A1), hadd(A2, A3)); its halves added give the
	// four scores of query r.
	for r := 0; r < rq; r++ {
		a.I("VHADDPS", acc(r, 1)+", "+acc(r, 0)+", "+acc(r, 0))
		a.I("VHADDPS", acc(r, 3)+", "+acc(r, 2)+", "+acc(r, 2))
		a.I("VHADDPS", acc(r, 2)+", "+acc(r, 0)+", "+acc(r, 0))
		a.I("VEXTRACTF128", "$1, "+acc(r, 0)+", "+accx(r, 1))
		a.I("VADDPS", accx(r, 1)+", "+accx(r, 0)+", "+accx(r, 0))
		a.I("VMOVUPS", accx(r, 0)+", "+saddr(r))
	}
	a.I("ADDQ", "$16, DI")
	a.I("LEAQ", "(SI)(R9*4), SI")
	a.I("SUBQ", "$4, CX")
	a.I("JMP", name+"_group")
	a.Blank()
	a.Label(name + "_tail")
	a.I("TESTQ", "CX, CX")
	a.I("JEQ", name+"_done")
	for r := 0; r < rq; r++ {
		a.I("VXORPS", acc(r, 0)+", "+acc(r, 0)+", "+acc(r, 0))
	}
	a.I("MOVQ", "SI, R11")
	a.I("MOVQ", "DX, R12")
	a.I("MOVQ", "R10, AX")
	a.Label(name + "_td")
	a.I("VCVTPH2PS", "(R11), "+tmp)
	for r := 0; r < rq; r++ {
		a.I("VFMADD231PS", qaddr(r)+", "+tmp+", "+acc(r, 0))
	}
	a.I("ADDQ", "$16, R11")
	a.I("ADDQ", "$32, R12")
	a.I("DECQ", "AX")
	a.I("JNZ", name+"_td")
	// The same tree on one accumulator: lane 0 of hadd(hadd(A, A), ·)'s
	// halves added.
	for r := 0; r < rq; r++ {
		a.I("VHADDPS", acc(r, 0)+", "+acc(r, 0)+", "+acc(r, 0))
		a.I("VHADDPS", acc(r, 0)+", "+acc(r, 0)+", "+acc(r, 0))
		a.I("VEXTRACTF128", "$1, "+acc(r, 0)+", "+accx(r, 1))
		a.I("VADDSS", accx(r, 1)+", "+accx(r, 0)+", "+accx(r, 0))
		a.I("VMOVSS", accx(r, 0)+", "+saddr(r))
	}
	a.I("ADDQ", "$4, DI")
	a.I("ADDQ", "R9, SI")
	a.I("DECQ", "CX")
	a.I("JMP", name+"_tail")
	a.Blank()
	a.Label(name + "_done")
	a.I("VZEROUPPER")
	a.I("RET")
}

// mergeT writes flashMergeAVX2(y, o, w *float32, nb, hd int, sum float32):
// y[d] = acc[d] / sum with acc[d] = Σ_b float32(w[b]·o[b*hd+d]) added in
// increasing b from +0 (a VMULPS then a VADDPS per block: flashMerge's
// rounding), hd a positive multiple of 8, nb ≥ 1.
func mergeT(a *Asm) {
	a.Blank()
	a.Comment(`func flashMergeAVX2(y, o, w *float32, nb, hd int, sum float32)
The merge of flash attention's block partials (flashMerge in flash.go) for
hd a multiple of 8: DI y, SI o at d, DX w, CX blocks, BX hd·4 (block
stride), R10 pieces left, R11 o_b, R12 w_b, AX blocks left. Y0 the piece's
sum, Y1 the product, Y2 1/sum's divisor (sum broadcast).`)
	a.Raw("TEXT ·flashMergeAVX2(SB), NOSPLIT, $0-44")
	a.I("MOVQ", "y+0(FP), DI")
	a.I("MOVQ", "o+8(FP), SI")
	a.I("MOVQ", "w+16(FP), DX")
	a.I("MOVQ", "nb+24(FP), CX")
	a.I("MOVQ", "hd+32(FP), BX")
	a.I("MOVQ", "BX, R10")
	a.I("SHRQ", "$3, R10")
	a.I("SHLQ", "$2, BX")
	a.I("VBROADCASTSS", "sum+40(FP), Y2")
	a.Label("flashMergeAVX2_piece")
	a.I("VXORPS", "Y0, Y0, Y0")
	a.I("MOVQ", "SI, R11")
	a.I("MOVQ", "DX, R12")
	a.I("MOVQ", "CX, AX")
	a.Label("flashMergeAVX2_block")
	a.I("VBROADCASTSS", "(R12), Y1")
	a.I("VMULPS", "(R11), Y1, Y1")
	a.I("VADDPS", "Y1, Y0, Y0")
	a.I("ADDQ", "BX, R11")
	a.I("ADDQ", "$4, R12")
	a.I("DECQ", "AX")
	a.I("JNZ", "flashMergeAVX2_block")
	a.I("VDIVPS", "Y2, Y0, Y0")
	a.I("VMOVUPS", "Y0, (DI)")
	a.I("ADDQ", "$32, DI")
	a.I("ADDQ", "$32, SI")
	a.I("DECQ", "R10")
	a.I("JNZ", "flashMergeAVX2_piece")
	a.I("VZEROUPPER")
	a.I("RET")
}

// roundF16T writes roundF16AVX2(dst, src *float32, n int) int: dst[i] =
// float32(f16(src[i])) (VCVTPS2PH round to nearest even, then the exact
// VCVTPH2PS: the bits of quant.FP16ToFP32(quant.FP32ToFP16(x)) for every x
// but NaN) in chunks of 8, stopping before the first chunk holding a NaN or
// before the last partial chunk; returns how many it did (the caller does
// the rest in Go).
func roundF16T(a *Asm) {
	a.Blank()
	a.Comment(`func roundF16AVX2(dst, src *float32, n int) int
Chunks of 8: Y0 the source, a NaN test (VCMPPS unordered into Y1), VCVTPS2PH
$0 into X2 and back. DI dst, SI src, CX n, AX floats done.`)
	a.Raw("TEXT ·roundF16AVX2(SB), NOSPLIT, $0-32")
	a.I("MOVQ", "dst+0(FP), DI")
	a.I("MOVQ", "src+8(FP), SI")
	a.I("MOVQ", "n+16(FP), CX")
	a.I("XORQ", "AX, AX")
	a.Label("roundF16AVX2_loop")
	a.I("LEAQ", "8(AX), DX")
	a.I("CMPQ", "DX, CX")
	a.I("JGT", "roundF16AVX2_done")
	a.I("VMOVUPS", "(SI)(AX*4), Y0")
	a.I("VCMPPS", "$3, Y0, Y0, Y1")
	a.I("VMOVMSKPS", "Y1, DX")
	a.I("TESTL", "DX, DX")
	a.I("JNZ", "roundF16AVX2_done")
	a.I("VCVTPS2PH", "$0, Y0, X2")
	a.I("VCVTPH2PS", "X2, Y2")
	a.I("VMOVUPS", "Y2, (DI)(AX*4)")
	a.I("ADDQ", "$8, AX")
	a.I("JMP", "roundF16AVX2_loop")
	a.Label("roundF16AVX2_done")
	a.I("MOVQ", "AX, ret+24(FP)")
	a.I("VZEROUPPER")
	a.I("RET")
}
