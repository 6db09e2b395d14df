package main

import "fmt"

// AVX2 GEMM kernels for Q2_K and Q3_K weights against Q8_K activations:
// one kernel per weight kind × tile shape (R weight rows × C activation
// rows), all printed from the one description below into
// backends/cpu/gemm_kquant_avx2_amd64.s. The Go side
// (backends/cpu/gemm_kquant_avx2_amd64.go) documents the unpacked weight
// tile the kernels read (packQ2KTile, packQ3KTile) and wraps them. Q4_K,
// Q5_K and Q6_K have the paired kernels (gemm_kquant_avx2p.go) instead.

// kqGemmKind is one family of weight types sharing a kernel shape.
// (The AVX-512 kernels, gemm_kquant_avx512.go, use it for Q4_K, Q5_K and
// Q6_K.)
type kqGemmKind struct {
	name string // Go name fragment: Q4K, Q6K
	// six: 16 scales of 16 elements per super-block (a 32-byte scale
	// vector per chunk and row) and the -32 offset term through the
	// bsums; otherwise 8 scales of 32 and a 4-lane mins accumulator.
	six bool
	// summs: Q5_K's mins term, one exact integer per super-block (the 4
	// lanes of mins × bsum pairs added up) in a scalar FMA, added after
	// hsum_float_8; otherwise Q4_K's 4-lane mins accumulator.
	summs bool
	// two: Q2_K: 16 scales like six, no offset, and an 8-lane mins term
	// (mins × bsums) in its own FMA by -(d_a·dmin_w) into the same
	// accumulator before the scales' FMA.
	two bool
	// three: Q3_K: signed values -4..3 against the activations biased to
	// unsigned (a+128, a per-call copy at p: per activation tile,
	// super-block and row c the 256 bytes at 256c), 16 scales, and the
	// tile's per-lane -128·Σ s·v folded in once per super-block.
	three bool
	typ   string // the GGML type name, for comments
}

// mins reports a Q4_K/Q5_K-style mins accumulator.
func (k kqGemmKind) mins() bool { return !k.six && !k.two && !k.three }

// kqGemmShapes lists the tile shapes generated per kind (R×C ≤ 12).
var kqGemmShapes = [][2]int{{2, 6}, {4, 3}, {2, 4}, {4, 2}}

var kqGemmKinds = []kqGemmKind{
	{name: "Q2K", two: true, typ: "Q2_K"},
	{name: "Q3K", three: true, typ: "Q3_K"},
}

func init() {
	register("gemm_kquant_avx2_amd64.s", "amd64 && !purego", func(a *Asm) {
		a.Blank()
		a.Comment(kqGemmDoc)
		for _, k := range kqGemmKinds {
			for _, s := range kqGemmShapes {
				kqGemmKernel(a, k, s[0], s[1])
			}
		}
	})
}

const kqGemmDoc = `See gemm_kquant_avx2_amd64.go. AVX2 GEMM kernels for Q2_K and Q3_K weights
(unpacked into tiles of R rows by packQ2KTile, packQ3KTile) against Q8_K
activation rows: one call computes the R×C outputs of mt tiles of C
activation rows (C rows arb bytes apart, tile after tile) against one
weight tile, super-block by super-block.

Per super-block and output (r, c) the 8 int32 lanes are exact integer
sums whose lane k holds the elements 4k..4k+3 of every 32-element chunk
(VPMADDUBSW unsigned weight bytes × signed activations, VPMADDWD by the
chunk's scale words, VPADDD) — the grouping of ggml's AVX2 kernels, so
the integers equal quant's pure-Go dot lane for lane. Then, as there:
float32 d = d_a·d_w, one FMA per lane into the output's 8-lane float
accumulator; Q3_K: VPMADDUBSW of the activations biased to unsigned
with the signed weights, -128·Σ s·v per lane (from the tile) added back;
Q2_K first an 8-lane FMA of -(d_a·dmin_w) with mins ×
bsums into the same accumulator; after the last super-block hsum_float_8.

Registers: Y0..Y(R·C-1) the integer accumulators of the tile (output
(r, c) in Y(c·R+r)); in the integer phase Y13 the weight chunk (Q3_K:
the biased activation chunk), Y14 the scale words, Y15 a product; in the float phase Y12..Y15 temporaries.
The float accumulators live in the caller's scratch fs (32 bytes per
output).
SI the weight tile, R8 its current super-block, R13 activation tile row
0, AX its current super-block, DX that of row 3 (in the stores: output
row 3), BX arb, CX super-blocks left, R9 output row 0 of the tile, R10
ldy in bytes, R11 (Q3_K) the current biased activation quants (p holds
them for every activation tile, super-block and tile row c, at 256c:
made once per call by the wrapper, not once per weight tile), R12
activation tiles left, DI fs.`

