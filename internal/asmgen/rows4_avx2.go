package main

import "fmt"

// The four-row step of kqRowsQ4KAVX2 (see rowsQ4KAVX2): rows A..D at
// AX, AX+S, AX+2·S, AX+3·S (S = q·wrb for the q = rows/4 steps, see
// rowsSpread; R8 holds S and DX 3·S during the steps) share every
// activation load, the
// activation half of the header work (bsum pairs, d8) and one reduction
// tree for their four results; fewer than four rows left go to the pair
// loop. Measured on the machine of rows_avx2.go (hot, K=1024) the pair
// kernel spends about a third of its time outside the chunks' integer
// work (the header pass, the per-pair set-up and stores), so this is
// where the step trims.

// q4kQuadRow is the addressing of row r of a quad (AX row A, R8 the row
// stride of the step, DX 3 times it) at byte offset off.
func q4kQuadRow(r, off int) string {
	switch r {
	case 0:
		return fmt.Sprintf("%d(AX)", off)
	case 1:
		return fmt.Sprintf("%d(AX)(R8*1)", off)
	case 2:
		return fmt.Sprintf("%d(AX)(R8*2)", off)
	}
	return fmt.Sprintf("%d(AX)(DX*1)", off)
}

// rowsQ4KQuad writes the quad loop (label q4kquad); it goes on to
// q4kpair with the 0..3 rows left after the q = rows/4 steps (R15 holds
// 4·q, the stride of the four results; the step count is at save+16). Registers: Y0, Y1, Y3, Y4
// rows A..D float accumulators; Y2 (A lanes 0..3, B 4..7) and Y5 (C, D)
// the mins; Y6..Y9 rows A..D int32 sums; Y12/Y13 the chunk's
// activations; Y10, Y11, Y15 temporaries; Y14 the nibble mask. Per
// super-block a 256-byte stack record: the scale dwords of rows A,B at 0
// and of C,D at 64, cvt(mins·bsum pairs) of A,B at 128 and of C,D at 160,
// [dA dmA dC dmC dB dmB dD dmD]·d8 at 192.
func rowsQ4KQuad(a *Asm) {
	const seg, rec = q4kSeg, 256
	save := seg * rec
	if rowsSpread {
		spreadEntry(a, "R15", fmt.Sprintf("%d(SP)", save+16), "q4kpair")
		a.Label("q4kquad")
	} else {
		a.Label("q4kquad")
		a.I("CMPQ", "R10, $4")
		a.I("JLT", "q4kpair")
		a.I("LEAQ", "(R8)(R8*2), DX")
		a.I("LEAQ", fmt.Sprintf("%d(SI)(R8*4), R13", rowsPF))
	}
	a.I("MOVQ", "SI, AX")
	a.I("MOVQ", "DI, BX")
	a.I("MOVQ", "nb+40(FP), R12")
	for _, y := range []string{"Y0", "Y1", "Y2", "Y3", "Y4", "Y5"} {
		a.I("VXORPS", y, y, y)
	}
	a.Label("q4kqseg")
	a.I("MOVQ", fmt.Sprintf("$%d, CX", seg))
	a.I("CMPQ", "R12, CX")
	a.I("CMOVQLT", "R12, CX")
	a.I("SUBQ", "CX, R12")
	a.I("MOVQ", fmt.Sprintf("AX, %d(SP)", save))
	a.I("MOVQ", fmt.Sprintf("BX, %d(SP)", save+8))
	a.I("MOVQ", "CX, R14")
	a.I("XORL", "R11, R11")
	// The header pass keeps its constants in registers (Y14's nibble
	// mask is put back after it).
	a.I("VMOVDQU", "rkK4Shift<>(SB), Y10")
	a.I("VMOVDQU", "rkK4MaskA<>(SB), Y11")
	a.I("VMOVDQU", "rkK4MaskB<>(SB), Y14")
	a.I("VMOVDQU", "rkMinsZX<>(SB), Y15")
	a.Label("q4kqhdr")
	// The activation half, once for the four rows: bsum pairs (Y13;
	// VPMADDWD by ones, VPACKSSDW and VPERMQ give VPHADDW's words
	// without VPHADDW, about 2 cycles a VPHADDW on the machine this was
	// tuned on) and d8 (Y12).
	a.I("VMOVDQU", "260(BX), Y13")
	a.I("VPMADDWD", "rkOnes<>(SB), Y13, Y13")
	a.I("VPACKSSDW", "Y13, Y13, Y13")
	a.I("VPERMQ", "$0x88, Y13, Y13")
	a.I("VBROADCASTSS", "(BX), Y12")
	// The rows' headers: Y6 = [A|B], Y7 = [C|D]; their f16 d|dmin in one
	// VCVTPH2PS: [dA dmA dC dmC dB dmB dD dmD]·d8 at 192.
	a.I("VMOVDQU", q4kQuadRow(0, 0), "X6")
	a.I("VINSERTI128", "$1", q4kQuadRow(1, 0), "Y6, Y6")
	a.I("VMOVDQU", q4kQuadRow(2, 0), "X7")
	a.I("VINSERTI128", "$1", q4kQuadRow(3, 0), "Y7, Y7")
	a.I("VPUNPCKLDQ", "Y7, Y6, Y8")
	a.I("VPERMQ", "$0x08, Y8, Y8")
	a.I("VCVTPH2PS", "X8, Y8")
	a.I("VMULPS", "Y12, Y8, Y8")
	a.I("VMOVUPS", "Y8, 192(SP)(R11*1)")
	q4kPairScales(a, "Y6", 0, 128)
	q4kPairScales(a, "Y7", 64, 160)
	a.I("ADDQ", "$144, AX")
	a.I("ADDQ", "$292, BX")
	a.I("ADDQ", fmt.Sprintf("$%d, R11", rec))
	a.I("DECQ", "R14")
	a.I("JNZ", "q4kqhdr")
	a.I("MOVL", "$0x0f0f0f0f, R14")
	a.I("VMOVD", "R14, X14")
	a.I("VPBROADCASTD", "X14, Y14")
	a.I("MOVQ", fmt.Sprintf("%d(SP), AX", save))
	a.I("MOVQ", fmt.Sprintf("%d(SP), BX", save+8))
	a.I("XORL", "R11, R11")
	a.Label("q4kqblock")
	if rowsSpread {
		spreadPF(a, 144)
	} else {
		for i := 0; i < 9; i++ {
			pfI(a, fmt.Sprintf("%d(R13)", 64*i))
		}
		a.I("ADDQ", "$576, R13")
	}
	a.I("VPERMILPS", "$0x55, 192(SP)(R11*1), Y10")
	a.I("VFNMADD231PS", "128(SP)(R11*1), Y10, Y2")
	a.I("VPERMILPS", "$0xFF, 192(SP)(R11*1), Y10")
	a.I("VFNMADD231PS", "160(SP)(R11*1), Y10, Y5")
	sums := []string{"Y6", "Y7", "Y8", "Y9"}
	for j := 0; j < 4; j++ {
		a.I("VMOVDQU", fmt.Sprintf("%d(BX), Y12", 4+64*j))
		a.I("VMOVDQU", fmt.Sprintf("%d(BX), Y13", 36+64*j))
		for r := 0; r < 4; r++ {
			base := 64*(r/2) + 16*(r%2)
			a.I("VMOVDQU", q4kQuadRow(r, 16+32*j), "Y10")
			a.I("VPSRLW", "$4, Y10, Y11")
			a.I("VPAND", "Y14, Y10, Y10")
			a.I("VPAND", "Y14, Y11, Y11")
			a.I("VPMADDUBSW", "Y12, Y10, Y10")
			a.I("VPMADDUBSW", "Y13, Y11, Y11")
			a.I("VPBROADCASTD", fmt.Sprintf("%d(SP)(R11*1), Y15", base+q4kScaleOff(2*j)))
			a.I("VPMADDWD", "Y15, Y10, Y10")
			a.I("VPBROADCASTD", fmt.Sprintf("%d(SP)(R11*1), Y15", base+q4kScaleOff(2*j+1)))
			a.I("VPMADDWD", "Y15, Y11, Y11")
			if j == 0 {
				a.I("VPADDD", "Y11, Y10", sums[r])
			} else {
				a.I("VPADDD", "Y10", sums[r], sums[r])
				a.I("VPADDD", "Y11", sums[r], sums[r])
			}
		}
	}
	for r, acc := range []string{"Y0", "Y1", "Y3", "Y4"} {
		a.I("VCVTDQ2PS", sums[r], sums[r])
		a.I("VBROADCASTSS", fmt.Sprintf("%d(SP)(R11*1), Y15", 192+8*(r/2)+16*(r%2)))
		a.I("VFMADD231PS", sums[r], "Y15", acc)
	}
	a.I("ADDQ", "$144, AX")
	a.I("ADDQ", "$292, BX")
	a.I("ADDQ", fmt.Sprintf("$%d, R11", rec))
	a.I("DECQ", "CX")
	a.I("JNZ", "q4kqblock")
	a.I("TESTQ", "R12, R12")
	a.I("JNZ", "q4kqseg")
	q4kQuadStore(a)
	if rowsSpread {
		spreadNext(a, "R15", fmt.Sprintf("%d(SP)", save+16), "q4kquad")
		return
	}
	a.I("ADDQ", "$16, R9")
	a.I("LEAQ", "(SI)(R8*4), SI")
	a.I("SUBQ", "$4, R10")
	a.I("JMP", "q4kquad")
}

