package main

import "fmt"

// The AVX2 Q3_K and Q2_K decode row kernels (rows_q3k_avx2_amd64.s; Q2_K:
// q2kRowKernel below). Q3_K weights
// against one Q8_K activation row, four rows a step in the frame of
// rows_legacy_steps.go (spread steps, then one group of the rows left).
// It replaced a hand-written kernel of one row at a time with no software
// prefetch (dot_kquant_amd64.s until 2026-12-03), which streamed at about
// 0.32 of a plain read (10.5 GB/s of 33 over a 1 GiB matrix,
// BenchmarkDecode, Zen 5) and left one-thread Qwen3-0.6B Q3_K decode at
// 0.78× ik_llama.cpp's on the AVX2 tier.
//
// Per row and chunk m (32 weights; half h = m/4, j = m%4) the unsigned
// value u = ((q[h] >> 2j) & 3) | ((hmask >> m) & 1) << 2 (0..7, shifts by
// immediates, so no running shift and no copy), VPMADDUBSW against the
// activations, minus the chunk's 4·(pair sums) (one VPMADDUBSW of bytes 4
// per chunk, shared by the four rows: the row kernel did it per row),
// VPMADDWD by the chunk's scale words, VPADDD: 9-10 vector ops where the
// old kernel took 12 (its running shifts and per-row offset). The 16
// scales minus 32 are unpacked once per row and super-block as the old
// kernel did, but arranged even scales in the low 128-bit lane and odd ones
// in the high lane, so that chunk m's [s(2m) ×8 | s(2m+1) ×8] is one
// in-lane VPSHUFB of one register per row (the old kernel kept two
// lane-duplicated copies).
//
// The integers are those of quant.DotQ3KQ8K lane for lane (ggml's AVX2
// grouping; Σ (u-4)·a per lane pair is Σ v·a exactly, |words| < 2^12), and
// the float steps per row its own: d = d_w·d_a, acc = FMA(cvt(sumi), d,
// acc) per super-block, hsum_float_8 at the end.
//
// Registers of the step body: Y0 bytes 0x03, Y1 bytes 0x04, Y4..Y7 the
// rows' int32 sums, Y8..Y11 their arranged scale words, Y12 the chunk's
// activations, Y13 its offset words, Y14, Y15 temporaries; R14 scratch;
// the rows' float accumulators on the stack (0..127), touched once per
// super-block. With the masks as memory operands instead (and the
// accumulators in Y0..Y3) the kernel was load-bound: about 50 loads per
// row and super-block at 2 vector loads a cycle, 10.9 GB/s on rows in L2
// against the row kernel's 10.5.

func init() {
	register("rows_q3k_avx2_amd64.s", "amd64 && !purego", func(a *Asm) {
		a.Blank()
		a.Comment(`AVX2 decode row kernel of Q3_K weights against one Q8_K activation row
(see internal/asmgen/rows_q3k_avx2.go): four rows a step, spread.`)
		q3kRowConsts(a)
		q3kRowKernel(a)
		q2kRowKernel(a)
	})
}

// q3kRowConsts writes the kernel's constants (every memory operand of a
// 128-bit op at least 16 bytes, of a 256-bit op 32).
func q3kRowConsts(a *Asm) {
	data := func(name string, qwords ...uint64) {
		for i, q := range qwords {
			a.Raw("DATA %s<>+%d(SB)/8, $0x%016x", name, 8*i, q)
		}
		a.Raw("GLOBL %s<>(SB), RODATA|NOPTR, $%d", name, 8*len(qwords))
	}
	rep := func(b byte) []uint64 {
		v := uint64(b) * 0x0101010101010101
		return []uint64{v, v, v, v}
	}
	a.Blank()
	a.Comment(`r3ShiftLo / r3ShiftHi: dword shifts of the scale bytes (the low nibbles of
sc0..7 then their high nibbles; bits 2d..2d+1 of sc8..11 in dword d);
r3Arrange: scales 0, 2, .., 14 then 1, 3, .., 15.`)
	data("r3ShiftLo", 0, 0x0000000400000004)
	data("r3ShiftHi", 0x0000000200000000, 0x0000000600000004)
	data("r3Arrange", 0x0e0c0a0806040200, 0x0f0d0b0907050301)
	a.Comment("r3Word: mask m (32 bytes at 32m) spreads word m of each 128-bit lane over\nthe lane.")
	var q []uint64
	for m := 0; m < 8; m++ {
		w := uint64(2*m) | uint64(2*m+1)<<8
		v := w | w<<16 | w<<32 | w<<48
		q = append(q, v, v, v, v)
	}
	data("r3Word", q...)
	a.Comment("r3NegHi: the sign bit of float 1 (Q2_K's -(d_a·dmin)).")
	data("r3NegHi", 0x8000000000000000, 0)
	a.Comment("Byte constants: 0x03, 0x04, 0x0f, 0x20.")
	data("r3B03", rep(0x03)...)
	data("r3B04", rep(0x04)...)
	data("r3B0F", rep(0x0f)...)
	data("r3B20", rep(0x20)...)
}

