package main

import "fmt"

// AVX2 decode row kernels of Q4_0 and Q5_0 weights against Q8_0
// activations, printed into
// backends/cpu/rows_legacy_avx2_amd64.s (the loops around a step are
// rows_legacy_steps.go's); the Go side declares them in
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
		a.Blank()
		a.Comment(lxDoc)
		lxConsts(a)
		lxKernel(a, lgQ4_0, "rowsQ4_0AVXVNNI")
		lxKernel(a, lgQ5_0, "rowsQ5_0AVXVNNI")
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
bound by the FMA latency), rows i, q+i, 2q+i, 3q+i of q = rows/4 steps
(four sequential streams; see internal/asmgen/rows_legacy_steps.go);
the group of fewer than four rows left points its missing rows at its
last row and stores only its own, so a row's float steps do not depend
on its position.`

// lgType describes one weight format of the kernels.
type lgType struct {
	name string // Go name of the kernel
	bs   int    // weight block bytes
}

var (
	lgQ4_0 = lgType{"rowsQ4_0AVX2", 18}
	lgQ5_0 = lgType{"rowsQ5_0AVX2", 22}
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
	a.Comment(`lgQhDup / lgBit / lgSign16, the Q5_0 5th bits from the u32 qh broadcast
to every dword: byte i (of 32: element i) takes qh byte i/8 (lgQhDup),
keeps bit i%8 (lgBit), and VPSIGNB of lgSign16 by it gives 0x10 where
the bit is set (bit 7 makes the byte negative: -(-16)), 0 where not.`)
	data("lgQhDup", 0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303)
	data("lgBit", 0x8040201008040201, 0x8040201008040201, 0x8040201008040201, 0x8040201008040201)
	data("lgSign16", 0xf010101010101010, 0xf010101010101010, 0xf010101010101010, 0xf010101010101010)
}

// lgRow writes one weight row's block (row base in reg, block offset
// R12) against the activation quants in Y4 (Q4_0 and Q5_0 take their
// weights unsigned, 0..15 / 0..31, and subtract Y13, 8 or 16 times the
// activations' pair sums, in int16: no overflow for any input): its
// int32 lanes converted to float in Y7, then acc = FMA(Y7, d_w·d_a
// (stack slot off), acc). The Q5_0 5th bits take four vector ops and no
// scalar work: the u32 qh broadcast to every dword, byte i picking qh
// byte i/8 (VPSHUFB by Y5, lgQhDup), keeping bit i%8 (Y11, lgBit), then
// VPSIGNB of Y9 (lgSign16) by it, 0x10 where the bit is set, ORed into
// the nibbles. (It replaced a scalar qword qh | (qh<<4)<<32 stored and
// broadcast back, a VPMINUB making the bit 0x10: 512 KiB of rows, K=1024
// / 4864, kernel over streaming read, medians of 5, two runs: 0.153 /
// 0.168 and 0.152 / 0.147 -> 0.157 / 0.173 and 0.158 / 0.157.)
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
		a.I("VPBROADCASTD", at(2), "Y8")
		a.I("VPSHUFB", "Y5, Y8, Y8")
		a.I("VPAND", "Y11, Y8, Y8")
		a.I("VPSIGNB", "Y8, Y9, Y8")
		a.I("VPOR", "Y8, Y7, Y7")
		a.I("VPMADDUBSW", "Y4, Y7, Y7")
		a.I("VPSUBW", "Y13, Y7, Y7")
	}
	a.I("VPMADDWD", "Y15, Y7, Y7")
	a.I("VCVTDQ2PS", "Y7, Y7")
	a.I("VBROADCASTSS", fmt.Sprintf("%d(SP)", off), "Y6")
	a.I("VFMADD231PS", "Y7, Y6", acc)
}

// lgScales emits X6 = the four rows' block scales d_w (f16, gathered
// through R14 and 16(SP)) times the activation block's d_a, as f32.
func lgScales(a *Asm, rows []string) {
	a.I("MOVWQZX", fmt.Sprintf("(%s)(R12*1), R14", rows[3]))
	for _, reg := range []string{rows[2], rows[1], rows[0]} {
		a.I("SHLQ", "$16, R14")
		a.I("MOVW", fmt.Sprintf("(%s)(R12*1), R14", reg))
	}
	a.I("MOVQ", "R14, 16(SP)")
	a.I("VCVTPH2PS", "16(SP), X6")
	a.I("VPBROADCASTW", "(DI), X7")
	a.I("VCVTPH2PS", "X7, X7")
	a.I("VMULPS", "X7, X6, X6")
}

// lgKernel writes the kernel of format t, four rows a step (lrKernel):
//
//	func name(w *byte, wrb int, a *byte, nb int, y *float32, rows int)
//
// Per block the four rows' f16 d gathered into R14, converted (from the
// stack: no GPR-to-vector move, which runs one a cycle), times d_a, to the
// stack (0..15), the activation quants in Y4, Y13 the offset term
// (VPMADDUBSW of Y12 and Y4), then each row (lgRow). Stack: 0..15 the
// rows' d_w·d_a, 16 the rows' f16 d. Y0..Y3 the rows' accumulators, Y6 a
// row's scale, Y7/Y8 temporaries, Y14 bytes 0x0F, Y15 int16 ones, Y10
// lgNibShift, Y12 bytes 8 (Q4_0) or 0x10 (Q5_0), Y5 lgQhDup, Y11 lgBit,
// Y9 lgSign16. (Broadcasting the scales from a register, [s0..s3|s0..s3]
// by an in-lane VPERMILPS per row, was slower here: L2-resident Q4_0
// 0.179 -> 0.171 of a streaming read.)
func lgKernel(a *Asm, t lgType) {
	lrKernel{
		name: t.name, n: 4, bs: t.bs, frame: 24,
		consts: func(a *Asm) {
			a.I("VPCMPEQW", "Y15, Y15, Y15")
			a.I("VPSRLW", "$15, Y15, Y15")
			a.I("MOVL", "$0x0f0f0f0f, R14")
			a.I("VMOVD", "R14, X14")
			a.I("VPBROADCASTD", "X14, Y14")
			a.I("VMOVDQU", "lgNibShift<>(SB), Y10")
			c := "$0x08080808"
			if t == lgQ5_0 {
				c = "$0x10101010"
				a.I("VMOVDQU", "lgQhDup<>(SB), Y5")
				a.I("VMOVDQU", "lgBit<>(SB), Y11")
				a.I("VMOVDQU", "lgSign16<>(SB), Y9")
			}
			a.I("MOVL", c+", R14")
			a.I("VMOVD", "R14, X12")
			a.I("VPBROADCASTD", "X12, Y12")
		},
		zero: func(a *Asm) {
			for r := 0; r < 4; r++ {
				a.I("VXORPS", fmt.Sprintf("Y%d, Y%d, Y%d", r, r, r))
			}
		},
		block: func(a *Asm, rows []string) {
			lgScales(a, rows)
			a.I("VMOVUPS", "X6, (SP)")
			a.I("VMOVDQU", "2(DI), Y4")
			a.I("VPMADDUBSW", "Y4, Y12, Y13")
			for r, reg := range rows {
				lgRow(a, t, reg, 4*r, fmt.Sprintf("Y%d", r))
			}
		},
		finish: func(a *Asm) []string {
			for r := 0; r < 4; r++ {
				hsum8(a, fmt.Sprintf("Y%d", r), fmt.Sprintf("X%d", r), "X6")
			}
			return []string{"X0", "X1", "X2", "X3"}
		},
	}.emit(a)
}

const lxDoc = `AVX-VNNI (VEX VPDPBUSD on 256-bit registers, no AVX-512) decode row
kernels of Q4_0 and Q5_0 weights: the rows, steps and float steps of the
AVX2 kernels above, the integer part on VPDPBUSD instead of VPMADDUBSW,
VPSUBW and VPMADDWD (see lxKernel).`

// vexVPDPBUSD writes the VEX-encoded (AVX-VNNI) VPDPBUSD src2, src1, dst
// (Go operand order: dst += per dword the sum of the four products of
// src1's unsigned bytes and src2's signed bytes, no saturation) as BYTEs:
// the Go assembler encodes VPDPBUSD only as the EVEX (AVX-512 VNNI) form,
// which a CPU with AVX-VNNI but no AVX-512 cannot run. VEX.256.66.0F38.W0
// 50 /r: C4, [R̄ X̄ B̄ 00010], [W=0 v̄v̄v̄v̄ L=1 pp=01], 50, ModRM 11 reg rm.
func vexVPDPBUSD(a *Asm, src2, src1, dst string) {
	var rm, v, r int
	for _, p := range []struct {
		s string
		n *int
	}{{src2, &rm}, {src1, &v}, {dst, &r}} {
		if _, err := fmt.Sscanf(p.s, "Y%d", p.n); err != nil || *p.n < 0 || *p.n > 15 {
			panic("vexVPDPBUSD: not a Y register: " + p.s)
		}
	}
	b1 := 0x02 | (^(r>>3)&1)<<7 | 1<<6 | (^(rm>>3)&1)<<5
	b2 := (^v&0xf)<<3 | 1<<2 | 1
	modrm := 0xc0 | (r&7)<<3 | rm&7
	a.I(fmt.Sprintf("BYTE $0xc4; BYTE $0x%02x; BYTE $0x%02x; BYTE $0x50; BYTE $0x%02x // VPDPBUSD %s, %s, %s (VEX)",
		b1, b2, modrm, src2, src1, dst))
}

// lxConsts writes the constants of the AVX-VNNI Q4_0 kernel.
func lxConsts(a *Asm) {
	data := func(name string, qwords ...uint64) {
		for i, q := range qwords {
			a.Raw("DATA %s<>+%d(SB)/8, $0x%016x", name, 8*i, q)
		}
		a.Raw("GLOBL %s<>(SB), RODATA|NOPTR, $%d", name, 8*len(qwords))
	}
	a.Comment(`lxQ4Mask / lxQ4Bias / lxQ4Scale, the AVX-VNNI Q4_0 nibbles: the 16 quant
