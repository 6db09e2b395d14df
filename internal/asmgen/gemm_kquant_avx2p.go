package main

import "fmt"

// AVX2 GEMM kernels for Q4_K, Q5_K, Q6_K, Q3_K and Q2_K weights against Q8_K
// activations that handle two 32-element chunks with one VPMADDWD
// ("paired" kernels, backends/cpu/gemm_kquant_avx2p_amd64.s). ggml's
// grouping gives int32 lane k of a super-block's sum the elements
// 4k..4k+3 of every chunk j, times that chunk's scale s_j. The plain
// kernels (gemm_kquant_avx2.go) get it with VPMADDUBSW (pairs of
// products, int16), VPMADDWD by s_j (the two pairs of lane k), VPADDD: two
// multiplies per chunk, row and column. Here the wrapper and the tile
// packer interleave chunks j and j' = j+1 so that word 2k of one
// VPMADDUBSW holds two products of chunk j's lane-k elements and word
// 2k+1 two of chunk j''s; a second VPMADDUBSW holds the other two of
// each, and a VPADDW makes word 2k the sum of chunk j's 4 lane-k
// products (exact in int16: at most 4·63·128 = 32256 in magnitude, Q6_K's
// 6-bit values being the largest) and word 2k+1 chunk j''s. One VPMADDWD
// by the words (s_j, s_j') then adds s_j·(chunk j, lane k) + s_j'·(chunk
// j', lane k) into lane k: the same exact integers as ggml's, with three
// multiplies per two chunks instead of four.

// kqPairKind is one weight type of the paired kernels.
type kqPairKind struct {
	name  string // Go name fragment
	typ   string // GGML type name, for comments
	six   bool   // Q6_K: per-lane scale words, the -32 offset against bsums
	summs bool   // Q5_K: the mins term summed exactly, one scalar FMA
	// three: Q3_K (with six's per-lane scale words): signed values -4..3
	// against the activations biased to unsigned (a+128, kqPairActs with
	// kqSumsQ3K), so the activation halves are VPMADDUBSW's register
	// operand and the weights its memory one (the loop runs over columns,
	// then rows), and each lane starts from the tile's -128·Σ s·v (O
	// [R][8] int32), which cancels the bias.
	three bool
	// two: Q2_K (with six's per-lane scale words, its 4-bit scales): no
	// offset, and per output first an FMA of -(d_a·dmin_w) with the 16
	// mins (MN [R][16] int16 at 384R) by the 16 bsums, then the scales'
	// FMA, both into the float accumulator (the plain kernel's order);
	// NDW [8] float32 at 416R+32 (lane l -dmin of row l mod R).
	two bool
}

func (k kqPairKind) mins() bool { return !k.six }

var kqPairKinds = []kqPairKind{
	{name: "Q4K", typ: "Q4_K"},
	{name: "Q5K", typ: "Q5_K", summs: true},
	{name: "Q6K", typ: "Q6_K", six: true},
	{name: "Q3K", typ: "Q3_K", six: true, three: true},
	{name: "Q2K", typ: "Q2_K", six: true, two: true},
}

// kqPairShapes lists the tile shapes (R weight rows × C activation rows)
// generated per kind: 8 outputs, so that the scale words stay in a
// register (Y11) beside the accumulators, the weight halves and two pairs
// of product temporaries.
// 12-output shapes (2×6, 4×3) need the scale words as a memory operand of
// VPMADDWD and measured slower than 2×4 (≈64 against ≈78 GMAC/cpu-s on
// L1-resident data, Zen 5; slower than the plain 2×6 kernel too).
var kqPairShapes = [][2]int{{2, 4}, {4, 2}}

func init() {
	register("gemm_kquant_avx2p_amd64.s", "amd64 && !purego", func(a *Asm) {
		a.Blank()
		a.Comment(kqPairDoc)
		for _, k := range kqPairKinds {
			for _, s := range kqPairShapes {
				kqPairKernel(a, k, s[0], s[1])
			}
		}
		packQ4KPairs(a)
		packQ6KPairs(a)
		pairActQuants(a, false)
		pairActQuants(a, true)
	})
}

