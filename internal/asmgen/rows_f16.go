package main

import "fmt"

// The f16 and bf16 dot-product row kernels, printed into
// backends/cpu/rows_f16_amd64.s (see rows_f16_amd64.go): each computes,
// for rows weight rows, the float32 part of quant.DotF16F16 /
// quant.DotBF16BF16 over the first np elements (np a multiple of the
// step); the Go side adds the float64 tail.
//
//   - f16: four accumulators of 16 float32 lanes (llama.cpp's AVX-512
//     order). The AVX-512 form keeps them in Z registers, f16Rows weight
//     rows per pass sharing each converted activation piece; the AVX2 form
//     keeps each as a pair of Y registers (lanes 0-7, 8-15), one row per
//     pass. The products are exact, so FMA and multiply-then-add agree.
//   - bf16: four accumulators of 8 lanes (llama.cpp's AVX2 order), one
//     FMA per product (as GCC compiles ggml_vec_dot_bf16), two rows per
//     pass; the same code on both tiers.
func init() {
	register("rows_f16_amd64.s", "amd64 && !purego", func(a *Asm) {
		a.Blank()
		a.Comment(`f16DotsAVX512(w, wrb, a, np, y, rows): y[r] = the float32 reduction of
quant.DotF16F16's accumulators for weight row r (at w + r·wrb) against the
f16 activation row a, over elements 0..np-1 (np a multiple of 64).
Registers: SI first row of the pass (R9 the second), DI a, BX wrb, CX
np·2 (bytes), DX y, R8 rows left, AX byte offset, R11 ahead, R12/R13 the
rows ahead bytes on (prefetched); Z16+4r..Z19+4r row r's accumulators, Z0-Z3 the
converted activation piece, Z4-Z11 converted weights.`)
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
piece, Y9/Y10 the converted weights.`)
		bf16Kernel(a, "bf16DotsAVX2")
	})
}

// kernelHead loads the common arguments of the f16/bf16 dot kernels.
func kernelHead(a *Asm, name string) {
	a.Raw("")
	a.Raw("// func %s(w *byte, wrb int, a *byte, np int, y *float32, rows int, ahead int)", name)
	a.Raw("TEXT ·%s(SB), NOSPLIT, $0-56", name)
	a.I("MOVQ", "w+0(FP)", "SI")
	a.I("MOVQ", "wrb+8(FP)", "BX")
	a.I("MOVQ", "a+16(FP)", "DI")
	a.I("MOVQ", "np+24(FP)", "CX")
	a.I("SHLQ", "$1", "CX")
	a.I("MOVQ", "y+32(FP)", "DX")
	a.I("MOVQ", "rows+40(FP)", "R8")
	a.I("MOVQ", "ahead+48(FP)", "R11")
}

// reduce16 sums the 16 lanes held as the Y halves lo (lanes 0-7) and hi
// (8-15) in ggmlf32.Reduce16's order (hi onto lo, then hsum8, whose
// steps are the rest of it), clobbering tmp's X, and stores the sum at
// off(DX).
func reduce16(a *Asm, lo, hi, tmp string, off int) {
	a.I("VADDPS", hi, lo, lo)
	x := "X" + lo[1:]
	hsum8(a, lo, x, "X"+tmp[1:])
	a.I("VMOVSS", x, fmt.Sprintf("%d(DX)", off))
}

func f16Kernel(a *Asm, name string, z bool) {
	kernelHead(a, name)
	l := func(s string) string { return name + "_" + s }
	if z {
		// Passes of f16Rows rows, then of one. Row r of a pass keeps its
		// accumulators in Z16+4r..Z19+4r; Z0-Z3 the converted activation
		// piece, Z4-Z11 converted weights.
		for _, R := range []int{f16Rows, 1} {
			sec := fmt.Sprintf("r%d", R)
			a.Label(l(sec))
			a.I("CMPQ", "R8", fmt.Sprintf("$%d", R))
			if R > 1 {
				a.I("JLT", l("r1"))
			} else {
				a.I("JLT", l("done"))
			}
			bases := []string{"SI", "R9", "R10", "R11"}[:R]
			for r := 1; r < R; r++ {
				a.I("LEAQ", fmt.Sprintf("(%s)(BX*1)", bases[r-1]), bases[r])
			}
			next := nextRows(a, bases)
			for r := 0; r < R; r++ {
				for j := 0; j < 4; j++ {
					zr := fmt.Sprintf("Z%d", 16+4*r+j)
					a.I("VPXORD", zr, zr, zr)
				}
			}
			a.I("XORQ", "AX", "AX")
			a.I("TESTQ", "CX", "CX")
			a.I("JZ", l(sec+"red"))
			a.Label(l(sec + "loop"))
			halfPrefetch(a, next...)
			for j := 0; j < 4; j++ {
				a.I("VCVTPH2PS", fmt.Sprintf("%d(DI)(AX*1)", 32*j), fmt.Sprintf("Z%d", j))
			}
			t := 0
			for j := 0; j < 4; j++ {
				for r := 0; r < R; r++ {
					wz := fmt.Sprintf("Z%d", 4+t%8)
					t++
					a.I("VCVTPH2PS", fmt.Sprintf("%d(%s)(AX*1)", 32*j, bases[r]), wz)
					a.I("VFMADD231PS", fmt.Sprintf("Z%d", j), wz, fmt.Sprintf("Z%d", 16+4*r+j))
				}
			}
			a.I("ADDQ", "$128", "AX")
			a.I("CMPQ", "AX", "CX")
			a.I("JLT", l(sec+"loop"))
			a.Label(l(sec + "red"))
			// Each row's (a0+a2) + (a1+a3) into Z8, then its lanes
			// (VEXTRACTF128 has no form for Z16 and up).
			for r := 0; r < R; r++ {
				acc := func(j int) string { return fmt.Sprintf("Z%d", 16+4*r+j) }
				a.I("VADDPS", acc(2), acc(0), acc(0))
				a.I("VADDPS", acc(3), acc(1), acc(1))
				a.I("VADDPS", acc(1), acc(0), "Z8")
				a.I("VEXTRACTF64X4", "$1", "Z8", "Y9")
				reduce16(a, "Y8", "Y9", "Y10", 4*r)
			}
			a.I("LEAQ", fmt.Sprintf("(SI)(BX*%d)", R), "SI")
			a.I("ADDQ", fmt.Sprintf("$%d", 4*R), "DX")
			a.I("SUBQ", fmt.Sprintf("$%d", R), "R8")
			a.I("JMP", l(sec))
		}
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
	next := nextRows(a, []string{"SI"})
	a.Label(l("loop"))
	halfPrefetch(a, next...)
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

// bf16Load converts the bf16 values at mem to float32 in y (8 for a Y
// register, 16 for a Z register).
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
		var next []string
		if pair {
			next = nextRows(a, []string{"SI", "R9"})
		} else {
			next = nextRows(a, []string{"SI"})
		}
		a.Label(l(sec + "loop"))
		halfPrefetch(a, next...)
		for j := 0; j < 4; j++ {
			bf16Load(a, fmt.Sprintf("%d(DI)(AX*1)", 16*j), "Y8")
			bf16Load(a, fmt.Sprintf("%d(SI)(AX*1)", 16*j), "Y9")
			a.I("VFMADD231PS", "Y8", "Y9", fmt.Sprintf("Y%d", j))
			if pair {
				bf16Load(a, fmt.Sprintf("%d(R9)(AX*1)", 16*j), "Y10")
				a.I("VFMADD231PS", "Y8", "Y10", fmt.Sprintf("Y%d", 4+j))
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
			// (c1+c3) + (c2+c4), then ggml's hsum_float_8.
			a.I("VADDPS", c(2), c(0), c(0))
			a.I("VADDPS", c(3), c(1), c(1))
			a.I("VADDPS", c(1), c(0), c(0))
			hsum8(a, c(0), x(0), x(1))
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

// nextRows points R12.. at the lines halfPrefetch asks for: each of rows
// plus R11 (the argument ahead, a whole number of rows: the same offset
// in a row that far on). The caller (halfRows) takes the fewest rows that
// make 16 KiB: with one pass ahead, as before, Qwen3's 2 KiB f16 rows of
// K = 1024 read at 0.65–0.71 of the plain read, at 16 KiB 0.70–0.76.
func nextRows(a *Asm, rows []string) []string {
	regs := []string{"R12", "R13", "R14", "R15"}[:len(rows)] // len(rows) is 1, 2 or 4
	for i, r := range rows {
		a.I("LEAQ", fmt.Sprintf("(%s)(R11*1)", r), regs[i])
	}
	return regs
}

// f16Rows is how many weight rows the AVX-512 f16 kernel takes a pass.
const f16Rows = 2

// halfPrefetch prefetches, with PREFETCHT2 (as the Q8_0 row kernels,
// rows_q80.go), the next iteration's two lines of each row of the next
// pass (nextRows' registers + AX).
func halfPrefetch(a *Asm, rows ...string) {
	for _, r := range rows {
		a.I("PREFETCHT2", fmt.Sprintf("(%s)(AX*1)", r))
		a.I("PREFETCHT2", fmt.Sprintf("64(%s)(AX*1)", r))
	}
}
