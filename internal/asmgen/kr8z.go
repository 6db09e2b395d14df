package main

import "fmt"

// ZMM forms of the Q4_Kr8 and Q5_Kr8 VNNI kernels (in kr8_amd64.s): two
// tiles of the same plan layout at once, tile i in the low 256 bits of
// every register and tile i+1 in the high 256, so each instruction does
// the work of two YMM ones where the CPU runs 512-bit operations at full
// rate (Zen 5; on Zen 4 they are split in two and gain nothing). Every
// 256-bit half runs exactly the YMM VNNI form's operations on its tile
// (VPSHUFB works within 128-bit lanes, the rest lane by lane), so the
// outputs are the same bits. The layout is unchanged: a plan packed for
// any tier runs them.
//
// A group's 32 bytes of each tile come in by one VMOVDQU and one
// VINSERTI64X4 (the second tile R13 = nb·super-block bytes further);
// the scale bytes likewise; the eight f16 d (dmin) of each tile by
// VMOVDQU + VINSERTI128, one VCVTPH2PS to sixteen floats. The activation
// quads are broadcast to all sixteen lanes from memory (VPDPBUSD.BCST), as
// on YMM: both tiles read the same activation rows.
//
//	func kr8Q4Km<M>z(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)
//
// The arguments are the YMM kernels' (kr8.go), but tiles must be even (the
// caller runs an odd last tile with the YMM kernel) and each pair's 16
// outputs per activation row are stored together.
//
// There are forms for M = 2..4 only: with one activation row (decode) the
// weights stream from memory, and there two tiles read side by side ran
// slower than the YMM kernel's one (BenchmarkKR8Decode, Zen 5, ratio to a
// plain read: Q4_Kr8 K=1024 0.46–0.48 against 0.56–0.63, Q6_Kr8
// 0.43–0.49 against 0.72–0.76; prefetching only one of the two tiles
// changed nothing; prefetching both into L1 8 KiB ahead, as the YMM
// forms do on Zen 5, Q4_Kr8 0.61–0.79 against their 0.64–0.88), though in
// L2 they were the faster.
//
// Registers: Z0..Z3 temporaries; Z4+2t, Z5+2t activation row t's int32
// sums of the chunk's two sub-blocks; Z12, Z13 the scales S0, S1; Z3 the
// dmin of both tiles (then a temporary), Z14 their d; Z15 0x0F bytes, Z16 0x30, Z17 0x10; Z18,
// Z19 kr8Pair0/1; Z20..Z23 kr8DupD0..3; Z24+t, Z28+t row t's float
// accumulators of the sums and of the mins. Row t's int32 super-block sum
// lives in a free register of Z6..Z11 where one is left (kr8zISum), else
// in the scratch at 64·t(DX). AX tile i's super-block, R13 the tile
// stride, SI activation row 0's block (R9 row 3's), R10 arb, DI the
// records, BX super-blocks left, CX tile pairs left, R8 nb, R11 ldy in
// bytes, R12 the output, R14 a, R15 rec.
func genKR8Z(a *Asm, M int, q5 bool) {
	name, lbl, sbs, sq := fmt.Sprintf("kr8Q4Km%dz", M), fmt.Sprintf("kr8q4k_%dz", M), 1152, 128
	if q5 {
		name, lbl, sbs, sq = fmt.Sprintf("kr8Q5Km%dz", M), fmt.Sprintf("kr8q5k_%dz", M), 1408, 384
	}
	z := func(i int) string { return fmt.Sprintf("Z%d", i) }
	P0 := func(t int) string { return z(4 + 2*t) }
	P1 := func(t int) string { return z(5 + 2*t) }
	facc := func(t int) string { return z(24 + t) }
	fmin := func(t int) string { return z(28 + t) }
	isum := func(t int) string { return kr8zISum(M, t) }
	load2 := func(off, dst int) { kr8zLoad2(a, off, dst) }
	half2 := func(off, dst int) { kr8zHalves(a, off, dst) }
	kr8zPrologue(a, name, lbl, sbs)
	a.I("VPBROADCASTQ", "kr8Hi<>(SB), Z16")
	a.I("VPBROADCASTQ", "kr8Bit4<>(SB), Z17")
	for e := 0; e < 2; e++ {
		a.I("VBROADCASTI64X4", fmt.Sprintf("kr8Pair%d<>(SB), Z%d", e, 18+e))
	}
	for jj := 0; jj < 4; jj++ {
		a.I("VBROADCASTI64X4", fmt.Sprintf("kr8DupD%d<>(SB), Z%d", jj, 20+jj))
	}
	a.Label(lbl + "_tile")
	for t := 0; t < M; t++ {
		a.I("VPXORD", facc(t)+", "+facc(t)+", "+facc(t))
		a.I("VPXORD", fmin(t)+", "+fmin(t)+", "+fmin(t))
	}
	kr8RowPointers(a, M)
	a.I("MOVQ", "R15, DI")
	a.I("MOVQ", "R8, BX")
	a.Label(lbl + "_sb")
	// scales and mins (kr8Scales on both tiles): S0 Z12, S1 Z13, M0 Z4, M1 Z5
	kr8ScalesW(a, kr8Z("Z16"), 32, "Z12", "Z13", "Z4", "Z5")
	// the mins, by activation row, into the float accumulators
	half2(16, 3)
	for t := 0; t < M; t++ {
		for p := 0; p < 4; p++ {
			Mr := []string{"Z4", "Z5"}[p/2]
			dst := "Z2"
			if p > 0 {
				dst = "Z0"
			}
			a.I("VPSHUFB", fmt.Sprintf("Z%d, %s, %s", 18+p%2, Mr, dst))
			a.I("VPBROADCASTD", fmt.Sprintf("%d(DI), Z1", 16*t+4*p))
			a.I("VPMADDWD", "Z1, "+dst+", "+dst)
			if p > 0 {
				a.I("VPADDD", "Z0, Z2, Z2")
			}
		}
		a.I("VBROADCASTSS", kr8Act(t, 0)+", Z1")
		a.I("VMULPS", "Z1, Z3, Z1")
		a.I("VCVTDQ2PS", "Z2, Z2")
		a.I("VFMADD231PS", "Z2, Z1, "+fmin(t))
	}
	for c := 0; c < 4; c++ {
		for t := 0; t < M; t++ {
			a.I("VPXORD", P0(t)+", "+P0(t)+", "+P0(t))
			a.I("VPXORD", P1(t)+", "+P1(t)+", "+P1(t))
		}
		for g := 0; g < 8; g++ {
			load2(sq+256*c+32*g, 0)
			a.I("VPSRLW", "$4, Z0, Z1")
			a.I("VPANDD", "Z15, Z0, Z0")
			a.I("VPANDD", "Z15, Z1, Z1")
			if q5 {
				load2(128+32*g, 3)
				kr8FifthBitsOps(a, c, "Z3", "Z0", "Z1", "Z2", "VPANDD", "VPORD", "Z17")
			}
			for t := 0; t < M; t++ {
				a.I("VPDPBUSD.BCST", kr8Act(t, 4+64*c+4*g)+", Z0, "+P0(t))
				a.I("VPDPBUSD.BCST", kr8Act(t, 4+64*c+32+4*g)+", Z1, "+P1(t))
			}
		}
		S := []string{"Z12", "Z13"}[c/2]
		a.I("VPSHUFB", fmt.Sprintf("Z%d, %s, Z0", 20+(2*c)%4, S))
		a.I("VPSHUFB", fmt.Sprintf("Z%d, %s, Z1", 20+(2*c+1)%4, S))
		for t := 0; t < M; t++ {
			a.I("VPMULLD", "Z0, "+P0(t)+", "+P0(t))
			a.I("VPMULLD", "Z1, "+P1(t)+", "+P1(t))
			s := isum(t)
			switch {
			case c == 0 && s[0] == 'Z':
				a.I("VPADDD", P1(t)+", "+P0(t)+", "+s)
			case c == 0:
				a.I("VPADDD", P1(t)+", "+P0(t)+", "+P0(t))
				a.I("VMOVDQU32", P0(t)+", "+s)
			case s[0] == 'Z':
				a.I("VPADDD", P1(t)+", "+P0(t)+", "+P0(t))
				a.I("VPADDD", P0(t)+", "+s+", "+s)
			default:
				a.I("VPADDD", P1(t)+", "+P0(t)+", "+P0(t))
				a.I("VPADDD", s+", "+P0(t)+", "+P0(t))
				if c < 3 {
					a.I("VMOVDQU32", P0(t)+", "+s)
				}
			}
		}
	}
	half2(0, 14)
	for t := 0; t < M; t++ {
		s := isum(t)
		if s[0] != 'Z' {
			s = P0(t) // the last chunk left the sum there
		}
		a.I("VBROADCASTSS", kr8Act(t, 0)+", Z1")
		a.I("VMULPS", "Z1, Z14, Z1")
		a.I("VCVTDQ2PS", s+", Z2")
		a.I("VFMADD231PS", "Z2, Z1, "+facc(t))
	}
	a.I("ADDQ", fmt.Sprintf("$%d, AX", sbs))
	a.I("ADDQ", "$292, SI")
	if M > 3 {
		a.I("ADDQ", "$292, R9")
	}
	a.I("ADDQ", fmt.Sprintf("$%d, DI", 16*M))
	a.I("DECQ", "BX")
	a.I("JNZ", lbl+"_sb")
	// y: both tiles' 16 outputs of each activation row
	a.I("MOVQ", "R12, BX")
	for t := 0; t < M; t++ {
		a.I("VSUBPS", fmin(t)+", "+facc(t)+", Z0")
		a.I("VMOVUPS", "Z0, (BX)")
		if t < M-1 {
			a.I("ADDQ", "R11, BX")
		}
	}
	kr8zEpilogue(a, lbl)
}