const kqPairDoc = `See gemm_kquant_avx2p_amd64.go and internal/asmgen/gemm_kquant_avx2p.go.
Paired AVX2 GEMM kernels for Q4_K, Q5_K, Q6_K, Q3_K and Q2_K weights
(unpacked into tiles of R rows by packQ4KTileP, packQ5KTileP,
packQ6KTileP, packQ3KTileP, packQ2KTileP) against Q8_K
activations rearranged by kqPairActs: one call computes the R×C outputs
of mt tiles of C activation rows against one weight tile, super-block by
super-block.

Per super-block and output (r, c) the 8 int32 lanes are exact integer
sums, lane k holding the elements 4k..4k+3 of every 32-element chunk
times the chunk's scale (ggml's AVX2 grouping); per chunk pair i (chunks
2i and 2i+1): VPMADDUBSW of the weight half-vectors A and B with the
activations' (lanes k: two products of each chunk in words 2k, 2k+1),
VPADDW (the four products of lane k of each chunk, exact in int16),
VPMADDWD by the scale words (s_2i, s_2i+1), VPADDD. Q6_K starts each
lane from the -32·scale × bsums term. Q3_K: the signed values (-4..3)
against the activations biased to unsigned (VPMADDUBSW's register
operand, the weights its memory one: columns outer, rows inner), each
lane starting from the tile's -128·Σ s·v, which cancels the bias. Q2_K:
per output first an FMA of d_a·(-dmin_w) with cvt(mins × bsums), then
the scales' FMA. Then, as in ggml: float32
d = d_a·d_w, one FMA per lane into the output's 8-lane float accumulator;
Q4_K also one 4-lane FMA of -(d_a·dmin_w) with the mins × bsum-pair
products (Q5_K: their exact sum, one FMA per super-block in every lane);
after the last super-block hsum_float_8 (+ the Q4_K mins reduction
(m0+m2)+(m1+m3), or + Q5_K's summs).

Registers: Y0..Y7 the integer accumulators (output (r, c) in Y(c·R+r));
in the integer phase Y12, Y13 the weight half-vectors A, B, Y11 the
scale words (Q4_K, Q5_K: a broadcast dword), Y14, Y15 and Y8, Y9 the
products of even and odd columns (column c+1's VPMADDUBSWs are issued
before column c's sums); in the float phase Y12..Y15 temporaries, Y8, Y9
the Q4_K interleaved mins of row pairs 0, 1. The float accumulators live
in the caller's scratch fs (32 bytes per output, then the Q4_K/Q5_K mins
accumulators, 16 bytes per output), then the super-block's 8 products
d_a·d_w (lane c·R+r) and, Q4_K, the 8 d_a·(-dmin_w), made by one VMULPS
each at the start of the super-block (DW of the tile by DA of the
activations) and read back by VBROADCASTSS (VBROADCASTSD: a row pair's
two) after the integer phase. SI the weight tile, R8 its current
super-block, AX the current activation block (per activation tile and
super-block, 288·C+32 bytes: C rows of 256 rearranged quants, C × 32
bytes of sums (Q4_K: bsum pairs interleaved for two rows; Q5_K: bsum
pairs twice; Q6_K: the 16 bsums), DA: 8 float32, lane l the d of row
l/R), CX super-blocks left, R9 output row 0 of the tile, DX output row 2
(in the stores), R10 ldy in bytes, R12 activation tiles left, DI fs.`

// kqPairTileBytes is the size of one super-block of an R-row paired tile,
// per row: Q [4][R][64], S (Q4_K/Q5_K [R][4] dwords in a [4][R][32]
// space; Q6_K [4][R][32]), then Q4_K/Q5_K DW, NDW in a [R][32] space,
// MN [R/2][32], NDM [R/2][32]; Q6_K O [R][32], DW in a [R][32] space.
const kqPairTileBytes = 448

