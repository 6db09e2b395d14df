package main

import "fmt"

// Row-parallel mat-mul kernels (kr8_amd64.s) on the eight-row K-quant
// layouts Q4_Kr8, Q5_Kr8 and Q6_Kr8 (quant/kr8.go): eight weight rows in
// the eight 32-bit lanes of a YMM register, against 1..4 Q8_K activation
// rows. The AVX2 forms need AVX2, FMA and F16C only, so every x86-64 tier
// from AVX2 up runs them; the AVX-512 VNNI forms (suffix v) replace the
// 16-bit stage with VPDPBUSD and get the same bits. Q4_Kr8's form is
// described here; Q5_Kr8 (kr8FifthBits) and Q6_Kr8 (genKR8Q6) follow.
//
// Per super-block of a tile: the 8×8 6-bit scales and mins are rebuilt
// as bytes from L and H (17 shifts, masks and ORs for the eight rows) into
// S0, S1 (scales of sub-blocks 0..3, 4..7) and M0, M1; per activation row
// the mins' sum is four VPSHUFB (each (row, pair of sub-blocks) as two
// words), four VPMADDWD against the pair of activation sub-block sums
// broadcast from the record, three VPADDD. Then per chunk c (two
// sub-blocks) and group g (four quants of each of the eight rows): one
// 32-byte load, a shift and two masks split it into the low nibbles
// (sub-block 2c) and the high ones (2c+1), and per activation row two
// VPBROADCASTD of four activation bytes, two VPMADDUBSW and two VPADDW
// sum the chunk's products in 16 bits (exact: at most 16·15·128 per word).
// At the end of the chunk a VPSHUFB spreads each sub-block's eight scales
// into word pairs and one VPMADDWD per sub-block makes every row's exact
// scaled sub-block sum. Per super-block and activation row, one VCVTDQ2PS
// and one FMA each for the sums and the mins, by d_w·d_a and dmin_w·d_a
// (VCVTPH2PS of the eight rows' f16, times d_a broadcast): the order of
// quant.DotR8. About 35 instructions per (row, super-block) for one
// activation row, where the GGUF layout's kernels spend 60–80.
//
//	func kr8Q4Km<M>(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)
//
// w: the first tile (tiles tiles one after the other, each nb·1152 bytes);
// a: activation row 0 (Q8_K, nb blocks of 292 bytes; row t at t·arb bytes);
// rec: per super-block b and activation row t at 16·(b·M+t) the eight int16
// activation sub-block sums (quant.R8Sums); scr: 64+96·M bytes of scratch,
// 32-byte aligned (M > 1); y: the output of tile 0, activation row 0 (8
// floats; activation row t's at t·ldy floats, tile i's 8 floats further).

// kr8Pref is how the one-row (decode) kernels prefetch the weights: every
// line of a super-block (block) dist bytes ahead, by op; sfx ends the names
// of the kernels that do it so.
type kr8Pref struct {
	op   string
	dist int
	sfx  string
}

// kr8PrefL2 is the eighteenth session's choice (Zen 4: into L2 16 KiB
// ahead; spread over the chunks instead the lines read 2-5% slower);
// kr8PrefL1 the twenty-second's for Zen 5, where the one-row kernels are
// ≈1.5× faster in L2 than the memory's read, yet streamed at 0.5–0.8 of
// it with kr8PrefL2, and at 0.8–0.98 prefetching into L1 8 KiB ahead
// (BenchmarkKR8Decode; backends/cpu picks by CPU: prefetchL1). The legacy
// layouts' kernels have the L2 form only.
var (
	kr8PrefL2 = kr8Pref{"PREFETCHT2", 16384, ""}
	kr8PrefL1 = kr8Pref{"PREFETCHT0", 8192, "p"}
)

func init() {
	register("kr8_amd64.s", "amd64 && !purego", genKR8)
}

func genKR8(a *Asm) {
	a.Blank()
	a.Comment(`Row-parallel AVX2 mat-mul kernels for the eight-row K-quant layout
Q4_Kr8 against 1..4 Q8_K activation rows; see internal/asmgen/kr8.go (the
generator), quant/kr8.go (the layout and the oracle) and
backends/cpu/kr8_amd64.go (the Go side).`)
	a.Blank()
	a.Comment("kr8Dup<jj>: per 128-bit lane, dword r' = bytes (4jj+r', 0, 4jj+r', 0): row r's scale\nof sub-block jj of a half as two words. kr8Pair<e>: (4·2e+r', 0, 4·(2e+1)+r', 0).")
	for jj := 0; jj < 4; jj++ {
		kr8Mask(a, fmt.Sprintf("kr8Dup%d", jj), func(r int) [4]int { return [4]int{4*jj + r, 0x80, 4*jj + r, 0x80} })
	}
	for e := 0; e < 2; e++ {
		kr8Mask(a, fmt.Sprintf("kr8Pair%d", e), func(r int) [4]int { return [4]int{8*e + r, 0x80, 8*e + 4 + r, 0x80} })
	}
	a.Comment("kr8DupD<jj>: the scale as a dword (AVX-512 VNNI forms); kr8DupHD<jj>: in the top byte\n(sign-extended by a VPSRAD of 24).")
	for jj := 0; jj < 4; jj++ {
		kr8Mask(a, fmt.Sprintf("kr8DupD%d", jj), func(r int) [4]int { return [4]int{4*jj + r, 0x80, 0x80, 0x80} })
		kr8Mask(a, fmt.Sprintf("kr8DupHD%d", jj), func(r int) [4]int { return [4]int{0x80, 0x80, 0x80, 4*jj + r} })
	}
	a.Comment("kr8DupHi<jj>, kr8PairHi<e>: the same bytes to the high byte of each word (Q6_K's\nsigned scales, sign-extended by a VPSRAW of 8).")
	for jj := 0; jj < 4; jj++ {
		kr8Mask(a, fmt.Sprintf("kr8DupHi%d", jj), func(r int) [4]int { return [4]int{0x80, 4*jj + r, 0x80, 4*jj + r} })
	}
	for e := 0; e < 2; e++ {
		kr8Mask(a, fmt.Sprintf("kr8PairHi%d", e), func(r int) [4]int { return [4]int{0x80, 8*e + r, 0x80, 8*e + 4 + r} })
	}
	for o := 0; o < 32; o += 8 {
		a.Raw("DATA kr8Bit4<>+%d(SB)/8, $0x1010101010101010", o)
	}
	a.Raw("GLOBL kr8Bit4<>(SB), RODATA|NOPTR, $32")
	a.Raw("DATA kr8Nib<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f")
	a.Raw("GLOBL kr8Nib<>(SB), RODATA|NOPTR, $8")
	for o := 0; o < 32; o += 8 {
		a.Raw("DATA kr8Hi<>+%d(SB)/8, $0x3030303030303030", o)
	}
	a.Raw("GLOBL kr8Hi<>(SB), RODATA|NOPTR, $32")
	for _, c := range []struct {
		name string
		b    byte
	}{{"kr8M3", 3}, {"kr8M4", 4}, {"kr8B32", 32}} {
		for o := 0; o < 32; o += 8 {
			a.Raw("DATA %s<>+%d(SB)/8, $0x%016x", c.name, o, uint64(c.b)*0x0101010101010101)
		}
		a.Raw("GLOBL %s<>(SB), RODATA|NOPTR, $32", c.name)
	}
	for o := 0; o < 32; o += 8 {
		a.Raw("DATA kr8One16<>+%d(SB)/8, $0x0001000100010001", o)
	}
	a.Raw("GLOBL kr8One16<>(SB), RODATA|NOPTR, $32")
	for _, q5 := range []bool{false, true} {
		for _, vnni := range []bool{false, true} {
			genKR8One(a, q5, vnni, kr8PrefL2)
			for m := 2; m <= 4; m++ {
				genKR8Multi(a, m, q5, vnni)
			}
		}
	}
	a.Comment("kr8zPairHi<e>, kr8zDupHD<jj>: kr8PairHi<e>, kr8DupHD<jj> in 64 bytes (the ZMM forms).")
	for e := 0; e < 2; e++ {
		kr8zMask(a, fmt.Sprintf("kr8zPairHi%d", e), func(r int) [4]int { return [4]int{0x80, 8*e + r, 0x80, 8*e + 4 + r} })
	}
	for jj := 0; jj < 4; jj++ {
		kr8zMask(a, fmt.Sprintf("kr8zDupHD%d", jj), func(r int) [4]int { return [4]int{0x80, 0x80, 0x80, 4*jj + r} })
	}
	for _, q5 := range []bool{false, true} {
		for m := 2; m <= 4; m++ {
			genKR8Z(a, m, q5)
		}
	}
	for _, kind := range []kr8SKind{kr8Q6, kr8Q3, kr8Q2} {
		for m := 2; m <= 4; m++ {
			genKR8SZ(a, kind, m)
		}
	}
	for _, kind := range []string{"5_0", "4_0", "5_1", "4_1"} {
		for m := 2; m <= 4; m++ {
			genR8Q5Z(a, m, kind)
		}
	}
	// the K-quant one-row kernels again, prefetching as kr8PrefL1 (the
	// legacy layouts' gained nothing from it: R8Q5Decode, Zen 5, Q4_0r8
	// K=4864 0.70–0.78 of the read against 0.75–0.87)
	for _, vnni := range []bool{false, true} {
		for _, q5 := range []bool{false, true} {
			genKR8One(a, q5, vnni, kr8PrefL1)
		}
		for _, kind := range []kr8SKind{kr8Q6, kr8Q3, kr8Q2} {
			genKR8S(a, kind, 1, vnni, kr8PrefL1)
		}
	}
	for _, kind := range []string{"5_0", "4_0", "5_1", "4_1"} {
		for _, vnni := range []bool{false, true} {
			for m := 1; m <= 4; m++ {
				genR8Q5(a, m, vnni, kind, kr8PrefL2)
			}
		}
	}
	for _, kind := range []kr8SKind{kr8Q6, kr8Q3, kr8Q2} {
		for _, vnni := range []bool{false, true} {
			for m := 1; m <= 4; m++ {
				genKR8S(a, kind, m, vnni, kr8PrefL2)
			}
		}
	}
}