// kqTileBytes is the size of one super-block of an R-row unpacked tile.
func kqTileBytes(k kqGemmKind, R int) int {
	switch {
	case k.six, k.three:
		return 548 * R
	case k.two:
		return 552 * R
	}
	return 324 * R
}

func kqGemmKernel(a *Asm, k kqGemmKind, R, C int) {
	name := fmt.Sprintf("gemm%sAVX2x%dx%d", k.name, R, C)
	tb := kqTileBytes(k, R)
	RC := R * C
	acc := func(r, c int) string { return fmt.Sprintf("Y%d", c*R+r) }
	act := func(c, off int) string {
		base := "AX"
		if c >= 3 {
			base, c = "DX", c-3
		}
		if c == 0 {
			return fmt.Sprintf("%d(%s)", off, base)
		}
		return fmt.Sprintf("%d(%s)(BX*%d)", off, base, c)
	}
	yaddr := func(c, r int) string {
		base := "R9"
		if c >= 3 {
			base, c = "DX", c-3
		}
		if c == 0 {
			return fmt.Sprintf("%d(%s)", 4*r, base)
		}
		return fmt.Sprintf("%d(%s)(R10*%d)", 4*r, base, c)
	}
	// scratch: float accumulators [c][r] 32 bytes
	facc := func(c, r int) string { return fmt.Sprintf("%d(DI)", 32*(c*R+r)) }
	fsFloats := 8 * RC
	// tile offsets within a super-block
	qOff := func(j, r int) int { return 32 * (j*R + r) }
	var sOff func(j, r int) int
	var dOff func(r int) int
	var mnOff, oOff, ndOff func(int) int
	sOff = func(j, r int) int { return 256*R + 32*(j*R+r) }
	dOff = func(r int) int { return 544*R + 4*r }
	if k.two {
		mnOff = func(r int) int { return 512*R + 32*r }
		ndOff = func(r int) int { return 548*R + 4*r }
	} else {
		oOff = func(r int) int { return 512*R + 32*r }
	}
	a.Blank()
	a.Comment(fmt.Sprintf("%s: %s weights, tiles of %d weight rows × %d activation rows\n"+
		"(%d-byte tile super-blocks; fs holds %d floats).", name, k.typ, R, C, tb, fsFloats))
	a.Text(name+"(t *byte, nb int, a *byte, arb int, p *byte, y *float32, ldy int, mt int, fs *float32)", 0, 72)
	// Text prints "TEXT ·<name>(SB)": keep the signature in the comment only.
	fixText(a, name)
	a.I("MOVQ", "t+0(FP)", "SI")
	a.I("MOVQ", "a+16(FP)", "R13")
	a.I("MOVQ", "arb+24(FP)", "BX")
	a.I("MOVQ", "p+32(FP)", "R11")
	a.I("MOVQ", "y+40(FP)", "R9")
	a.I("MOVQ", "ldy+48(FP)", "R10")
	a.I("SHLQ", "$2", "R10")
	a.I("MOVQ", "mt+56(FP)", "R12")
	a.I("MOVQ", "fs+64(FP)", "DI")
	lt, lb := "k"+name+"tile", "k"+name+"blk"
	a.Label(lt)
	a.I("VXORPS", "Y15", "Y15", "Y15")
	for o := 0; o < 4*fsFloats; o += 32 {
		a.I("VMOVUPS", "Y15", fmt.Sprintf("%d(DI)", o))
	}
	a.I("MOVQ", "SI", "R8")
	a.I("MOVQ", "R13", "AX")
	if C > 3 {
		a.I("LEAQ", "(R13)(BX*2)", "DX")
		a.I("ADDQ", "BX", "DX")
	}
	a.I("MOVQ", "nb+8(FP)", "CX")
	a.Label(lb)
	// integer phase
	W, S, T := "Y13", "Y14", "Y15"
	for j := 0; j < 8 && k.three; j++ {
		// A (Y13) the biased activation chunk of row c; the signed
		// weights and the scale words are memory operands
		for c := 0; c < C; c++ {
			a.I("VMOVDQU", fmt.Sprintf("%d(R11)", 256*c+32*j), W)
			for r := 0; r < R; r++ {
				q, sv := fmt.Sprintf("%d(R8)", qOff(j, r)), fmt.Sprintf("%d(R8)", sOff(j, r))
				if j == 0 {
					a.I("VPMADDUBSW", q, W, acc(r, c))
					a.I("VPMADDWD", sv, acc(r, c), acc(r, c))
					a.I("VPADDD", fmt.Sprintf("%d(R8)", oOff(r)), acc(r, c), acc(r, c))
					continue
				}
				a.I("VPMADDUBSW", q, W, T)
				a.I("VPMADDWD", sv, T, T)
				a.I("VPADDD", T, acc(r, c), acc(r, c))
			}
		}
	}
	for j := 0; j < 8 && !k.three; j++ {
		for r := 0; r < R; r++ {
			a.I("VMOVDQU", fmt.Sprintf("%d(R8)", qOff(j, r)), W)
			a.I("VMOVDQU", fmt.Sprintf("%d(R8)", sOff(j, r)), S)
			for c := 0; c < C; c++ {
				if j == 0 {
					a.I("VPMADDUBSW", act(c, 4+32*j), W, acc(r, c))
					a.I("VPMADDWD", S, acc(r, c), acc(r, c))
					continue
				}
				a.I("VPMADDUBSW", act(c, 4+32*j), W, T)
				a.I("VPMADDWD", S, T, T)
				a.I("VPADDD", T, acc(r, c), acc(r, c))
			}
		}
	}
	// float phase
	YD, FT, T2 := "Y13", "Y14", "Y12"
	for c := 0; c < C; c++ {
		a.I("VBROADCASTSS", act(c, 0), YD)
		for r := 0; r < R && k.two; r++ {
			// acc = fma(-(d_a·dmin), mins·bsums, acc), then the scales' FMA
			a.I("VMOVDQU", fmt.Sprintf("%d(R8)", mnOff(r)), T2)
			a.I("VPMADDWD", act(c, 260), T2, T2)
			a.I("VCVTDQ2PS", T2, T2)
			a.I("VBROADCASTSS", fmt.Sprintf("%d(R8)", ndOff(r)), FT)
			a.I("VMULPS", YD, FT, FT)
			a.I("VFMADD213PS", facc(c, r), FT, T2)
			a.I("VBROADCASTSS", fmt.Sprintf("%d(R8)", dOff(r)), FT)
			a.I("VMULPS", YD, FT, FT)
			a.I("VCVTDQ2PS", acc(r, c), acc(r, c))
			a.I("VFMADD213PS", T2, FT, acc(r, c))
			a.I("VMOVUPS", acc(r, c), facc(c, r))
		}
		for r := 0; r < R && !k.two; r++ {
			a.I("VBROADCASTSS", fmt.Sprintf("%d(R8)", dOff(r)), FT)
			a.I("VMULPS", YD, FT, FT)
			a.I("VCVTDQ2PS", acc(r, c), acc(r, c))
			a.I("VFMADD213PS", facc(c, r), FT, acc(r, c))
			a.I("VMOVUPS", acc(r, c), facc(c, r))
		}
	}
	a.I("ADDQ", fmt.Sprintf("$%d", tb), "R8")
	if k.three {
		a.I("ADDQ", fmt.Sprintf("$%d", 256*C), "R11")
	}
	a.I("ADDQ", "$292", "AX")
	if C > 3 {
		a.I("ADDQ", "$292", "DX")
	}
	a.I("DECQ", "CX")
	a.I("JNZ", lb)
	// reductions and stores
	if C > 3 {
		a.I("LEAQ", "(R9)(R10*2)", "DX")
		a.I("ADDQ", "R10", "DX")
	}
	for c := 0; c < C; c++ {
		for r := 0; r < R; r++ {
			a.I("VMOVUPS", facc(c, r), "Y0")
			a.I("VEXTRACTF128", "$1", "Y0", "X1")
			a.I("VADDPS", "X0", "X1", "X0")
			a.I("VMOVHLPS", "X0", "X0", "X1")
			a.I("VADDPS", "X1", "X0", "X0")
			a.I("VMOVSHDUP", "X0", "X1")
			a.I("VADDSS", "X1", "X0", "X0")
			a.I("VMOVSS", "X0", yaddr(c, r))
		}
	}
	for c := 0; c < C; c++ {
		a.I("ADDQ", "BX", "R13")
		a.I("ADDQ", "R10", "R9")
	}
	a.I("DECQ", "R12")
	a.I("JNZ", lt)
	a.I("VZEROUPPER")
	a.I("RET")
}

// fixText rewrites the TEXT line Asm.Text just wrote for a signature
// string: the comment keeps the signature, the TEXT symbol only the name.
func fixText(a *Asm, name string) {
	b := a.b.Bytes()
	// the last line is "TEXT ·<sig>(SB), NOSPLIT, $0-64"
	i := len(b) - 1
	for i > 0 && b[i-1] != '\n' {
		i--
	}
	a.b.Truncate(i)
	fmt.Fprintf(&a.b, "TEXT ·%s(SB), NOSPLIT, $0-72\n", name)
}
