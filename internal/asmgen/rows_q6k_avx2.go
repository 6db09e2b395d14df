package main

import "fmt"

// kqRowsQ6KAVX2, the Q6_K decode row kernel of the AVX2 tier (formerly
// hand-written in dot_kquant_amd64.s), printed into rows_avx2_amd64.s.
// Rows go four at a time (rows i, q+i, 2q+i, 3q+i of q = rows/4 steps:
// rowsSpread), then a pair, then one: the four rows of a step share the activation block's d8 and negated bsums and one reduction
// tree for their results; each row's integer and float steps are the
// same whatever step it runs in.

// q6kRowsDoc documents kqRowsQ6KAVX2 in the generated file.
const q6kRowsDoc = `kqRowsQ6KAVX2(w *byte, wrb int, a *byte, y *float32, rows int, nb int)
Q6_K weights × Q8_K activations, float order of quant.DotQ6KQ8K (ggml's
AVX2 ggml_vec_dot_q6_K_q8_K): per super-block and row the 8 int32 lanes
sumi[k] = 32·(scale pairs · negated bsum pairs) + Σ over the 8 chunks of
scale(chunk, lane half) · (6-bit values 0..63 · q8, bytes 4k..4k+3), then
acc = FMA(cvt(sumi), d8·d, acc); result hsum_float_8(acc).
Per 128-element half: ql at 64n, 64n+32 and qh at 128+32n loaded once,
the four chunks' values ql&15 | (qh<<4)&0x30, ... (ggml's bit layout),
VPMADDUBSW against the activations (memory operands), VPMADDWD by the
chunk's two scale words (VPSHUFB of the half's scales, rkSplitShuf),
VPADDD.
Rows four at a time (float accumulators Y0, Y3, Y12, Y15), then two (Y0,
Y3), then one (Y0). Registers: Y1 the row's int32 sums, Y2 the negated
bsums of the block, Y4 d8·d, Y5 the row's 16 scale words, Y6 a half's 8
scale words in both lanes, Y7..Y9 ql / ql+32 / qh, Y10, Y11
temporaries, Y13 bytes 0x30, Y14 bytes 0x0F; AX row A, R8 wrb (in the
four-row steps the stride q·wrb between their rows), DX 3 times R8, BX
the activation block, CX blocks left, R11 the f16 d, R13 the prefetch
(pair and single-row steps), R12 the four-row steps left, R15 4·q.`

// rowsQ6KAVX2 writes kqRowsQ6KAVX2.
func rowsQ6KAVX2(a *Asm) {
	q6kSplitShuf(a)
	a.Blank()
	a.Comment(q6kRowsDoc)
	rowsQ6KAVX2Text(a)
}

// q6kSplitShuf writes the rkSplitShuf table of kqRowsQ6KAVX2.
func q6kSplitShuf(a *Asm) {
	a.Blank()
	a.Comment("rkSplitShuf: mask c (32 bytes at 32c) broadcasts word 2c of each 128-bit\nlane to the low lane's words and word 2c+1 to the high lane's.")
	for c := 0; c < 4; c++ {
		lo := uint64(2*(2*c)) | uint64(2*(2*c)+1)<<8
		hi := uint64(2*(2*c+1)) | uint64(2*(2*c+1)+1)<<8
		w := func(x uint64) uint64 { return x | x<<16 | x<<32 | x<<48 }
		for i, q := range []uint64{w(lo), w(lo), w(hi), w(hi)} {
			a.Raw("DATA rkSplitShuf<>+%d(SB)/8, $0x%016x", 32*c+8*i, q)
		}
	}
	a.Raw("GLOBL rkSplitShuf<>(SB), RODATA|NOPTR, $128")
}

