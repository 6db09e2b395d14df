package main

import "fmt"

// The f16 and bf16 dot-product row kernels, printed into
// backends/cpu/rows_f16_amd64.s (see rows_f16_amd64.go): each computes,
// for rows weight rows, the float32 part of quant.DotF16F16 /
// quant.DotBF16BF16 over the first np elements (np a multiple of the
// step); the Go side adds the float64 tail.
//
//   - f16: four accumulators of 16 float32 lanes (llama.cpp's AVX-512
//     order). The AVX-512 form keeps them in Z registers, two weight rows
//     per pass sharing each converted activation piece; the AVX2 form
//     keeps each as a pair of Y registers (lanes 0-7, 8-15), one row per
//     pass. The products are exact, so FMA and multiply-then-add agree.
//   - bf16: four accumulators of 8 lanes (llama.cpp's AVX2 order), each
//     product rounded (VMULPS, then VADDPS), two rows per pass; the same
//     code on both tiers.
func init() {
	register("rows_f16_amd64.s", "amd64 && !purego", func(a *Asm) {
		a.Blank()
		a.Comment(`f16DotsAVX512(w, wrb, a, np, y, rows): y[r] = the float32 reduction of
quant.DotF16F16's accumulators for weight row r (at w + r·wrb) against the
f16 activation row a, over elements 0..np-1 (np a multiple of 64).
Registers: SI row, DI a, BX wrb, CX np·2 (bytes), DX y, R8 rows left,
AX byte offset; Z0-Z3 (Z16-Z19 for the second row) the accumulators,
Z4-Z7 the converted activation piece, Z8-Z11 weights.`)
		f16Kernel(a, "f16DotsAVX512", true)
		a.Blank()
		a.Comment(`f16DotsAVX2 is f16DotsAVX512 on AVX2+FMA+F16C: each 16-lane accumulator
is the Y pair (Y2j, Y2j+1), lanes 0-7 and 8-15; one row per pass.`)
		f16Kernel(a, "f16DotsAVX2", false)
		a.Blank()
		a.Comment(`bf16DotsAVX2(w, wrb, a, np, y, rows): y[r] = the float32 reduction of
quant.DotBF16BF16's accumulators for weight row r against the bf16
activation row a, over elements 0..np-1 (np a multiple of 32). Two rows
per pass: Y0-Y3 and Y4-Y7 the accumulators, Y8 the converted activation
piece, Y9/Y10 products.`)
		bf16Kernel(a, "bf16DotsAVX2")
	})
}

// kernelHead loads the common arguments of the f16/bf16 dot kernels.
func kernelHead(a *Asm, name string) {
	a.Raw("")
	a.Raw("// func %s(w *byte, wrb int, a *byte, np int, y *float32, rows int)", name)
	a.Raw("TEXT ·%s(SB), NOSPLIT, $0-48", name)
	a.I("MOVQ", "w+0(FP)", "SI")
	a.I("MOVQ", "wrb+8(FP)", "BX")
	a.I("MOVQ", "a+16(FP)", "DI")
	a.I("MOVQ", "np+24(FP)", "CX")
	a.I("SHLQ", "$1", "CX")
	a.I("MOVQ", "y+32(FP)", "DX")
	a.I("MOVQ", "rows+40(FP)", "R8")
}

// reduce16Z reduces the 16 lanes of Z register z (clobbering Z/Y/X tmp) as
// quant.ReduceF32x16 and stores lane 0 at off(DX).
func reduce16(a *Asm, lo, hi, tmp string, off int) {
	// lo, hi: the Y halves (lanes 0-7, 8-15) of the accumulator.
	a.I("VADDPS", hi, lo, lo)
	x, xt := "X"+lo[1:], "X"+tmp[1:]
	a.I("VEXTRACTF128", "$1", lo, xt)
	a.I("VADDPS", xt, x, x)
	a.I("VPERMILPS", "$0x4E", x, xt)
	a.I("VADDPS", xt, x, x)
	a.I("VMOVSHDUP", x, xt)
	a.I("VADDSS", xt, x, x)
	a.I("VMOVSS", x, fmt.Sprintf("%d(DX)", off))
}

