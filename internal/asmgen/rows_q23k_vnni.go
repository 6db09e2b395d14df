package main

import "fmt"

// The AVX-512 VNNI decode row kernels of Q3_K and Q2_K
// (rows_q23k_vnni_amd64.s): until these, the AVX-512 tier ran the AVX2
// four-row kernels of rows_q3k_avx2.go, about 100 vector ops per row and
// super-block, compute-bound at 13-15 GB/s on rows in L2 (0.35-0.45 of a
// plain read over a 1 GiB matrix, Zen 5).
//
// The step is the AVX2 kernels' (four spread rows in the frame of
// rows_legacy_steps.go), on ZMM with two rows per register: rows 0 and 1
// of the step in the low and high 256 bits of one register, rows 2 and 3
// in another, each half exactly the AVX2 kernel's YMM for its row, so the
// integers and float steps are the same, lane for lane. Per row pair and
// chunk m of 32 weights (half h = m/4, j = m%4):
//
//   - the 2-bit values: the pair's quant bytes of half h (one load and one
//     insert per half, kept for its four chunks), VPSRLW by 2j, VPANDD 3;
//   - Q3_K's high bit: VPTESTMB of the pair's hmask bytes (loaded once per
//     super-block) with bytes 1<<m gives a byte mask, and a merge-masked
//     VPADDB of 4 makes u = q | 4h (the AVX2 kernel: a load, a shift, an
//     AND and an OR);
//   - VPMADDUBSW against the activation chunk (broadcast to both halves,
//     once for both pairs), Q3_K: VPSUBW of the chunk's 4·(pair sums)
//     (one VPMADDUBSW of bytes 4 per chunk, shared), then VPDPWSSD by the
//     chunk's scale words [s(2m) ×8 | s(2m+1) ×8] of each row (one in-lane
//     VPSHUFB of the pair's scale register) into the int32 sums — the AVX2
//     kernel's VPMADDWD and VPADDD in one.
//
// So a pair's chunk is 7-8 ops for 64 weights where the AVX2 kernel spent
// 9-11 for 32. The scales are unpacked for both rows of a pair at once on
// YMM (the AVX2 kernel's XMM steps, one row per 128-bit lane), then
// widened to words by one VPMOVSXBW / VPMOVZXBW into the four 128-bit
// lanes [A even | A odd | B even | B odd] the VPSHUFB reads. Per
// super-block the pair's d_w·d_a (and Q2_K's -(d_a·dmin)) are two f16 loads,
// one conversion, one multiply and a VPERMPS into [A ×8 | B ×8]; the float
// accumulators stay in registers, and the results are each half's
// hsum_float_8.
//
// Registers: Z0 bytes 3, Z1 bytes 4 (Q3_K) or 0x0f (Q2_K), Z2/Z3 the pairs'
// float accumulators, Z4/Z5 their int32 sums, Z6/Z7 their scale words,
// Z8/Z9 their quant bytes of the current half, Z10/Z11 their hmask bytes
// (Q3_K) or mins products (Q2_K), Z12 the activation chunk, Z13 its offset
// words (Q3_K) or the bsums (Q2_K), Z14/Z15 scratch (their Y/X forms for the
// VEX steps), Z16/Z17 the pairs' values, Z18/Z19 their chunk scale words,
// Z20 (and Z21, Q2_K) the VPERMPS indices; K1/K2 the pairs' high-bit masks.

func init() {
	register("rows_q23k_vnni_amd64.s", "amd64 && !purego", func(a *Asm) {
		a.Blank()
		a.Comment(`AVX-512 VNNI decode row kernels of Q3_K and Q2_K weights against one Q8_K
activation row (see internal/asmgen/rows_q23k_vnni.go): four rows a step,
spread, two rows per ZMM.`)
		q23kVNNIConsts(a)
		q3kVNNIKernel(a)
		q2kVNNIKernel(a)
	})
}

