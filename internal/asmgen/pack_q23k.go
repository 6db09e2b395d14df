package main

import "fmt"

// AVX2 tile packers of the Q3_K and Q2_K prefill GEMMs (pack_q23k_amd64.s;
// the tile layouts are stated in backends/cpu/gemm_kquant_avx2_amd64.go
// and, byte by byte, by packQ3KTileRef / packQ2KTileRef in pack_test.go).
// A GEMM call packs every weight row it reads once, so the packers run
// once per weight and prefill call; done a byte at a time in Go, the Q3_K
// one took 18-20% of a one-thread Qwen3-0.6B Q3_K pp256 (AVX2 tier), the
// Q2_K one (a word at a time) 7-8% of the Q2_K one. Here a row's
// super-block is a few dozen vector ops: its 32-byte quant and hmask
// loads, per chunk a shift and mask for the values, 16 scales unpacked at
// once (as the Q3_K decode kernel does) and spread to the chunks' word
// vectors by VPSHUFB.

func init() {
	register("pack_q23k_amd64.s", "amd64 && !purego", func(a *Asm) {
		a.Blank()
		a.Comment(`Tile packers of the AVX2 Q3_K and Q2_K GEMMs: see
internal/asmgen/pack_q23k.go and the layouts in gemm_kquant_avx2_amd64.go.`)
		packQ23KConsts(a)
		packQ3K(a, false)
		packQ3K(a, true)
		packQ2K(a, false)
		packQ2K(a, true)
	})
}

// packQ23KConsts writes the constant tables: the Q3_K scale shifts, the
// chunk masks spreading scale words 2c, 2c+1 of a 128-bit lane (c = 0..3)
// to the low and high lanes, and byte constants.
func packQ23KConsts(a *Asm) {
	data := func(name string, qwords ...uint64) {
		for i, q := range qwords {
			a.Raw("DATA %s<>+%d(SB)/8, $0x%016x", name, 8*i, q)
		}
		a.Raw("GLOBL %s<>(SB), RODATA|NOPTR, $%d", name, 8*len(qwords))
	}
	a.Blank()
	a.Comment(`pkQ3ShiftLo / pkQ3ShiftHi: dword shifts of the Q3_K scale bytes (low
nibbles of sc0..7 then their high nibbles; bits 2d..2d+1 of sc8..11 in
dword d).`)
	data("pkQ3ShiftLo", 0, 0x0000000400000004)
	data("pkQ3ShiftHi", 0x0000000200000000, 0x0000000600000004)
	a.Comment("pkSplit: mask c (32 bytes at 32c): word 2c of the lane ×8 in the low\nlane, word 2c+1 ×8 in the high one.")
	var q []uint64
	for c := 0; c < 4; c++ {
		for h := 0; h < 2; h++ {
			w := uint64(2*(2*c+h)) | uint64(2*(2*c+h)+1)<<8
			v := w | w<<16 | w<<32 | w<<48
			q = append(q, v, v)
		}
	}
	data("pkSplit", q...)
	a.Comment("Byte constants, 8 bytes each (broadcast): 0x03, 0x04, 0x01, 0x0f; 0x20\n(16 bytes: a 128-bit memory operand).")
	data("pkB03", 0x0303030303030303)
	data("pkB04", 0x0404040404040404)
	data("pkB01", 0x0101010101010101)
	data("pkB0F", 0x0f0f0f0f0f0f0f0f)
	data("pkB20", 0x2020202020202020, 0x2020202020202020)
}