// kr8Mask writes a 32-byte VPSHUFB control, the same in both lanes, dword
// r' (0..3) of each the bytes f(r').
func kr8Mask(a *Asm, name string, f func(r int) [4]int) {
	for lane := 0; lane < 2; lane++ {
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
	a.Raw("GLOBL %s<>(SB), RODATA|NOPTR, $32", name)
}

// kr8Width is what the steps the YMM (one tile) and ZMM (two tiles,
// kr8z.go) forms of the eight-row kernels share need to know of the width:
// the register prefix, the byte-mask AND, OR and XOR, the AND taking a
// dword broadcast from memory, the 0x0F and 0x30 bytes' operands, and how
// 32 bytes of each tile at off(AX) load into a register.
type kr8Width struct {
	r, and, or, xor, andBcst, nib, hi string
	// masks begins the names of the VPSHUFB controls of the width's size
	// (kr8PairHi<e> or kr8zPairHi<e>, ...)
	masks string
	load  func(a *Asm, off, dst int)
}

// kr8Y is the YMM width: one tile, Y15 the 0x0F bytes, kr8Hi<> the 0x30.
var kr8Y = kr8Width{"Y", "VPAND", "VPOR", "VPXOR", "VPAND", "Y15", "kr8Hi<>(SB)", "kr8", func(a *Asm, off, dst int) {
	a.I("VMOVDQU", fmt.Sprintf("%d(AX), Y%d", off, dst))
}}

// reg is register i of the width.
func (w kr8Width) reg(i int) string { return fmt.Sprintf("%s%d", w.r, i) }

// kr8Scales rebuilds the super-block's scales and mins at (AX) as bytes
// from L at base(AX) and H at base+64(AX): S0, S1, M0, M1 (any registers
// but Y0..Y2), with Y15 the 0x0F bytes and kr8Hi<> the 0x30 ones.
func kr8Scales(a *Asm, base int, S0, S1, M0, M1 string) {
	kr8ScalesW(a, kr8Y, base, S0, S1, M0, M1)
}

// kr8ScalesW is kr8Scales at width w (register 0..2 temporaries).
func kr8ScalesW(a *Asm, w kr8Width, base int, S0, S1, M0, M1 string) {
	r0, r1, r2 := w.reg(0), w.reg(1), w.reg(2)
	w.load(a, base, 0)
	w.load(a, base+32, 1)
	w.load(a, base+64, 2)
	a.I("VPSLLW", "$4, "+r2+", "+S1)
	a.I(w.and, w.hi+", "+S1+", "+S1)
	a.I(w.and, w.nib+", "+r0+", "+S0)
	a.I(w.or, S1+", "+S0+", "+S0)
	a.I("VPSLLW", "$2, "+r2+", "+S1)
	a.I(w.and, w.hi+", "+S1+", "+S1)
	a.I("VPSRLW", "$4, "+r0+", "+r0)
	a.I(w.and, w.nib+", "+r0+", "+r0)
	a.I(w.or, S1+", "+r0+", "+M0)
	a.I(w.and, w.hi+", "+r2+", "+r0)
	a.I(w.and, w.nib+", "+r1+", "+S1)
	a.I(w.or, r0+", "+S1+", "+S1)
	a.I("VPSRLW", "$2, "+r2+", "+r2)
	a.I(w.and, w.hi+", "+r2+", "+r2)
	a.I("VPSRLW", "$4, "+r1+", "+r1)
	a.I(w.and, w.nib+", "+r1+", "+r1)
	a.I(w.or, r2+", "+r1+", "+M1)
}

// kr8Prologue starts a kernel of the signature every eight-row kernel
// shares (w, nb, a, arb, rec, scr, y, ldy, tiles): AX w, R8 nb, R14 a, R10
// arb, R15 rec, DX scr, R12 y, R11 ldy in bytes, CX tiles (straight to
// the end when tiles or nb is 0), Y15 the 0x0F bytes, then the tile loop's
// label.
func kr8Prologue(a *Asm, name, lbl string) {
	kr8Args(a, name, lbl)
	a.I("VPBROADCASTQ", "kr8Nib<>(SB), Y15")
	a.Label(lbl + "_tile")
}

// kr8Args starts the kernel and loads its arguments, as kr8Prologue
// describes, up to the constants.
func kr8Args(a *Asm, name, lbl string) {
	a.Text(name, 0, 72)
	a.I("MOVQ", "w+0(FP), AX")
	a.I("MOVQ", "nb+8(FP), R8")
	a.I("MOVQ", "a+16(FP), R14")
	a.I("MOVQ", "arb+24(FP), R10")
	a.I("MOVQ", "rec+32(FP), R15")
	a.I("MOVQ", "scr+40(FP), DX")
	a.I("MOVQ", "y+48(FP), R12")
	a.I("MOVQ", "ldy+56(FP), R11")
	a.I("SHLQ", "$2, R11")
	a.I("MOVQ", "tiles+64(FP), CX")
	a.I("TESTQ", "CX, CX")
	a.I("JZ", lbl+"_done")
	a.I("TESTQ", "R8, R8")
	a.I("JZ", lbl+"_done")
}

// kr8RowPointers points SI at activation row 0's first block and, for
// M > 3, R9 at row 3's (kr8Act).
func kr8RowPointers(a *Asm, M int) {
	a.I("MOVQ", "R14, SI")
	if M > 3 {
		a.I("LEAQ", "(SI)(R10*2), R9")
		a.I("ADDQ", "R10, R9")
	}
}

// kr8StoreRows stores the M activation rows' eight outputs of a tile from
// the float accumulators facc(t), less fmin(t) when given, at R12 and
// every R11 bytes after.
func kr8StoreRows(a *Asm, M int, facc, fmin func(int) string) {
	a.I("MOVQ", "R12, BX")
	for t := 0; t < M; t++ {
		a.I("VMOVUPS", facc(t)+", Y0")
		if fmin != nil {
			a.I("VSUBPS", fmin(t)+", Y0, Y0")
		}
		a.I("VMOVUPS", "Y0, (BX)")
		if t < M-1 {
			a.I("ADDQ", "R11, BX")
		}
	}
}

// kr8Epilogue ends the tile loop (the next tile's outputs 8 floats on) and
// the kernel.
func kr8Epilogue(a *Asm, lbl string) {
	a.I("ADDQ", "$32, R12")
	a.I("DECQ", "CX")
	a.I("JNZ", lbl+"_tile")
	a.Label(lbl + "_done")
	a.I("VZEROUPPER")
	a.I("RET")
}

// genKR8One writes the one-activation-row kernel (decode), everything in
// registers: Y15 0x0F bytes, Y8..Y11 S0, S1, M0, M1, Y6 the sums, Y7 the
// mins, Y13 / Y14 the float accumulators, Y4 / Y5 the chunk's two 16-bit
// sub-block sums, Y0..Y3 and Y12 temporaries. AX the super-block, SI its
// activation block, DI its record, BX super-blocks left, CX tiles left,
// R8 nb, R12 the output, R14 a, R15 rec.
func genKR8One(a *Asm, q5, vnni bool, pf kr8Pref) {
	name, lbl, sbs := "kr8Q4Km1", "kr8q4k_1", 1152
	if q5 {
		name, lbl, sbs = "kr8Q5Km1", "kr8q5k_1", 1408
	}
	if vnni {
		name, lbl = name+"v", lbl+"v"
	}
	name, lbl = name+pf.sfx, lbl+pf.sfx
	kr8Prologue(a, name, lbl)
	a.I("VXORPS", "Y13, Y13, Y13")
	a.I("VXORPS", "Y14, Y14, Y14")
	a.I("MOVQ", "R14, SI")
	a.I("MOVQ", "R15, DI")
	a.I("MOVQ", "R8, BX")
	a.Label(lbl + "_sb")
	kr8OneSB(a, q5, vnni, pf)
	a.I("ADDQ", fmt.Sprintf("$%d, AX", sbs))
	a.I("ADDQ", "$292, SI")
	a.I("ADDQ", "$16, DI")
	a.I("DECQ", "BX")
	a.I("JNZ", lbl+"_sb")
	a.I("VSUBPS", "Y14, Y13, Y13")
	a.I("VMOVUPS", "Y13, (R12)")
	kr8Epilogue(a, lbl)
}

// kr8OneSB writes the one-activation-row work of one Q4_K (Q5_K: q5)
// super-block at AX against the activation block at SI and its record at
// DI: the prefetch, the scales and mins, the chunks, and the FMAs into the
// float accumulators Y13 (sums) and Y14 (mins). (A kernel reading four
// runs of tiles side by side, each run's accumulators in memory, as the
// sixteen-row layouts' decode kernel does, decoded Qwen3-0.6B slower at two
// threads: 60-68 against 65-92 tok/s, six alternated runs; so did one
// calling this kernel a tile of each of four runs in turn.)
func kr8OneSB(a *Asm, q5, vnni bool, pf kr8Pref) {
	sbs, sq := 1152, 128
	if q5 {
		sbs, sq = 1408, 384
	}
	// the 18 lines of the super-block pf.dist ahead (kr8Pref)
	for o := 0; o < sbs; o += 64 {
		a.I(pf.op, fmt.Sprintf("%d(AX)", pf.dist+o))
	}
	kr8Scales(a, 32, "Y8", "Y9", "Y10", "Y11")
	// the mins
	for p := 0; p < 4; p++ {
		M := []string{"Y10", "Y11"}[p/2]
		dst := "Y7"
		if p > 0 {
			dst = "Y0"
		}
		a.I("VPSHUFB", fmt.Sprintf("kr8Pair%d<>(SB)", p%2), M, dst)
		a.I("VPBROADCASTD", fmt.Sprintf("%d(DI), Y1", 4*p))
		a.I("VPMADDWD", "Y1, "+dst+", "+dst)
		if p > 0 {
			a.I("VPADDD", "Y0, Y7, Y7")
		}
	}
	if vnni {
		kr8OneChunksVNNI(a, q5, sq)
	} else {
		for c := 0; c < 4; c++ {
			for g := 0; g < 8; g++ {
				a.I("VMOVDQU", fmt.Sprintf("%d(AX), Y0", sq+256*c+32*g))
				a.I("VPSRLW", "$4, Y0, Y1")
				a.I("VPAND", "Y15, Y0, Y0")
				a.I("VPAND", "Y15, Y1, Y1")
				if q5 {
					a.I("VMOVDQU", fmt.Sprintf("%d(AX), Y12", 128+32*g))
					kr8FifthBits(a, c, "Y12", "Y0", "Y1", "Y2")
				}
				a.I("VPBROADCASTD", fmt.Sprintf("%d(SI), Y2", 4+64*c+4*g))
				a.I("VPBROADCASTD", fmt.Sprintf("%d(SI), Y3", 4+64*c+32+4*g))
				if g == 0 || q5 && g == 4 {
					a.I("VPMADDUBSW", "Y2, Y0, Y4")
					a.I("VPMADDUBSW", "Y3, Y1, Y5")
					continue
				}
				a.I("VPMADDUBSW", "Y2, Y0, Y0")
				a.I("VPMADDUBSW", "Y3, Y1, Y1")
				a.I("VPADDW", "Y0, Y4, Y4")
				a.I("VPADDW", "Y1, Y5, Y5")
				if g != 7 && !(q5 && g == 3) {
					continue
				}
				// the 16-bit sums (8 groups, or 4 of 5-bit quants) times the scales
				S := []string{"Y8", "Y9"}[c/2]
				a.I("VPSHUFB", fmt.Sprintf("kr8Dup%d<>(SB)", (2*c)%4), S, "Y0")
				a.I("VPSHUFB", fmt.Sprintf("kr8Dup%d<>(SB)", (2*c+1)%4), S, "Y1")
				a.I("VPMADDWD", "Y0, Y4, Y4")
				a.I("VPMADDWD", "Y1, Y5, Y5")
				if c == 0 && g == kr8FirstFlush(q5) {
					a.I("VPADDD", "Y5, Y4, Y6")
				} else {
					a.I("VPADDD", "Y5, Y4, Y4")
					a.I("VPADDD", "Y4, Y6, Y6")
				}
			}
		}
	}
	a.I("VBROADCASTSS", "(SI), Y2")
	a.I("VCVTPH2PS", "(AX), Y0")
	a.I("VCVTPH2PS", "16(AX), Y1")
	a.I("VMULPS", "Y2, Y0, Y0")
	a.I("VMULPS", "Y2, Y1, Y1")
	a.I("VCVTDQ2PS", "Y6, Y6")
	a.I("VCVTDQ2PS", "Y7, Y7")
	a.I("VFMADD231PS", "Y6, Y0, Y13")
	a.I("VFMADD231PS", "Y7, Y1, Y14")
}

// kr8OneChunksVNNI is kr8OneSB's chunks for AVX-512 VNNI (on YMM, AVX512VL):
// each group's low and high nibbles go straight into the two sub-blocks'
// int32 sums by VPDPBUSD against four activation bytes broadcast from
// memory (no 16-bit stage, no broadcast register), and at the chunk's end
// VPMULLD by the eight rows' scales as dwords. The same exact sums, so the
// same bits as the AVX2 form.
func kr8OneChunksVNNI(a *Asm, q5 bool, sq int) {
	for c := 0; c < 4; c++ {
		a.I("VPXOR", "Y4, Y4, Y4")
		a.I("VPXOR", "Y5, Y5, Y5")
		for g := 0; g < 8; g++ {
			a.I("VMOVDQU", fmt.Sprintf("%d(AX), Y0", sq+256*c+32*g))
			a.I("VPSRLW", "$4, Y0, Y1")
			a.I("VPAND", "Y15, Y0, Y0")
			a.I("VPAND", "Y15, Y1, Y1")
			if q5 {
				a.I("VMOVDQU", fmt.Sprintf("%d(AX), Y12", 128+32*g))
				kr8FifthBits(a, c, "Y12", "Y0", "Y1", "Y2")
			}
			a.I("VPDPBUSD.BCST", fmt.Sprintf("%d(SI), Y0, Y4", 4+64*c+4*g))
			a.I("VPDPBUSD.BCST", fmt.Sprintf("%d(SI), Y1, Y5", 4+64*c+32+4*g))
		}
		S := []string{"Y8", "Y9"}[c/2]
		a.I("VPSHUFB", fmt.Sprintf("kr8DupD%d<>(SB)", (2*c)%4), S, "Y0")
		a.I("VPSHUFB", fmt.Sprintf("kr8DupD%d<>(SB)", (2*c+1)%4), S, "Y1")
		a.I("VPMULLD", "Y0, Y4, Y4")
		a.I("VPMULLD", "Y1, Y5, Y5")
		if c == 0 {
			a.I("VPADDD", "Y5, Y4, Y6")
		} else {
			a.I("VPADDD", "Y5, Y4, Y4")
			a.I("VPADDD", "Y4, Y6, Y6")
		}
	}
}

// kr8FirstFlush is the group after which a chunk's 16-bit sums are first
// multiplied by the scales: 7 (all eight groups) for Q4_K, 3 for Q5_K,
// whose 5-bit quants allow four groups in 16 bits (4·2·31·128 < 2¹⁵).
func kr8FirstFlush(q5 bool) int {
	if q5 {
		return 3
	}
	return 7
}

// kr8FifthBits ORs the fifth bits of chunk c into the low (lo: sub-block
// 2c, bit 2c of each qh byte) and high (hi: 2c+1) nibbles, qh the group's
// qh bytes, tmp a temporary: each bit shifted to bit 4 (16-bit shifts by
// at most 4 move no other byte's bit there) and masked.
func kr8FifthBits(a *Asm, c int, qh, lo, hi, tmp string) {
	kr8FifthBitsOps(a, c, qh, lo, hi, tmp, "VPAND", "VPOR", "kr8Bit4<>(SB)")
}

// kr8FifthBitsOps is kr8FifthBits with the AND and OR instructions and the
// 0x10 bytes' operand given (the ZMM forms: VPANDD, VPORD, a register).
func kr8FifthBitsOps(a *Asm, c int, qh, lo, hi, tmp, and, or, bit4 string) {
	for h, dst := range []string{lo, hi} {
		k := 4 - (2*c + h) // left shift taking bit 2c+h to bit 4
		switch {
		case k > 0:
			a.I("VPSLLW", fmt.Sprintf("$%d, %s, %s", k, qh, tmp))
			a.I(and, bit4+", "+tmp+", "+tmp)
		case k < 0:
			a.I("VPSRLW", fmt.Sprintf("$%d, %s, %s", -k, qh, tmp))
			a.I(and, bit4+", "+tmp+", "+tmp)
		default:
			a.I(and, bit4+", "+qh+", "+tmp)
		}
		a.I(or, tmp+", "+dst+", "+dst)
	}
}

// kr8Act is the address of activation row t's bytes at displacement d of
// the current block (row 0 at SI, row t at SI + t·R10; row 3 at R9).
func kr8Act(t, d int) string {
	switch t {
	case 0:
		return fmt.Sprintf("%d(SI)", d)
	case 1:
		return fmt.Sprintf("%d(SI)(R10*1)", d)
	case 2:
		return fmt.Sprintf("%d(SI)(R10*2)", d)
	}
	return fmt.Sprintf("%d(R9)", d)
}

// genKR8Multi writes the kernel for M = 2..4 activation rows: the weights
// of a group split once for all rows. Registers: Y15 0x0F bytes, Y0 / Y1
// the group's low / high nibbles, Y2 a broadcast, Y3 a product, Y4+2t /
// Y5+2t row t's 16-bit sums of the chunk, Y12..Y14 temporaries. Scratch
// (DX): S0, S1 at 0, 32; per activation row t the int32 sums at 64+96t,
// the float accumulators of the sums at 96+96t and of the mins at
// 128+96t. AX the super-block, SI activation row
// 0's block (R9 row 3's), R10 arb, DI the records, BX super-blocks left,
// CX tiles left, R8 nb, R11 ldy in bytes, R12 the output, R14 a, R15 rec.
func genKR8Multi(a *Asm, M int, q5, vnni bool) {
	name, lbl, sbs, sq := fmt.Sprintf("kr8Q4Km%d", M), fmt.Sprintf("kr8q4k_%d", M), 1152, 128
	if q5 {
		name, lbl, sbs, sq = fmt.Sprintf("kr8Q5Km%d", M), fmt.Sprintf("kr8q5k_%d", M), 1408, 384
	}
	if vnni {
		// VPDPBUSD into int32 sums: no 16-bit stage, one scale multiply
		// (VPMULLD) per chunk
		name, lbl = name+"v", lbl+"v"
	}
	P0 := func(t int) string { return fmt.Sprintf("Y%d", 4+2*t) }
	P1 := func(t int) string { return fmt.Sprintf("Y%d", 5+2*t) }
	isum := func(t int) string { return fmt.Sprintf("%d(DX)", 64+96*t) }
	facc := func(t int) string { return fmt.Sprintf("%d(DX)", 96+96*t) }
	fmin := func(t int) string { return fmt.Sprintf("%d(DX)", 128+96*t) }
	kr8Prologue(a, name, lbl)
	a.I("VXORPS", "Y0, Y0, Y0")
	for t := 0; t < M; t++ {
		a.I("VMOVDQA", "Y0, "+facc(t))
		a.I("VMOVDQA", "Y0, "+fmin(t))
	}
	kr8RowPointers(a, M)
	a.I("MOVQ", "R15, DI")
	a.I("MOVQ", "R8, BX")
	a.Label(lbl + "_sb")
	kr8Scales(a, 32, "Y12", "Y13", "Y4", "Y5")
	a.I("VMOVDQA", "Y12, (DX)")
	a.I("VMOVDQA", "Y13, 32(DX)")
	// the mins, by activation row, into the float accumulators
	a.I("VCVTPH2PS", "16(AX), Y13")
	for t := 0; t < M; t++ {
		for p := 0; p < 4; p++ {
			Mr := []string{"Y4", "Y5"}[p/2]
			dst := "Y6"
			if p > 0 {
				dst = "Y0"
			}
			a.I("VPSHUFB", fmt.Sprintf("kr8Pair%d<>(SB)", p%2), Mr, dst)
			a.I("VPBROADCASTD", fmt.Sprintf("%d(DI), Y1", 16*t+4*p))
			a.I("VPMADDWD", "Y1, "+dst+", "+dst)
			if p > 0 {
				a.I("VPADDD", "Y0, Y6, Y6")
			}
		}
		a.I("VBROADCASTSS", kr8Act(t, 0)+", Y2")
		a.I("VMULPS", "Y2, Y13, Y2")
		a.I("VCVTDQ2PS", "Y6, Y6")
		a.I("VMOVUPS", fmin(t)+", Y3")
		a.I("VFMADD231PS", "Y6, Y2, Y3")
		a.I("VMOVUPS", "Y3, "+fmin(t))
	}
	for c := 0; c < 4; c++ {
		for g := 0; g < 8; g++ {
			a.I("VMOVDQU", fmt.Sprintf("%d(AX), Y0", sq+256*c+32*g))
			a.I("VPSRLW", "$4, Y0, Y1")
			a.I("VPAND", "Y15, Y0, Y0")
			a.I("VPAND", "Y15, Y1, Y1")
			if q5 {
				a.I("VMOVDQU", fmt.Sprintf("%d(AX), Y12", 128+32*g))
				kr8FifthBits(a, c, "Y12", "Y0", "Y1", "Y2")
			}
			fresh := g == 0 || q5 && g == 4
			if vnni {
				if g == 0 {
					for t := 0; t < M; t++ {
						a.I("VPXOR", P0(t)+", "+P0(t)+", "+P0(t))
						a.I("VPXOR", P1(t)+", "+P1(t)+", "+P1(t))
					}
				}
				for t := 0; t < M; t++ {
					a.I("VPDPBUSD.BCST", kr8Act(t, 4+64*c+4*g)+", Y0, "+P0(t))
					a.I("VPDPBUSD.BCST", kr8Act(t, 4+64*c+32+4*g)+", Y1, "+P1(t))
				}
			}
			for t := 0; t < M && !vnni; t++ {
				for h, W := range []string{"Y0", "Y1"} {
					P := []func(int) string{P0, P1}[h]
					a.I("VPBROADCASTD", kr8Act(t, 4+64*c+32*h+4*g)+", Y2")
					if fresh {
						a.I("VPMADDUBSW", "Y2, "+W+", "+P(t))
						continue
					}
					a.I("VPMADDUBSW", "Y2, "+W+", Y3")
					a.I("VPADDW", "Y3, "+P(t)+", "+P(t))
				}
			}
			if g != 7 && !(q5 && g == 3 && !vnni) {
				continue
			}
			first, last := c == 0 && g == kr8FirstFlush(q5 && !vnni), c == 3 && g == 7
			dup, mul := "kr8Dup", "VPMADDWD"
			if vnni {
				dup, mul = "kr8DupD", "VPMULLD"
			}
			a.I("VMOVDQA", fmt.Sprintf("%d(DX), Y12", 32*(c/2)))
			a.I("VPSHUFB", fmt.Sprintf("%s%d<>(SB)", dup, (2*c)%4), "Y12", "Y13")
			a.I("VPSHUFB", fmt.Sprintf("%s%d<>(SB)", dup, (2*c+1)%4), "Y12", "Y14")
			for t := 0; t < M; t++ {
				a.I(mul, "Y13, "+P0(t)+", "+P0(t))
				a.I(mul, "Y14, "+P1(t)+", "+P1(t))
				a.I("VPADDD", P1(t)+", "+P0(t)+", "+P0(t))
				if !first {
					a.I("VPADDD", isum(t)+", "+P0(t)+", "+P0(t))
				}
				if !last {
					a.I("VMOVDQA", P0(t)+", "+isum(t))
				}
			}
		}
	}
	a.I("VCVTPH2PS", "(AX), Y13")
	for t := 0; t < M; t++ {
		a.I("VBROADCASTSS", kr8Act(t, 0)+", Y2")
		a.I("VMULPS", "Y2, Y13, Y2")
		a.I("VCVTDQ2PS", P0(t)+", "+P0(t))
		a.I("VMOVUPS", facc(t)+", Y3")
		a.I("VFMADD231PS", P0(t)+", Y2, Y3")
		a.I("VMOVUPS", "Y3, "+facc(t))
	}
	a.I("ADDQ", fmt.Sprintf("$%d, AX", sbs))
	a.I("ADDQ", "$292, SI")
	if M > 3 {
		a.I("ADDQ", "$292, R9")
	}
	a.I("ADDQ", fmt.Sprintf("$%d, DI", 16*M))
	a.I("DECQ", "BX")
	a.I("JNZ", lbl+"_sb")
	kr8StoreRows(a, M, facc, fmin)
	kr8Epilogue(a, lbl)
}

// kr8SKind is one of the eight-row layouts of sixteen sub-blocks of 16
// weights, whose kernels genKR8S writes: Q6_Kr8, Q3_Kr8, Q2_Kr8.
type kr8SKind int

const (
	kr8Q6 kr8SKind = iota
	kr8Q3
	kr8Q2
)

// sbs is the bytes of the layout's super-block; tag its letter in names.
func (k kr8SKind) sbs() int { return [...]int{1680, 880, 672}[k] }
func (k kr8SKind) tag() string {
	return [...]string{"6", "3", "2"}[k]
}

// group16 is how many groups of a quarter the one-row AVX2 kernel sums in
// 16 bits before the scales: pairs of products of at most 2·63·128 for
// Q6_K (two fit below 2¹⁵), of 2·7·128 for Q3_K and 2·3·128 for Q2_K (all
// four of a quarter fit).
func (k kr8SKind) group16() int {
	if k == kr8Q6 {
		return 2
	}
	return 4
}

// genKR8S writes the kernel of a sixteen-sub-block eight-row layout
// (Q6_Kr8, Q3_Kr8, Q2_Kr8) for M = 1..4 activation rows. They read no
// records: the activation sums their offsets and mins need are the Q8_K
// block's own bsums, one per sub-block.
//
// Per super-block and activation row the int32 sums start at −32 (Q6_K)
// or −4 (Q3_K) times Σ_j sc_j·bsums_j (eight VPSHUFB + VPSRAW pairs of
// sign-extended scale words, eight VPMADDWD against the bsums pairs
// broadcast); Q2_K's mins take the same eight steps into Σ_j m_j·bsums_j,
// converted and multiply-added by dmin_w·d_a into the mins' float
// accumulator at once. Q6_K's scales are int8 in the layout, Q3_K's are
// rebuilt from L and H once per super-block (kr8Scales, minus 32) into
// the scratch, Q2_K's are the low nibbles of its scale bytes. Then per
// quarter (half n, groups 4gq..4gq+3: sub-blocks 8n+gq+{0, 2, 4, 6}) the
// four sub-blocks' eight scales are spread into sign-extended word pairs
// (VPSHUFB to the high bytes, VPSRAW), and per group the loads make four
// registers of quants (Q6_K: three loads, 17 shifts, masks and ORs; Q3_K:
// two loads, the low bits and the third bit shifted into place and ORed,
// 17; Q2_K: one load, 7), and per activation row each is one VPMADDUBSW
// against four activation bytes broadcast, one VPMADDWD by its scales and
// one VPADDD (one row: the products of group16 groups summed in 16 bits
// first). Then one VCVTDQ2PS and one FMA by d_w·d_a per super-block:
// quant.DotR8's order.
//
// Registers: Y15 0x0F bytes, Y0..Y5 the group's quants and temporaries,
// Y6..Y9 the quarter's scale words, Y10+t activation row t's int32 sums
// (M = 1: Y11..Y14 the four sub-blocks' 16-bit sums of group16 groups);
// the float accumulators at scr+32t, Q2_K's mins' at scr+256+32t, Q3_K's
// scales at scr+128. AX the super-block, SI activation row 0's block (R9
// row 3's), R10 arb, BX super-blocks left, CX tiles left, DX scr, R8 nb,
// R11 ldy in bytes, R12 the output, R14 a.
func genKR8S(a *Asm, kind kr8SKind, M int, vnni bool, pf kr8Pref) {
	name, lbl := fmt.Sprintf("kr8Q%sKm%d", kind.tag(), M), fmt.Sprintf("kr8q%sk_%d", kind.tag(), M)
	if vnni {
		// per quarter, each (activation row, sub-block)'s int32 sum in its
		// own register (Y16+4t+k, EVEX-only) by VPDPBUSD against the
		// activation bytes broadcast from memory, then one VPMULLD by the
		// sign-extended scale dwords: the same exact sums
		name, lbl = name+"v", lbl+"v"
	}
	sbs := kind.sbs()
	acc := func(t int) string { return fmt.Sprintf("Y%d", 10+t) }
	facc := func(t int) string { return fmt.Sprintf("%d(DX)", 32*t) }
	fmin := func(t int) string { return fmt.Sprintf("%d(DX)", 256+32*t) }
	name, lbl = name+pf.sfx, lbl+pf.sfx
	kr8Prologue(a, name, lbl)
	a.I("VXORPS", "Y0, Y0, Y0")
	for t := 0; t < M; t++ {
		a.I("VMOVDQA", "Y0, "+facc(t))
		if kind == kr8Q2 {
			a.I("VMOVDQA", "Y0, "+fmin(t))
		}
	}
	kr8RowPointers(a, M)
	a.I("MOVQ", "R8, BX")
	a.Label(lbl + "_sb")
	if M == 1 {
		for o := 0; o < sbs; o += 64 {
			a.I(pf.op, fmt.Sprintf("%d(AX)", pf.dist+o))
		}
	}
	// Y0..Y3: the sixteen (row, sub-block) bytes the bsums multiply, as
	// signed bytes: Q6_K's and Q3_K's scales, Q2_K's mins
	switch kind {
	case kr8Q6:
		for q := 0; q < 4; q++ {
			a.I("VMOVDQU", fmt.Sprintf("%d(AX), Y%d", 16+32*q, q))
		}
	case kr8Q3:
		kr8Scales(a, 16, "Y3", "Y4", "Y5", "Y6")
		for q := 0; q < 4; q++ {
			a.I("VPSUBB", fmt.Sprintf("kr8B32<>(SB), Y%d, Y%d", 3+q, 3+q))
			a.I("VMOVDQA", fmt.Sprintf("Y%d, %d(DX)", 3+q, 128+32*q))
		}
		for q := 0; q < 4; q++ {
			a.I("VMOVDQA", fmt.Sprintf("Y%d, Y%d", 3+q, q))
		}
	case kr8Q2:
		for q := 0; q < 4; q++ {
			a.I("VMOVDQU", fmt.Sprintf("%d(AX), Y%d", 32+32*q, q))
			a.I("VPSRLW", fmt.Sprintf("$4, Y%d, Y%d", q, q))
			a.I("VPAND", fmt.Sprintf("Y15, Y%d, Y%d", q, q))
		}
	}
	kr8BsumsW(a, kr8Y, kind, M, acc)
	if kind == kr8Q2 {
		kr8ScaleInto(a, M, 16, acc, fmin, true)
	}
	// the group's four quant registers and the temporaries left
	e, prod := []string{"Y3", "Y4", "Y0", "Y1"}, "Y5"
	if kind != kr8Q6 {
		e, prod = []string{"Y3", "Y4", "Y5", "Y0"}, "Y1"
	}
	g16 := kind.group16()
	for n := 0; n < 2; n++ {
		for gq := 0; gq < 2; gq++ {
			for h := 0; h < 2; h++ {
				switch kind {
				case kr8Q6:
					a.I("VMOVDQU", fmt.Sprintf("%d(AX), Y%d", 16+32*(2*n+h), h))
				case kr8Q3:
					a.I("VMOVDQA", fmt.Sprintf("%d(DX), Y%d", 128+32*(2*n+h), h))
				case kr8Q2:
					a.I("VMOVDQU", fmt.Sprintf("%d(AX), Y%d", 32+32*(2*n+h), h))
					a.I("VPAND", fmt.Sprintf("Y15, Y%d, Y%d", h, h))
				}
			}
			if vnni {
				kr8SQuarterVNNIW(a, kr8Y, kind, M, n, gq, acc)
				continue
			}
			for k := 0; k < 4; k++ {
				d := fmt.Sprintf("Y%d", 6+k)
				a.I("VPSHUFB", fmt.Sprintf("kr8DupHi%d<>(SB)", (2*k+gq)%4), fmt.Sprintf("Y%d", k/2), d)
				a.I("VPSRAW", "$8, "+d+", "+d)
			}
			for g := 4 * gq; g < 4*gq+4; g++ {
				kr8SQuants(a, kind, n, g)
				if M == 1 {
					// one row: group16 groups summed in 16 bits before the
					// scale
					for k := 0; k < 4; k++ {
						P := fmt.Sprintf("Y%d", 11+k)
						a.I("VPBROADCASTD", kr8Act(0, 4+128*n+32*k+4*g)+", Y2")
						if g%g16 == 0 {
							a.I("VPMADDUBSW", "Y2, "+e[k]+", "+P)
							continue
						}
						a.I("VPMADDUBSW", "Y2, "+e[k]+", "+e[k])
						a.I("VPADDW", e[k]+", "+P+", "+P)
						if g%g16 == g16-1 {
							a.I("VPMADDWD", fmt.Sprintf("Y%d, %s, %s", 6+k, P, P))
							a.I("VPADDD", P+", "+acc(0)+", "+acc(0))
						}
					}
					continue
				}
				for t := 0; t < M; t++ {
					for k := 0; k < 4; k++ {
						a.I("VPBROADCASTD", kr8Act(t, 4+128*n+32*k+4*g)+", Y2")
						a.I("VPMADDUBSW", "Y2, "+e[k]+", "+prod)
						a.I("VPMADDWD", fmt.Sprintf("Y%d, %s, %s", 6+k, prod, prod))
						a.I("VPADDD", prod+", "+acc(t)+", "+acc(t))
					}
				}
			}
		}
	}
	kr8ScaleInto(a, M, 0, acc, facc, false)
	a.I("ADDQ", fmt.Sprintf("$%d, AX", sbs))
	a.I("ADDQ", "$292, SI")
	if M > 3 {
		a.I("ADDQ", "$292, R9")
	}
	a.I("DECQ", "BX")
	a.I("JNZ", lbl+"_sb")
	if kind == kr8Q2 {
		kr8StoreRows(a, M, facc, fmin)
	} else {
		kr8StoreRows(a, M, facc, nil)
	}
	kr8Epilogue(a, lbl)
}

// kr8ScaleInto converts each activation row t's int32 sums acc(t) and
// multiply-adds them, by the 8 rows' f16 scales at doff(AX) times the
// row's d_a, into its float accumulator dst(t) in memory; zero clears
// acc(t) after.
func kr8ScaleInto(a *Asm, M, doff int, acc, dst func(int) string, zero bool) {
	addr := "(AX)"
	if doff != 0 {
		addr = fmt.Sprintf("%d(AX)", doff)
	}
	a.I("VCVTPH2PS", addr+", Y0")
	kr8ScaleIntoW(a, kr8Y, M, acc, dst, zero)
}

// kr8ScaleIntoW is kr8ScaleInto's per-row steps at width w, the scales
// already converted into register 0 (registers 1..3 temporaries).
func kr8ScaleIntoW(a *Asm, w kr8Width, M int, acc, dst func(int) string, zero bool) {
	r0, r1, r2, r3 := w.reg(0), w.reg(1), w.reg(2), w.reg(3)
	for t := 0; t < M; t++ {
		a.I("VBROADCASTSS", kr8Act(t, 0)+", "+r1)
		a.I("VMULPS", r1+", "+r0+", "+r1)
		a.I("VCVTDQ2PS", acc(t)+", "+r2)
		a.I("VMOVUPS", dst(t)+", "+r3)
		a.I("VFMADD231PS", r2+", "+r1+", "+r3)
		a.I("VMOVUPS", r3+", "+dst(t))
		if zero {
			a.I(w.xor, acc(t)+", "+acc(t)+", "+acc(t))
		}
	}
}

// kr8SQuants loads group g of half n of the super-block at AX and leaves
// its four registers of quants, sub-blocks 8n+2k+g/4 for k = 0..3: Q6_K
// in Y3, Y4, Y0, Y1 (6-bit), Q3_K and Q2_K in Y3, Y4, Y5, Y0 (Q3_K: low
// bits | third bit << 2; Q2_K: 2-bit).
func kr8SQuants(a *Asm, kind kr8SKind, n, g int) { kr8SQuantsW(a, kr8Y, kind, n, g) }

// kr8SQuantsW is kr8SQuants at width w (the same register numbers).
func kr8SQuantsW(a *Asm, w kr8Width, kind kr8SKind, n, g int) {
	r := w.reg
	switch kind {
	case kr8Q6:
		o := 144 + 768*n + 96*g
		w.load(a, o, 0)
		w.load(a, o+32, 1)
		w.load(a, o+64, 2)
		a.I(w.and, w.nib+", "+r(0)+", "+r(3))
		a.I(w.and, w.nib+", "+r(1)+", "+r(4))
		a.I("VPSRLW", "$4, "+r(0)+", "+r(0))
		a.I(w.and, w.nib+", "+r(0)+", "+r(0))
		a.I("VPSRLW", "$4, "+r(1)+", "+r(1))
		a.I(w.and, w.nib+", "+r(1)+", "+r(1))
		a.I("VPSLLW", "$4, "+r(2)+", "+r(5))
		a.I(w.and, w.hi+", "+r(5)+", "+r(5))
		a.I(w.or, r(5)+", "+r(3)+", "+r(3))
		a.I("VPSLLW", "$2, "+r(2)+", "+r(5))
		a.I(w.and, w.hi+", "+r(5)+", "+r(5))
		a.I(w.or, r(5)+", "+r(4)+", "+r(4))
		a.I(w.and, w.hi+", "+r(2)+", "+r(5))
		a.I(w.or, r(5)+", "+r(0)+", "+r(0))
		a.I("VPSRLW", "$2, "+r(2)+", "+r(2))
		a.I(w.and, w.hi+", "+r(2)+", "+r(2))
		a.I(w.or, r(2)+", "+r(1)+", "+r(1))
		return
	case kr8Q3:
		w.load(a, 112+256*n+32*g, 0)
		w.load(a, 624+32*g, 1)
	case kr8Q2:
		w.load(a, 160+256*n+32*g, 0)
	}
	// the low two bits of each quant: k = 3 last, in place in register 0;
	// 16-bit right shifts bring the next byte's bits only above bit 1
	for k, dst := range []string{r(3), r(4), r(5), r(0)} {
		src := r(0)
		if k > 0 {
			a.I("VPSRLW", fmt.Sprintf("$%d, %s, %s", 2*k, r(0), dst))
			src = dst
		}
		a.I(w.andBcst, "kr8M3<>(SB), "+src+", "+dst)
		if kind != kr8Q3 {
			continue
		}
		// the third bit, hmask bit 4n+k, to bit 2 (register 1 in place
		// for k = 3)
		tmp := r(2)
		if k == 3 {
			tmp = r(1)
		}
		hm := tmp
		switch sh := 4*n + k - 2; {
		case sh > 0:
			a.I("VPSRLW", fmt.Sprintf("$%d, %s, %s", sh, r(1), tmp))
		case sh < 0:
			a.I("VPSLLW", fmt.Sprintf("$%d, %s, %s", -sh, r(1), tmp))
		default:
			hm = r(1)
		}
		a.I(w.andBcst, "kr8M4<>(SB), "+hm+", "+tmp)
		a.I(w.or, tmp+", "+dst+", "+dst)
	}
}

// kr8BsumsW starts each activation row t's int32 sums acc(t) of a
// sixteen-sub-block super-block at width w, from the sixteen (row,
// sub-block) signed bytes in registers 0..3 (Q6_K's and Q3_K's scales,
// Q2_K's mins) against the Q8_K block's bsums: Σ_j b_j·bsums_j, times −32
// (Q6_K) or −4 (Q3_K); Q2_K's is the mins' sum, left positive (registers 4
// and 5 temporaries).
func kr8BsumsW(a *Asm, w kr8Width, kind kr8SKind, M int, acc func(int) string) {
	r4, r5 := w.reg(4), w.reg(5)
	for t := 0; t < M; t++ {
		for p := 0; p < 8; p++ {
			a.I("VPSHUFB", fmt.Sprintf("%sPairHi%d<>(SB)", w.masks, p%2), w.reg(p/2), r4)
			a.I("VPSRAW", "$8, "+r4+", "+r4)
			a.I("VPBROADCASTD", kr8Act(t, 260+4*p)+", "+r5)
			if p == 0 {
				a.I("VPMADDWD", r5+", "+r4+", "+acc(t))
				continue
			}
			a.I("VPMADDWD", r5+", "+r4+", "+r4)
			a.I("VPADDD", r4+", "+acc(t)+", "+acc(t))
		}
		if kind == kr8Q2 {
			continue
		}
		// the sums start at −32 (−4) times the scaled bsums
		a.I("VPSLLD", fmt.Sprintf("$%d, %s, %s", map[kr8SKind]int{kr8Q6: 5, kr8Q3: 2}[kind], acc(t), acc(t)))
		a.I(w.xor, r4+", "+r4+", "+r4)
		a.I("VPSUBD", acc(t)+", "+r4+", "+acc(t))
	}
}

// kr8SQuarterVNNIW is a quarter (half n, groups 4gq..4gq+3) of a
// sixteen-sub-block super-block in the VNNI forms, at width w, the
// quarter's scale bytes in registers 0 and 1: the four sub-blocks' scales
// spread into sign-extended dwords (registers 6..9), and per activation row
// t and sub-block k an int32 sum (register 16+4t+k) zeroed, VPDPBUSD of
// each group's quants against four activation bytes broadcast from
// memory, then VPMULLD by the scales into acc(t).
func kr8SQuarterVNNIW(a *Asm, w kr8Width, kind kr8SKind, M, n, gq int, acc func(int) string) {
	P := func(t, k int) string { return w.reg(16 + 4*t + k) }
	e := []string{w.reg(3), w.reg(4), w.reg(0), w.reg(1)}
	if kind != kr8Q6 {
		e = []string{w.reg(3), w.reg(4), w.reg(5), w.reg(0)}
	}
	for k := 0; k < 4; k++ {
		d := w.reg(6 + k)
		a.I("VPSHUFB", fmt.Sprintf("%sDupHD%d<>(SB)", w.masks, (2*k+gq)%4), w.reg(k/2), d)
		a.I("VPSRAD", "$24, "+d+", "+d)
	}
	for t := 0; t < M; t++ {
		for k := 0; k < 4; k++ {
			a.I("VPXORD", P(t, k)+", "+P(t, k)+", "+P(t, k))
		}
	}
	for g := 4 * gq; g < 4*gq+4; g++ {
		kr8SQuantsW(a, w, kind, n, g)
		for t := 0; t < M; t++ {
			for k := 0; k < 4; k++ {
				a.I("VPDPBUSD.BCST", kr8Act(t, 4+128*n+32*k+4*g)+", "+e[k]+", "+P(t, k))
			}
		}
	}
	for t := 0; t < M; t++ {
		for k := 0; k < 4; k++ {
			a.I("VPMULLD", w.reg(6+k)+", "+P(t, k)+", "+P(t, k))
			a.I("VPADDD", P(t, k)+", "+acc(t)+", "+acc(t))
		}
	}
}

// genR8Q5 writes the Q5_0r8 kernel (quant/q5_0r8.go) for M = 1..4 Q8_0
// activation rows, AVX2+FMA+F16C only. Per block of a tile: the fifth
// bits in one load (Y13); per pair of chunks the two 32-byte quant loads
// split into four registers of low and high nibbles with their fifth bits
// ORed in (a shift, a mask and an OR each), the 5-bit quants unsigned
// (q+16). Per activation row and pair of chunks, four VPMADDUBSW against
// four activation bytes broadcast, summed in 16 bits (four words of at most
// 2·31·128) and one VPMADDWD by ones: each row's block sum of q·a in its
// lane, exact. At the block's end that plus the record's −16·Σa, converted,
// times d_w·d_a (VCVTPH2PS of the eight rows' d, times the record's d_a)
// into the row's float accumulator by one FMA: quant.DotR8's order, which
// is DotR16's.
//
//	func r8Q5_0m<M>(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)
//
// rec: per block b and activation row t at 8·(b·M+t) d_a (float32) and
// −16·Σ_i a_i (int32); scr: 32·M bytes, 32-byte aligned (M = 4: the float
// accumulators); the rest as kr8Q4Km<M>.
//
// Registers: Y15 0x0F bytes, Y14 ones words, Y13 the fifth bits, Y0..Y3 a
// pair of chunks' quants, Y4..Y6 temporaries, Y7+t activation row t's
// int32 sums, Y10+t its float accumulator (M ≤ 3; M = 4: at scr+32t).
//
// The AVX-512 VNNI form (suffix v, YMM registers) starts each row's sums
// at the record's −16·Σa and adds the products with one VPDPBUSD per
// chunk half against the activation bytes broadcast from memory: the same
// exact sums, so the same bits.
//
// Q4_0r8's kernel (q4) is the same without the fifth bits: its blocks are
// 144 bytes, the quants at 16, the record's bias −8·Σa.
//
// Q5_1r8's and Q4_1r8's (kind "5_1", "4_1") read Q8_1 activation blocks
// (36 bytes, quants at 4), start the sums at zero (unsigned quants) and
// per block also multiply-add the 8 rows' m (f16 at 16) by the record's
// s_a into a second float accumulator (scr+128+32t), added at the end.
func genR8Q5(a *Asm, M int, vnni bool, kind string, pf kr8Pref) {
	name, lbl := fmt.Sprintf("r8Q%sm%d", kind, M), fmt.Sprintf("r8q%s_%d", kind, M)
	if kind == "5_0" || kind == "4_0" {
		// the names the first two layouts were given
		lbl = fmt.Sprintf("r8q%s_%d", kind[:1], M)
	}
	geo := map[string][3]int{"5_0": {176, 48, 16}, "4_0": {144, 16, -1}, "5_1": {192, 64, 32}, "4_1": {160, 32, -1}}[kind]
	bsz, qo, ho := geo[0], geo[1], geo[2]
	q4 := ho < 0
	mins := kind == "5_1" || kind == "4_1"
	ab, ao := 34, 2 // activation block bytes, offset of its quants
	if mins {
		ab, ao = 36, 4
	}
	accm := func(t int) string { return fmt.Sprintf("%d(DX)", 128+32*t) }
	if vnni {
		name, lbl = name+"v", lbl+"v"
	}
	P := func(t int) string { return fmt.Sprintf("Y%d", 7+t) }
	acc := func(t int) string {
		if M == 4 {
			return fmt.Sprintf("%d(DX)", 32*t)
		}
		return fmt.Sprintf("Y%d", 10+t)
	}
	name, lbl = name+pf.sfx, lbl+pf.sfx
	kr8Prologue(a, name, lbl)
	a.I("VMOVDQU", "kr8One16<>(SB), Y14")
	a.I("VXORPS", "Y0, Y0, Y0")
	for t := 0; t < M; t++ {
		if M == 4 {
			a.I("VMOVDQA", "Y0, "+acc(t))
		} else {
			a.I("VXORPS", acc(t)+", "+acc(t)+", "+acc(t))
		}
		if mins {
			a.I("VMOVDQA", "Y0, "+accm(t))
		}
	}
	kr8RowPointers(a, M)
	a.I("MOVQ", "R15, DI")
	a.I("MOVQ", "R8, BX")
	a.Label(lbl + "_b")
	if M == 1 {
		for o := 0; o < bsz; o += 64 {
			a.I(pf.op, fmt.Sprintf("%d(AX)", pf.dist+o))
		}
	}
	if !q4 {
		a.I("VMOVDQU", fmt.Sprintf("%d(AX), Y13", ho))
	}
	for hp := 0; hp < 2; hp++ {
		for cc := 0; cc < 2; cc++ {
			c := 2*hp + cc
			lo, hi := fmt.Sprintf("Y%d", 2*cc), fmt.Sprintf("Y%d", 2*cc+1)
			a.I("VMOVDQU", fmt.Sprintf("%d(AX), %s", qo+32*c, lo))
			a.I("VPSRLW", "$4, "+lo+", "+hi)
			a.I("VPAND", "Y15, "+lo+", "+lo)
			a.I("VPAND", "Y15, "+hi+", "+hi)
			if !q4 {
				// bits 2c and 2c+1 of each fifth-bit byte, Q5_Kr8's scheme
				kr8FifthBits(a, c, "Y13", lo, hi, "Y4")
			}
		}
		c0, c1 := 2*hp, 2*hp+1
		offs := []int{ao + 4*c0, ao + 16 + 4*c0, ao + 4*c1, ao + 16 + 4*c1}
		for t := 0; t < M && vnni; t++ {
			if hp == 0 && mins {
				a.I("VPXOR", P(t)+", "+P(t)+", "+P(t))
			} else if hp == 0 {
				a.I("VPBROADCASTD", fmt.Sprintf("%d(DI), %s", 8*t+4, P(t)))
			}
			for i, off := range offs {
				a.I("VPDPBUSD.BCST", fmt.Sprintf("%s, Y%d, %s", kr8Act(t, off), i, P(t)))
			}
			if hp == 1 {
				r8Q5Finish(a, M, t, P(t), acc(t))
				if mins {
					r8Q5Mins(a, t, accm(t))
				}
			}
		}
		for t := 0; t < M && !vnni; t++ {
			for i, off := range offs {
				a.I("VPBROADCASTD", kr8Act(t, off)+", Y4")
				if i == 0 {
					a.I("VPMADDUBSW", fmt.Sprintf("Y4, Y%d, Y6", i))
					continue
				}
				a.I("VPMADDUBSW", fmt.Sprintf("Y4, Y%d, Y5", i))
				a.I("VPADDW", "Y5, Y6, Y6")
			}
			if hp == 0 {
				a.I("VPMADDWD", "Y14, Y6, "+P(t))
				continue
			}
			a.I("VPMADDWD", "Y14, Y6, Y6")
			a.I("VPADDD", "Y6, "+P(t)+", "+P(t))
			if !mins {
				a.I("VPBROADCASTD", fmt.Sprintf("%d(DI), Y4", 8*t+4))
				a.I("VPADDD", "Y4, "+P(t)+", "+P(t))
			}
			r8Q5Finish(a, M, t, P(t), acc(t))
			if mins {
				r8Q5Mins(a, t, accm(t))
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
	if mins {
		// acc + accm, through the mins' slot
		for t := 0; t < M; t++ {
			a.I("VMOVUPS", accm(t)+", Y0")
			a.I("VADDPS", acc(t)+", Y0, Y0")
			a.I("VMOVUPS", "Y0, "+accm(t))
		}
		kr8StoreRows(a, M, accm, nil)
	} else {
		kr8StoreRows(a, M, acc, nil)
	}
	kr8Epilogue(a, lbl)
}

// r8Q5Mins multiply-adds the 8 rows' m (f16 at 16) by activation row t's
// s_a (the record's second float) into its mins accumulator accm.
func r8Q5Mins(a *Asm, t int, accm string) {
	a.I("VCVTPH2PS", "16(AX), Y4")
	a.I("VBROADCASTSS", fmt.Sprintf("%d(DI), Y5", 8*t+4))
	a.I("VMOVUPS", accm+", Y6")
	a.I("VFMADD231PS", "Y5, Y4, Y6")
	a.I("VMOVUPS", "Y6, "+accm)
}

// r8Q5Finish converts activation row t's block sums P (the bias added) and
// multiply-adds them by d_w·d_a into its float accumulator acc.
func r8Q5Finish(a *Asm, M, t int, P, acc string) {
	a.I("VCVTDQ2PS", P+", "+P)
	a.I("VCVTPH2PS", "(AX), Y4")
	a.I("VBROADCASTSS", fmt.Sprintf("%d(DI), Y5", 8*t))
	a.I("VMULPS", "Y5, Y4, Y4")
	if M == 4 {
		a.I("VMOVUPS", acc+", Y5")
		a.I("VFMADD231PS", P+", Y4, Y5")
		a.I("VMOVUPS", "Y5, "+acc)
		return
	}
	a.I("VFMADD231PS", P+", Y4, "+acc)
}