// rowsSpread: the four rows of a step are a quarter of the range apart
// (rows i, q+i, 2q+i, 3q+i of q = rows/4 steps), so each of the four
// streams reads consecutive rows: four sequential streams, which the
// hardware prefetcher follows, where four neighbouring rows (each
// super-block of row A, then B's, C's, D's, a row's length apart) read
// back and forth inside the same few pages and it does not. Measured on
// the machine of rows_avx2.go (BenchmarkDecode-style 1 GiB matrix,
// kernel GB/s over a plain streaming read's, medians of alternated
// runs): a load-only loop over four neighbouring rows reached 0.6-0.75 of
// the read whatever its software prefetch (kind, distance), one over
// four spread rows 0.93-1.0; the Q4_K kernel went from ~0.80 to ~0.95.
var rowsSpread = true

// rowsSpreadDist is how far ahead of each of a spread step's four streams
// its lines are prefetched (1-3 KiB measured best; 4-8 KiB and none
// slower); rowsSpreadPF the lines per stream and super-block (0: enough
// to cover the super-block).
var (
	rowsSpreadDist = 2048
	rowsSpreadPF   = 0
)

// spreadEntry writes the set-up of a spread quad loop: q = rows/4 (in
// the counter cnt; to skip if 0), R8 = q·wrb (the row stride inside a
// step), DX = 3·q·wrb, ys (a register) = 4·q (the stride of the results).
func spreadEntry(a *Asm, ys, cnt, skip string) {
	a.I("MOVQ", "R10", ys)
	a.I("SHRQ", "$2", ys)
	a.I("JZ", skip)
	a.I("MOVQ", ys, cnt)
	a.I("IMULQ", ys, "R8")
	a.I("SHLQ", "$2", ys)
	a.I("LEAQ", "(R8)(R8*2), DX")
}