// kr8zPrologue starts a ZMM two-tile kernel: the arguments (kr8Args), CX
// the tile pairs, R13 the tile stride (nb super-blocks of sbs bytes), Z15
// the 0x0F bytes. The caller loads its constants and writes the tile label.
func kr8zPrologue(a *Asm, name, lbl string, sbs int) {
	kr8Args(a, name, lbl)
	a.I("SHRQ", "$1, CX")
	a.I("JZ", lbl+"_done")
	a.I("IMUL3Q", fmt.Sprintf("$%d, R8, R13", sbs))
	a.I("VPBROADCASTQ", "kr8Nib<>(SB), Z15")
}

// kr8zEpilogue ends the tile-pair loop (AX, at tile i+1 after the super-
// blocks, goes on to tile i+2; the outputs 16 floats on) and the kernel.
func kr8zEpilogue(a *Asm, lbl string) {
	a.I("ADDQ", "R13, AX")
	a.I("ADDQ", "$64, R12")
	a.I("DECQ", "CX")
	a.I("JNZ", lbl+"_tile")
	a.Label(lbl + "_done")
	a.I("VZEROUPPER")
	a.I("RET")
}

// kr8zLoad2 loads 32 bytes of both tiles into Z<dst>: tile i's at off(AX)
// in the low half, tile i+1's (R13 further) in the high.
func kr8zLoad2(a *Asm, off, dst int) {
	a.I("VMOVDQU", fmt.Sprintf("%d(AX), Y%d", off, dst))
	a.I("VINSERTI64X4", fmt.Sprintf("$1, %d(AX)(R13*1), Z%d, Z%d", off, dst, dst))
}

