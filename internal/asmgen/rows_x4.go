package main

import "fmt"

// The AVX2 decode row kernel of Q5_0 weights in the four-row Q5_0x4
// layout (quant/q5_0x4.go) against one Q8_0 activation row, printed into
// backends/cpu/rows_x4_avx2_amd64.s and declared in
// backends/cpu/q5_0x4_amd64.go.
//
// Rows go in pairs (a, b) whose quant bytes sit side by side: one 32-byte
// load, an AND and a shift+AND give [a's elements 0..15 | b's 0..15] and
// [a's 16..31 | b's 16..31]; the pair's 64 spread 5th bits, broadcast to
// the four qwords, shifted right by 0..3 (left by 4..1) and masked to bit
// 4 of each byte, are ORed into them. Against the activation's
// [y0..15 | y0..15] and [y16..31 | y16..31] (VBROADCASTI128, once per
// block for all four rows) the AVX2 row kernel's integer steps follow
// (VPMADDUBSW of the unsigned quants, minus 16 times the activation pair
// sums, VPMADDWD by ones): int32 lanes [a 0..3 | b 0..3] and
// [a 4..7 | b 4..7], each ggml's lane of its row, exact. Converted, they
// take one FMA each by [d_a·d_y ×4 | d_b·d_y ×4] (VPERMILPS of the four
// rows' products), so each float lane gets ggml's sequence of FMAs; at the
// end VPERM2F128 puts each row's eight lanes in order for hsum_float_8.
// Vector instructions per row and block: 10.5 (the AVX2 row kernel on the
// plain layout: 14, 11 of them ALU), plus 11 a block for all four rows
// (the plain kernel: ≈20, the f16 d gathered through a GPR).

// The Q4_0x4 kernel (quant/q4_0x4.go) is the same without the fifth bits,
// its quants at 8 and 40 of a 72-byte block, 8 times the activation pair
// sums subtracted.

func init() {
	register("rows_x4_avx2_amd64.s", "amd64 && !purego", genX4Rows)
}

// x4Kind is one four-row layout of the kernels.
type x4Kind struct {
	name     string // the Go function
	lbl      string // label prefix
	bs       int    // block bytes (four rows)
	qs       int    // offset of the first pair's quants (the second's 32 on)
	qh       int    // offset of the first pair's spread fifth bits (8 on), 0: none
	bias     string // bytes: the unsigned quants' offset
	typeName string
}

var x4Kinds = []x4Kind{
	{"rowsQ5_0x4AVX2", "q5x4", 88, 24, 8, "$0x10101010", "Q5_0x4"},
	{"rowsQ4_0x4AVX2", "q4x4", 72, 8, 0, "$0x08080808", "Q4_0x4"},
}

func genX4Rows(a *Asm) {
	a.Blank()
	a.Comment(`AVX2 decode row kernels of Q5_0 and Q4_0 weights in their four-row
layouts (see internal/asmgen/rows_x4.go, quant/q5_0x4.go and
quant/q4_0x4.go).`)
	data := func(name string, qwords ...uint64) {
		for i, q := range qwords {
			a.Raw("DATA %s<>+%d(SB)/8, $0x%016x", name, 8*i, q)
		}
		a.Raw("GLOBL %s<>(SB), RODATA|NOPTR, $%d", name, 8*len(qwords))
	}
	a.Blank()
	a.Comment("q5x4Shr / q5x4Shl: the qword shifts that bring the spread 5th bits of\nelements 0..15 (right) and 16..31 (left) to bit 4 of their bytes;\nq5x4Ctl01 / q5x4Ctl23: VPERMILPS controls [0 ×4 | 1 ×4], [2 ×4 | 3 ×4].")
	data("q5x4Shr", 0, 1, 2, 3)
	data("q5x4Shl", 4, 3, 2, 1)
	data("q5x4Ctl01", 0, 0, 0x0000000100000001, 0x0000000100000001)
	data("q5x4Ctl23", 0x0000000200000002, 0x0000000200000002, 0x0000000300000003, 0x0000000300000003)
	for _, k := range x4Kinds {
		genX4Kernel(a, k)
	}
}

