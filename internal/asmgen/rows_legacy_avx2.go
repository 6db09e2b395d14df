package main

import "fmt"

// AVX2 decode row kernels of Q4_0 and Q5_0 weights against Q8_0
// activations, printed into
// backends/cpu/rows_legacy_avx2_amd64.s; the Go side declares them in
// dot_legacy_amd64.go and wraps them with legacyRows (rows_asm.go), which
// checks every bound they rely on.

func init() {
	register("rows_legacy_avx2_amd64.s", "amd64 && !purego", func(a *Asm) {
		a.Blank()
		a.Comment(lgDoc)
		lgConsts(a)
		for _, t := range []lgType{lgQ4_0, lgQ5_0} {
			lgKernel(a, t)
		}
	})
}

const lgDoc = `AVX2 decode row kernels of Q4_0 and Q5_0 weights against one Q8_0
activation row (see internal/asmgen/rows_legacy_avx2.go).

Float order of quant.DotQ4_0Q8_0 / DotQ5_0Q8_0 (ggml's AVX2
kernels): per 32-element block, 8 int32 lanes (lane k the integer dot of
elements 4k..4k+3), converted to float32, acc = FMA(cvt, d_w·d_a, acc)
in block order, then hsum_float_8(acc). The integer lanes are exact for
every input, so the grouping of the integer work is free.

Rows go four at a time (four independent FMA chains: one chain alone is
bound by the FMA latency); a group of fewer than four rows points its
missing rows at its last row and stores only its own, so a row's float
steps do not depend on its position.`

// lgType describes one weight format of the kernels.
type lgType struct {
	name string // Go name of the kernel
	p    string // label prefix
	bs   int    // weight block bytes
}

var (
	lgQ4_0 = lgType{"rowsQ4_0AVX2", "lq40", 18}
	lgQ5_0 = lgType{"rowsQ5_0AVX2", "lq50", 22}
)

// lgConsts writes the constant tables.
func lgConsts(a *Asm) {
	data := func(name string, qwords ...uint64) {
		for i, q := range qwords {
			a.Raw("DATA %s<>+%d(SB)/8, $0x%016x", name, 8*i, q)
		}
		a.Raw("GLOBL %s<>(SB), RODATA|NOPTR, $%d", name, 8*len(qwords))
	}
	a.Blank()
	a.Comment("lgNibShift: dword shifts 0 (low lane) and 4 (high lane): the 16 quant\nbytes broadcast to both lanes become low nibbles | high nibbles.")
	data("lgNibShift", 0, 0, 0x0000000400000004, 0x0000000400000004)
	a.Comment(`lgQhShuf / lgBitSel, the Q5_0 5th bits: from a qword q = qh | (qh<<4)<<32
broadcast to every lane, byte i (of 32: element i) takes qh byte i/8
from the copy where its bit i%8 sits at bit 4..7 (the lower dword for
i%8 ≥ 4, the upper for i%8 < 4), and lgBitSel keeps that bit.`)
	data("lgQhShuf", 0x0000000004040404, 0x0101010105050505, 0x0202020206060606, 0x0303030307070707)
	data("lgBitSel", 0x8040201080402010, 0x8040201080402010, 0x8040201080402010, 0x8040201080402010)
}

// lgRow writes one weight row's block (row base in reg, block offset
// R12) against the activation quants in Y4 (Q4_0 and Q5_0 take their
// weights unsigned, 0..15 / 0..31, and subtract Y13, 8 or 16 times the
// activations' pair sums, in int16: no overflow for any input): its
// int32 lanes converted to float in Y7, then acc = FMA(Y7, d_w·d_a
// (stack slot off), acc).
func lgRow(a *Asm, t lgType, reg string, off int, acc string) {
	at := func(d int) string { return fmt.Sprintf("%d(%s)(R12*1)", d, reg) }
	switch t {
	case lgQ4_0:
		a.I("VBROADCASTI128", at(2), "Y7")
		a.I("VPSRLVD", "Y10, Y7, Y7")
		a.I("VPAND", "Y14, Y7, Y7")
		a.I("VPMADDUBSW", "Y4, Y7, Y7")
		a.I("VPSUBW", "Y13, Y7, Y7")
	case lgQ5_0:
		a.I("VBROADCASTI128", at(6), "Y7")
		a.I("VPSRLVD", "Y10, Y7, Y7")
		a.I("VPAND", "Y14, Y7, Y7")
		// The 5th bits: qh | (qh<<4 in the upper dword) (scalar, through
		// the stack), each byte picking the copy that holds its bit at
		// bit 4..7 (lgQhShuf), that bit (lgBitSel), then min(·, 0x10).
		a.I("MOVL", at(2), "R14")
		a.I("RORXQ", "$28, R14, R13")
		a.I("ORQ", "R13, R14")
		a.I("MOVQ", fmt.Sprintf("R14, %d(SP)", 16+2*off))
		a.I("VPBROADCASTQ", fmt.Sprintf("%d(SP)", 16+2*off), "Y8")
		a.I("VPSHUFB", "Y5, Y8, Y8")
		a.I("VPAND", "Y11, Y8, Y8")
		a.I("VPMINUB", "Y12, Y8, Y8")
		a.I("VPOR", "Y8, Y7, Y7")
		a.I("VPMADDUBSW", "Y4, Y7, Y7")
		a.I("VPSUBW", "Y13, Y7, Y7")
	}
	a.I("VPMADDWD", "Y15, Y7, Y7")
	a.I("VCVTDQ2PS", "Y7, Y7")
	a.I("VBROADCASTSS", fmt.Sprintf("%d(SP)", off), "Y6")
	a.I("VFMADD231PS", "Y7, Y6", acc)
}