// rowsQ6KAVX2Text writes the code of kqRowsQ6KAVX2 (its constants are
// rowsQ6KAVX2's).
func rowsQ6KAVX2Text(a *Asm) {
	a.Raw("TEXT ·kqRowsQ6KAVX2%s(SB), NOSPLIT, $0-48", rowsName)
	a.I("MOVQ", "w+0(FP), SI")
	a.I("MOVQ", "wrb+8(FP), R8")
	a.I("MOVQ", "a+16(FP), DI")
	a.I("MOVQ", "y+24(FP), R9")
	a.I("MOVQ", "rows+32(FP), R10")
	a.I("MOVL", "$0x0f0f0f0f, AX")
	a.I("VMOVD", "AX, X14")
	a.I("VPBROADCASTD", "X14, Y14")
	a.I("MOVL", "$0x30303030, AX")
	a.I("VMOVD", "AX, X13")
	a.I("VPBROADCASTD", "X13, Y13")
	a.I("LEAQ", "(R8)(R8*2), DX")
	for _, st := range []struct {
		n    int
		accs []string
	}{{4, []string{"Y0", "Y3", "Y12", "Y15"}}, {2, []string{"Y0", "Y3"}}, {1, []string{"Y0"}}} {
		l := fmt.Sprintf("q6k%d", st.n)
		next := map[int]string{4: "q6k2", 2: "q6k1", 1: "q6kdone"}[st.n]
		spread := rowsSpread && st.n == 4
		if spread {
			spreadEntry(a, "R15", "R12", next)
			a.Label(l)
		} else {
			a.Label(l)
			a.I("CMPQ", fmt.Sprintf("R10, $%d", st.n))
			a.I("JLT", next)
			a.I("LEAQ", fmt.Sprintf("%d(SI)(R8*%d), R13", rowsPF, st.n))
		}
		a.I("MOVQ", "SI, AX")
		a.I("MOVQ", "DI, BX")
		a.I("MOVQ", "nb+40(FP), CX")
		for _, acc := range st.accs {
			a.I("VXORPS", acc, acc, acc)
		}
		a.Label(l + "block")
		if spread {
			spreadPF(a, 210)
		} else if st.n > 1 {
			for i := 0; i < (210*st.n+63)/64; i++ {
				pfI(a, fmt.Sprintf("%d(R13)", 64*i))
			}
			a.I("ADDQ", fmt.Sprintf("$%d, R13", 210*st.n))
		}
		a.I("VPXOR", "Y2, Y2, Y2")
		a.I("VPSUBW", "260(BX), Y2, Y2")
		for r, acc := range st.accs {
			q6kRowBlock(a, r, acc)
		}
		a.I("ADDQ", "$210, AX")
		a.I("ADDQ", "$292, BX")
		a.I("DECQ", "CX")
		a.I("JNZ", l+"block")
		switch st.n {
		case 4:
			quadHsum(a, st.accs, "", "")
		case 2:
			hsum8(a, "Y0", "X0", "X2")
			a.I("VMOVSS", "X0, (R9)")
			hsum8(a, "Y3", "X3", "X2")
			a.I("VMOVSS", "X3, 4(R9)")
		default:
			hsum8(a, "Y0", "X0", "X2")
			a.I("VMOVSS", "X0, (R9)")
		}
		if spread {
			spreadNext(a, "R15", "R12", l)
			continue
		}
		a.I("ADDQ", fmt.Sprintf("$%d, R9", 4*st.n))
		a.I("LEAQ", fmt.Sprintf("(SI)(R8*%d), SI", st.n))
		a.I("SUBQ", fmt.Sprintf("$%d, R10", st.n))
		a.I("JMP", l)
	}
	a.Label("q6kdone")
	a.I("VZEROUPPER")
	a.I("RET")
}

// q6kRowBlock writes one Q6_K super-block of row r of the step (see
// q4kQuadRow) against the activation block at BX: ACC += d8·d × sumi.
func q6kRowBlock(a *Asm, r int, acc string) {
	row := func(off int) string { return q4kQuadRow(r, off) }
	a.I("MOVWLZX", row(208), "R11")
	a.I("VMOVD", "R11, X4")
	a.I("VCVTPH2PS", "X4, X4")
	a.I("VMULSS", "(BX), X4, X4")
	a.I("VBROADCASTSS", "X4, Y4")
	a.I("VPMOVSXBW", row(192), "Y5")
	// -32·(sc·bsums) as (sc·(-bsums))·32: exact, |sc·bsum| < 2^19.
	a.I("VPMADDWD", "Y2, Y5, Y1")
	a.I("VPSLLD", "$5, Y1, Y1")
	for n := 0; n < 2; n++ {
		a.I("VPERMQ", []string{"$0x44", "$0xEE"}[n], "Y5, Y6")
		ql, qh, act := 64*n, 128+32*n, 4+128*n
		a.I("VMOVDQU", row(ql), "Y7")
		a.I("VMOVDQU", row(ql+32), "Y8")
		a.I("VMOVDQU", row(qh), "Y9")
		for c := 0; c < 4; c++ {
			src := []string{"Y7", "Y8", "Y7", "Y8"}[c]
			if c < 2 {
				a.I("VPAND", "Y14", src, "Y10")
			} else {
				a.I("VPSRLW", "$4", src, "Y10")
				a.I("VPAND", "Y14, Y10, Y10")
			}
			switch c {
			case 0:
				a.I("VPSLLW", "$4, Y9, Y11")
				a.I("VPAND", "Y13, Y11, Y11")
			case 1:
				a.I("VPSLLW", "$2, Y9, Y11")
				a.I("VPAND", "Y13, Y11, Y11")
			case 2:
				a.I("VPAND", "Y13, Y9, Y11")
			case 3:
				a.I("VPSRLW", "$2, Y9, Y11")
				a.I("VPAND", "Y13, Y11, Y11")
			}
			a.I("VPOR", "Y11, Y10, Y10")
			a.I("VPMADDUBSW", fmt.Sprintf("%d(BX), Y10, Y10", act+32*c))
			a.I("VPSHUFB", fmt.Sprintf("rkSplitShuf<>+%d(SB), Y6, Y11", 32*c))
			a.I("VPMADDWD", "Y11, Y10, Y10")
			a.I("VPADDD", "Y10, Y1, Y1")
		}
	}
	a.I("VCVTDQ2PS", "Y1, Y1")
	a.I("VFMADD231PS", "Y1, Y4", acc)
}