func kqPairKernel(a *Asm, k kqPairKind, R, C int) {
	name := fmt.Sprintf("gemm%sAVX2Px%dx%d", k.name, R, C)
	tb := kqPairTileBytes * R
	RC := R * C
	if RC != 8 || R%2 != 0 {
		panic("paired kernel: R·C must be 8, R even")
	}
	acc := func(r, c int) string { return fmt.Sprintf("Y%d", c*R+r) }
	// activation block (288·C+32 bytes, so every quant vector stays
	// 32-byte aligned): quants at 256c, sums at 256C+32c, at 288C the 8
	// floats d_a of column l/R in lane l (column c's d at 288C+4cR)
	actQ := func(c, i, h int) string { return fmt.Sprintf("%d(AX)", 256*c+64*i+32*h) }
	actSum := func(c int) string { return fmt.Sprintf("%d(AX)", 256*C+32*c) }
	actDv := fmt.Sprintf("%d(AX)", 288*C)
	actD := func(c int) string { return fmt.Sprintf("%d(AX)", 288*C+4*c*R) }
	facc := func(c, r int) string { return fmt.Sprintf("%d(DI)", 32*(c*R+r)) }
	accm := func(c, p int) string { return fmt.Sprintf("%d(DI)", 32*RC+32*(c*R/2+p)) }
	fsFloats := 8 * RC
	if k.mins() {
		fsFloats += 4 * RC
	}
	// after the accumulators, the super-block's 8 products d_a·d_w (lane
	// o = c·R+r: output o) and, Q4_K, the 8 products d_a·(-dmin_w)
	pOff := func(o int) string { return fmt.Sprintf("%d(DI)", 4*fsFloats+4*o) }
	pmOff := func(o int) string { return fmt.Sprintf("%d(DI)", 4*fsFloats+32+4*o) }
	qOff := func(i, r, h int) string { return fmt.Sprintf("%d(R8)", 64*(i*R+r)+32*h) }
	sOff := func(i, r int) string { return fmt.Sprintf("%d(R8)", 256*R+32*(i*R+r)) }
	if !k.six {
		// Q4_K, Q5_K: one dword per pair and row, broadcast by the load
		sOff = func(i, r int) string { return fmt.Sprintf("%d(R8)", 256*R+16*r+4*i) }
	}
	var mnOff, ndmOff, oOff func(int) string
	var dwOff, ndwOff string
	if k.six {
		oOff = func(r int) string { return fmt.Sprintf("%d(R8)", 384*R+32*r) }
		dwOff = fmt.Sprintf("%d(R8)", 416*R)
		if k.two {
			mnOff = oOff
			ndwOff = fmt.Sprintf("%d(R8)", 416*R+32)
		}
	} else {
		dwOff = fmt.Sprintf("%d(R8)", 384*R)
		ndwOff = fmt.Sprintf("%d(R8)", 384*R+32)
		mnOff = func(p int) string { return fmt.Sprintf("%d(R8)", 416*R+32*p) }
		ndmOff = func(p int) string { return fmt.Sprintf("%d(R8)", 432*R+32*p) }
	}
	a.Blank()
	a.Comment(fmt.Sprintf("%s: %s weights, paired chunks, tiles of %d weight rows × %d activation rows\n"+
		"(%d-byte tile super-blocks; fs holds %d floats).", name, k.typ, R, C, tb, fsFloats+16))
	a.Raw("")
	a.Raw("// func %s(t *byte, nb int, a *byte, arb int, p *byte, y *float32, ldy int, mt int, fs *float32)", name)
	a.Raw("TEXT ·%s(SB), NOSPLIT, $0-72", name)
	a.I("MOVQ", "t+0(FP)", "SI")
	a.I("MOVQ", "p+32(FP)", "AX")
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
	a.I("MOVQ", "nb+8(FP)", "CX")
	a.Label(lb)
	// the super-block's scale products, one VMULPS for all 8 outputs (and
	// one for the Q4_K mins), stored to fs and read back by VBROADCASTSS
	// (VBROADCASTSD) in the float phase, after the integer phase: a
	// float32 product is commutative, so d_w·d_a has the bits of ggml's
	// y.d·x.d, and d_a·(-dmin_w) those of ggml's -y.d·dmin
	a.I("VMOVUPS", dwOff, "Y12")
	a.I("VMULPS", actDv, "Y12", "Y12")
	a.I("VMOVUPS", "Y12", pOff(0))
	if k.mins() && !k.summs || k.two {
		a.I("VMOVUPS", ndwOff, "Y13")
		a.I("VMULPS", actDv, "Y13", "Y13")
		a.I("VMOVUPS", "Y13", pmOff(0))
	}
	WA, WB, T1, T2 := "Y12", "Y13", "Y14", "Y15"
	S := "Y11"
	switch {
	case k.three:
		for r := 0; r < R; r++ {
			for c := 0; c < C; c++ {
				a.I("VMOVDQU", oOff(r), acc(r, c))
			}
		}
	case k.six && !k.two:
		for r := 0; r < R; r++ {
			a.I("VMOVDQU", oOff(r), T1)
			for c := 0; c < C; c++ {
				a.I("VPMADDWD", actSum(c), T1, acc(r, c))
			}
		}
	}
	// Q3_K: per pair and column the biased activation halves in WA, WB;
	// per row the signed weights and the scale words as memory operands,
	// row r+1's VPMADDUBSWs issued before row r's sums
	for i := 0; i < 4 && k.three; i++ {
		for c := 0; c < C; c++ {
			a.I("VMOVDQU", actQ(c, i, 0), WA)
			a.I("VMOVDQU", actQ(c, i, 1), WB)
			tp := [2][2]string{{T1, T2}, {"Y8", "Y9"}}
			mul := func(r int) {
				t := tp[r%2]
				a.I("VPMADDUBSW", qOff(i, r, 0), WA, t[0])
				a.I("VPMADDUBSW", qOff(i, r, 1), WB, t[1])
			}
			sum := func(r int) {
				t := tp[r%2]
				a.I("VPADDW", t[1], t[0], t[0])
				a.I("VPMADDWD", sOff(i, r), t[0], t[0])
				a.I("VPADDD", t[0], acc(r, c), acc(r, c))
			}
			for r := 0; r < R; r++ {
				mul(r)
				if r > 0 {
					sum(r - 1)
				}
			}
			sum(R - 1)
		}
	}
	for i := 0; i < 4 && !k.three; i++ {
		for r := 0; r < R; r++ {
			a.I("VMOVDQU", qOff(i, r, 0), WA)
			a.I("VMOVDQU", qOff(i, r, 1), WB)
			if k.six {
				a.I("VMOVDQU", sOff(i, r), S)
			} else {
				a.I("VPBROADCASTD", sOff(i, r), S)
			}
			// products of column c in temps tp[c%2]: column c+1's
			// VPMADDUBSWs are issued before column c's VPADDW,
			// VPMADDWD, VPADDD
			tp := [2][2]string{{T1, T2}, {"Y8", "Y9"}}
			mul := func(c int) {
				t := tp[c%2]
				a.I("VPMADDUBSW", actQ(c, i, 0), WA, t[0])
				a.I("VPMADDUBSW", actQ(c, i, 1), WB, t[1])
			}
			sum := func(c int) {
				t := tp[c%2]
				a.I("VPADDW", t[1], t[0], t[0])
				if i == 0 && (!k.six || k.two) {
					a.I("VPMADDWD", S, t[0], acc(r, c))
					return
				}
				a.I("VPMADDWD", S, t[0], t[0])
				a.I("VPADDD", t[0], acc(r, c), acc(r, c))
			}
			for c := 0; c < C; c++ {
				mul(c)
				if c > 0 {
					sum(c - 1)
				}
			}
			sum(C - 1)
		}
	}
	// float phase: per output VCVTDQ2PS, VBROADCASTSS of its product,
	// VFMADD into the float accumulator in fs. Q4_K mins: the tile's
	// interleaved mins (lane 2t+h: ggml's mins lane t of row 2p+h) by the
	// column's interleaved bsum pairs, one VPMADDWD per row pair and
	// column, then VFMADD by the pair's two products (VBROADCASTSD).
	FT, T3, YD, PC := "Y14", "Y12", "Y13", "Y15"
	mnReg := func(p int) string { return fmt.Sprintf("Y%d", 8+p) }
	if k.mins() && !k.summs {
		for p := 0; p < R/2; p++ {
			a.I("VMOVDQU", mnOff(p), mnReg(p))
		}
	}
	for c := 0; c < C && k.two; c++ {
		// Q2_K: the mins term first (cvt(mins·bsums) FMA'd with
		// d_a·(-dmin_w) into the accumulator), then the scales'
		a.I("VMOVDQU", actSum(c), PC)
		for r := 0; r < R; r++ {
			a.I("VPMADDWD", mnOff(r), PC, FT)
			a.I("VCVTDQ2PS", FT, FT)
			a.I("VBROADCASTSS", pmOff(c*R+r), T3)
			a.I("VFMADD213PS", facc(c, r), T3, FT)
			a.I("VCVTDQ2PS", acc(r, c), acc(r, c))
			a.I("VBROADCASTSS", pOff(c*R+r), T3)
			a.I("VFMADD213PS", FT, T3, acc(r, c))
			a.I("VMOVUPS", acc(r, c), facc(c, r))
		}
	}
	for c := 0; c < C && !k.two; c++ {
		for r := 0; r < R; r++ {
			a.I("VCVTDQ2PS", acc(r, c), acc(r, c))
			a.I("VBROADCASTSS", pOff(c*R+r), FT)
			a.I("VFMADD213PS", facc(c, r), FT, acc(r, c))
			a.I("VMOVUPS", acc(r, c), facc(c, r))
		}
		switch {
		case k.summs:
			// Q5_K: rows 2p, 2p+1 in the low and high halves; the 4
			// lanes of each row added up (exact), in every lane
			a.I("VBROADCASTSS", actD(c), YD)
			a.I("VMOVDQU", actSum(c), PC)
			for p := 0; p < R/2; p++ {
				a.I("VPMADDWD", mnOff(p), PC, FT)
				a.I("VPHADDD", FT, FT, FT)
				a.I("VPHADDD", FT, FT, FT)
				a.I("VCVTDQ2PS", FT, FT)
				a.I("VMULPS", ndmOff(p), YD, T3)
				a.I("VFMADD213PS", accm(c, p), T3, FT)
				a.I("VMOVUPS", FT, accm(c, p))
			}
		case k.mins():
			for p := 0; p < R/2; p++ {
				a.I("VPMADDWD", actSum(c), mnReg(p), FT)
				a.I("VCVTDQ2PS", FT, FT)
				a.I("VBROADCASTSD", pmOff(c*R+2*p), T3)
				a.I("VFMADD213PS", accm(c, p), T3, FT)
				a.I("VMOVUPS", FT, accm(c, p))
			}
		}
	}
	a.I("ADDQ", fmt.Sprintf("$%d", tb), "R8")
	a.I("ADDQ", fmt.Sprintf("$%d", 288*C+32), "AX")
	a.I("DECQ", "CX")
	a.I("JNZ", lb)
	// reductions and stores: the 8 hsum_float_8 at once. After the last
	// super-block Y(o) holds the float accumulator of output o = c·R+r.
	// Per pair (2j, 2j+1) VPERM2F128 + VADDPS give hi+lo of both (G_j:
	// output 2j in the low half, 2j+1 in the high half); VSHUFPS of G_0,
	// G_1 (G_2, G_3) and VADDPS give lanes 0, 1 + lanes 2, 3 of each; a last
	// VSHUFPS pair and VADDPS give (x0+x2)+(x1+x3): the order of ggml's
	// hsum_float_8, with outputs o0, o2, o4, o6 in the low half of Y4 and
	// o1, o3, o5, o7 in the high half; VUNPCKLPS, VUNPCKHPS of its halves
	// give o0..o3 (X6) and o4..o7 (X7). The Q4_K mins accumulators M_q (q
	// = c·R/2+p, lane 2t+h: ggml's lane t of row 2p+h): VPERM2F128 +
	// VADDPS of (M_0, M_2) and of (M_1, M_3) give lo+hi, lanes (m0+m2),
	// (m1+m3) of each row; VSHUFPS picks the (m0+m2) of both into one
	// vector and the (m1+m3) into another, VADDPS: (m0+m2)+(m1+m3), ggml's
	// order, with o0..o3 in the low half and o4..o7 in the high half, added
	// to X6, X7. Q5_K's summs (every lane of a row's 4 equal, rows in
	// halves) are picked from lane 0 into Y4's layout and added before.
	for j := 0; j < 4; j++ {
		a.I("VPERM2F128", "$0x20", fmt.Sprintf("Y%d", 2*j+1), fmt.Sprintf("Y%d", 2*j), "Y12")
		a.I("VPERM2F128", "$0x31", fmt.Sprintf("Y%d", 2*j+1), fmt.Sprintf("Y%d", 2*j), "Y13")
		a.I("VADDPS", "Y13", "Y12", fmt.Sprintf("Y%d", 8+j))
	}
	// quads: Y8..Y11 → Y4
	quad := func(g0, g1, g2, g3, dst string) {
		a.I("VSHUFPS", "$0x44", g1, g0, "Y12")
		a.I("VSHUFPS", "$0xee", g1, g0, "Y13")
		a.I("VADDPS", "Y13", "Y12", "Y14")
		a.I("VSHUFPS", "$0x44", g3, g2, "Y12")
		a.I("VSHUFPS", "$0xee", g3, g2, "Y13")
		a.I("VADDPS", "Y13", "Y12", "Y15")
		a.I("VSHUFPS", "$0x88", "Y15", "Y14", "Y12")
		a.I("VSHUFPS", "$0xdd", "Y15", "Y14", "Y13")
		a.I("VADDPS", "Y13", "Y12", dst)
	}
	quad("Y8", "Y9", "Y10", "Y11", "Y4")
	if k.mins() {
		for j := 0; j < 4; j++ {
			a.I("VMOVUPS", fmt.Sprintf("%d(DI)", 32*RC+32*j), fmt.Sprintf("Y%d", j))
		}
	}
	if k.summs {
		a.I("VSHUFPS", "$0x00", "Y1", "Y0", "Y12")
		a.I("VSHUFPS", "$0x00", "Y3", "Y2", "Y13")
		a.I("VSHUFPS", "$0x88", "Y13", "Y12", "Y5")
		a.I("VADDPS", "Y5", "Y4", "Y4")
	}
	a.I("VEXTRACTF128", "$1", "Y4", "X5")
	a.I("VUNPCKLPS", "X5", "X4", "X6")
	a.I("VUNPCKHPS", "X5", "X4", "X7")
	if k.mins() && !k.summs {
		for j := 0; j < 2; j++ {
			a.I("VPERM2F128", "$0x20", fmt.Sprintf("Y%d", j+2), fmt.Sprintf("Y%d", j), "Y12")
			a.I("VPERM2F128", "$0x31", fmt.Sprintf("Y%d", j+2), fmt.Sprintf("Y%d", j), "Y13")
			a.I("VADDPS", "Y13", "Y12", fmt.Sprintf("Y%d", 8+j))
		}
		a.I("VSHUFPS", "$0x44", "Y9", "Y8", "Y12")
		a.I("VSHUFPS", "$0xee", "Y9", "Y8", "Y13")
		a.I("VADDPS", "Y13", "Y12", "Y5")
		a.I("VADDPS", "X5", "X6", "X6")
		a.I("VEXTRACTF128", "$1", "Y5", "X5")
		a.I("VADDPS", "X5", "X7", "X7")
	}
	if R == 2 {
		// X6: rows c0, c1 (outputs r0, r1 each); X7: rows c2, c3
		a.I("LEAQ", "(R9)(R10*2)", "DX")
		a.I("VMOVLPS", "X6", "(R9)")
		a.I("VMOVHPS", "X6", "(R9)(R10*1)")
		a.I("VMOVLPS", "X7", "(DX)")
		a.I("VMOVHPS", "X7", "(DX)(R10*1)")
	} else {
		// X6: row c0 (outputs r0..r3), X7: row c1
		a.I("VMOVUPS", "X6", "(R9)")
		a.I("VMOVUPS", "X7", "(R9)(R10*1)")
	}
	for c := 0; c < C; c++ {
		a.I("ADDQ", "R10", "R9")
	}
	a.I("DECQ", "R12")
	a.I("JNZ", lt)
	a.I("VZEROUPPER")
	a.I("RET")
}

