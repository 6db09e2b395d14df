package main

// The NEOX and NORMAL rotary-embedding rotations on AVX2+FMA, printed into
// backends/cpu/rope_amd64.s (see RopeCols in backends/cpu/rope.go).
func init() {
	register("rope_amd64.s", "amd64 && !purego", func(a *Asm) {
		a.Blank()
		a.Comment(`ropeNeoxAVX2 rotates the pairs (x[i], x[half+i]) for i < n (n a multiple
of 8) by the angles whose cosines and sines are c[i], s[i], as ggml's
vectorized NEOX loop (ggmlf32.RopePair): x0' = fma(x0, c, -(x1·s)) and
x1' = fma(x0, s, x1·c), each product x1·s, x1·c rounded to float32 first.
Registers: AX x (pair element 0), DX x + half (element 1), BX c, CX s, R8
elements left; Y0 x0, Y1 x1, Y2 c, Y3 s, Y4 x1·s, Y5 x1·c, Y6 x0'.`)
		a.Raw("")
		a.Raw("// func ropeNeoxAVX2(x *float32, c *float32, s *float32, n int, half int)")
		a.Raw("TEXT ·ropeNeoxAVX2(SB), NOSPLIT, $0-40")
		a.I("MOVQ", "x+0(FP)", "AX")
		a.I("MOVQ", "c+8(FP)", "BX")
		a.I("MOVQ", "s+16(FP)", "CX")
		a.I("MOVQ", "n+24(FP)", "R8")
		a.I("MOVQ", "half+32(FP)", "DX")
		a.I("LEAQ", "(AX)(DX*4)", "DX")
		a.I("TESTQ", "R8", "R8")
		a.I("JZ", "ropedone")
		a.Label("ropeloop")
		a.I("VMOVUPS", "(AX)", "Y0")
		a.I("VMOVUPS", "(DX)", "Y1")
		a.I("VMOVUPS", "(BX)", "Y2")
		a.I("VMOVUPS", "(CX)", "Y3")
		a.I("VMULPS", "Y3", "Y1", "Y4")
		a.I("VMULPS", "Y2", "Y1", "Y5")
		a.I("VMOVAPS", "Y0", "Y6")
		a.I("VFMSUB213PS", "Y4", "Y2", "Y6")
		a.I("VFMADD213PS", "Y5", "Y3", "Y0")
		a.I("VMOVUPS", "Y6", "(AX)")
		a.I("VMOVUPS", "Y0", "(DX)")
		a.I("ADDQ", "$32", "AX")
		a.I("ADDQ", "$32", "DX")
		a.I("ADDQ", "$32", "BX")
		a.I("ADDQ", "$32", "CX")
		a.I("SUBQ", "$8", "R8")
		a.I("JNZ", "ropeloop")
		a.Label("ropedone")
		a.I("VZEROUPPER")
		a.I("RET")

		a.Blank()
		a.Comment(`ropeNormalAVX2 rotates the adjacent pairs (x[2i], x[2i+1]) for i < n (n a
multiple of 8) by the angles whose cosines and sines are c[i], s[i], as
ggml's vectorized NORMAL loop (ggmlf32.RopePair, the fused pairs):
x0' = fma(x0, c, -(x1·s)) and x1' = fma(x0, s, x1·c), each product x1·s,
x1·c rounded to float32 first. Eight pairs a step, in two YMM registers of
four pairs: Y0/Y1 the pairs, Y2/Y3 [c s] interleaved per pair, Y4/Y5 [s c],
Y6/Y7 x0 duplicated, Y8/Y9 x1 duplicated, Y15 the sign of the even lanes.
Registers: AX x, BX c, CX s, R8 pairs left.`)
		a.Raw("")
		a.Raw("// func ropeNormalAVX2(x *float32, c *float32, s *float32, n int)")
		a.Raw("TEXT ·ropeNormalAVX2(SB), NOSPLIT, $0-32")
		a.I("MOVQ", "x+0(FP)", "AX")
		a.I("MOVQ", "c+8(FP)", "BX")
		a.I("MOVQ", "s+16(FP)", "CX")
		a.I("MOVQ", "n+24(FP)", "R8")
		a.I("TESTQ", "R8", "R8")
		a.I("JZ", "normdone")
		// 0x80000000 in the even lanes, 0 in the odd ones
		a.I("MOVL", "$0x80000000", "R9")
		a.I("VMOVD", "R9", "X15")
		a.I("VPBROADCASTQ", "X15", "Y15")
		a.Label("normloop")
		a.I("VMOVUPS", "(BX)", "Y2")
		a.I("VMOVUPS", "(CX)", "Y3")
		a.I("VUNPCKLPS", "Y3", "Y2", "Y4")           // c0 s0 c1 s1 | c4 s4 c5 s5
		a.I("VUNPCKHPS", "Y3", "Y2", "Y5")           // c2 s2 c3 s3 | c6 s6 c7 s7
		a.I("VPERM2F128", "$0x20", "Y5", "Y4", "Y2") // pairs 0-3
		a.I("VPERM2F128", "$0x31", "Y5", "Y4", "Y3") // pairs 4-7
		a.I("VPERMILPS", "$0xB1", "Y2", "Y4")
		a.I("VPERMILPS", "$0xB1", "Y3", "Y5")
		a.I("VMOVUPS", "(AX)", "Y0")
		a.I("VMOVUPS", "32(AX)", "Y1")
		a.I("VMOVSLDUP", "Y0", "Y6")
		a.I("VMOVSLDUP", "Y1", "Y7")
		a.I("VMOVSHDUP", "Y0", "Y8")
		a.I("VMOVSHDUP", "Y1", "Y9")
		a.I("VMULPS", "Y4", "Y8", "Y8") // x1·s, x1·c
		a.I("VMULPS", "Y5", "Y9", "Y9")
		a.I("VXORPS", "Y15", "Y8", "Y8") // -(x1·s), x1·c
		a.I("VXORPS", "Y15", "Y9", "Y9")
		a.I("VFMADD213PS", "Y8", "Y2", "Y6") // x0·[c s] + that
		a.I("VFMADD213PS", "Y9", "Y3", "Y7")
		a.I("VMOVUPS", "Y6", "(AX)")
		a.I("VMOVUPS", "Y7", "32(AX)")
		a.I("ADDQ", "$64", "AX")
		a.I("ADDQ", "$32", "BX")
		a.I("ADDQ", "$32", "CX")
		a.I("SUBQ", "$8", "R8")
		a.I("JNZ", "normloop")
		a.Label("normdone")
		a.I("VZEROUPPER")
		a.I("RET")
	})
}
