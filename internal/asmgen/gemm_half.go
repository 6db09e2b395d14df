package main

import (
	"fmt"
	"strings"
)

// The f16 and bf16 GEMM tiles, printed into backends/cpu/gemm_half_amd64.s
// (see gemm_half_amd64.go). A tile is R weight rows × C activation rows;
// each of its R·C outputs is the float32 part of quant.DotF16F16 /
// quant.DotBF16BF16 (the row kernels' numbers, rows_f16.go), so prefill
// and decode agree bit for bit.
//
// The oracle's accumulators are L lanes per pair of rows (f16: 4 × 16 =
// 64, bf16: 4 × 8 = 32), lane l adding the products of elements l, l+L,
// l+2L, ... in order. The lanes are independent, so a tile computes them
// in passes: pass v keeps, for every pair, one vector register of V lanes
// (elements v·V .. v·V+V-1 of each L-element chunk) and walks the whole
// row; a pass's accumulators are stored to a scratch area (pair (r, c)'s L
// lanes at ((r·C + c)·L)·4 bytes, in element order) and, after the last
// pass, each pair's lanes are reduced there in the oracle's order. One
// vector per pair per pass leaves registers for a large tile: the weight
// vectors are converted once per pass and chunk and serve C activation
// rows, each activation vector serves R weight rows.
//
// The activation rows come as float32 (the f16 / bf16 activation values,
// converted once per prompt by halfToF32) and pass-major: a row holds
// pass 0's V lanes of every chunk, then pass 1's, and so on, so a pass
// reads each activation row in order (in the GGUF order, tried first, a
// pass read one line in L/V of each row: BenchmarkHalfGemm ran the AVX2 f16
// form at 15–28 GMAC/s against 30–41 pass-major); the weight rows come in
// their GGUF layout (a pass reads 2V bytes of every 2L, from L1 after the
// first pass). One FMA per product for both types (f16 products are
// exact; bf16 as GCC compiles ggml_vec_dot_bf16).

// halfGemmForm is one generated tile kernel.
type halfGemmForm struct {
	name string
	bf16 bool // bf16 weights (else f16)
	zmm  bool // 16-lane Z registers (else 8-lane Y)
	R, C int  // weight rows × activation rows of the tile
}

// halfGemmForms are the kernels written; backends/cpu/gemm_half_amd64.go
// must name the same tile shapes.
var halfGemmForms = []halfGemmForm{
	{name: "halfGemmF16Z", zmm: true, R: 4, C: 6},
	{name: "halfGemmF16Y", R: 3, C: 4},
	{name: "halfGemmBF16Z", bf16: true, zmm: true, R: 4, C: 6},
	{name: "halfGemmBF16Y", bf16: true, R: 3, C: 4},
}

func init() {
	register("gemm_half_amd64.s", "amd64 && !purego", func(a *Asm) {
		for _, f := range halfGemmForms {
			a.Blank()
			halfGemm(a, f)
		}
		a.Blank()
		halfToF32(a, "f16ToF32Row", false)
		a.Blank()
		halfToF32(a, "bf16ToF32Row", true)
	})
}