// lgKernel writes one kernel:
//
//	func name(w *byte, wrb int, a *byte, nb int, y *float32, rows int)
//
// Registers: AX, BX, CX, DX the group's four row bases, SI the next
// group's first row (prefetched from as the group's rows are read), R8
// the row stride, R9 the outputs, R10 rows left, R12 the block offset in
// the rows, DI the activation block, R11 blocks left, R13 and R14
// scratch. Stack: 0..15 the four rows' d_w·d_a of the block, 16..47 the
// Q5_0 rows' 5th-bit qwords, 48 the rows' f16 d. Y0..Y3 the rows'
// accumulators, Y4 the activation quants, Y13 the offset term, Y6 a
// row's scale, Y7/Y8 temporaries, Y14 bytes 0x0F, Y15 int16 ones, Y10
// lgNibShift, Y12 bytes 8 (Q4_0) or 0x10 (Q5_0), Y5 lgQhShuf, Y11
// lgBitSel.
func lgKernel(a *Asm, t lgType) {
	p := t.p
	a.Blank()
	a.Raw("// func %s(w *byte, wrb int, a *byte, nb int, y *float32, rows int)", t.name)
	a.Raw("TEXT ·%s(SB), NOSPLIT, $56-48", t.name)
	a.I("MOVQ", "w+0(FP), SI")
	a.I("MOVQ", "wrb+8(FP), R8")
	a.I("MOVQ", "y+32(FP), R9")
	a.I("MOVQ", "rows+40(FP), R10")
	a.I("VPCMPEQW", "Y15, Y15, Y15")
	a.I("VPSRLW", "$15, Y15, Y15")
	a.I("MOVL", "$0x0f0f0f0f, AX")
	a.I("VMOVD", "AX, X14")
	a.I("VPBROADCASTD", "X14, Y14")
	a.I("VMOVDQU", "lgNibShift<>(SB), Y10")
	c := "$0x08080808"
	if t == lgQ5_0 {
		c = "$0x10101010"
		a.I("VMOVDQU", "lgQhShuf<>(SB), Y5")
		a.I("VMOVDQU", "lgBitSel<>(SB), Y11")
	}
	a.I("MOVL", c+", AX")
	a.I("VMOVD", "AX, X12")
	a.I("VPBROADCASTD", "X12, Y12")
	a.Label(p + "group")
	a.I("TESTQ", "R10, R10")
	a.I("JLE", p+"done")
	a.I("MOVQ", "SI, AX")
	a.I("LEAQ", "(SI)(R8*1), BX")
	a.I("CMPQ", "R10, $2")
	a.I("CMOVQLT", "AX, BX")
	a.I("LEAQ", "(SI)(R8*2), CX")
	a.I("CMPQ", "R10, $3")
	a.I("CMOVQLT", "BX, CX")
	a.I("LEAQ", "(R8)(R8*2), R14")
	a.I("LEAQ", "(SI)(R14*1), DX")
	a.I("CMPQ", "R10, $4")
	a.I("CMOVQLT", "CX, DX")
	a.I("LEAQ", "(SI)(R8*4), SI")
	a.I("MOVQ", "a+16(FP), DI")
	a.I("MOVQ", "nb+24(FP), R11")
	a.I("XORL", "R12, R12")
	for r := 0; r < 4; r++ {
		a.I("VXORPS", fmt.Sprintf("Y%d, Y%d, Y%d", r, r, r))
	}
	a.Label(p + "block")
	// The next group's bytes, linearly, as this group's are read: R12
	// advances by a block of each of 4 rows.
	for i := 0; i < (4*t.bs+63)/64; i++ {
		a.I("PREFETCHT0", fmt.Sprintf("%d(SI)(R12*4)", rowsPF+64*i))
	}
	// The four rows' f16 d gathered into R14, converted (from the stack:
	// no GPR-to-vector move, which runs one a cycle), times d_a.
	a.I("MOVWQZX", "(DX)(R12*1), R14")
	for _, reg := range []string{"CX", "BX", "AX"} {
		a.I("SHLQ", "$16, R14")
		a.I("MOVW", fmt.Sprintf("(%s)(R12*1), R14", reg))
	}
	a.I("MOVQ", "R14, 48(SP)")
	a.I("VCVTPH2PS", "48(SP), X6")
	a.I("VPBROADCASTW", "(DI), X7")
	a.I("VCVTPH2PS", "X7, X7")
	a.I("VMULPS", "X7, X6, X6")
	a.I("VMOVUPS", "X6, (SP)")
	a.I("VMOVDQU", "2(DI), Y4")
	a.I("VPMADDUBSW", "Y4, Y12, Y13")
	for r, reg := range []string{"AX", "BX", "CX", "DX"} {
		lgRow(a, t, reg, 4*r, fmt.Sprintf("Y%d", r))
	}
	a.I("ADDQ", fmt.Sprintf("$%d, R12", t.bs))
	a.I("ADDQ", "$34, DI")
	a.I("DECQ", "R11")
	a.I("JNZ", p+"block")
	for r := 0; r < 4; r++ {
		hsum8(a, fmt.Sprintf("Y%d", r), fmt.Sprintf("X%d", r), "X6")
	}
	a.I("VMOVSS", "X0, (R9)")
	for r := 1; r < 4; r++ {
		a.I("CMPQ", fmt.Sprintf("R10, $%d", r+1))
		a.I("JLT", p+"done")
		a.I("VMOVSS", fmt.Sprintf("X%d, %d(R9)", r, 4*r))
	}
	a.I("ADDQ", "$16, R9")
	a.I("SUBQ", "$4, R10")
	a.I("JMP", p+"group")
	a.Label(p + "done")
	a.I("VZEROUPPER")
	a.I("RET")
}
