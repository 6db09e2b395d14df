package main

import "fmt"

// The decode row kernels of Q8_0 weights against one Q8_0 activation row
// with two or eight rows a group, AVX2 and AVX-512 VNNI, printed into
// backends/cpu/rows_q80_amd64.s. The Go side (dot_legacy_amd64.go:
// rowsQ8_0AVX2, rowsQ8_0VNNI) picks by row length (q80LongNB): out of
// cache, how many rows a group reads side by side decides how close to a
// plain read the weights stream (two rows for short rows, eight for long
// ones on this Zen 5). legacyRows (rows_asm.go) checks every bound they
// rely on.

func init() {
	register("rows_q80_amd64.s", "amd64 && !purego", func(a *Asm) {
		a.Blank()
		a.Comment(q80r8Doc)
		q80rNKernel(a, "rowsQ8_0AVX2R2", 2)
		q80rNKernel(a, "rowsQ8_0AVX2R8", 8)
		q80r8VNNIConsts(a)
		q80r8VNNIKernel(a, "rowsQ8_0VNNIR2", 1)
		q80r8VNNIKernel(a, "rowsQ8_0VNNIR8", 4)
	})
}

const q80r8Doc = `Decode row kernels of Q8_0 weights against one Q8_0 activation row:
two and eight rows a group, AVX2 and AVX-512 VNNI (see
internal/asmgen/rows_q80.go).

Float order of quant.DotQ8_0Q8_0 (ggml's AVX2 kernel): per 32-element
block, 8 int32 lanes (lane k the integer dot of elements 4k..4k+3, with
ggml's sign trick |x|·(y with x's sign): exact unless a weight and its
activation are both -128, which the activation quantizer never writes),
converted to float32, acc = FMA(cvt, d_w·d_a, acc) in block order, then
hsum_float_8(acc). Each row keeps its own accumulator; a group of fewer
rows than its kernel's points its missing rows at its last row and stores
only its own, so a row's float steps do not depend on its position.`

// q80r8Rows are the GPRs holding a group's eight row bases.
var q80r8Rows = []string{"R8", "R9", "R10", "R11", "AX", "BX", "CX", "DX"}

// q80r8VNNIConsts writes the VPERMPS indices that spread the eight rows'
// d_w·d_a (one YMM, row r in lane r) to the four row pairs' ZMM scales
// [row 2p ×8 | row 2p+1 ×8].
func q80r8VNNIConsts(a *Asm) {
	a.Blank()
	a.Comment("q80r8Pair<p>: VPERMPS indices [2p ×8 | 2p+1 ×8].")
	for p := 0; p < 4; p++ {
		name := fmt.Sprintf("q80r8Pair%d", p)
		for i := 0; i < 8; i++ {
			r := uint64(2*p + i/4)
			a.Raw("DATA %s<>+%d(SB)/8, $0x%016x", name, 8*i, r|r<<32)
		}
		a.Raw("GLOBL %s<>(SB), RODATA|NOPTR, $64", name)
	}
}