bytes in both lanes masked by 0x0F (low lane: the low nibbles, elements
0..15) and 0xF0 (high lane: 16 times the high nibbles, elements 16..31),
so lanes 4..7 hold 16 times ggml's integers (exact: |16·(Σ q·y - 8·Σ y)|
< 2^17); their offset is 128·Σ y (lxQ4Bias bytes 8 | 128) and their
scale d_w·d_a/16 (lxQ4Scale 1 | 1/16, exact: d_w·d_a is 0, at least
2^-48, Inf or NaN), so the FMA's exact product and its one rounding are
ggml's.`)
	data("lxQ4Mask", 0x0f0f0f0f0f0f0f0f, 0x0f0f0f0f0f0f0f0f, 0xf0f0f0f0f0f0f0f0, 0xf0f0f0f0f0f0f0f0)
	data("lxQ4Bias", 0x0808080808080808, 0x0808080808080808, 0x8080808080808080, 0x8080808080808080)
	data("lxQ4Scale", 0x3f8000003f800000, 0x3f8000003f800000, 0x3d8000003d800000, 0x3d8000003d800000)
}

// lxKernel writes the AVX-VNNI kernel name of format t, four rows a step
// (lrKernel), the AVX2 kernel's frame: per block the rows' f16 d gathered
// and converted times d_a (stack 0..15; for Q4_0 a YMM [s0..s3 |
// s0..s3/16] in Y6 instead, row r's scales by one in-lane VPERMILPS), the
// activation quants in Y4, Y13 = -(bias·Σ y) of each 4 bytes (VPMADDUBSW
// by the bias bytes Y12, VPMADDWD by int16 -1s in Y15: exact, |128·2·128|
// fits int16), then per row: its unsigned weights (Q5_0 the AVX2 kernel's
// nibbles | 5th bits; Q4_0 one VPAND, lxQ4Mask), Y13 copied into Y8 (a
// register move: renamed, not executed) and VPDPBUSD into it, converted,
// FMA by the row's scale. Vector ops per row and block: Q4_0 5 (AVX2
// kernel 7), Q5_0 9 (11).
func lxKernel(a *Asm, t lgType, name string) {
	q4 := t == lgQ4_0
	lrKernel{
		name: name, n: 4, bs: t.bs, frame: 24,
		consts: func(a *Asm) {
			a.I("VPCMPEQW", "Y15, Y15, Y15")
			if q4 {
				a.I("VMOVDQU", "lxQ4Mask<>(SB), Y14")
				a.I("VMOVDQU", "lxQ4Bias<>(SB), Y12")
				a.I("VMOVDQU", "lxQ4Scale<>(SB), Y11")
				return
			}
			a.I("MOVL", "$0x0f0f0f0f, R14")
			a.I("VMOVD", "R14, X14")
			a.I("VPBROADCASTD", "X14, Y14")
			a.I("VMOVDQU", "lgNibShift<>(SB), Y10")
			a.I("VMOVDQU", "lgQhDup<>(SB), Y5")
			a.I("VMOVDQU", "lgBit<>(SB), Y11")
			a.I("VMOVDQU", "lgSign16<>(SB), Y9")
			a.I("MOVL", "$0x10101010, R14")
			a.I("VMOVD", "R14, X12")
			a.I("VPBROADCASTD", "X12, Y12")
		},
		zero: func(a *Asm) {
			for r := 0; r < 4; r++ {
				a.I("VXORPS", fmt.Sprintf("Y%d, Y%d, Y%d", r, r, r))
			}
		},
		block: func(a *Asm, rows []string) {
			lgScales(a, rows)
			if q4 {
				a.I("VINSERTF128", "$1, X6, Y6, Y6")
				a.I("VMULPS", "Y11, Y6, Y6")
			} else {
				a.I("VMOVUPS", "X6, (SP)")
			}
			a.I("VMOVDQU", "2(DI), Y4")
			a.I("VPMADDUBSW", "Y4, Y12, Y13")
			a.I("VPMADDWD", "Y15, Y13, Y13")
			for r, reg := range rows {
				at := func(d int) string { return fmt.Sprintf("%d(%s)(R12*1)", d, reg) }
				if q4 {
					a.I("VBROADCASTI128", at(2), "Y7")
					a.I("VPAND", "Y14, Y7, Y7")
				} else {
					a.I("VBROADCASTI128", at(6), "Y7")
					a.I("VPSRLVD", "Y10, Y7, Y7")
					a.I("VPAND", "Y14, Y7, Y7")
					a.I("VPBROADCASTD", at(2), "Y8")
					a.I("VPSHUFB", "Y5, Y8, Y8")
					a.I("VPAND", "Y11, Y8, Y8")
					a.I("VPSIGNB", "Y8, Y9, Y8")
					a.I("VPOR", "Y8, Y7, Y7")
				}
				a.I("VMOVDQA", "Y13, Y8")
				vexVPDPBUSD(a, "Y4", "Y7", "Y8")
				a.I("VCVTDQ2PS", "Y8, Y8")
				if q4 {
					a.I("VPERMILPS", fmt.Sprintf("$0x%02x, Y6, Y9", 0x55*r))
					a.I("VFMADD231PS", "Y8, Y9", fmt.Sprintf("Y%d", r))
				} else {
					a.I("VBROADCASTSS", fmt.Sprintf("%d(SP)", 4*r), "Y6")
					a.I("VFMADD231PS", "Y8, Y6", fmt.Sprintf("Y%d", r))
				}
			}
		},
		finish: func(a *Asm) []string {
			for r := 0; r < 4; r++ {
				hsum8(a, fmt.Sprintf("Y%d", r), fmt.Sprintf("X%d", r), "X6")
			}
			return []string{"X0", "X1", "X2", "X3"}
		},
	}.emit(a)
}