// spreadPF writes the prefetches of a spread step's super-block of bs
// bytes a row: rowsSpreadPF lines of each stream, rowsSpreadDist ahead.
func spreadPF(a *Asm, bs int) {
	n := rowsSpreadPF
	if n == 0 {
		n = (bs + 63) / 64
	}
	for r := 0; r < 4; r++ {
		for i := 0; i < n; i++ {
			pfI(a, q4kQuadRow(r, rowsSpreadDist+64*i))
		}
	}
}

// spreadNext writes the end of a spread step: the next row of each
// stream, to top while steps are left; after the last, SI, R9 and R10
// move to the 0..3 rows left and R8, DX get back wrb, 3·wrb.
func spreadNext(a *Asm, ys, cnt, top string) {
	a.I("ADDQ", "$4, R9")
	a.I("ADDQ", "wrb+8(FP), SI")
	a.I("DECQ", cnt)
	a.I("JNZ", top)
	a.I("ADDQ", "DX, SI")
	a.I("LEAQ", "(R9)("+ys+"*2), R9")
	a.I("ADDQ", ys, "R9")
	a.I("ANDQ", "$3, R10")
	a.I("MOVQ", "wrb+8(FP), R8")
	a.I("LEAQ", "(R8)(R8*2), DX")
}

// q4kPairScales unpacks the scales and mins of the two rows whose
// headers are in H (row A's low lane, B's high lane; bsum pairs in Y13)
// into the record at R11: the scales as dwords s | s<<16 at sc (A's
// s0..s3, B's s0..s3, A's s4..s7, B's s4..s7: q4kScaleOff),
// cvt(mins·(bsum pairs)) at mn (lanes 0..3 A, 4..7 B). Constants:
// Y10 rkK4Shift, Y11 rkK4MaskA, Y14 rkK4MaskB, Y15 rkMinsZX; temporaries
// Y8, Y9.
func q4kPairScales(a *Asm, h string, sc, mn int) {
	at := func(o int) string { return fmt.Sprintf("%d(SP)(R11*1)", o) }
	a.I("VPSHUFD", "$0xED", h, "Y8")
	a.I("VPSRLVD", "Y10, Y8, Y8")
	a.I("VPAND", "Y11, Y8, Y8")
	a.I("VPSHUFD", "$0xA5", h, "Y9")
	a.I("VPSRLD", "$2, Y9, Y9")
	a.I("VPAND", "Y14, Y9, Y9")
	a.I("VPOR", "Y9, Y8, Y8")
	a.I("VPSHUFB", "Y15, Y8, Y9")
	a.I("VPMADDWD", "Y13, Y9, Y9")
	a.I("VCVTDQ2PS", "Y9, Y9")
	a.I("VMOVUPS", "Y9", at(mn))
	a.I("VPSHUFB", "rkScaleLo<>(SB), Y8, Y9")
	a.I("VMOVDQU", "Y9", at(sc))
	a.I("VPSHUFB", "rkScaleHi<>(SB), Y8, Y9")
	a.I("VMOVDQU", "Y9", at(sc+32))
}

