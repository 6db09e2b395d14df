package main

import "fmt"

// The decode row kernels of Q8_0 weights against one Q8_0 activation row,
// AVX2 and AVX-512 VNNI, printed into backends/cpu/rows_q80_amd64.s, and
// the VNNI ones of Q5_0 and Q4_0 weights (the same step on VPDPBUSD,
// another weight unpack), printed into rows_legacy_vnni_amd64.s. The loops
// around a step are rows_legacy_steps.go's; the Go side
// (dot_legacy_amd64.go) declares them and legacyRows (rows_asm.go) checks
// every bound they rely on.

func init() {
	register("rows_q80_amd64.s", "amd64 && !purego", func(a *Asm) {
		a.Blank()
		a.Comment(q80r8Doc)
		q80AVX2(a, "rowsQ8_0AVX2")
		lvConsts(a)
		lvKernel(a, "rowsQ8_0VNNI", lvQ8_0, 2)
	})
	register("rows_legacy_vnni_amd64.s", "amd64 && !purego", func(a *Asm) {
		a.Blank()
		a.Comment(lvDoc)
		lvConsts(a)
		lvKernel(a, "rowsQ5_0VNNI", lvQ5_0, 2)
		lvKernel(a, "rowsQ4_0VNNI", lvQ4_0, 2)
	})
}

const q80r8Doc = `Decode row kernels of Q8_0 weights against one Q8_0 activation row,
AVX2 and AVX-512 VNNI (see internal/asmgen/rows_q80.go and
rows_legacy_steps.go).

Float order of quant.DotQ8_0Q8_0 (ggml's AVX2 kernel): per 32-element
block, 8 int32 lanes (lane k the integer dot of elements 4k..4k+3, with
ggml's sign trick |x|·(y with x's sign): exact unless a weight and its
activation are both -128, which the activation quantizer never writes),
converted to float32, acc = FMA(cvt, d_w·d_a, acc) in block order, then
hsum_float_8(acc). Each row keeps its own accumulator; a step of rows
spread over the range (rows i, q+i, ...) or a group of fewer rows than
the kernel's (its missing rows pointing at its last row, stored once)
leaves every row's float steps as they are.`

const lvDoc = `AVX-512 VNNI decode row kernels of Q5_0 and Q4_0 weights against one
Q8_0 activation row (see internal/asmgen/rows_q80.go and
rows_legacy_steps.go): the integer part on VPDPBUSD with the weights
unsigned (Q5_0 nibble + 16·bit, the 5th bits through an opmask; Q4_0 the
nibble) and the accumulator started at -(16 or 8)·Σ y of each 4 bytes,
exact for every input; two rows per ZMM, then per row the float steps of
quant.DotQ5_0Q8_0 / DotQ4_0Q8_0 (8 lanes converted, FMA by d_w·d_a in
block order, hsum_float_8).`

// q80PF is the Q8_0 row kernels' prefetch (see lrKernel.pf).
const q80PF = "PREFETCHT2"