func halfGemm(a *Asm, f halfGemmForm) {
	L, V := 64, 8
	if f.bf16 {
		L = 32
	}
	reg, nreg := "Y", 16
	if f.zmm {
		V, reg, nreg = 16, "Z", 32
	}
	passes := L / V
	R, C := f.R, f.C
	first := R + 1
	if first+R*C > nreg || R > 4 || C > 6 {
		panic(fmt.Sprintf("asmgen: %s: a %d×%d tile does not fit", f.name, R, C))
	}
	wv := func(r int) string { return fmt.Sprintf("%s%d", reg, r) }
	av := fmt.Sprintf("%s%d", reg, R)
	acc := func(r, c int) string { return fmt.Sprintf("%s%d", reg, first+r*C+c) }
	wrow := []string{"SI", "R9", "R10", "R11"}[:R]
	arow := []string{"DI", "BX", "R12", "R13", "R14", "R15"}[:C]
	kind := "f16"
	if f.bf16 {
		kind = "bf16"
	}
	a.Comment(fmt.Sprintf(`%s(w, wrb, a, arb, np, y, ldy, sc): the %d×%d tile of %s
dots over elements 0..np-1 (np a multiple of %d): y[c·ldy + 4r] (bytes) =
the float32 reduction of weight row r (w + r·wrb) against the float32
activation row c (a + c·arb), for r < %d, c < %d. %d passes of one %d-lane
vector per pair, one FMA each; sc holds %d floats.
The activation rows are pass-major (np floats each: pass v's lanes of
every chunk at v·np/%d·4 bytes). Registers: %s weight rows, %s activation
rows, AX the weights' byte offset in the pass, DX the activations' (it runs
on through all passes), CX np·2, R8 sc; %s0-%s%d the converted
weights, %s the activation vector, %s..%s the accumulators.`,
		f.name, R, C, kind, L, R, C, passes, V, R*C*L, passes,
		strings.Join(wrow, ", "), strings.Join(arow, ", "), reg, reg, R-1, av, acc(0, 0), acc(R-1, C-1)))
	a.Raw("")
	a.Raw("// func %s(w *byte, wrb int, a *float32, arb int, np int, y *float32, ldy int, sc *float32)", f.name)
	a.Raw("TEXT ·%s(SB), NOSPLIT, $0-64", f.name)
	a.I("MOVQ", "w+0(FP)", "SI")
	a.I("MOVQ", "wrb+8(FP)", "DX")
	for r := 1; r < R; r++ {
		a.I("LEAQ", fmt.Sprintf("(%s)(DX*1)", wrow[r-1]), wrow[r])
	}
	a.I("MOVQ", "a+16(FP)", "DI")
	a.I("MOVQ", "arb+24(FP)", "DX")
	for c := 1; c < C; c++ {
		a.I("LEAQ", fmt.Sprintf("(%s)(DX*1)", arow[c-1]), arow[c])
	}
	a.I("MOVQ", "np+32(FP)", "CX")
	a.I("SHLQ", "$1", "CX")
	a.I("MOVQ", "sc+56(FP)", "R8")
	a.I("XORQ", "DX", "DX")
	l := func(s string) string { return f.name + "_" + s }
	for v := 0; v < passes; v++ {
		for r := 0; r < R; r++ {
			for c := 0; c < C; c++ {
				z := acc(r, c)
				if f.zmm {
					a.I("VPXORD", z, z, z)
				} else {
					a.I("VXORPS", z, z, z)
				}
			}
		}
		a.I("XORQ", "AX", "AX")
		loop := l(fmt.Sprintf("p%d", v))
		a.Label(loop)
		for r := 0; r < R; r++ {
			mem := fmt.Sprintf("%d(%s)(AX*1)", 2*V*v, wrow[r])
			if f.bf16 {
				bf16Load(a, mem, wv(r))
			} else {
				a.I("VCVTPH2PS", mem, wv(r))
			}
		}
		for c := 0; c < C; c++ {
			a.I("VMOVUPS", fmt.Sprintf("(%s)(DX*1)", arow[c]), av)
			for r := 0; r < R; r++ {
				a.I("VFMADD231PS", av, wv(r), acc(r, c))
			}
		}
		a.I("ADDQ", fmt.Sprintf("$%d", 2*L), "AX")
		a.I("ADDQ", fmt.Sprintf("$%d", 4*V), "DX")
		a.I("CMPQ", "AX", "CX")
		a.I("JLT", loop)
		for r := 0; r < R; r++ {
			for c := 0; c < C; c++ {
				a.I("VMOVUPS", acc(r, c), fmt.Sprintf("%d(R8)", 4*((r*C+c)*L+V*v)))
			}
		}
	}
	// Reduce each pair's L lanes (8-lane pieces at element e of the
	// chunk: ((r·C+c)·L + e)·4(R8)) and store them.
	a.I("MOVQ", "y+40(FP)", "DX")
	a.I("MOVQ", "ldy+48(FP)", "BX")
	piece := func(r, c, e int) string { return fmt.Sprintf("%d(R8)", 4*((r*C+c)*L+e)) }
	for c := 0; c < C; c++ {
		for r := 0; r < R; r++ {
			if f.bf16 {
				// c_j = lanes 8j..8j+7: (c0+c2) + (c1+c3), hsum_float_8.
				a.I("VMOVUPS", piece(r, c, 0), "Y0")
				a.I("VADDPS", piece(r, c, 16), "Y0", "Y0")
				a.I("VMOVUPS", piece(r, c, 8), "Y1")
				a.I("VADDPS", piece(r, c, 24), "Y1", "Y1")
				a.I("VADDPS", "Y1", "Y0", "Y0")
				hsum8(a, "Y0", "X0", "X1")
				a.I("VMOVSS", "X0", fmt.Sprintf("%d(DX)", 4*r))
				continue
			}
			// a_j = lanes 16j..16j+15: (a0+a2) + (a1+a3) for lanes 0-7
			// (Y0) and 8-15 (Y2), then ggmlf32.Reduce16 (reduce16).
			for h := 0; h < 2; h++ {
				y0, y1 := fmt.Sprintf("Y%d", 2*h), fmt.Sprintf("Y%d", 2*h+1)
				a.I("VMOVUPS", piece(r, c, 8*h), y0)
				a.I("VADDPS", piece(r, c, 32+8*h), y0, y0)
				a.I("VMOVUPS", piece(r, c, 16+8*h), y1)
				a.I("VADDPS", piece(r, c, 48+8*h), y1, y1)
				a.I("VADDPS", y1, y0, y0)
			}
			reduce16(a, "Y0", "Y2", "Y3", 4*r)
		}
		if c < C-1 {
			a.I("ADDQ", "BX", "DX")
		}
	}
	a.I("VZEROUPPER")
	a.I("RET")
}

// halfToF32 writes name(dst *float32, src *byte, n int): n f16 (bf16)
// values to float32, n a multiple of 8 (exact conversions).
func halfToF32(a *Asm, name string, bf16 bool) {
	kind := "f16"
	if bf16 {
		kind = "bf16"
	}
	a.Comment(fmt.Sprintf(`%s(dst, src, n): the n %s values at src as float32 at dst, n a
multiple of 8 (and > 0).`, name, kind))
	a.Raw("")
	a.Raw("// func %s(dst *float32, src *byte, n int)", name)
	a.Raw("TEXT ·%s(SB), NOSPLIT, $0-24", name)
	a.I("MOVQ", "dst+0(FP)", "DI")
	a.I("MOVQ", "src+8(FP)", "SI")
	a.I("MOVQ", "n+16(FP)", "CX")
	a.I("XORQ", "AX", "AX")
	a.Label(name + "_loop")
	if bf16 {
		bf16Load(a, "(SI)(AX*2)", "Y0")
	} else {
		a.I("VCVTPH2PS", "(SI)(AX*2)", "Y0")
	}
	a.I("VMOVUPS", "Y0", "(DI)(AX*4)")
	a.I("ADDQ", "$8", "AX")
	a.I("CMPQ", "AX", "CX")
	a.I("JLT", name+"_loop")
	a.I("VZEROUPPER")
	a.I("RET")
}