// packQ3K writes packQ3KAVX2 (paired: packQ3KAVX2P, the tile of the
// paired kernels, gemm_kquant_avx2p.go: chunks 2i, 2i+1 as halves A, B at
// 64·(i·R+r), their scale words as one per-lane pair at 256R+32·(i·R+r),
// the offsets at 384R+32r, 448·R bytes per super-block).
func packQ3K(a *Asm, paired bool) {
	name, l, tb, oo := "packQ3KAVX2", "pq3", 548, 512
	if paired {
		name, l, tb, oo = "packQ3KAVX2P", "pq3p", 448, 384
	}
	a.Blank()
	if paired {
		a.Comment(`packQ3KAVX2P is packQ3KAVX2 for the paired tile (448·R bytes per
super-block): the values of chunks 2i, 2i+1 as halves A, B (pairHalves)
at 64·(i·R+r), the per-lane scale word pairs (half A of the two chunks'
scale words) at 256R+32·(i·R+r), the offsets at 384R+32r; d (DW at 416R)
is the Go side's. Registers as packQ3KAVX2 (R13 448·R), R15 the row's
pair-0 place (64 bytes a row), R12 pair i's (64·R a pair), AX its scale
words' (32·R a pair; after the last pair, the row's offsets); Y6 chunk
2i+1's values, Y4 its scale words.`)
	} else {
		a.Comment(`packQ3KAVX2 writes nb super-blocks of an R-row Q3_K tile (548·R bytes
per super-block): dst the tile, w row 0 of the weights (rows wrb bytes
apart, 110-byte blocks). Per row and super-block: chunk j's values
((q[j/4] >> 2(j%4)) & 3) | ((hm >> j) & 1) << 2, minus 4, at 32·(j·R+r);
its scale words [s(2j)-32 ×8 | s(2j+1)-32 ×8] at 256R+32·(j·R+r); the
lane offsets -128·Σ_j s·(the lane's 4 values) at 512R+32r (VPMADDUBSW of
ones and the values, VPMADDWD by the scale words: the integers of
packQ3KTileRef). The f16 d (at 544R+4r) is the Go side's: its table
keeps every bit pattern, where VCVTPH2PS would quiet a signalling NaN.
Registers: DI the tile super-block, SI the weights' super-block, R8 the
current row's block, R9 its chunk-0 place, R12 chunk j's, R10 32·R,
R11 256·R, R13 548·R, R14 R·wrb (the next tile's rows,
prefetched), BX wrb, CX super-blocks left, DX rows left; Y15 0x03, Y14
0x04, Y13 0x01 bytes, Y12 0x0f; Y0 hmask, Y1/Y2 the quant halves, Y6 the
16 scales as words, Y7/Y8 their low/high lane in both lanes, Y10 the
offsets, Y3..Y5, Y9, Y11 temporaries.`)
	}
	a.Raw("")
	a.Raw("// func %s(dst *byte, w *byte, wrb int, nb int, R int)", name)
	a.Raw("TEXT ·%s(SB), NOSPLIT, $0-40", name)
	a.I("MOVQ", "dst+0(FP)", "DI")
	a.I("MOVQ", "w+8(FP)", "SI")
	a.I("MOVQ", "wrb+16(FP)", "BX")
	a.I("MOVQ", "nb+24(FP)", "CX")
	a.I("MOVQ", "R+32(FP)", "R10")
	a.I("IMUL3Q", fmt.Sprintf("$%d", tb), "R10", "R13")
	a.I("MOVQ", "R10", "R14")
	a.I("IMULQ", "BX", "R14")
	a.I("SHLQ", "$5", "R10")
	a.I("MOVQ", "R10", "R11")
	a.I("SHLQ", "$3", "R11")
	a.I("VPBROADCASTQ", "pkB03<>(SB)", "Y15")
	a.I("VPBROADCASTQ", "pkB04<>(SB)", "Y14")
	a.I("VPBROADCASTQ", "pkB01<>(SB)", "Y13")
	a.I("VPBROADCASTQ", "pkB0F<>(SB)", "Y12")
	a.I("TESTQ", "CX", "CX")
	a.I("JZ", l+"done")
	a.Label(l + "blk")
	a.I("MOVQ", "SI", "R8")
	a.I("MOVQ", "DI", "R9")
	if paired {
		a.I("MOVQ", "DI", "R15")
	}
	a.I("MOVQ", "R+32(FP)", "DX")
	a.Label(l + "row")
	for _, o := range []int{0, 64, 109} {
		a.I("PREFETCHT0", fmt.Sprintf("%d(R8)(R14*1)", o))
	}
	// The 16 scales minus 32 as words (Y6), as kqRowsQ3KAVX2 unpacks them.
	a.I("VMOVDQU", "94(R8)", "X6")
	a.I("VPSRLDQ", "$2", "X6", "X6")
	a.I("VPSHUFD", "$0x44", "X6", "X7")
	a.I("VPSRLVD", "pkQ3ShiftLo<>(SB)", "X7", "X7")
	a.I("VPAND", "X12", "X7", "X7")
	a.I("VPSHUFD", "$0xAA", "X6", "X6")
	a.I("VPSRLVD", "pkQ3ShiftHi<>(SB)", "X6", "X6")
	a.I("VPAND", "X15", "X6", "X6")
	a.I("VPSLLD", "$4", "X6", "X6")
	a.I("VPOR", "X6", "X7", "X7")
	a.I("VPSUBB", "pkB20<>(SB)", "X7", "X7")
	a.I("VPMOVSXBW", "X7", "Y6")
	a.I("VPERMQ", "$0x44", "Y6", "Y7")
	a.I("VPERMQ", "$0xEE", "Y6", "Y8")
	a.I("VMOVDQU", "0(R8)", "Y0")
	a.I("VMOVDQU", "32(R8)", "Y1")
	a.I("VMOVDQU", "64(R8)", "Y2")
	a.I("VPXOR", "Y10", "Y10", "Y10")
	if paired {
		a.I("MOVQ", "R15", "R12")
		a.I("LEAQ", "(R9)(R11*1)", "AX")
	} else {
		a.I("MOVQ", "R9", "R12")
	}
	for j := 0; j < 8; j++ {
		// chunk j's values to V, its scale words to S (the plain tile:
		// Y5, Y9; the paired one: chunk 2i+1's to Y6, Y4)
		V, S := "Y5", "Y9"
		if paired && j%2 == 1 {
			V, S = "Y6", "Y4"
		}
		q := []string{"Y1", "Y2"}[j/4]
		if s := 2 * (j % 4); s == 0 {
			a.I("VPAND", "Y15", q, "Y3")
		} else {
			a.I("VPSRLW", fmt.Sprintf("$%d", s), q, "Y3")
			a.I("VPAND", "Y15", "Y3", "Y3")
		}
		switch sh := 2 - j; {
		case sh > 0:
			a.I("VPSLLW", fmt.Sprintf("$%d", sh), "Y0", "Y4")
			a.I("VPAND", "Y14", "Y4", "Y4")
		case sh < 0:
			a.I("VPSRLW", fmt.Sprintf("$%d", -sh), "Y0", "Y4")
			a.I("VPAND", "Y14", "Y4", "Y4")
		default:
			a.I("VPAND", "Y14", "Y0", "Y4")
		}
		a.I("VPOR", "Y4", "Y3", "Y3")
		a.I("VPSUBB", "Y14", "Y3", V)
		a.I("VPSHUFB", fmt.Sprintf("pkSplit<>+%d(SB)", 32*(j%4)), []string{"Y7", "Y8"}[j/4], S)
		if !paired {
			a.I("VMOVDQU", V, "(R12)")
			a.I("VMOVDQU", S, "(R12)(R11*1)")
		}
		a.I("VPMADDUBSW", V, "Y13", "Y11")
		a.I("VPMADDWD", S, "Y11", "Y11")
		a.I("VPADDD", "Y11", "Y10", "Y10")
		switch {
		case !paired:
			a.I("ADDQ", "R10", "R12")
		case j%2 == 1:
			// chunks j-1 (Y5, Y9) and j (Y6, Y4): value halves A, B;
			// the scale words' half A
			pairHalves(a, "Y5", "Y6", "Y3", "Y11")
			a.I("VMOVDQU", "Y3", "(R12)")
			a.I("VMOVDQU", "Y11", "32(R12)")
			a.I("VPSLLD", "$16", "Y4", "Y3")
			a.I("VPBLENDW", "$0xaa", "Y3", "Y9", "Y3")
			a.I("VMOVDQU", "Y3", "(AX)")
			a.I("LEAQ", "(R12)(R10*2)", "R12")
			a.I("ADDQ", "R10", "AX")
		}
	}
	// -128·offsets (two's complement, as uint32(-128·off)).
	a.I("VPSLLD", "$7", "Y10", "Y10")
	a.I("VPXOR", "Y11", "Y11", "Y11")
	a.I("VPSUBD", "Y10", "Y11", "Y10")
	if paired {
		// AX is past the 4 pairs' scale words: 256R+128R+32r, the offsets
		a.I("VMOVDQU", "Y10", "(AX)")
		a.I("ADDQ", "BX", "R8")
		a.I("ADDQ", "$32", "R9")
		a.I("ADDQ", "$64", "R15")
	} else {
		a.I("VMOVDQU", "Y10", fmt.Sprintf("(R9)(R11*%d)", oo/256))
		a.I("ADDQ", "BX", "R8")
		a.I("ADDQ", "$32", "R9")
	}
	a.I("DECQ", "DX")
	a.I("JNZ", l+"row")
	a.I("ADDQ", "$110", "SI")
	a.I("ADDQ", "R13", "DI")
	a.I("DECQ", "CX")
	a.I("JNZ", l+"blk")
	a.Label(l + "done")
	a.I("VZEROUPPER")
	a.I("RET")
}