// q23kVNNIConsts writes the kernels' constants.
func q23kVNNIConsts(a *Asm) {
	data := func(name string, qwords ...uint64) {
		for i, q := range qwords {
			a.Raw("DATA %s<>+%d(SB)/8, $0x%016x", name, 8*i, q)
		}
		a.Raw("GLOBL %s<>(SB), RODATA|NOPTR, $%d", name, 8*len(qwords))
	}
	rep := func(n int, qs ...uint64) []uint64 {
		var out []uint64
		for i := 0; i < n; i++ {
			out = append(out, qs...)
		}
		return out
	}
	a.Blank()
	a.Comment(`z3ShiftLo / z3ShiftHi: dword shifts of the Q3_K scale bytes in each 128-bit
lane (the low nibbles of sc0..7 then their high nibbles; bits 2d..2d+1 of
sc8..11 in dword d); z3Arrange: bytes 0, 2, .., 14 then 1, 3, .., 15 of each
lane.`)
	data("z3ShiftLo", rep(2, 0, 0x0000000400000004)...)
	data("z3ShiftHi", rep(2, 0x0000000200000000, 0x0000000600000004)...)
	data("z3Arrange", rep(2, 0x0e0c0a0806040200, 0x0f0d0b0907050301)...)
	a.Comment("z3Word: mask m (64 bytes at 64m) spreads word m of each 128-bit lane over\nthe lane.")
	var q []uint64
	for m := 0; m < 8; m++ {
		w := uint64(2*m) | uint64(2*m+1)<<8
		v := w | w<<16 | w<<32 | w<<48
		q = append(q, rep(8, v)...)
	}
	data("z3Word", q...)
	a.Comment("z3Bit: bytes 1<<m (64 bytes at 64m), Q3_K's hmask bit of chunk m.")
	q = q[:0]
	for m := 0; m < 8; m++ {
		q = append(q, rep(8, uint64(1)<<m*0x0101010101010101)...)
	}
	data("z3Bit", q...)
	a.Comment(`z3Perm: dwords 0 ×8 then 1 ×8; z2PermD / z2PermM: dwords 0 ×8 then 2 ×8,
1 ×8 then 3 ×8 (VPERMPS indices); z2Neg: the sign bits of floats 1 and 3.`)
	data("z3Perm", append(rep(4, 0), rep(4, 0x0000000100000001)...)...)
	data("z2PermD", append(rep(4, 0), rep(4, 0x0000000200000002)...)...)
	data("z2PermM", append(rep(4, 0x0000000100000001), rep(4, 0x0000000300000003)...)...)
	data("z2Neg", 0x8000000000000000, 0x8000000000000000)
	a.Comment("Byte constants (32 bytes each): 0x0f, 0x20.")
	data("z3B0F", rep(4, 0x0f0f0f0f0f0f0f0f)...)
	data("z3B20", rep(4, 0x2020202020202020)...)
}

// q23kPairLoad writes the load of a row pair's 32 bytes at off into z:
// row A's in the low half, row B's in the high.
func q23kPairLoad(a *Asm, at func(r, off int) string, rA, rB, off int, z int) {
	a.I("VMOVDQU", at(rA, off), fmt.Sprintf("Y%d", z))
	a.I("VINSERTI64X4", "$1", at(rB, off), fmt.Sprintf("Z%d", z), fmt.Sprintf("Z%d", z))
}

// q23kFinish writes the results of the four rows: each half's
// hsum_float_8 (rows 1 and 3 from the high halves of Z2 and Z3).
func q23kFinish(a *Asm) []string {
	a.I("VEXTRACTF64X4", "$1", "Z2", "Y5")
	a.I("VEXTRACTF64X4", "$1", "Z3", "Y7")
	hsum8(a, "Y2", "X2", "X14")
	hsum8(a, "Y5", "X5", "X15")
	hsum8(a, "Y3", "X3", "X14")
	hsum8(a, "Y7", "X7", "X15")
	return []string{"X2", "X5", "X3", "X7"}
}

// q23kZero clears the two pairs' float accumulators.
func q23kZero(a *Asm) {
	a.I("VPXORD", "Z2", "Z2", "Z2")
	a.I("VPXORD", "Z3", "Z3", "Z3")
}