// q80r8VNNIKernel writes the AVX-512 VNNI Q8_0 kernel name with 2·pairs
// rows a group (pairs 1 or 4):
//
//	func name(w *byte, wrb int, a *byte, nb int, y *float32, rows int)
//
// The integer part
// on VPDPBUSD (exact for every input: the weights biased to unsigned,
// x+128, and the accumulator started at -128·Σ y of each 4 bytes, which
// leaves Σ x·y), two rows per ZMM (row 2p in the low half, 2p+1 in the
// high), then per row the same 8-lane convert and FMA with d_w·d_a in
// block order as the AVX2 kernels, and hsum_float_8 of each half.
// Registers: the row bases, SI, R12..R15 and DI as in q80rNKernel;
// Z0..Z(pairs-1) the pairs' accumulators, Z4 the activation quants in both
// halves, Z5 d_a, Z6 the rows' d_w·d_a, Z7 and Z9 temporaries, Z12
// bytes 0x80, Z13 the offsets, Z16.. the pairs' scales, Z20..Z23 the
// q80r8Pair indices.
func q80r8VNNIKernel(a *Asm, name string, pairs int) {
	p := name
	n := 2 * pairs
	rows := q80r8Rows[:n]
	a.Blank()
	a.Comment(`The AVX-512 VNNI kernel: the integer part on VPDPBUSD, exact for every
input (weights biased to unsigned, x+128, the accumulator started at
-128·Σ y of each 4 bytes), two rows per ZMM (row 2p low, 2p+1 high),
then per row the same 8-lane convert and FMA with d_w·d_a in block order
and hsum_float_8 of each half. Z0.. the pairs' accumulators, Z4 the
activation quants in both halves, Z13 the offsets, Z16.. the pairs'
scales (VPERMPS of the rows' d_w·d_a by Z20..), Z12 bytes 0x80.`)
	a.Raw("// func %s(w *byte, wrb int, a *byte, nb int, y *float32, rows int)", name)
	a.Raw("TEXT ·%s(SB), NOSPLIT, $56-48", name)
	a.I("MOVQ", "w+0(FP), SI")
	a.I("MOVQ", "wrb+8(FP), R14")
	a.I("MOVQ", "R14, 32(SP)")
	a.I("MOVQ", "y+32(FP), R14")
	a.I("MOVQ", "R14, 40(SP)")
	a.I("MOVQ", "rows+40(FP), R14")
	a.I("MOVQ", "R14, 48(SP)")
	for i := 0; i < 4; i++ {
		a.I("VMOVDQU64", fmt.Sprintf("q80r8Pair%d<>(SB), Z%d", i, 20+i))
	}
	a.I("MOVL", "$0x80808080, R14")
	a.I("VPBROADCASTD", "R14, Z12")
	a.Label(p + "group")
	a.I("MOVQ", "48(SP), R13")
	a.I("TESTQ", "R13, R13")
	a.I("JLE", p+"done")
	a.I("MOVQ", "32(SP), R14")
	a.I("MOVQ", "SI", rows[0])
	for r := 1; r < n; r++ {
		a.I("LEAQ", fmt.Sprintf("(%s)(R14*1)", rows[r-1]), rows[r])
		a.I("CMPQ", fmt.Sprintf("R13, $%d", r+1))
		a.I("CMOVQLT", rows[r-1], rows[r])
	}
	a.I("LEAQ", fmt.Sprintf("(SI)(R14*%d), SI", n))
	a.I("MOVQ", "a+16(FP), DI")
	a.I("MOVQ", "nb+24(FP), R13")
	a.I("XORL", "R12, R12")
	for i := 0; i < pairs; i++ {
		a.I("VPXORD", fmt.Sprintf("Z%d, Z%d, Z%d", i, i, i))
	}
	a.Label(p + "block")
	for i := 0; i < (n*34+63)/64; i++ {
		a.I("PREFETCHT0", fmt.Sprintf("%d(SI)(R12*%d)", rowsPF+64*i, n))
	}
	// The activation block: d_a in all lanes of Y5, the quants in both
	// halves of Z4, Z13 = -128·Σ y of each 4 bytes.
	a.I("VPBROADCASTW", "(DI), X5")
	a.I("VCVTPH2PS", "X5, Y5")
	a.I("VBROADCASTI64X4", "2(DI), Z4")
	a.I("VPXORD", "Z9, Z9, Z9")
	a.I("VPXORD", "Z13, Z13, Z13")
	a.I("VPDPBUSD", "Z4, Z12, Z13")
	a.I("VPSUBD", "Z13, Z9, Z13")
	for g, reg := range []string{"R14", "R15"}[:(n+3)/4] {
		q := rows[4*g : min(4*g+4, n)]
		a.I("MOVWQZX", fmt.Sprintf("(%s)(R12*1)", q[len(q)-1]), reg)
		for r := len(q) - 2; r >= 0; r-- {
			a.I("SHLQ", "$16", reg)
			a.I("MOVW", fmt.Sprintf("(%s)(R12*1)", q[r]), reg)
		}
	}
	a.I("VMOVQ", "R14, X6")
	if n > 4 {
		a.I("VPINSRQ", "$1, R15, X6, X6")
	}
	a.I("VCVTPH2PS", "X6, Y6")
	a.I("VMULPS", "Y5, Y6, Y6")
	for i := 0; i < pairs; i++ {
		a.I("VPERMPS", fmt.Sprintf("Z6, Z%d, Z%d", 20+i, 16+i))
	}
	for i := 0; i < pairs; i++ {
		ra, rb := rows[2*i], rows[2*i+1]
		a.I("VMOVDQU64", fmt.Sprintf("2(%s)(R12*1), Y7", ra))
		a.I("VINSERTI64X4", fmt.Sprintf("$1, 2(%s)(R12*1), Z7, Z7", rb))
		a.I("VPXORD", "Z12, Z7, Z7")
		a.I("VMOVDQA64", "Z13, Z9")
		a.I("VPDPBUSD", "Z4, Z7, Z9")
		a.I("VCVTDQ2PS", "Z9, Z9")
		a.I("VFMADD231PS", fmt.Sprintf("Z9, Z%d, Z%d", 16+i, i))
	}
	a.I("ADDQ", "$34, R12")
	a.I("ADDQ", "$34, DI")
	a.I("DECQ", "R13")
	a.I("JNZ", p+"block")
	// Row 2p in Yp, row 2p+1 (the high half) in Y(p+4).
	for i := 0; i < pairs; i++ {
		a.I("VEXTRACTF64X4", fmt.Sprintf("$1, Z%d, Y%d", i, i+4))
	}
	order := []int{0, 4, 1, 5, 2, 6, 3, 7}[:n] // row r's register
	for _, x := range order {
		hsum8(a, fmt.Sprintf("Y%d", x), fmt.Sprintf("X%d", x), "X8")
	}
	a.I("MOVQ", "40(SP), R14")
	a.I("MOVQ", "48(SP), R13")
	a.I("VMOVSS", "X0, (R14)")
	for r := 1; r < n; r++ {
		a.I("CMPQ", fmt.Sprintf("R13, $%d", r+1))
		a.I("JLT", p+"done")
		a.I("VMOVSS", fmt.Sprintf("X%d, %d(R14)", order[r], 4*r))
	}
	a.I("ADDQ", fmt.Sprintf("$%d, 40(SP)", 4*n))
	a.I("SUBQ", fmt.Sprintf("$%d, 48(SP)", n))
	a.I("JMP", p+"group")
	a.Label(p + "done")
	a.I("VZEROUPPER")
	a.I("RET")
}