// q80AVX2 writes the AVX2 Q8_0 kernel name, four rows a step
// (lrKernel). Per block: the rows' f16 d gathered into R14, to the stack
// and broadcast to both 64-bit halves of X12, converted, times d_a: Y12 =
// [s0 s1 s2 s3 s0 s1 s2 s3] (row r's scale broadcast to Y9 by one
// in-lane VPERMILPS, not from a stack slot just written by a wide store);
// the activation quants in Y8; per row its quants in Y10, the signed
// activations Y11 (ggml's sign trick), products to int16 pairs
// (VPMADDUBSW) and int32 lanes (VPMADDWD by Y13, int16 ones), converted,
// FMA by the row's scale into Y0..Y3.
func q80AVX2(a *Asm, name string) {
	acc := []string{"Y0", "Y1", "Y2", "Y3"}
	lrKernel{
		name: name, n: 4, bs: 34, frame: 8, pf: q80PF,
		consts: func(a *Asm) {
			a.I("VPCMPEQW", "Y13, Y13, Y13")
			a.I("VPSRLW", "$15, Y13, Y13")
		},
		zero: func(a *Asm) {
			for _, y := range acc {
				a.I("VXORPS", y, y, y)
			}
		},
		block: func(a *Asm, rows []string) {
			a.I("MOVWQZX", fmt.Sprintf("(%s)(R12*1), R14", rows[3]))
			for r := 2; r >= 0; r-- {
				a.I("SHLQ", "$16, R14")
				a.I("MOVW", fmt.Sprintf("(%s)(R12*1), R14", rows[r]))
			}
			a.I("MOVQ", "R14, (SP)")
			a.I("VPBROADCASTQ", "(SP), X12")
			a.I("VCVTPH2PS", "X12, Y12")
			a.I("VPBROADCASTW", "(DI), X10")
			a.I("VCVTPH2PS", "X10, Y10")
			a.I("VMULPS", "Y10, Y12, Y12")
			a.I("VMOVDQU", "2(DI), Y8")
			for r := 0; r < 4; r++ {
				a.I("VMOVDQU", fmt.Sprintf("2(%s)(R12*1), Y10", rows[r]))
				a.I("VPSIGNB", "Y10, Y8, Y11")
				a.I("VPABSB", "Y10, Y10")
				a.I("VPMADDUBSW", "Y11, Y10, Y10")
				a.I("VPMADDWD", "Y13, Y10, Y10")
				a.I("VCVTDQ2PS", "Y10, Y10")
				a.I("VPERMILPS", fmt.Sprintf("$0x%02x, Y12, Y9", 0x55*r))
				a.I("VFMADD231PS", "Y10, Y9", acc[r])
			}
		},
		finish: func(a *Asm) []string {
			var res []string
			for _, y := range acc {
				hsum8(a, y, "X"+y[1:], "X10")
				res = append(res, "X"+y[1:])
			}
			return res
		},
	}.emit(a)
}

// lvKind is one weight format of the VNNI kernels.
type lvKind struct {
	bs   int    // weight block bytes
	bias uint32 // the unsigned weights' offset, in each byte of Z12
	// load writes pair i's weights as unsigned bytes into Z7: row ra's
	// block (at R12) in the low 256 bits, rb's in the high ones.
	load func(a *Asm, ra, rb string)
	pf   string // the prefetch instruction (lrKernel.pf)
}

var (
	lvQ8_0 = lvKind{34, 0x80808080, func(a *Asm, ra, rb string) {
		// x+128 = x XOR 0x80.
		a.I("VMOVDQU64", fmt.Sprintf("2(%s)(R12*1), Y7", ra))
		a.I("VINSERTI64X4", fmt.Sprintf("$1, 2(%s)(R12*1), Z7, Z7", rb))
		a.I("VPXORD", "Z12, Z7, Z7")
	}, q80PF}
	lvQ5_0 = lvKind{22, 0x10101010, func(a *Asm, ra, rb string) {
		lvNibbles(a, 6, ra, rb)
		// K1 = the 5th bits of ra (bits 0..31) and rb (32..63); +16 under it.
		a.I("MOVL", fmt.Sprintf("2(%s)(R12*1), R14", ra))
		a.I("MOVL", fmt.Sprintf("2(%s)(R12*1), R15", rb))
		a.I("SHLQ", "$32, R15")
		a.I("ORQ", "R15, R14")
		a.I("KMOVQ", "R14, K1")
		a.I("VPADDB", "Z12, Z7, K1, Z7")
	}, ""}
	lvQ4_0 = lvKind{18, 0x08080808, func(a *Asm, ra, rb string) {
		lvNibbles(a, 2, ra, rb)
	}, ""}
)

// lvNibbles writes Z7 = the 32 nibbles of the blocks' 16 quant bytes at
// off of rows ra (low 256 bits) and rb (high): each row's bytes in both of
// its 128-bit lanes (K2 the high half's dwords), the upper lane shifted
// right by 4, masked by Z14 (bytes 0x0F).
func lvNibbles(a *Asm, off int, ra, rb string) {
	a.I("VBROADCASTI32X4", fmt.Sprintf("%d(%s)(R12*1), Z7", off, ra))
	a.I("VBROADCASTI32X4", fmt.Sprintf("%d(%s)(R12*1), K2, Z7", off, rb))
	a.I("VPSRLVD", "lvNibShift<>(SB), Z7, Z7")
	a.I("VPANDD", "Z14, Z7, Z7")
}