// genX4Kernel writes the kernel of layout k.
func genX4Kernel(a *Asm, k x4Kind) {
	l := func(s string) string { return k.lbl + s }
	a.Blank()
	a.Comment(`func ` + k.name + `(w *byte, a *byte, nb int, y *float32, groups int)

w: groups of four rows (` + k.typeName + `), nb blocks each, one group after the
other; a: the Q8_0 activation row (nb blocks of 34 bytes); y: 4·groups
outputs. Registers: AX the group's block, BX the activation block, CX
blocks left, SI the next group, DX the outputs, R9 groups left; Y0/Y1 the
accumulators of rows 0/1 (lanes [r0 | r1] 0..3 and 4..7), Y2/Y3 of rows
2/3; Y8/Y9 the activation's [y0..15 | y0..15] / [y16..31 | y16..31], Y10 /
Y11 their pair sums times the quants' offset (16 or 8), Y6 [s0..s3 | s0..s3] the rows' d_w·d_y; Y4,
Y5, Y7, Y12 temporaries; Y13 bytes 0x0F, Y14 the offset's bytes (0x10:
also the fifth bits' mask), Y15 int16 ones.`)
	a.Text(k.name, 0, 40)
	a.I("MOVQ", "w+0(FP), SI")
	a.I("MOVQ", "y+24(FP), DX")
	a.I("MOVQ", "groups+32(FP), R9")
	a.I("TESTQ", "R9, R9")
	a.I("JLE", l("done"))
	for _, c := range []struct{ v, r string }{{"$0x0f0f0f0f", "13"}, {k.bias, "14"}} {
		a.I("MOVL", c.v+", R8")
		a.I("VMOVD", "R8, X"+c.r)
		a.I("VPBROADCASTD", "X"+c.r+", Y"+c.r)
	}
	a.I("VPCMPEQW", "Y15, Y15, Y15")
	a.I("VPSRLW", "$15, Y15, Y15")
	a.Label(l("group"))
	a.I("MOVQ", "SI, AX")
	a.I("MOVQ", "a+8(FP), BX")
	a.I("MOVQ", "nb+16(FP), CX")
	for r := 0; r < 4; r++ {
		a.I("VXORPS", fmt.Sprintf("Y%d, Y%d, Y%d", r, r, r))
	}
	a.Label(l("block"))
	// 72 or 88 bytes a block: the lines rowsSpreadDist on (one stream).
	pfI(a, fmt.Sprintf("%d(AX)", rowsSpreadDist))
	pfI(a, fmt.Sprintf("%d(AX)", rowsSpreadDist+64))
	a.I("VBROADCASTI128", "2(BX), Y8")
	a.I("VBROADCASTI128", "18(BX), Y9")
	a.I("VPMADDUBSW", "Y8, Y14, Y10")
	a.I("VPMADDUBSW", "Y9, Y14, Y11")
	a.I("VCVTPH2PS", "(AX), X6")
	a.I("VPBROADCASTW", "(BX), X7")
	a.I("VCVTPH2PS", "X7, X7")
	a.I("VMULPS", "X7, X6, X6")
	a.I("VINSERTF128", "$1, X6, Y6, Y6")
	for p := 0; p < 2; p++ {
		qs, qh := k.qs+32*p, k.qh+8*p
		ctl := []string{"q5x4Ctl01<>(SB)", "q5x4Ctl23<>(SB)"}[p]
		acc1, acc2 := fmt.Sprintf("Y%d", 2*p), fmt.Sprintf("Y%d", 2*p+1)
		a.I("VMOVDQU", fmt.Sprintf("%d(AX), Y4", qs))
		a.I("VPSRLW", "$4, Y4, Y5")
		a.I("VPAND", "Y13, Y4, Y4")
		a.I("VPAND", "Y13, Y5, Y5")
		if k.qh != 0 {
			a.I("VPBROADCASTQ", fmt.Sprintf("%d(AX), Y7", qh))
			a.I("VPSRLVQ", "q5x4Shr<>(SB), Y7, Y12")
			a.I("VPAND", "Y14, Y12, Y12")
			a.I("VPOR", "Y12, Y4, Y4")
			a.I("VPSLLVQ", "q5x4Shl<>(SB), Y7, Y7")
			a.I("VPAND", "Y14, Y7, Y7")
			a.I("VPOR", "Y7, Y5, Y5")
		}
		a.I("VPMADDUBSW", "Y8, Y4, Y4")
		a.I("VPSUBW", "Y10, Y4, Y4")
		a.I("VPMADDWD", "Y15, Y4, Y4")
		a.I("VPMADDUBSW", "Y9, Y5, Y5")
		a.I("VPSUBW", "Y11, Y5, Y5")
		a.I("VPMADDWD", "Y15, Y5, Y5")
		a.I("VCVTDQ2PS", "Y4, Y4")
		a.I("VCVTDQ2PS", "Y5, Y5")
		a.I("VPERMILPS", ctl+", Y6, Y7")
		a.I("VFMADD231PS", "Y4, Y7, "+acc1)
		a.I("VFMADD231PS", "Y5, Y7, "+acc2)
	}
	a.I("ADDQ", fmt.Sprintf("$%d, AX", k.bs))
	a.I("ADDQ", "$34, BX")
	a.I("DECQ", "CX")
	a.I("JNZ", l("block"))
	// Rows in order: [Y0.lo | Y1.lo] is row 0's eight lanes, [Y0.hi |
	// Y1.hi] row 1's; Y2/Y3 rows 2 and 3.
	a.I("VPERM2F128", "$0x20, Y1, Y0, Y4")
	a.I("VPERM2F128", "$0x31, Y1, Y0, Y5")
	a.I("VPERM2F128", "$0x20, Y3, Y2, Y6")
	a.I("VPERM2F128", "$0x31, Y3, Y2, Y7")
	for r, y := range []string{"4", "5", "6", "7"} {
		hsum8(a, "Y"+y, "X"+y, "X12")
		a.I("VMOVSS", fmt.Sprintf("X%s, %d(DX)", y, 4*r))
	}
	a.I("ADDQ", "$16, DX")
	a.I("MOVQ", "AX, SI")
	a.I("DECQ", "R9")
	a.I("JNZ", l("group"))
	a.Label(l("done"))
	a.I("VZEROUPPER")
	a.I("RET")
}