// packQ4KPairs writes packQ4KNibblesAVX2P: the Q part of packQ4KTileP.
func packQ4KPairs(a *Asm) {
	a.Blank()
	a.Raw("DATA pairNibbleMask<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f")
	a.Raw("GLOBL pairNibbleMask<>(SB), RODATA|NOPTR, $8")
	a.Blank()
	a.Comment(`packQ4KNibblesAVX2P writes the Q (values) part of nb super-blocks of an
R-row paired Q4_K tile (448·R bytes per super-block; w row 0 of the
weights, rows wrb bytes apart, 144-byte blocks): for chunk pair i of row
r, from the 32 bytes q = qs[32i..32i+31] (chunk 2i the low nibbles L,
chunk 2i+1 the high nibbles H, as words), half A (dword k: L word 2k,
H word 2k) at 64·(i·R+r) and half B (L word 2k+1, H word 2k+1) 32 bytes
on. Registers: DI the tile super-block, SI the weights' super-block, R8
the current row, R9 its pair-0 place in the tile, R11 64·R, R13 448·R,
R14 R·wrb (the next tile's rows, prefetched), BX wrb, CX super-blocks
left, DX rows left, Y15 the nibble mask.`)
	a.Raw("")
	a.Raw("// func packQ4KNibblesAVX2P(dst *byte, w *byte, wrb int, nb int, R int)")
	a.Raw("TEXT ·packQ4KNibblesAVX2P(SB), NOSPLIT, $0-40")
	a.I("MOVQ", "dst+0(FP)", "DI")
	a.I("MOVQ", "w+8(FP)", "SI")
	a.I("MOVQ", "wrb+16(FP)", "BX")
	a.I("MOVQ", "nb+24(FP)", "CX")
	a.I("MOVQ", "R+32(FP)", "R11")
	a.I("IMUL3Q", "$448", "R11", "R13")
	a.I("SHLQ", "$6", "R11")
	a.I("VPBROADCASTQ", "pairNibbleMask<>(SB)", "Y15")
	a.I("MOVQ", "R+32(FP)", "R14")
	a.I("IMULQ", "BX", "R14")
	a.I("TESTQ", "CX", "CX")
	a.I("JZ", "pp4done")
	a.Label("pp4blk")
	a.I("MOVQ", "SI", "R8")
	a.I("MOVQ", "DI", "R9")
	a.I("MOVQ", "R+32(FP)", "DX")
	a.Label("pp4row")
	a.I("MOVQ", "R9", "R12")
	for o := 0; o < 144; o += 64 {
		a.I("PREFETCHT0", fmt.Sprintf("%d(R8)(R14*1)", o))
	}
	for i := 0; i < 4; i++ {
		a.I("VMOVDQU", fmt.Sprintf("%d(R8)", 16+32*i), "Y0")
		a.I("VPAND", "Y15", "Y0", "Y1") // L
		a.I("VPSRLW", "$4", "Y0", "Y0")
		a.I("VPAND", "Y15", "Y0", "Y0") // H
		pairHalves(a, "Y1", "Y0", "Y2", "Y3")
		a.I("VMOVDQU", "Y2", "(R12)")
		a.I("VMOVDQU", "Y3", "32(R12)")
		if i < 3 {
			a.I("ADDQ", "R11", "R12")
		}
	}
	a.I("ADDQ", "BX", "R8")
	a.I("ADDQ", "$64", "R9")
	a.I("DECQ", "DX")
	a.I("JNZ", "pp4row")
	a.I("ADDQ", "$144", "SI")
	a.I("ADDQ", "R13", "DI")
	a.I("DECQ", "CX")
	a.I("JNZ", "pp4blk")
	a.Label("pp4done")
	a.I("VZEROUPPER")
	a.I("RET")
}