func f16Kernel(a *Asm, name string, z bool) {
	kernelHead(a, name)
	l := func(s string) string { return name + "_" + s }
	if z {
		// Two rows a pass.
		a.Label(l("pair"))
		a.I("CMPQ", "R8", "$2")
		a.I("JLT", l("single"))
		for j := 0; j < 4; j++ {
			a.I("VPXORD", fmt.Sprintf("Z%d", j), fmt.Sprintf("Z%d", j), fmt.Sprintf("Z%d", j))
			a.I("VPXORD", fmt.Sprintf("Z%d", 16+j), fmt.Sprintf("Z%d", 16+j), fmt.Sprintf("Z%d", 16+j))
		}
		a.I("LEAQ", "(SI)(BX*1)", "R9")
		a.I("XORQ", "AX", "AX")
		a.I("TESTQ", "CX", "CX")
		a.I("JZ", l("pairred"))
		a.Label(l("pairloop"))
		for j := 0; j < 4; j++ {
			a.I("VCVTPH2PS", fmt.Sprintf("%d(DI)(AX*1)", 32*j), fmt.Sprintf("Z%d", 4+j))
		}
		for j := 0; j < 4; j++ {
			a.I("VCVTPH2PS", fmt.Sprintf("%d(SI)(AX*1)", 32*j), fmt.Sprintf("Z%d", 8+j))
			a.I("VFMADD231PS", fmt.Sprintf("Z%d", 4+j), fmt.Sprintf("Z%d", 8+j), fmt.Sprintf("Z%d", j))
			a.I("VCVTPH2PS", fmt.Sprintf("%d(R9)(AX*1)", 32*j), fmt.Sprintf("Z%d", 12+j))
			a.I("VFMADD231PS", fmt.Sprintf("Z%d", 4+j), fmt.Sprintf("Z%d", 12+j), fmt.Sprintf("Z%d", 16+j))
		}
		a.I("ADDQ", "$128", "AX")
		a.I("CMPQ", "AX", "CX")
		a.I("JLT", l("pairloop"))
		a.Label(l("pairred"))
		// Each row's (a0+a2) + (a1+a3) into Z0, then its lanes (the
		// second row's go through Z0 too: VEXTRACTF128 has no form for
		// Z16 and up).
		for r, base := range []int{0, 16} {
			acc := func(j int) string { return fmt.Sprintf("Z%d", base+j) }
			a.I("VADDPS", acc(2), acc(0), acc(0))
			a.I("VADDPS", acc(3), acc(1), acc(1))
			a.I("VADDPS", acc(1), acc(0), "Z0")
			a.I("VEXTRACTF64X4", "$1", "Z0", "Y1")
			reduce16(a, "Y0", "Y1", "Y2", 4*r)
		}
		a.I("LEAQ", "(SI)(BX*2)", "SI")
		a.I("ADDQ", "$8", "DX")
		a.I("SUBQ", "$2", "R8")
		a.I("JMP", l("pair"))
		a.Label(l("single"))
		a.I("TESTQ", "R8", "R8")
		a.I("JZ", l("done"))
		for j := 0; j < 4; j++ {
			a.I("VPXORD", fmt.Sprintf("Z%d", j), fmt.Sprintf("Z%d", j), fmt.Sprintf("Z%d", j))
		}
		a.I("XORQ", "AX", "AX")
		a.I("TESTQ", "CX", "CX")
		a.I("JZ", l("singlered"))
		a.Label(l("singleloop"))
		for j := 0; j < 4; j++ {
			a.I("VCVTPH2PS", fmt.Sprintf("%d(DI)(AX*1)", 32*j), fmt.Sprintf("Z%d", 4+j))
			a.I("VCVTPH2PS", fmt.Sprintf("%d(SI)(AX*1)", 32*j), fmt.Sprintf("Z%d", 8+j))
			a.I("VFMADD231PS", fmt.Sprintf("Z%d", 4+j), fmt.Sprintf("Z%d", 8+j), fmt.Sprintf("Z%d", j))
		}
		a.I("ADDQ", "$128", "AX")
		a.I("CMPQ", "AX", "CX")
		a.I("JLT", l("singleloop"))
		a.Label(l("singlered"))
		a.I("VADDPS", "Z2", "Z0", "Z0")
		a.I("VADDPS", "Z3", "Z1", "Z1")
		a.I("VADDPS", "Z1", "Z0", "Z0")
		a.I("VEXTRACTF64X4", "$1", "Z0", "Y1")
		reduce16(a, "Y0", "Y1", "Y2", 0)
		a.Label(l("done"))
		a.I("VZEROUPPER")
		a.I("RET")
		return
	}
	// AVX2: one row a pass; accumulator j is (Y2j, Y2j+1).
	a.Label(l("row"))
	a.I("TESTQ", "R8", "R8")
	a.I("JZ", l("done"))
	for j := 0; j < 8; j++ {
		a.I("VXORPS", fmt.Sprintf("Y%d", j), fmt.Sprintf("Y%d", j), fmt.Sprintf("Y%d", j))
	}
	a.I("XORQ", "AX", "AX")
	a.I("TESTQ", "CX", "CX")
	a.I("JZ", l("red"))
	a.Label(l("loop"))
	for j := 0; j < 8; j++ {
		a.I("VCVTPH2PS", fmt.Sprintf("%d(DI)(AX*1)", 16*j), fmt.Sprintf("Y%d", 8+j%2*2))
		a.I("VCVTPH2PS", fmt.Sprintf("%d(SI)(AX*1)", 16*j), fmt.Sprintf("Y%d", 9+j%2*2))
		a.I("VFMADD231PS", fmt.Sprintf("Y%d", 8+j%2*2), fmt.Sprintf("Y%d", 9+j%2*2), fmt.Sprintf("Y%d", j))
	}
	a.I("ADDQ", "$128", "AX")
	a.I("CMPQ", "AX", "CX")
	a.I("JLT", l("loop"))
	a.Label(l("red"))
	// (a0+a2) + (a1+a3) per half: lanes 0-7 in Y0, Y2, Y4, Y6; 8-15 in Y1, Y3, Y5, Y7.
	for h := 0; h < 2; h++ {
		a.I("VADDPS", fmt.Sprintf("Y%d", 4+h), fmt.Sprintf("Y%d", h), fmt.Sprintf("Y%d", h))
		a.I("VADDPS", fmt.Sprintf("Y%d", 6+h), fmt.Sprintf("Y%d", 2+h), fmt.Sprintf("Y%d", 2+h))
		a.I("VADDPS", fmt.Sprintf("Y%d", 2+h), fmt.Sprintf("Y%d", h), fmt.Sprintf("Y%d", h))
	}
	reduce16(a, "Y0", "Y1", "Y2", 0)
	a.I("ADDQ", "BX", "SI")
	a.I("ADDQ", "$4", "DX")
	a.I("DECQ", "R8")
	a.I("JMP", l("row"))
	a.Label(l("done"))
	a.I("VZEROUPPER")
	a.I("RET")
}

