package main

// The NEOX rotary-embedding rotation on AVX2+FMA, printed into
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
	})
}