// pairHalves writes the halves A (dword k: word 2k of L, word 2k of H) and
// B (word 2k+1 of L, word 2k+1 of H) of two chunks L, H; it clobbers nothing else.
func pairHalves(a *Asm, L, H, A, B string) {
	a.I("VPSLLD", "$16", H, A)
	a.I("VPBLENDW", "$0xaa", A, L, A)
	a.I("VPSRLD", "$16", L, B)
	a.I("VPBLENDW", "$0xaa", H, B, B)
}

// packQ6KPairs writes packQ6KQuantsAVX2P: the Q part of packQ6KTileP.
func packQ6KPairs(a *Asm) {
	a.Blank()
	a.Raw("DATA pairMask30<>+0(SB)/8, $0x3030303030303030")
	a.Raw("GLOBL pairMask30<>(SB), RODATA|NOPTR, $8")
	a.Blank()
	a.Comment(`packQ6KQuantsAVX2P writes the Q (values) part of nb super-blocks of an
R-row paired Q6_K tile (448·R bytes per super-block; w row 0 of the
weights, rows wrb bytes apart, 210-byte blocks): chunk j = 4n+s of a row
is the 6-bit values ql[64n+32(s&1)+l] >> 4(s>>1) & 15 | (qh[32n+l] >> 2s
& 3) << 4, l = 0..31; chunk pair i = 2n+s/2 (chunks 4n+s, 4n+s+1, s = 0,
2) goes as halves A, B (see packQ4KNibblesAVX2P) to 64·(i·R+r).
Registers: DI the tile super-block, SI the weights' super-block, R8 the
current row, R9 its pair-0 place, R12 that of pair 2n, R11 64·R, R13
448·R, BX wrb, CX super-blocks left, DX rows left, R14 R·wrb (the next
tile's rows, prefetched); Y14 0x0f bytes, Y15 0x30.`)
	a.Raw("")
	a.Raw("// func packQ6KQuantsAVX2P(dst *byte, w *byte, wrb int, nb int, R int)")
	a.Raw("TEXT ·packQ6KQuantsAVX2P(SB), NOSPLIT, $0-40")
	a.I("MOVQ", "dst+0(FP)", "DI")
	a.I("MOVQ", "w+8(FP)", "SI")
	a.I("MOVQ", "wrb+16(FP)", "BX")
	a.I("MOVQ", "nb+24(FP)", "CX")
	a.I("MOVQ", "R+32(FP)", "R11")
	a.I("IMUL3Q", "$448", "R11", "R13")
	a.I("SHLQ", "$6", "R11")
	a.I("VPBROADCASTQ", "pairNibbleMask<>(SB)", "Y14")
	a.I("VPBROADCASTQ", "pairMask30<>(SB)", "Y15")
	a.I("MOVQ", "R+32(FP)", "R14")
	a.I("IMULQ", "BX", "R14")
	a.I("TESTQ", "CX", "CX")
	a.I("JZ", "pp6done")
	a.Label("pp6blk")
	a.I("MOVQ", "SI", "R8")
	a.I("MOVQ", "DI", "R9")
	a.I("MOVQ", "R+32(FP)", "DX")
	a.Label("pp6row")
	a.I("MOVQ", "R9", "R12")
	for o := 0; o < 210; o += 64 {
		a.I("PREFETCHT0", fmt.Sprintf("%d(R8)(R14*1)", o))
	}
	for n := 0; n < 2; n++ {
		a.I("VMOVDQU", fmt.Sprintf("%d(R8)", 64*n), "Y0")     // L0
		a.I("VMOVDQU", fmt.Sprintf("%d(R8)", 64*n+32), "Y1")  // L1
		a.I("VMOVDQU", fmt.Sprintf("%d(R8)", 128+32*n), "Y2") // H
		// s = 0: L0 & 15 | (H << 4) & 0x30 → Y3
		a.I("VPSLLW", "$4", "Y2", "Y3")
		a.I("VPAND", "Y15", "Y3", "Y3")
		a.I("VPAND", "Y14", "Y0", "Y4")
		a.I("VPOR", "Y4", "Y3", "Y3")
		// s = 1: L1 & 15 | (H << 2) & 0x30 → Y5
		a.I("VPSLLW", "$2", "Y2", "Y5")
		a.I("VPAND", "Y15", "Y5", "Y5")
		a.I("VPAND", "Y14", "Y1", "Y4")
		a.I("VPOR", "Y4", "Y5", "Y5")
		pairHalves(a, "Y3", "Y5", "Y6", "Y7")
		a.I("VMOVDQU", "Y6", "(R12)")
		a.I("VMOVDQU", "Y7", "32(R12)")
		a.I("ADDQ", "R11", "R12")
		// s = 2: L0 >> 4 & 15 | H & 0x30 → Y3
		a.I("VPAND", "Y15", "Y2", "Y3")
		a.I("VPSRLW", "$4", "Y0", "Y4")
		a.I("VPAND", "Y14", "Y4", "Y4")
		a.I("VPOR", "Y4", "Y3", "Y3")
		// s = 3: L1 >> 4 & 15 | (H >> 2) & 0x30 → Y5
		a.I("VPSRLW", "$2", "Y2", "Y5")
		a.I("VPAND", "Y15", "Y5", "Y5")
		a.I("VPSRLW", "$4", "Y1", "Y4")
		a.I("VPAND", "Y14", "Y4", "Y4")
		a.I("VPOR", "Y4", "Y5", "Y5")
		pairHalves(a, "Y3", "Y5", "Y6", "Y7")
		a.I("VMOVDQU", "Y6", "(R12)")
		a.I("VMOVDQU", "Y7", "32(R12)")
		if n == 0 {
			a.I("ADDQ", "R11", "R12")
		}
	}
	a.I("ADDQ", "BX", "R8")
	a.I("ADDQ", "$64", "R9")
	a.I("DECQ", "DX")
	a.I("JNZ", "pp6row")
	a.I("ADDQ", "$210", "SI")
	a.I("ADDQ", "R13", "DI")
	a.I("DECQ", "CX")
	a.I("JNZ", "pp6blk")
	a.Label("pp6done")
	a.I("VZEROUPPER")
	a.I("RET")
}