// bf16Load converts 8 bf16 values at mem to float32 in y.
func bf16Load(a *Asm, mem, y string) {
	a.I("VPMOVZXWD", mem, y)
	a.I("VPSLLD", "$16", y, y)
}

func bf16Kernel(a *Asm, name string) {
	kernelHead(a, name)
	l := func(s string) string { return name + "_" + s }
	for _, pair := range []bool{true, false} {
		sec := "single"
		if pair {
			sec = "pair"
		}
		a.Label(l(sec))
		if pair {
			a.I("CMPQ", "R8", "$2")
			a.I("JLT", l("single"))
			a.I("LEAQ", "(SI)(BX*1)", "R9")
		} else {
			a.I("TESTQ", "R8", "R8")
			a.I("JZ", l("done"))
		}
		n := 4
		if pair {
			n = 8
		}
		for j := 0; j < n; j++ {
			a.I("VXORPS", fmt.Sprintf("Y%d", j), fmt.Sprintf("Y%d", j), fmt.Sprintf("Y%d", j))
		}
		a.I("XORQ", "AX", "AX")
		a.I("TESTQ", "CX", "CX")
		a.I("JZ", l(sec+"red"))
		a.Label(l(sec + "loop"))
		for j := 0; j < 4; j++ {
			bf16Load(a, fmt.Sprintf("%d(DI)(AX*1)", 16*j), "Y8")
			bf16Load(a, fmt.Sprintf("%d(SI)(AX*1)", 16*j), "Y9")
			a.I("VMULPS", "Y8", "Y9", "Y9")
			a.I("VADDPS", "Y9", fmt.Sprintf("Y%d", j), fmt.Sprintf("Y%d", j))
			if pair {
				bf16Load(a, fmt.Sprintf("%d(R9)(AX*1)", 16*j), "Y10")
				a.I("VMULPS", "Y8", "Y10", "Y10")
				a.I("VADDPS", "Y10", fmt.Sprintf("Y%d", 4+j), fmt.Sprintf("Y%d", 4+j))
			}
		}
		a.I("ADDQ", "$64", "AX")
		a.I("CMPQ", "AX", "CX")
		a.I("JLT", l(sec+"loop"))
		a.Label(l(sec + "red"))
		rows := 1
		if pair {
			rows = 2
		}
		for r := 0; r < rows; r++ {
			c := func(j int) string { return fmt.Sprintf("Y%d", 4*r+j) }
			x := func(j int) string { return fmt.Sprintf("X%d", 4*r+j) }
			// (c1+c3) + (c2+c4); upper 4 + lower 4; (g0+g2) + (g1+g3).
			a.I("VADDPS", c(2), c(0), c(0))
			a.I("VADDPS", c(3), c(1), c(1))
			a.I("VADDPS", c(1), c(0), c(0))
			a.I("VEXTRACTF128", "$1", c(0), x(1))
			a.I("VADDPS", x(1), x(0), x(0))
			a.I("VMOVHLPS", x(0), x(0), x(1))
			a.I("VADDPS", x(1), x(0), x(0))
			a.I("VMOVSHDUP", x(0), x(1))
			a.I("VADDSS", x(1), x(0), x(0))
			a.I("VMOVSS", x(0), fmt.Sprintf("%d(DX)", 4*r))
		}
		if pair {
			a.I("LEAQ", "(SI)(BX*2)", "SI")
			a.I("ADDQ", "$8", "DX")
			a.I("SUBQ", "$2", "R8")
			a.I("JMP", l("pair"))
		} else {
			a.Label(l("done"))
			a.I("VZEROUPPER")
			a.I("RET")
		}
	}
}