// q23kChunks writes the 8 chunks of a super-block for both row pairs: the
// 2-bit values of the pair's quant bytes (at qOff and qOff+32 of the
// block), Q3_K's high bit (three: the hmask bytes in Z10/Z11 tested
// against bytes 1<<m, a masked VPADDB of 4, then the offset words Z13
// subtracted), VPMADDUBSW against the activation chunk, and VPDPWSSD by
// the chunk's scale words into the int32 sums Z4/Z5 (VPMADDWD for chunk 0).
func q23kChunks(a *Asm, at func(r, off int) string, qOff int, three bool) {
	for m := 0; m < 8; m++ {
		h, j := m/4, m%4
		if j == 0 {
			for p := 0; p < 2; p++ {
				q23kPairLoad(a, at, 2*p, 2*p+1, qOff+32*h, 8+p)
			}
		}
		a.I("VBROADCASTI64X4", fmt.Sprintf("%d(DI)", 4+32*m), "Z12")
		if three {
			a.I("VPMADDUBSW", "Z12", "Z1", "Z13")
		}
		for p := 0; p < 2; p++ {
			q, t := fmt.Sprintf("Z%d", 8+p), fmt.Sprintf("Z%d", 16+p)
			if j > 0 {
				a.I("VPSRLW", fmt.Sprintf("$%d", 2*j), q, t)
				a.I("VPANDD", "Z0", t, t)
			} else {
				a.I("VPANDD", "Z0", q, t)
			}
			if three {
				k := fmt.Sprintf("K%d", 1+p)
				a.I("VPTESTMB", fmt.Sprintf("z3Bit<>+%d(SB)", 64*m), fmt.Sprintf("Z%d", 10+p), k)
				a.I("VPADDB", "Z1", t, k, t)
			}
			a.I("VPMADDUBSW", "Z12", t, t)
			if three {
				a.I("VPSUBW", "Z13", t, t)
			}
			s := fmt.Sprintf("Z%d", 18+p)
			a.I("VPSHUFB", fmt.Sprintf("z3Word<>+%d(SB)", 64*m), fmt.Sprintf("Z%d", 6+p), s)
			if m == 0 {
				a.I("VPMADDWD", s, t, fmt.Sprintf("Z%d", 4+p))
			} else {
				a.I("VPDPWSSD", s, t, fmt.Sprintf("Z%d", 4+p))
			}
		}
	}
}

// q3kVNNIKernel writes rowsQ3KVNNI.
func q3kVNNIKernel(a *Asm) {
	a.Blank()
	a.Comment(`rowsQ3KVNNI: Q3_K weights (110-byte blocks: hmask at 0, the 2-bit quants
at 32 and 64, the 12 scale bytes at 96, f16 d at 108) against Q8_K
activations (292-byte blocks: f32 d at 0, quants at 4), float order of
quant.DotQ3KQ8K.`)
	lrKernel{
		name: "rowsQ3KVNNI", n: 4, bs: 110, abs: 292, frame: 0,
		consts: func(a *Asm) {
			a.I("MOVL", "$0x03030303", "R14")
			a.I("VPBROADCASTD", "R14", "Z0")
			a.I("MOVL", "$0x04040404", "R14")
			a.I("VPBROADCASTD", "R14", "Z1")
			a.I("VMOVDQU64", "z3Perm<>(SB)", "Z20")
		},
		zero: q23kZero,
		block: func(a *Asm, rows []string) {
			at := func(r, off int) string { return fmt.Sprintf("%d(%s)(R12*1)", off, rows[r]) }
			for p := 0; p < 2; p++ {
				rA, rB := 2*p, 2*p+1
				// the scales minus 32 of both rows, as words
				// [A s0 s2 .. s14 | A s1 .. s15 | B even | B odd]
				a.I("VMOVDQU", at(rA, 94), "X14")
				a.I("VINSERTI128", "$1", at(rB, 94), "Y14", "Y14")
				a.I("VPSRLDQ", "$2", "Y14", "Y14")
				a.I("VPSHUFD", "$0x44", "Y14", "Y15")
				a.I("VPSRLVD", "z3ShiftLo<>(SB)", "Y15", "Y15")
				a.I("VPAND", "z3B0F<>(SB)", "Y15", "Y15")
				a.I("VPSHUFD", "$0xAA", "Y14", "Y14")
				a.I("VPSRLVD", "z3ShiftHi<>(SB)", "Y14", "Y14")
				a.I("VPAND", "Y0", "Y14", "Y14")
				a.I("VPSLLD", "$4", "Y14", "Y14")
				a.I("VPOR", "Y14", "Y15", "Y15")
				a.I("VPSUBB", "z3B20<>(SB)", "Y15", "Y15")
				a.I("VPSHUFB", "z3Arrange<>(SB)", "Y15", "Y15")
				a.I("VPMOVSXBW", "Y15", fmt.Sprintf("Z%d", 6+p))
				q23kPairLoad(a, at, rA, rB, 0, 10+p)
			}
			q23kChunks(a, at, 32, true)
			// acc = FMA(cvt(sumi), d_w·d_a, acc) for each half
			a.I("VBROADCASTSS", "(DI)", "X12")
			for p := 0; p < 2; p++ {
				a.I("MOVWLZX", at(2*p, 108), "R14")
				a.I("VMOVD", "R14", "X14")
				a.I("VPINSRW", "$1", at(2*p+1, 108), "X14", "X14")
				a.I("VCVTPH2PS", "X14", "X14")
				a.I("VMULPS", "X12", "X14", "X14")
				a.I("VPERMPS", "Z14", "Z20", "Z14")
				s := fmt.Sprintf("Z%d", 4+p)
				a.I("VCVTDQ2PS", s, s)
				a.I("VFMADD231PS", "Z14", s, fmt.Sprintf("Z%d", 2+p))
			}
		},
		finish: q23kFinish,
	}.emit(a)
}

