package main

import "fmt"

// flash_amd64.s: the flash attention block's v sums (backends/cpu/flash.go),
// one kernel per row type (f32, f16) and tier (AVX-512, AVX2+FMA+F16C). Each
// sets o[d] (d < hd, hd a multiple of 16) to the fused multiply-add chain
// o[d] = fma(p[j], v[j*vstride+d], o[d]) over the n ≥ 1 rows in increasing
// j from 0: one accumulator per d, vectorized over d, so every tier gives
// the scalar chain's bits.
func init() {
	register("flash_amd64.s", "!purego", func(a *Asm) {
		a.Blank()
		a.Comment(`The flash attention block's v sums (flash.go): o[d] for d < hd (hd a
multiple of 16) is the fused multiply-add chain over the n ≥ 1 rows,
o[d] = fma(p[j], v[j*vstride+d], o[d]) in increasing j from o[d] = 0 —
one accumulator per d, vectorized over d, so every tier gives the bits of
the scalar chain. Rows are f32, or f16 widened exactly by VCVTPH2PS.`)
		vacc(a, "vaccF32", false, true, "AVX-512: blocks of 128 d in Z0-Z7 (eight independent chains), the p[j]\nbroadcast in Z8, then blocks of 16 in Z0.")
		vacc(a, "vaccF16", true, true, "vaccF32 over f16 rows, the converted v in Z9-Z16.")
		vacc(a, "vaccF32AVX2", false, false, "AVX2+FMA: blocks of 64 d in Y0-Y7, the p[j] broadcast in Y8, then\nblocks of 16 in Y0:Y1.")
		vacc(a, "vaccF16AVX2", true, false, "vaccF32AVX2 over f16 rows (F16C), the converted v in Y9-Y12.")
	})
}

// vacc writes one v-sum kernel: rows of f16 or f32, AVX-512 (ZMM, 128-wide
// d blocks) or AVX2 (YMM, 64-wide d blocks), then 16-wide blocks.
func vacc(a *Asm, name string, f16, z bool, doc string) {
	es, shift := 4, "$2"
	if f16 {
		es, shift = 2, "$1"
	}
	reg, vw, zero := "Y", 8, "VXORPS"
	if z {
		reg, vw, zero = "Z", 16, "VPXORD"
	}
	r := func(i int) string { return fmt.Sprintf("%s%d", reg, i) }
	// Accumulators per big block: eight registers of vw lanes.
	big := 8 * vw
	a.Blank()
	a.Comment(fmt.Sprintf("func %s(o *float32, v *%s, vstride int, p *float32, n, hd int)\n%s", name, map[bool]string{false: "float32", true: "byte"}[f16], doc))
	fmt.Fprintf(&a.b, "TEXT ·%s(SB), NOSPLIT, $0-48\n", name)
	a.I("MOVQ", "o+0(FP), DI")
	a.I("MOVQ", "v+8(FP), SI")
	a.I("MOVQ", "vstride+16(FP), R8")
	a.I("SHLQ", shift+", R8") // bytes per row
	a.I("MOVQ", "p+24(FP), DX")
	a.I("MOVQ", "n+32(FP), CX")
	a.I("MOVQ", "hd+40(FP), BX")
	a.I("XORQ", "AX, AX") // d0
	bigL, smallL := name+"_big", name+"_blk16"
	a.Blank()
	a.Label(bigL)
	a.I("LEAQ", fmt.Sprintf("%d(AX), R9", big))
	a.I("CMPQ", "R9, BX")
	a.I("JGT", smallL)
	for i := 0; i < 8; i++ {
		a.I(zero, r(i)+", "+r(i)+", "+r(i))
	}
	a.I("LEAQ", fmt.Sprintf("(SI)(AX*%d), R9", es))
	a.I("MOVQ", "DX, R14")
	a.I("MOVQ", "CX, R10")
	a.Blank()
	a.Label(name + "_loopbig")
	a.I("VBROADCASTSS", "(R14), "+r(8))
	if z {
		if f16 {
			for i := 0; i < 8; i++ {
				a.I("VCVTPH2PS", fmt.Sprintf("%d(R9), %s", i*vw*es, r(9+i)))
			}
			for i := 0; i < 8; i++ {
				a.I("VFMADD231PS", r(9+i)+", "+r(8)+", "+r(i))
			}
		} else {
			for i := 0; i < 8; i++ {
				a.I("VFMADD231PS", fmt.Sprintf("%d(R9), %s, %s", i*vw*es, r(8), r(i)))
			}
		}
	} else {
		for half := 0; half < 2; half++ {
			if f16 {
				for i := 0; i < 4; i++ {
					a.I("VCVTPH2PS", fmt.Sprintf("%d(R9), %s", (half*4+i)*vw*es, r(9+i)))
				}
				for i := 0; i < 4; i++ {
					a.I("VFMADD231PS", r(9+i)+", "+r(8)+", "+r(half*4+i))
				}
			} else {
				for i := 0; i < 4; i++ {
					a.I("VFMADD231PS", fmt.Sprintf("%d(R9), %s, %s", (half*4+i)*vw*es, r(8), r(half*4+i)))
				}
			}
		}
	}
	a.I("ADDQ", "R8, R9")
	a.I("ADDQ", "$4, R14")
	a.I("DECQ", "R10")
	a.I("JNZ", name+"_loopbig")
	for i := 0; i < 8; i++ {
		a.I("VMOVUPS", fmt.Sprintf("%s, %d(DI)(AX*4)", r(i), i*vw*4))
	}
	a.I("ADDQ", fmt.Sprintf("$%d, AX", big))
	a.I("JMP", bigL)
	// 16-wide blocks: one ZMM or two YMM.
	n16 := 16 / vw
	a.Blank()
	a.Label(smallL)
	a.I("CMPQ", "AX, BX")
	a.I("JGE", name+"_done")
	for i := 0; i < n16; i++ {
		a.I(zero, r(i)+", "+r(i)+", "+r(i))
	}
	a.I("LEAQ", fmt.Sprintf("(SI)(AX*%d), R9", es))
	a.I("MOVQ", "DX, R14")
	a.I("MOVQ", "CX, R10")
	a.Blank()
	a.Label(name + "_loop16")
	a.I("VBROADCASTSS", "(R14), "+r(8))
	for i := 0; i < n16; i++ {
		if f16 {
			a.I("VCVTPH2PS", fmt.Sprintf("%d(R9), %s", i*vw*es, r(9+i)))
		}
	}
	for i := 0; i < n16; i++ {
		if f16 {
			a.I("VFMADD231PS", r(9+i)+", "+r(8)+", "+r(i))
		} else {
			a.I("VFMADD231PS", fmt.Sprintf("%d(R9), %s, %s", i*vw*es, r(8), r(i)))
		}
	}
	a.I("ADDQ", "R8, R9")
	a.I("ADDQ", "$4, R14")
	a.I("DECQ", "R10")
	a.I("JNZ", name+"_loop16")
	for i := 0; i < n16; i++ {
		a.I("VMOVUPS", fmt.Sprintf("%s, %d(DI)(AX*4)", r(i), i*vw*4))
	}
	a.I("ADDQ", "$16, AX")
	a.I("JMP", smallL)
	a.Blank()
	a.Label(name + "_done")
	a.I("VZEROUPPER")
	a.I("RET")
}