// q3kRowKernel writes rowsQ3KAVX2.
func q3kRowKernel(a *Asm) {
	acc := func(r int) string { return fmt.Sprintf("%d(SP)", 32*r) }
	sum := func(r int) string { return fmt.Sprintf("Y%d", 4+r) }
	scl := func(r int) string { return fmt.Sprintf("Y%d", 8+r) }
	a.Blank()
	a.Comment(`rowsQ3KAVX2: Q3_K weights (110-byte blocks: hmask at 0, the 2-bit quants
at 32 and 64, the 12 scale bytes at 96, f16 d at 108) against Q8_K
activations (292-byte blocks: f32 d at 0, quants at 4), float order of
quant.DotQ3KQ8K.`)
	lrKernel{
		name: "rowsQ3KAVX2", n: 4, bs: 110, abs: 292, frame: 128,
		consts: func(a *Asm) {},
		zero: func(a *Asm) {
			a.I("VMOVDQU", "r3B03<>(SB)", "Y0")
			a.I("VMOVDQU", "r3B04<>(SB)", "Y1")
			a.I("VXORPS", "Y15", "Y15", "Y15")
			for r := 0; r < 4; r++ {
				a.I("VMOVUPS", "Y15", acc(r))
			}
		},
		block: func(a *Asm, rows []string) {
			at := func(r, off int) string { return fmt.Sprintf("%d(%s)(R12*1)", off, rows[r]) }
			// the scales of each row, minus 32, as words arranged
			// [s0 s2 .. s14 | s1 s3 .. s15]
			for r := 0; r < 4; r++ {
				a.I("VMOVDQU", at(r, 94), "X14")
				a.I("VPSRLDQ", "$2", "X14", "X14")
				a.I("VPSHUFD", "$0x44", "X14", "X15")
				a.I("VPSRLVD", "r3ShiftLo<>(SB)", "X15", "X15")
				a.I("VPAND", "r3B0F<>(SB)", "X15", "X15")
				a.I("VPSHUFD", "$0xAA", "X14", "X14")
				a.I("VPSRLVD", "r3ShiftHi<>(SB)", "X14", "X14")
				a.I("VPAND", "X0", "X14", "X14")
				a.I("VPSLLD", "$4", "X14", "X14")
				a.I("VPOR", "X14", "X15", "X15")
				a.I("VPSUBB", "r3B20<>(SB)", "X15", "X15")
				a.I("VPSHUFB", "r3Arrange<>(SB)", "X15", "X15")
				a.I("VPMOVSXBW", "X15", scl(r))
			}
			for m := 0; m < 8; m++ {
				h, j := m/4, m%4
				a.I("VMOVDQU", fmt.Sprintf("%d(DI)", 4+32*m), "Y12")
				a.I("VPMADDUBSW", "Y12", "Y1", "Y13")
				for r := 0; r < 4; r++ {
					if j > 0 {
						a.I("VMOVDQU", at(r, 32+32*h), "Y14")
						a.I("VPSRLW", fmt.Sprintf("$%d", 2*j), "Y14", "Y14")
						a.I("VPAND", "Y0", "Y14", "Y14")
					} else {
						a.I("VPAND", at(r, 32+32*h), "Y0", "Y14")
					}
					switch sh := 2 - m; {
					case sh > 0:
						a.I("VMOVDQU", at(r, 0), "Y15")
						a.I("VPSLLW", fmt.Sprintf("$%d", sh), "Y15", "Y15")
						a.I("VPAND", "Y1", "Y15", "Y15")
					case sh < 0:
						a.I("VMOVDQU", at(r, 0), "Y15")
						a.I("VPSRLW", fmt.Sprintf("$%d", -sh), "Y15", "Y15")
						a.I("VPAND", "Y1", "Y15", "Y15")
					default:
						a.I("VPAND", at(r, 0), "Y1", "Y15")
					}
					a.I("VPOR", "Y15", "Y14", "Y14")
					a.I("VPMADDUBSW", "Y12", "Y14", "Y14")
					a.I("VPSUBW", "Y13", "Y14", "Y14")
					a.I("VPSHUFB", fmt.Sprintf("r3Word<>+%d(SB)", 32*m), scl(r), "Y15")
					if m == 0 {
						a.I("VPMADDWD", "Y15", "Y14", sum(r))
						continue
					}
					a.I("VPMADDWD", "Y15", "Y14", "Y14")
					a.I("VPADDD", "Y14", sum(r), sum(r))
				}
			}
			// acc = FMA(cvt(sumi), d_w·d_a, acc), the accumulators on the
			// stack (the registers hold the byte masks)
			for r := 0; r < 4; r++ {
				a.I("MOVWLZX", at(r, 108), "R14")
				a.I("VMOVD", "R14", "X14")
				a.I("VCVTPH2PS", "X14", "X14")
				a.I("VMULSS", "(DI)", "X14", "X14")
				a.I("VBROADCASTSS", "X14", "Y14")
				a.I("VCVTDQ2PS", sum(r), sum(r))
				a.I("VFMADD213PS", acc(r), "Y14", sum(r))
				a.I("VMOVUPS", sum(r), acc(r))
			}
		},
		finish: func(a *Asm) []string {
			for r := 0; r < 4; r++ {
				a.I("VMOVUPS", acc(r), sum(r))
				hsum8(a, sum(r), fmt.Sprintf("X%d", 4+r), "X14")
			}
			return []string{"X4", "X5", "X6", "X7"}
		},
	}.emit(a)
}