// lvConsts writes the VPERMPS indices that spread the step's rows'
// d_w·d_a (one YMM, row r in lane r) to the pairs' ZMM scales [row 2p ×8
// | row 2p+1 ×8], and the nibble shifts.
func lvConsts(a *Asm) {
	a.Blank()
	a.Comment("lvPair<p>: VPERMPS indices [2p ×8 | 2p+1 ×8].")
	for p := 0; p < 4; p++ {
		name := fmt.Sprintf("lvPair%d", p)
		for i := 0; i < 8; i++ {
			r := uint64(2*p + i/4)
			a.Raw("DATA %s<>+%d(SB)/8, $0x%016x", name, 8*i, r|r<<32)
		}
		a.Raw("GLOBL %s<>(SB), RODATA|NOPTR, $64", name)
	}
	a.Comment("lvNibShift: VPSRLVD counts shifting 128-bit lanes 1 and 3 right by 4.")
	for i := 0; i < 8; i++ {
		v := uint64(0)
		if i%4 >= 2 {
			v = 0x0000000400000004
		}
		a.Raw("DATA lvNibShift<>+%d(SB)/8, $0x%016x", 8*i, v)
	}
	a.Raw("GLOBL lvNibShift<>(SB), RODATA|NOPTR, $64")
}

// lvKernel writes the AVX-512 VNNI kernel name of weight format t with
// 2·pairs rows a step (pairs 1, 2 or 4; see lrKernel): the
// integer part on VPDPBUSD (exact for every input: the weights unsigned,
// x+bias, the accumulator started at -bias·Σ y of each 4 bytes, which
// leaves Σ x·y), two rows per ZMM (row 2p in the low half, 2p+1 in the
// high), then per row the same 8-lane convert and FMA with d_w·d_a in
// block order as the AVX2 kernels, and hsum_float_8 of each half.
// Registers: Z0..Z(pairs-1) the pairs' accumulators, Z4 the activation
// quants in both halves, Z5 d_a, Z6 the rows' d_w·d_a, Z7 and Z9
// temporaries, Z12 the bias bytes, Z13 the offsets, Z14 bytes 0x0F, K2
// the high half's dwords, Z16.. the pairs' scales (VPERMPS of Z6 by
// Z20.., the lvPair indices).
func lvKernel(a *Asm, name string, t lvKind, pairs int) {
	n := 2 * pairs
	lrKernel{
		name: name, n: n, bs: t.bs, frame: 0, pf: t.pf,
		consts: func(a *Asm) {
			for i := 0; i < pairs; i++ {
				a.I("VMOVDQU64", fmt.Sprintf("lvPair%d<>(SB), Z%d", i, 20+i))
			}
			a.I("MOVL", fmt.Sprintf("$0x%08x, R14", t.bias))
			a.I("VPBROADCASTD", "R14, Z12")
			if t.bs != 34 {
				a.I("MOVL", "$0x0f0f0f0f, R14")
				a.I("VPBROADCASTD", "R14, Z14")
				a.I("MOVL", "$0xff00, R14")
				a.I("KMOVW", "R14, K2")
			}
		},
		zero: func(a *Asm) {
			for i := 0; i < pairs; i++ {
				a.I("VPXORD", fmt.Sprintf("Z%d, Z%d, Z%d", i, i, i))
			}
		},
		block: func(a *Asm, rows []string) {
			// The activation block: d_a in all lanes of Y5, the quants in
			// both halves of Z4, Z13 = -bias·Σ y of each 4 bytes.
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
				t.load(a, rows[2*i], rows[2*i+1])
				a.I("VMOVDQA64", "Z13, Z9")
				a.I("VPDPBUSD", "Z4, Z7, Z9")
				a.I("VCVTDQ2PS", "Z9, Z9")
				a.I("VFMADD231PS", fmt.Sprintf("Z9, Z%d, Z%d", 16+i, i))
			}
		},
		finish: func(a *Asm) []string {
			// Row 2p in Yp, row 2p+1 (the high half) in Y(p+4).
			for i := 0; i < pairs; i++ {
				a.I("VEXTRACTF64X4", fmt.Sprintf("$1, Z%d, Y%d", i, i+4))
			}
			var res []string
			for _, x := range []int{0, 4, 1, 5, 2, 6, 3, 7}[:n] {
				hsum8(a, fmt.Sprintf("Y%d", x), fmt.Sprintf("X%d", x), "X8")
				res = append(res, fmt.Sprintf("X%d", x))
			}
			return res
		},
	}.emit(a)
}
