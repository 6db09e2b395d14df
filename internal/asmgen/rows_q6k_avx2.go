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
Rows four at a time (float accumulators Y0, Y3, Y12, Y15; the step's
headers unpacked first into stack records, see q6kQuad in
internal/asmgen/rows_q6k_avx2.go), then two (Y0,
Y3), then one (Y0). Registers of the pair and one-row steps: Y1 the row's int32 sums, Y2 the negated
bsums of the block, Y4 d8·d, Y5 the row's 16 scale words, Y6 a half's 8
scale words in both lanes, Y7..Y9 ql / ql+32 / qh, Y10, Y11
temporaries, Y13 bytes 0x30, Y14 bytes 0x0F; AX row A, R8 wrb (in the
four-row steps the stride q·wrb between their rows), DX 3 times R8, BX
the activation block, CX blocks left, R11 the f16 d, R13 the prefetch
(pair and single-row steps), R15 4·q.`

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
	a.Raw("TEXT ·kqRowsQ6KAVX2%s(SB), $%d-48", rowsName, q6kSeg*q6kRec+8)
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
			q6kQuad(a)
			continue
		}
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

// q6kSeg is the number of super-blocks whose headers the four-row step
// of kqRowsQ6KAVX2 unpacks in one pass before their chunks, q6kRec the
// bytes of stack each takes. Four keeps the header pass (which reads the
// last 18 bytes of each super-block of the four rows) within 840 bytes of
// the chunk pass, inside the 2 KiB the step prefetches ahead, so it does
// not wait on lines the prefetch has not asked for yet (16, as the Q4_K
// quad, would read up to 3.3 KiB ahead at K=3072); at K=1024 (Qwen3's
// output head) both are one segment. Kernel benchmarks could not tell 4,
// 8 and 16 apart on the busy machine this was written on.
const q6kSeg, q6kRec = 4, 288

// q6kQuad writes the four-row step of kqRowsQ6KAVX2 (rows i, q+i, 2q+i,
// 3q+i of q = rows/4 steps; see rowsSpread), going on to q6k2 with the
// 0..3 rows left. As in the Q4_K quad (rows4_avx2.go), a header pass over
// up to q6kSeg super-blocks writes, per super-block, a 288-byte stack
// record read by the chunk pass a whole header pass later: rows A..D's 16
// scales as words at 0, 32, 64, 96 (VPMOVSXBW), their int32 lanes
// 32·(sc·(-bsums)) at 128..255 (q6kRowBlock's VPMADDWD and shift), and
// [dA dB dC dD]·d8 at 256 (the four f16 d in one VCVTPH2PS and one
// VMULPS). Per row and super-block the chunk pass then starts its sums
// from the record, takes each half's scale words by VBROADCASTI128 (a
// load, where q6kRowBlock spends a VPERMQ) and d8·d by VBROADCASTSS, and
// keeps three of the four rkSplitShuf masks in Y2, Y4, Y5: about 72 vector
// ALU ops and 26 loads per row and super-block instead of 77 and 33. The
// bits are q6kRowBlock's: d8·d is the same float product, the integer
// sums the same exact values in the same lanes. Measured (AVX2,
// BenchmarkStreamRowsBest best-of, 3 alternated rounds, busy machine): in
// L2 at K=1024 35.4 → 37.4 GB/s, streamed 28.7 → 31.6. The step count is
// at save(SP), R12 the super-blocks left, CX those of the segment, R14 the
// header pass's counter, R11 the record offset, R13 scratch.
func q6kQuad(a *Asm) {
	save := q6kSeg * q6kRec
	accs := []string{"Y0", "Y3", "Y12", "Y15"}
	masks := []string{"Y2", "Y4", "Y5", "rkSplitShuf<>+96(SB)"}
	at := func(o int) string { return fmt.Sprintf("%d(SP)(R11*1)", o) }
	spreadEntry(a, "R15", fmt.Sprintf("%d(SP)", save), "q6k2")
	for c := 0; c < 3; c++ {
		a.I("VMOVDQU", q6kMasksMem[c], masks[c])
	}
	a.Label("q6k4")
	a.I("MOVQ", "SI, AX")
	a.I("MOVQ", "DI, BX")
	a.I("MOVQ", "nb+40(FP), R12")
	for _, acc := range accs {
		a.I("VXORPS", acc, acc, acc)
	}
	a.Label("q6k4seg")
	a.I("MOVQ", fmt.Sprintf("$%d, CX", q6kSeg))
	a.I("CMPQ", "R12, CX")
	a.I("CMOVQLT", "R12, CX")
	a.I("SUBQ", "CX, R12")
	a.I("MOVQ", "CX, R14")
	a.I("XORL", "R11, R11")
	a.Label("q6k4hdr")
	a.I("VPXOR", "Y7, Y7, Y7")
	a.I("VPSUBW", "260(BX), Y7, Y7")
	for r := 0; r < 4; r++ {
		a.I("VPMOVSXBW", q4kQuadRow(r, 192), "Y6")
		a.I("VMOVDQU", "Y6", at(32*r))
		// -32·(sc·bsums) as (sc·(-bsums))·32 (see q6kRowBlock).
		a.I("VPMADDWD", "Y7, Y6, Y8")
		a.I("VPSLLD", "$5, Y8, Y8")
		a.I("VMOVDQU", "Y8", at(128+32*r))
	}
	// The four f16 d, row D's in the top word: [dA dB dC dD].
	a.I("MOVWLZX", q4kQuadRow(3, 208), "R13")
	for r := 2; r >= 0; r-- {
		a.I("SHLQ", "$16, R13")
		a.I("MOVW", q4kQuadRow(r, 208), "R13")
	}
	a.I("VMOVQ", "R13, X9")
	a.I("VCVTPH2PS", "X9, X9")
	a.I("VBROADCASTSS", "(BX), X10")
	a.I("VMULPS", "X10, X9, X9")
	a.I("VMOVUPS", "X9", at(256))
	a.I("ADDQ", "$210, AX")
	a.I("ADDQ", "$292, BX")
	a.I("ADDQ", fmt.Sprintf("$%d, R11", q6kRec))
	a.I("DECQ", "R14")
	a.I("JNZ", "q6k4hdr")
	// Back to the segment's first super-block.
	a.I("IMUL3Q", "$210, CX, R13")
	a.I("SUBQ", "R13, AX")
	a.I("IMUL3Q", "$292, CX, R13")
	a.I("SUBQ", "R13, BX")
	a.I("XORL", "R11, R11")
	a.Label("q6k4block")
	spreadPF(a, 210)
	for r, acc := range accs {
		a.I("VMOVDQU", at(128+32*r), "Y1")
		for n := 0; n < 2; n++ {
			a.I("VBROADCASTI128", at(32*r+16*n), "Y6")
			q6kHalf(a, r, n, masks)
		}
		a.I("VCVTDQ2PS", "Y1, Y1")
		a.I("VBROADCASTSS", at(256+4*r), "Y10")
		a.I("VFMADD231PS", "Y1, Y10", acc)
	}
	a.I("ADDQ", "$210, AX")
	a.I("ADDQ", "$292, BX")
	a.I("ADDQ", fmt.Sprintf("$%d, R11", q6kRec))
	a.I("DECQ", "CX")
	a.I("JNZ", "q6k4block")
	a.I("TESTQ", "R12, R12")
	a.I("JNZ", "q6k4seg")
	quadHsum(a, accs, "", "")
	spreadNext(a, "R15", fmt.Sprintf("%d(SP)", save), "q6k4")
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
		q6kHalf(a, r, n, q6kMasksMem)
	}
	a.I("VCVTDQ2PS", "Y1, Y1")
	a.I("VFMADD231PS", "Y1, Y4", acc)
}

// q6kMasksMem are the rkSplitShuf masks of the four chunks of a half as
// memory operands.
var q6kMasksMem = []string{"rkSplitShuf<>+0(SB)", "rkSplitShuf<>+32(SB)", "rkSplitShuf<>+64(SB)", "rkSplitShuf<>+96(SB)"}

// q6kHalf writes the four chunks of half n (128 elements) of a Q6_K
// super-block of row r against the activation block at BX, the half's 8
// scale words in both lanes of Y6: Y1 += Σ scale·(values·q8). Uses Y7..Y11.
func q6kHalf(a *Asm, r, n int, masks []string) {
	row := func(off int) string { return q4kQuadRow(r, off) }
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
		a.I("VPSHUFB", masks[c], "Y6, Y11")
		a.I("VPMADDWD", "Y11, Y10, Y10")
		a.I("VPADDD", "Y10, Y1, Y1")
	}
}