// q2kRowKernel writes rowsQ2KAVX2: Q2_K weights (84-byte blocks: the 16
// scale bytes at 0, scale in the low nibble and min in the high one, the
// 2-bit quants at 16 and 48, f16 d and dmin at 80) against Q8_K
// activations (bsums at 260), float order of quant.DotQ2KQ8K: per
// super-block acc = FMA(cvt(mins·bsums), -(d_a·dmin), acc) (8 lanes,
// VPMADDWD of the 16 mins by the 16 bsums), then acc = FMA(cvt(sumi),
// d_a·d, acc); hsum_float_8 at the end. It replaced the hand-written row
// kernel (one row at a time, no software prefetch: 0.39-0.42 of a plain
// read in BenchmarkDecode dram), with the Q3_K kernel's step: four spread
// rows, per chunk m the values ((q[m/4] >> 2(m%4)) & 3), VPMADDUBSW,
// VPMADDWD by the scale words (one in-lane VPSHUFB of the row's scales
// arranged even|odd), VPADDD. Registers: Y0 bytes 0x03, Y1 bytes 0x0f,
// Y4..Y7 the rows' sums, Y8..Y11 their scale words, Y12 the activations,
// Y13..Y15 temporaries; the float accumulators on the stack.
func q2kRowKernel(a *Asm) {
	acc := func(r int) string { return fmt.Sprintf("%d(SP)", 32*r) }
	sum := func(r int) string { return fmt.Sprintf("Y%d", 4+r) }
	scl := func(r int) string { return fmt.Sprintf("Y%d", 8+r) }
	a.Blank()
	a.Comment(`rowsQ2KAVX2: Q2_K weights against Q8_K activations, float order of
quant.DotQ2KQ8K (see internal/asmgen/rows_q3k_avx2.go).`)
	lrKernel{
		name: "rowsQ2KAVX2", n: 4, bs: 84, abs: 292, frame: 128,
		consts: func(a *Asm) {},
		zero: func(a *Asm) {
			a.I("VMOVDQU", "r3B03<>(SB)", "Y0")
			a.I("VMOVDQU", "r3B0F<>(SB)", "Y1")
			a.I("VXORPS", "Y15", "Y15", "Y15")
			for r := 0; r < 4; r++ {
				a.I("VMOVUPS", "Y15", acc(r))
			}
		},
		block: func(a *Asm, rows []string) {
			at := func(r, off int) string { return fmt.Sprintf("%d(%s)(R12*1)", off, rows[r]) }
			// the scales as words arranged [s0 s2 .. s14 | s1 s3 .. s15]
			for r := 0; r < 4; r++ {
				a.I("VPAND", at(r, 0), "X1", "X14")
				a.I("VPSHUFB", "r3Arrange<>(SB)", "X14", "X14")
				a.I("VPMOVZXBW", "X14", scl(r))
			}
			for m := 0; m < 8; m++ {
				h, j := m/4, m%4
				a.I("VMOVDQU", fmt.Sprintf("%d(DI)", 4+32*m), "Y12")
				for r := 0; r < 4; r++ {
					if j > 0 {
						a.I("VMOVDQU", at(r, 16+32*h), "Y14")
						a.I("VPSRLW", fmt.Sprintf("$%d", 2*j), "Y14", "Y14")
						a.I("VPAND", "Y0", "Y14", "Y14")
					} else {
						a.I("VPAND", at(r, 16+32*h), "Y0", "Y14")
					}
					a.I("VPMADDUBSW", "Y12", "Y14", "Y14")
					a.I("VPSHUFB", fmt.Sprintf("r3Word<>+%d(SB)", 32*m), scl(r), "Y15")
					if m == 0 {
						a.I("VPMADDWD", "Y15", "Y14", sum(r))
						continue
					}
					a.I("VPMADDWD", "Y15", "Y14", "Y14")
					a.I("VPADDD", "Y14", sum(r), sum(r))
				}
			}
			// per row: [d_a·d, -(d_a·dmin)], the mins term, then the
			// scales' FMA, the accumulator on the stack
			a.I("VBROADCASTSS", "(DI)", "X12")
			for r := 0; r < 4; r++ {
				a.I("MOVL", at(r, 80), "R14")
				a.I("VMOVD", "R14", "X14")
				a.I("VCVTPH2PS", "X14", "X14")
				a.I("VMULPS", "X12", "X14", "X14")
				a.I("VXORPS", "r3NegHi<>(SB)", "X14", "X14")
				a.I("VBROADCASTSS", "X14", "Y13")
				a.I("VMOVSHDUP", "X14", "X14")
				a.I("VBROADCASTSS", "X14", "Y14")
				a.I("VMOVDQU", at(r, 0), "X15")
				a.I("VPSRLW", "$4", "X15", "X15")
				a.I("VPAND", "X1", "X15", "X15")
				a.I("VPMOVZXBW", "X15", "Y15")
				a.I("VPMADDWD", "260(DI)", "Y15", "Y15")
				a.I("VCVTDQ2PS", "Y15", "Y15")
				a.I("VFMADD213PS", acc(r), "Y14", "Y15")
				a.I("VCVTDQ2PS", sum(r), sum(r))
				a.I("VFMADD213PS", "Y15", "Y13", sum(r))
				a.I("VMOVUPS", sum(r), acc(r))
			}
		},
		finish: func(a *Asm) []string {
			for r := 0; r < 4; r++ {
				a.I("VMOVUPS", acc(r), sum(r))
				hsum8(a, sum(r), fmt.Sprintf("X%d", 4+r), "X14")
			}
			return []string{"X4", "X5", "X6", "X7"}
		},
	}.emit(a)
}