// q2kVNNIKernel writes rowsQ2KVNNI: Q2_K weights (84-byte blocks: the 16
// scale bytes at 0, scale in the low nibble and min in the high one, the
// 2-bit quants at 16 and 48, f16 d and dmin at 80) against Q8_K
// activations (bsums at 260), float order of quant.DotQ2KQ8K: per
// super-block acc = FMA(cvt(mins·bsums), -(d_a·dmin), acc), then acc =
// FMA(cvt(sumi), d_a·d, acc); hsum_float_8 at the end.
func q2kVNNIKernel(a *Asm) {
	a.Blank()
	a.Comment(`rowsQ2KVNNI: Q2_K weights against Q8_K activations, float order of
quant.DotQ2KQ8K (see internal/asmgen/rows_q23k_vnni.go).`)
	lrKernel{
		name: "rowsQ2KVNNI", n: 4, bs: 84, abs: 292, frame: 0,
		consts: func(a *Asm) {
			a.I("MOVL", "$0x03030303", "R14")
			a.I("VPBROADCASTD", "R14", "Z0")
			a.I("MOVL", "$0x0f0f0f0f", "R14")
			a.I("VPBROADCASTD", "R14", "Z1")
			a.I("VMOVDQU64", "z2PermD<>(SB)", "Z20")
			a.I("VMOVDQU64", "z2PermM<>(SB)", "Z21")
		},
		zero: q23kZero,
		block: func(a *Asm, rows []string) {
			at := func(r, off int) string { return fmt.Sprintf("%d(%s)(R12*1)", off, rows[r]) }
			a.I("VBROADCASTI64X4", "260(DI)", "Z13")
			for p := 0; p < 2; p++ {
				rA, rB := 2*p, 2*p+1
				// scales as words [A even | A odd | B even | B odd];
				// mins in order, times the bsums
				a.I("VMOVDQU", at(rA, 0), "X14")
				a.I("VINSERTI128", "$1", at(rB, 0), "Y14", "Y14")
				a.I("VPAND", "Y1", "Y14", "Y15")
				a.I("VPSHUFB", "z3Arrange<>(SB)", "Y15", "Y15")
				a.I("VPMOVZXBW", "Y15", fmt.Sprintf("Z%d", 6+p))
				a.I("VPSRLW", "$4", "Y14", "Y14")
				a.I("VPAND", "Y1", "Y14", "Y14")
				mz := fmt.Sprintf("Z%d", 10+p)
				a.I("VPMOVZXBW", "Y14", mz)
				a.I("VPMADDWD", "Z13", mz, mz)
			}
			q23kChunks(a, at, 16, false)
			// per pair: [d·d_a, -(dmin·d_a)] of each row, the mins term,
			// then the scales' FMA
			a.I("VBROADCASTSS", "(DI)", "X12")
			for p := 0; p < 2; p++ {
				a.I("MOVL", at(2*p, 80), "R14")
				a.I("VMOVD", "R14", "X14")
				a.I("VPINSRD", "$1", at(2*p+1, 80), "X14", "X14")
				a.I("VCVTPH2PS", "X14", "X14")
				a.I("VMULPS", "X12", "X14", "X14")
				a.I("VXORPS", "z2Neg<>(SB)", "X14", "X14")
				a.I("VPERMPS", "Z14", "Z21", "Z15")
				a.I("VPERMPS", "Z14", "Z20", "Z14")
				mz := fmt.Sprintf("Z%d", 10+p)
				acc := fmt.Sprintf("Z%d", 2+p)
				a.I("VCVTDQ2PS", mz, mz)
				a.I("VFMADD231PS", "Z15", mz, acc)
				s := fmt.Sprintf("Z%d", 4+p)
				a.I("VCVTDQ2PS", s, s)
				a.I("VFMADD231PS", "Z14", s, acc)
			}
		},
		finish: q23kFinish,
	}.emit(a)
}