// pairActQuants writes pairActQuantsAVX2 (biased: pairActQuantsBiasedAVX2):
// the quants part of kqPairActs.
func pairActQuants(a *Asm, biased bool) {
	name, l := "pairActQuantsAVX2", "paq"
	if biased {
		name, l = "pairActQuantsBiasedAVX2", "paqb"
		a.Blank()
		a.Raw("DATA pairBias<>+0(SB)/8, $0x8080808080808080")
		a.Raw("GLOBL pairBias<>(SB), RODATA|NOPTR, $8")
	}
	a.Blank()
	if biased {
		a.Comment(`pairActQuantsBiasedAVX2 is pairActQuantsAVX2 with every quant biased to
unsigned (q+128: q XOR 0x80), for the Q3_K kernels; Y15 0x80 bytes.`)
	} else {
		a.Comment(`pairActQuantsAVX2 writes the paired quants of one activation row for nb
super-blocks: from the Q8_K blocks at src (292 bytes apart, quants at +4),
chunk pair i (chunks 2i, 2i+1 as L, H) as halves A, B (see
packQ4KNibblesAVX2P) to 64·i and 64·i+32 of dst, the blocks ab bytes
apart. Registers: DI dst, SI src, DX ab, CX super-blocks left.`)
	}
	a.Raw("")
	a.Raw("// func %s(dst *byte, src *byte, nb int, ab int)", name)
	a.Raw("TEXT ·%s(SB), NOSPLIT, $0-32", name)
	a.I("MOVQ", "dst+0(FP)", "DI")
	a.I("MOVQ", "src+8(FP)", "SI")
	a.I("MOVQ", "nb+16(FP)", "CX")
	a.I("MOVQ", "ab+24(FP)", "DX")
	if biased {
		a.I("VPBROADCASTQ", "pairBias<>(SB)", "Y15")
	}
	a.I("TESTQ", "CX", "CX")
	a.I("JZ", l+"done")
	a.Label(l + "blk")
	for i := 0; i < 4; i++ {
		a.I("VMOVDQU", fmt.Sprintf("%d(SI)", 4+64*i), "Y0")
		a.I("VMOVDQU", fmt.Sprintf("%d(SI)", 4+64*i+32), "Y1")
		pairHalves(a, "Y0", "Y1", "Y2", "Y3")
		if biased {
			a.I("VPXOR", "Y15", "Y2", "Y2")
			a.I("VPXOR", "Y15", "Y3", "Y3")
		}
		a.I("VMOVDQU", "Y2", fmt.Sprintf("%d(DI)", 64*i))
		a.I("VMOVDQU", "Y3", fmt.Sprintf("%d(DI)", 64*i+32))
	}
	a.I("ADDQ", "$292", "SI")
	a.I("ADDQ", "DX", "DI")
	a.I("DECQ", "CX")
	a.I("JNZ", l+"blk")
	a.Label(l + "done")
	a.I("VZEROUPPER")
	a.I("RET")
}