// q4kQuadStore stores the four results of a Q4_K quad to 0..15(R9):
// per row hsum_float_8(acc) + ((m0+m2)+(m1+m3)) (see quadHsum).
func q4kQuadStore(a *Asm) { quadHsum(a, []string{"Y0", "Y1", "Y3", "Y4"}, "Y2", "Y5") }

// quadHsum stores to 0..15(R9) the four results hsum_float_8(acc_r) of
// the accumulators of rows A..D, plus, if mAB and mCD are named (the mins
// of rows A, B in lanes 0..3, 4..7 and of C, D), ((m0+m2)+(m1+m3)) of
// each row's mins: the steps of hsum8 and q4kStore on the four rows at
// once, a transpose-and-add tree in which each add has the same two
// operands, in the same source order, as the row's own steps.
// Temporaries Y6..Y11 (and Y12, Y13 with mins); the accumulators must not
// be among them.
func quadHsum(a *Asm, acc []string, mAB, mCD string) {
	// [A.lo|B.lo] + [A.hi|B.hi] (hi first, as hsum8), same for C, D.
	a.I("VPERM2F128", "$0x20", acc[1], acc[0], "Y6")
	a.I("VPERM2F128", "$0x31", acc[1], acc[0], "Y7")
	a.I("VADDPS", "Y6, Y7, Y6")
	a.I("VPERM2F128", "$0x20", acc[3], acc[2], "Y8")
	a.I("VPERM2F128", "$0x31", acc[3], acc[2], "Y9")
	a.I("VADDPS", "Y8, Y9, Y8")
	// Y6 = [tA|tB], Y8 = [tC|tD]: lanes (0+2), (1+3) of each row:
	// [uA vA uC vC | uB vB uD vD].
	a.I("VSHUFPS", "$0x44, Y8, Y6, Y10")
	a.I("VSHUFPS", "$0xEE, Y8, Y6, Y11")
	a.I("VADDPS", "Y11, Y10, Y10")
	if mAB == "" {
		// u + v: [rA rC rA rC | rB rD rB rD], then [rA rB rC rD].
		a.I("VSHUFPS", "$0x88, Y10, Y10, Y6")
		a.I("VSHUFPS", "$0xDD, Y10, Y10, Y7")
		a.I("VADDPS", "Y7, Y6, Y6")
	} else {
		// The mins the same way: [mA0+mA2, mA1+mA3, mC.., mC.. | B, D].
		a.I("VSHUFPS", "$0x44", mCD, mAB, "Y12")
		a.I("VSHUFPS", "$0xEE", mCD, mAB, "Y13")
		a.I("VADDPS", "Y13, Y12, Y12")
		// u + v: [sA sC mA mC | sB sD mB mD].
		a.I("VSHUFPS", "$0x88, Y12, Y10, Y6")
		a.I("VSHUFPS", "$0xDD, Y12, Y10, Y7")
		a.I("VADDPS", "Y7, Y6, Y6")
		// sum + mins.
		a.I("VPERMILPS", "$0x4E, Y6, Y7")
		a.I("VADDPS", "Y7, Y6, Y6")
	}
	a.I("VEXTRACTF128", "$1, Y6, X7")
	a.I("VUNPCKLPS", "X7, X6, X6")
	if rowsSpread {
		// rows A..D's results 4·q bytes apart (R15; R14 scratch).
		a.I("VMOVSS", "X6, (R9)")
		a.I("VEXTRACTPS", "$1, X6, (R9)(R15*1)")
		a.I("VEXTRACTPS", "$2, X6, (R9)(R15*2)")
		a.I("LEAQ", "(R9)(R15*2), R14")
		a.I("VEXTRACTPS", "$3, X6, (R14)(R15*1)")
		return
	}
	a.I("VMOVUPS", "X6, (R9)")
}