// kr8zHalves converts the eight f16 at off(AX) of both tiles into sixteen
// floats in Z<dst>.
func kr8zHalves(a *Asm, off, dst int) {
	a.I("VMOVDQU", fmt.Sprintf("%d(AX), X%d", off, dst))
	a.I("VINSERTI128", fmt.Sprintf("$1, %d(AX)(R13*1), Y%d, Y%d", off, dst, dst))
	a.I("VCVTPH2PS", fmt.Sprintf("Y%d, Z%d", dst, dst))
}

// kr8zMask writes kr8Mask's control as 64 bytes (the same in all four
// 128-bit lanes), for ZMM instructions that take it from memory.
func kr8zMask(a *Asm, name string, f func(r int) [4]int) {
	for lane := 0; lane < 4; lane++ {
		for h := 0; h < 2; h++ {
			var v uint64
			for k := 0; k < 2; k++ {
				b := f(2*h + k)
				for i := 0; i < 4; i++ {
					v |= uint64(b[i]) << (8 * (4*k + i))
				}
			}
			a.Raw("DATA %s<>+%d(SB)/8, $0x%016x", name, 16*lane+8*h, v)
		}
	}
	a.Raw("GLOBL %s<>(SB), RODATA|NOPTR, $64", name)
}

// genKR8SZ writes the ZMM two-tile form of a sixteen-sub-block eight-row
// VNNI kernel (genKR8S's: Q6_Kr8, Q3_Kr8, Q2_Kr8) for M = 1..4 activation
// rows: each half of every register runs the YMM form's operations on its
// tile, so the same bits.
//
// Registers: Z0..Z5 the group's quants and temporaries, Z6..Z9 the
// quarter's scale dwords, Z10+t activation row t's int32 sums, Z14 the
// 0x30 bytes, Z15 0x0F, Z16+4t+k row t's sums of sub-block k of the
// quarter. Scratch: the float accumulators at 64t, Q3_K's rebuilt scales
// at 256+64q, Q2_K's mins' accumulators at 256+64t. The VPSHUFB controls
// come from memory (kr8zPairHi<e>, kr8zDupHD<jj>), the 2- and 3-bit masks
// by dword broadcast. AX, R13, CX and the rest as genKR8Z's.
func genKR8SZ(a *Asm, kind kr8SKind, M int) {
	name, lbl, sbs := fmt.Sprintf("kr8Q%sKm%dz", kind.tag(), M), fmt.Sprintf("kr8q%sk_%dz", kind.tag(), M), kind.sbs()
	acc := func(t int) string { return fmt.Sprintf("Z%d", 10+t) }
	facc := func(t int) string { return fmt.Sprintf("%d(DX)", 64*t) }
	fmin := func(t int) string { return fmt.Sprintf("%d(DX)", 256+64*t) }
	kr8zPrologue(a, name, lbl, sbs)
	a.I("VPBROADCASTQ", "kr8Hi<>(SB), Z14")
	a.Label(lbl + "_tile")
	a.I("VPXORD", "Z0, Z0, Z0")
	for t := 0; t < M; t++ {
		a.I("VMOVDQU32", "Z0, "+facc(t))
		if kind == kr8Q2 {
			a.I("VMOVDQU32", "Z0, "+fmin(t))
		}
	}
	kr8RowPointers(a, M)
	a.I("MOVQ", "R8, BX")
	a.Label(lbl + "_sb")
	// Z0..Z3: the sixteen (row, sub-block) bytes the bsums multiply, as
	// signed bytes: Q6_K's and Q3_K's scales, Q2_K's mins
	switch kind {
	case kr8Q6:
		for q := 0; q < 4; q++ {
			kr8zLoad2(a, 16+32*q, q)
		}
	case kr8Q3:
		kr8ScalesW(a, kr8Z("Z14"), 16, "Z5", "Z6", "Z7", "Z8")
		a.I("VPBROADCASTQ", "kr8B32<>(SB), Z4")
		for q := 0; q < 4; q++ {
			a.I("VPSUBB", fmt.Sprintf("Z4, Z%d, Z%d", 5+q, q))
			a.I("VMOVDQU32", fmt.Sprintf("Z%d, %d(DX)", q, 256+64*q))
		}
	case kr8Q2:
		for q := 0; q < 4; q++ {
			kr8zLoad2(a, 32+32*q, q)
			a.I("VPSRLW", fmt.Sprintf("$4, Z%d, Z%d", q, q))
			a.I("VPANDD", fmt.Sprintf("Z15, Z%d, Z%d", q, q))
		}
	}
	kr8BsumsW(a, kr8Z("Z14"), kind, M, acc)
	if kind == kr8Q2 {
		kr8zHalves(a, 16, 0)
		kr8ScaleIntoW(a, kr8Z("Z14"), M, acc, fmin, true)
	}
	for n := 0; n < 2; n++ {
		for gq := 0; gq < 2; gq++ {
			for h := 0; h < 2; h++ {
				switch kind {
				case kr8Q6:
					kr8zLoad2(a, 16+32*(2*n+h), h)
				case kr8Q3:
					a.I("VMOVDQU32", fmt.Sprintf("%d(DX), Z%d", 256+64*(2*n+h), h))
				case kr8Q2:
					kr8zLoad2(a, 32+32*(2*n+h), h)
					a.I("VPANDD", fmt.Sprintf("Z15, Z%d, Z%d", h, h))
				}
			}
			kr8SQuarterVNNIW(a, kr8Z("Z14"), kind, M, n, gq, acc)
		}
	}
	kr8zHalves(a, 0, 0)
	kr8ScaleIntoW(a, kr8Z("Z14"), M, acc, facc, false)
	a.I("ADDQ", fmt.Sprintf("$%d, AX", sbs))
	a.I("ADDQ", "$292, SI")
	if M > 3 {
		a.I("ADDQ", "$292, R9")
	}
	a.I("DECQ", "BX")
	a.I("JNZ", lbl+"_sb")
	a.I("MOVQ", "R12, BX")
	for t := 0; t < M; t++ {
		a.I("VMOVUPS", facc(t)+", Z0")
		if kind == kr8Q2 {
			a.I("VSUBPS", fmin(t)+", Z0, Z0")
		}
		a.I("VMOVUPS", "Z0, (BX)")
		if t < M-1 {
			a.I("ADDQ", "R11, BX")
		}
	}
	kr8zEpilogue(a, lbl)
}