// packQ2K writes packQ2KAVX2 (paired: packQ2KAVX2P, the tile of the
// paired kernels: chunk pairs as halves A, B at 64·(i·R+r), the per-lane
// scale word pairs at 256R+32·(i·R+r), the mins at 384R+32r, 448·R bytes
// per super-block).
func packQ2K(a *Asm, paired bool) {
	name, l, tb := "packQ2KAVX2", "pq2", 552
	if paired {
		name, l, tb = "packQ2KAVX2P", "pq2p", 448
	}
	a.Blank()
	if paired {
		a.Comment(`packQ2KAVX2P is packQ2KAVX2 for the paired tile (448·R bytes per
super-block): the values of chunks 2i, 2i+1 as halves A, B (pairHalves)
at 64·(i·R+r), half A of their scale words at 256R+32·(i·R+r), the 16
mins as words at 384R+32r (DW, NDW at 416R, 416R+32 are the Go side's).
Registers as packQ2KAVX2 (R13 448·R), R15 the row's pair-0 place (64
bytes a row), R12 pair i's (64·R a pair), AX its scale words' (32·R a
pair; after the last pair, the row's mins); Y4, Y9 chunk 2i's values and
scale words, Y5, Y10 chunk 2i+1's.`)
	} else {
		a.Comment(`packQ2KAVX2 writes nb super-blocks of an R-row Q2_K tile (552·R bytes
per super-block): dst the tile, w row 0 of the weights (rows wrb bytes
apart, 84-byte blocks). Per row and super-block: chunk j's values
(q[j/4] >> 2(j%4)) & 3 at 32·(j·R+r); its scale words [s(2j) ×8 |
s(2j+1) ×8] (the low nibbles of scale bytes 2j, 2j+1) at
256R+32·(j·R+r); the 16 mins (high nibbles) as words at 512R+32r (d and
-dmin, at 544R+4r and 548R+4r, are the Go side's).
Registers as packQ3KAVX2 (R13 552·R), Y15 0x03, Y12
0x0f bytes; Y0 the 16 scale bytes, Y1/Y2 the quant halves, Y6 the scales
as words, Y7/Y8 their low/high lane in both lanes, Y3, Y9 temporaries.`)
	}
	a.Raw("")
	a.Raw("// func %s(dst *byte, w *byte, wrb int, nb int, R int)", name)
	a.Raw("TEXT ·%s(SB), NOSPLIT, $0-40", name)
	a.I("MOVQ", "dst+0(FP)", "DI")
	a.I("MOVQ", "w+8(FP)", "SI")
	a.I("MOVQ", "wrb+16(FP)", "BX")
	a.I("MOVQ", "nb+24(FP)", "CX")
	a.I("MOVQ", "R+32(FP)", "R10")
	a.I("IMUL3Q", fmt.Sprintf("$%d", tb), "R10", "R13")
	a.I("MOVQ", "R10", "R14")
	a.I("IMULQ", "BX", "R14")
	a.I("SHLQ", "$5", "R10")
	a.I("MOVQ", "R10", "R11")
	a.I("SHLQ", "$3", "R11")
	a.I("VPBROADCASTQ", "pkB03<>(SB)", "Y15")
	a.I("VPBROADCASTQ", "pkB0F<>(SB)", "Y12")
	a.I("TESTQ", "CX", "CX")
	a.I("JZ", l+"done")
	a.Label(l + "blk")
	a.I("MOVQ", "SI", "R8")
	a.I("MOVQ", "DI", "R9")
	if paired {
		a.I("MOVQ", "DI", "R15")
	}
	a.I("MOVQ", "R+32(FP)", "DX")
	a.Label(l + "row")
	for _, o := range []int{0, 64, 83} {
		a.I("PREFETCHT0", fmt.Sprintf("%d(R8)(R14*1)", o))
	}
	a.I("VMOVDQU", "0(R8)", "X0")
	a.I("VPAND", "X12", "X0", "X3")
	a.I("VPMOVZXBW", "X3", "Y6")
	a.I("VPERMQ", "$0x44", "Y6", "Y7")
	a.I("VPERMQ", "$0xEE", "Y6", "Y8")
	if !paired {
		a.I("VPSRLW", "$4", "X0", "X3")
		a.I("VPAND", "X12", "X3", "X3")
		a.I("VPMOVZXBW", "X3", "Y3")
		a.I("VMOVDQU", "Y3", "(R9)(R11*2)")
	}
	a.I("VMOVDQU", "16(R8)", "Y1")
	a.I("VMOVDQU", "48(R8)", "Y2")
	if paired {
		a.I("MOVQ", "R15", "R12")
		a.I("LEAQ", "(R9)(R11*1)", "AX")
	} else {
		a.I("MOVQ", "R9", "R12")
	}
	for j := 0; j < 8; j++ {
		V, S := "Y3", "Y9"
		if paired {
			V, S = []string{"Y4", "Y5"}[j%2], []string{"Y9", "Y10"}[j%2]
		}
		q := []string{"Y1", "Y2"}[j/4]
		if s := 2 * (j % 4); s == 0 {
			a.I("VPAND", "Y15", q, V)
		} else {
			a.I("VPSRLW", fmt.Sprintf("$%d", s), q, V)
			a.I("VPAND", "Y15", V, V)
		}
		a.I("VPSHUFB", fmt.Sprintf("pkSplit<>+%d(SB)", 32*(j%4)), []string{"Y7", "Y8"}[j/4], S)
		switch {
		case !paired:
			a.I("VMOVDQU", V, "(R12)")
			a.I("VMOVDQU", S, "(R12)(R11*1)")
			a.I("ADDQ", "R10", "R12")
		case j%2 == 1:
			pairHalves(a, "Y4", "Y5", "Y3", "Y11")
			a.I("VMOVDQU", "Y3", "(R12)")
			a.I("VMOVDQU", "Y11", "32(R12)")
			a.I("VPSLLD", "$16", "Y10", "Y3")
			a.I("VPBLENDW", "$0xaa", "Y3", "Y9", "Y3")
			a.I("VMOVDQU", "Y3", "(AX)")
			a.I("LEAQ", "(R12)(R10*2)", "R12")
			a.I("ADDQ", "R10", "AX")
		}
	}
	if paired {
		// the mins, at AX (past the 4 pairs' scale words: 384R+32r)
		a.I("VPSRLW", "$4", "X0", "X3")
		a.I("VPAND", "X12", "X3", "X3")
		a.I("VPMOVZXBW", "X3", "Y3")
		a.I("VMOVDQU", "Y3", "(AX)")
		a.I("ADDQ", "$64", "R15")
	}
	a.I("ADDQ", "BX", "R8")
	a.I("ADDQ", "$32", "R9")
	a.I("DECQ", "DX")
	a.I("JNZ", l+"row")
	a.I("ADDQ", "$84", "SI")
	a.I("ADDQ", "R13", "DI")
	a.I("DECQ", "CX")
	a.I("JNZ", l+"blk")
	a.Label(l + "done")
	a.I("VZEROUPPER")
	a.I("RET")
}