// q80rNKernel writes the AVX2 kernel name with n rows a group (2 or 8):
//
//	func name(w *byte, wrb int, a *byte, nb int, y *float32, rows int)
//
// Registers: R8..R11, AX, BX, CX, DX the group's row bases (the first n),
// SI the next group's first row (its bytes prefetched linearly, rowsPF
// ahead, as the group's rows are read), R12 the block offset in the rows,
// DI the activation block, R13 blocks left, R14 and R15 the rows' f16 d
// (four a register, row 0 lowest). Stack: 0..31 the rows' d_w·d_a of the
// block (row r at 4r), 32 the row stride, 40 the outputs, 48 the rows
// left. Y0..Y(n-1) the rows' accumulators, Y8 the activation quants, Y10
// the weight quants and their products, Y11 the signed activations, Y12 a
// row's scale (and the block's scales), Y13 int16 ones.
func q80rNKernel(a *Asm, name string, n int) {
	p := name
	acc := []string{"Y0", "Y1", "Y2", "Y3", "Y4", "Y5", "Y6", "Y7"}[:n]
	a.Blank()
	a.Raw("// func %s(w *byte, wrb int, a *byte, nb int, y *float32, rows int)", name)
	a.Raw("TEXT ·%s(SB), NOSPLIT, $56-48", name)
	a.I("MOVQ", "w+0(FP), SI")
	a.I("MOVQ", "wrb+8(FP), R14")
	a.I("MOVQ", "R14, 32(SP)")
	a.I("MOVQ", "y+32(FP), R14")
	a.I("MOVQ", "R14, 40(SP)")
	a.I("MOVQ", "rows+40(FP), R14")
	a.I("MOVQ", "R14, 48(SP)")
	a.I("VPCMPEQW", "Y13, Y13, Y13")
	a.I("VPSRLW", "$15, Y13, Y13")
	a.Label(p + "group")
	a.I("MOVQ", "48(SP), R13")
	a.I("TESTQ", "R13, R13")
	a.I("JLE", p+"done")
	a.I("MOVQ", "32(SP), R14")
	rows := q80r8Rows[:n]
	a.I("MOVQ", "SI", rows[0])
	for r := 1; r < n; r++ {
		a.I("LEAQ", fmt.Sprintf("(%s)(R14*1)", rows[r-1]), rows[r])
		a.I("CMPQ", fmt.Sprintf("R13, $%d", r+1))
		a.I("CMOVQLT", rows[r-1], rows[r])
	}
	a.I("LEAQ", fmt.Sprintf("(SI)(R14*%d), SI", n))
	a.I("MOVQ", "a+16(FP), DI")
	a.I("MOVQ", "nb+24(FP), R13")
	a.I("XORL", "R12, R12")
	for _, y := range acc {
		a.I("VXORPS", y, y, y)
	}
	a.Label(p + "block")
	// The next group's bytes, linearly, as this group's are read: R12
	// advances by a block of each of the n rows.
	for i := 0; i < (n*34+63)/64; i++ {
		a.I("PREFETCHT0", fmt.Sprintf("%d(SI)(R12*%d)", rowsPF+64*i, n))
	}
	// The rows' f16 d gathered four at a time into R14 / R15, converted,
	// times d_a, to the stack.
	for g, reg := range []string{"R14", "R15"}[:(n+3)/4] {
		q := rows[4*g : min(4*g+4, n)]
		a.I("MOVWQZX", fmt.Sprintf("(%s)(R12*1)", q[len(q)-1]), reg)
		for r := len(q) - 2; r >= 0; r-- {
			a.I("SHLQ", "$16", reg)
			a.I("MOVW", fmt.Sprintf("(%s)(R12*1)", q[r]), reg)
		}
	}
	a.I("VMOVQ", "R14, X12")
	if n > 4 {
		a.I("VPINSRQ", "$1, R15, X12, X12")
	}
	a.I("VCVTPH2PS", "X12, Y12")
	a.I("VPBROADCASTW", "(DI), X10")
	a.I("VCVTPH2PS", "X10, Y10")
	a.I("VMULPS", "Y10, Y12, Y12")
	a.I("VMOVUPS", "Y12, (SP)")
	a.I("VMOVDQU", "2(DI), Y8")
	for r := 0; r < n; r++ {
		a.I("VMOVDQU", fmt.Sprintf("2(%s)(R12*1), Y10", rows[r]))
		a.I("VPSIGNB", "Y10, Y8, Y11")
		a.I("VPABSB", "Y10, Y10")
		a.I("VPMADDUBSW", "Y11, Y10, Y10")
		a.I("VPMADDWD", "Y13, Y10, Y10")
		a.I("VCVTDQ2PS", "Y10, Y10")
		a.I("VBROADCASTSS", fmt.Sprintf("%d(SP), Y12", 4*r))
		a.I("VFMADD231PS", "Y10, Y12", acc[r])
	}
	a.I("ADDQ", "$34, R12")
	a.I("ADDQ", "$34, DI")
	a.I("DECQ", "R13")
	a.I("JNZ", p+"block")
	for _, y := range acc {
		hsum8(a, y, "X"+y[1:], "X10")
	}
	a.I("MOVQ", "40(SP), R14")
	a.I("MOVQ", "48(SP), R13")
	a.I("VMOVSS", "X0, (R14)")
	for r := 1; r < n; r++ {
		a.I("CMPQ", fmt.Sprintf("R13, $%d", r+1))
		a.I("JLT", p+"done")
		a.I("VMOVSS", fmt.Sprintf("X%d, %d(R14)", r, 4*r))
	}
	a.I("ADDQ", fmt.Sprintf("$%d, 40(SP)", 4*n))
	a.I("SUBQ", fmt.Sprintf("$%d, 48(SP)", n))
	a.I("JMP", p+"group")
	a.Label(p + "done")
	a.I("VZEROUPPER")
	a.I("RET")
}