// kr8Z is the ZMM width of the two-tile kernels (kr8Width), hi the
// register that holds the 0x30 bytes.
func kr8Z(hi string) kr8Width {
	return kr8Width{"Z", "VPANDD", "VPORD", "VPXORD", "VPANDD.BCST", "Z15", hi, "kr8z", kr8zLoad2}
}

// genR8Q5Z writes the ZMM two-tile form of the eight-row legacy VNNI
// kernels (genR8Q5's vnni forms: kind "5_0", "4_0", "5_1", "4_1") for M =
// 1..4 activation rows: each half of every register runs the YMM form's
// operations on its tile, so the same bits.
//
// Registers: Z0..Z3 a pair of chunks' quants, Z4 the block's d_w of both
// tiles, Z5 a temporary, Z6 their m (kinds with mins), Z7+t activation row
// t's int32 block sums, Z13 the fifth bits, Z15 0x0F bytes, Z17 0x10, Z20+t
// row t's float accumulator, Z24+t its mins' accumulator. AX, R13, CX and
// the rest as genKR8Z's; DI the records (per block and row, 8 bytes).
func genR8Q5Z(a *Asm, M int, kind string) {
	name, lbl := fmt.Sprintf("r8Q%sm%dz", kind, M), fmt.Sprintf("r8q%s_%dz", kind, M)
	geo := map[string][3]int{"5_0": {176, 48, 16}, "4_0": {144, 16, -1}, "5_1": {192, 64, 32}, "4_1": {160, 32, -1}}[kind]
	bsz, qo, ho := geo[0], geo[1], geo[2]
	q4 := ho < 0
	mins := kind == "5_1" || kind == "4_1"
	ab, ao := 34, 2 // activation block bytes, offset of its quants
	if mins {
		ab, ao = 36, 4
	}
	P := func(t int) string { return fmt.Sprintf("Z%d", 7+t) }
	acc := func(t int) string { return fmt.Sprintf("Z%d", 20+t) }
	accm := func(t int) string { return fmt.Sprintf("Z%d", 24+t) }
	kr8zPrologue(a, name, lbl, bsz)
	a.I("VPBROADCASTQ", "kr8Bit4<>(SB), Z17")
	a.Label(lbl + "_tile")
	for t := 0; t < M; t++ {
		a.I("VPXORD", acc(t)+", "+acc(t)+", "+acc(t))
		if mins {
			a.I("VPXORD", accm(t)+", "+accm(t)+", "+accm(t))
		}
	}
	kr8RowPointers(a, M)
	a.I("MOVQ", "R15, DI")
	a.I("MOVQ", "R8, BX")
	a.Label(lbl + "_b")
	if !q4 {
		kr8zLoad2(a, ho, 13)
	}
	for hp := 0; hp < 2; hp++ {
		for cc := 0; cc < 2; cc++ {
			c := 2*hp + cc
			lo, hi := fmt.Sprintf("Z%d", 2*cc), fmt.Sprintf("Z%d", 2*cc+1)
			kr8zLoad2(a, qo+32*c, 2*cc)
			a.I("VPSRLW", "$4, "+lo+", "+hi)
			a.I("VPANDD", "Z15, "+lo+", "+lo)
			a.I("VPANDD", "Z15, "+hi+", "+hi)
			if !q4 {
				kr8FifthBitsOps(a, c, "Z13", lo, hi, "Z5", "VPANDD", "VPORD", "Z17")
			}
		}
		c0, c1 := 2*hp, 2*hp+1
		offs := []int{ao + 4*c0, ao + 16 + 4*c0, ao + 4*c1, ao + 16 + 4*c1}
		if hp == 1 {
			kr8zHalves(a, 0, 4)
			if mins {
				kr8zHalves(a, 16, 6)
			}
		}
		for t := 0; t < M; t++ {
			if hp == 0 && mins {
				a.I("VPXORD", P(t)+", "+P(t)+", "+P(t))
			} else if hp == 0 {
				a.I("VPBROADCASTD", fmt.Sprintf("%d(DI), %s", 8*t+4, P(t)))
			}
			for i, off := range offs {
				a.I("VPDPBUSD.BCST", fmt.Sprintf("%s, Z%d, %s", kr8Act(t, off), i, P(t)))
			}
			if hp == 1 {
				// r8Q5Finish and r8Q5Mins on both tiles
				a.I("VCVTDQ2PS", P(t)+", "+P(t))
				a.I("VBROADCASTSS", fmt.Sprintf("%d(DI), Z5", 8*t))
				a.I("VMULPS", "Z5, Z4, Z5")
				a.I("VFMADD231PS", P(t)+", Z5, "+acc(t))
				if mins {
					a.I("VBROADCASTSS", fmt.Sprintf("%d(DI), Z5", 8*t+4))
					a.I("VFMADD231PS", "Z5, Z6, "+accm(t))
				}
			}
		}
	}
	a.I("ADDQ", fmt.Sprintf("$%d, AX", bsz))
	a.I("ADDQ", fmt.Sprintf("$%d, SI", ab))
	if M > 3 {
		a.I("ADDQ", fmt.Sprintf("$%d, R9", ab))
	}
	a.I("ADDQ", fmt.Sprintf("$%d, DI", 8*M))
	a.I("DECQ", "BX")
	a.I("JNZ", lbl+"_b")
	a.I("MOVQ", "R12, BX")
	for t := 0; t < M; t++ {
		if mins {
			// acc + accm, as the YMM form adds them
			a.I("VADDPS", acc(t)+", "+accm(t)+", Z0")
		} else {
			a.I("VMOVAPS", acc(t)+", Z0")
		}
		a.I("VMOVUPS", "Z0, (BX)")
		if t < M-1 {
			a.I("ADDQ", "R11, BX")
		}
	}
	kr8zEpilogue(a, lbl)
}

// kr8zISum is where genKR8Z keeps activation row t's int32 super-block sum
// for M rows: a register of Z6..Z11 the rows' chunk sums leave free, else
// the scratch (64 bytes per row, at 64·t(DX)).
func kr8zISum(M, t int) string {
	if r := 4 + 2*M + t; r <= 11 {
		return fmt.Sprintf("Z%d", r)
	}
	return fmt.Sprintf("%d(DX)", 64*t)
}
