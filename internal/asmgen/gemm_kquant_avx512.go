package main

import "fmt"

// AVX-512 VNNI GEMM kernels for K-quant weights (Q4_K, Q5_K, Q6_K) against Q8_K
// activations, printed into backends/cpu/gemm_kquant_avx512_amd64.s. They
// read the same unpacked weight tiles as the AVX2 kernels
// (gemm_kquant_avx2.go; packQ4KTile, packQ6KTile in
// backends/cpu/gemm_kquant_avx2_amd64.go), so one packed layout serves
// both tiers, and the Go wrapper (kqGemm) is shared.

// kqZShapes lists the tile shapes generated (R weight rows, R a multiple
// of 4, × C activation rows; (R/2)·C ≤ 20 accumulators).
var kqZShapes = [][2]int{{4, 8}, {8, 4}, {4, 6}, {8, 5}}

var kqZKinds = []kqGemmKind{
	{name: "Q4K", typ: "Q4_K"},
	{name: "Q5K", summs: true, typ: "Q5_K"},
	{name: "Q6K", six: true, typ: "Q6_K"},
}

func init() {
	register("gemm_kquant_avx512_amd64.s", "amd64 && !purego", func(a *Asm) {
		a.Blank()
		a.Comment(kqZDoc)
		for _, k := range kqZKinds {
			for _, s := range kqZShapes {
				kqZKernel(a, k, s[0], s[1])
			}
		}
	})
}

const kqZDoc = `See gemm_kquant_avx512_amd64.go. AVX-512 VNNI GEMM kernels for K-quant
weights (tiles of R rows unpacked by packQ4KTile, packQ6KTile, the AVX2
kernels' layout) against Q8_K activation rows: one call computes the R×C
outputs of mt tiles of C activation rows (arb bytes apart, tile after
tile) against one weight tile, super-block by super-block.

Each ZMM integer accumulator holds two outputs: weight rows 2p (low 256
bits) and 2p+1 (high 256 bits) against activation row c. Per 32-element
chunk j the two rows' unpacked weight bytes are one 64-byte load (the
layout keeps chunk j of rows 2p and 2p+1 adjacent), the activation chunk
is broadcast to both halves (VBROADCASTI64X4), VPMADDUBSW makes the exact
int16 pair sums (|sum| ≤ 2·63·127) and VPDPWSSD adds them times the
chunk's scale words into int32 lane k = elements 4k..4k+3 — the grouping
of ggml's AVX2 kernels, so each half's 8 lanes equal quant's pure-Go dot
lane for lane (Q6_K: plus the -32·scale × bsums offset, one VPMADDWD per
row pair). Then, per super-block, as the AVX2 kernels: float32
d = d_a·d_w per half, one FMA per lane into the output's 8-lane float
accumulator (Q4_K also one FMA of -(d_a·dmin_w) into the 4-lane mins
accumulator, four rows per ZMM); after the last super-block
hsum_float_8 (Q4_K: + (m0+m2)+(m1+m3)). Q5_K: the layout and steps of
Q4_K with 5-bit values, but the mins term is one exact integer per
super-block (each row's 4 mins lanes added up), its FMA lands in all 4
lanes alike and lane 0 is added after hsum_float_8 (summs).

Registers: Z(c·R/2+p) the integer accumulator of rows 2p, 2p+1 and
activation row c; after them W(p) the weight chunks, S(p) the scale
words, then A the broadcast activation chunk and two temporaries. K1 =
0xff00 (merge into the high half). The float accumulators live in the
caller's scratch fs (64 bytes per row pair and activation row, then the
Q4_K mins: 64 bytes per four rows and activation row). R8 the weight
super-block, R13 activation tile row 0, AX/DX/R14 the current super-block
of activation rows 0/3/6 (then output rows), BX arb, CX super-blocks
left, R9 output row 0 of the tile, R10 ldy in bytes, R11 the bsum pairs
(Q4_K, made per call by the wrapper, 32 bytes per activation row and
super-block), R12 activation tiles left, DI fs.`

func kqZKernel(a *Asm, k kqGemmKind, R, C int) {
	name := fmt.Sprintf("gemm%sAVX512x%dx%d", k.name, R, C)
	tb := kqTileBytes(k, R)
	P := R / 2
	if P*C+2*P+3 > 32 || R%4 != 0 || C > 9 {
		panic(name + ": too many registers")
	}
	z := func(i int) string { return fmt.Sprintf("Z%d", i) }
	acc := func(p, c int) string { return z(c*P + p) }
	W := func(p int) string { return z(P*C + p) }
	S := func(p int) string { return z(P*C + P + p) }
	A, T0, T1 := z(P*C+2*P), z(P*C+2*P+1), z(P*C+2*P+2)
	row := func(c int) (string, int) {
		base := []string{"AX", "DX", "R14"}[c/3]
		return base, c % 3
	}
	act := func(c, off int) string {
		base, i := row(c)
		if i == 0 {
			return fmt.Sprintf("%d(%s)", off, base)
		}
		return fmt.Sprintf("%d(%s)(BX*%d)", off, base, i)
	}
	yaddr := func(c, r int) string {
		base, i := row(c)
		if i == 0 {
			return fmt.Sprintf("%d(%s)", 4*r, base)
		}
		return fmt.Sprintf("%d(%s)(R10*%d)", 4*r, base, i)
	}
	facc := func(p, c int) string { return fmt.Sprintf("%d(DI)", 64*(c*P+p)) }
	accm := func(q, c int) string { return fmt.Sprintf("%d(DI)", 64*P*C+64*(c*R/4+q)) }
	fsFloats := 8 * R * C
	if k.mins() {
		fsFloats += 4 * R * C
	}
	qOff := func(j, r int) int { return 32 * (j*R + r) }
	var sOff func(j, r int) int
	var dOff, mnOff, ndmOff, oOff func(int) int
	if k.six {
		sOff = func(j, r int) int { return 256*R + 32*(j*R+r) }
		oOff = func(r int) int { return 512*R + 32*r }
		dOff = func(r int) int { return 544*R + 4*r }
	} else {
		sOff = func(j, r int) int { return 256*R + 4*(j*R+r) }
		dOff = func(r int) int { return 288*R + 4*r }
		mnOff = func(p int) int { return 292*R + 32*p }
		ndmOff = func(p int) int { return 308*R + 32*p }
	}
	a.Blank()
	a.Comment(fmt.Sprintf("%s: %s weights, tiles of %d weight rows × %d activation rows\n"+
		"(%d-byte tile super-blocks; fs holds %d floats).", name, k.typ, R, C, tb, fsFloats))
	a.Text(name+"(t *byte, nb int, a *byte, arb int, p *byte, y *float32, ldy int, mt int, fs *float32)", 0, 72)
	fixText(a, name)
	a.I("MOVQ", "a+16(FP)", "R13")
	a.I("MOVQ", "arb+24(FP)", "BX")
	a.I("MOVQ", "p+32(FP)", "R11")
	a.I("MOVQ", "y+40(FP)", "R9")
	a.I("MOVQ", "ldy+48(FP)", "R10")
	a.I("SHLQ", "$2", "R10")
	a.I("MOVQ", "mt+56(FP)", "R12")
	a.I("MOVQ", "fs+64(FP)", "DI")
	a.I("MOVL", "$0xff00", "AX")
	a.I("KMOVW", "AX", "K1")
	// rows 3 and 6 from row 0: +3·arb
	setRows := func() {
		if C > 3 {
			a.I("LEAQ", "(AX)(BX*2)", "DX")
			a.I("ADDQ", "BX", "DX")
		}
		if C > 6 {
			a.I("LEAQ", "(DX)(BX*2)", "R14")
			a.I("ADDQ", "BX", "R14")
		}
	}
	lt, lb := "k"+name+"tile", "k"+name+"blk"
	a.Label(lt)
	a.I("VPXORD", T0, T0, T0)
	for o := 0; o < 4*fsFloats; o += 64 {
		a.I("VMOVDQU64", T0, fmt.Sprintf("%d(DI)", o))
	}
	a.I("MOVQ", "t+0(FP)", "R8")
	a.I("MOVQ", "R13", "AX")
	setRows()
	a.I("MOVQ", "nb+8(FP)", "CX")
	a.Label(lb)
	// integer phase
	if k.six {
		for c := 0; c < C; c++ {
			a.I("VBROADCASTI64X4", act(c, 260), A)
			for p := 0; p < P; p++ {
				a.I("VPMADDWD", fmt.Sprintf("%d(R8)", oOff(2*p)), A, acc(p, c))
			}
		}
	}
	for j := 0; j < 8; j++ {
		for p := 0; p < P; p++ {
			a.I("VMOVDQU64", fmt.Sprintf("%d(R8)", qOff(j, 2*p)), W(p))
			if k.six {
				a.I("VMOVDQU64", fmt.Sprintf("%d(R8)", sOff(j, 2*p)), S(p))
			} else {
				a.I("VPBROADCASTD", fmt.Sprintf("%d(R8)", sOff(j, 2*p)), S(p))
				a.I("VPBROADCASTD", fmt.Sprintf("%d(R8)", sOff(j, 2*p+1)), "K1", S(p))
			}
		}
		for c := 0; c < C; c++ {
			a.I("VBROADCASTI64X4", act(c, 4+32*j), A)
			for p := 0; p < P; p++ {
				T := T0
				if (c*P+p)%2 == 1 {
					T = T1
				}
				a.I("VPMADDUBSW", A, W(p), T)
				if j == 0 && !k.six {
					a.I("VPMADDWD", S(p), T, acc(p, c))
					continue
				}
				a.I("VPDPWSSD", S(p), T, acc(p, c))
			}
		}
	}
	// float phase: W(p) = [d_w(2p) ×8 | d_w(2p+1) ×8]; A = d_a broadcast
	for p := 0; p < P; p++ {
		a.I("VBROADCASTSS", fmt.Sprintf("%d(R8)", dOff(2*p)), W(p))
		a.I("VBROADCASTSS", fmt.Sprintf("%d(R8)", dOff(2*p+1)), "K1", W(p))
	}
	for c := 0; c < C; c++ {
		a.I("VBROADCASTSS", act(c, 0), A)
		for p := 0; p < P; p++ {
			T := T0
			if p%2 == 1 {
				T = T1
			}
			a.I("VMULPS", A, W(p), T)
			a.I("VCVTDQ2PS", acc(p, c), acc(p, c))
			a.I("VFMADD213PS", facc(p, c), T, acc(p, c))
			a.I("VMOVUPS", acc(p, c), facc(p, c))
		}
		if k.mins() {
			// S(0) the bsum pairs of row c ×4
			a.I("VBROADCASTI64X4", fmt.Sprintf("%d(R11)", 32*c), S(0))
			for q := 0; q < R/4; q++ {
				a.I("VPMADDWD", fmt.Sprintf("%d(R8)", mnOff(2*q)), S(0), T0)
				if k.summs {
					// Q5_K: each row's 4 lanes added up (exact) in all 4
					a.I("VPSHUFD", "$0xb1", T0, T1)
					a.I("VPADDD", T1, T0, T0)
					a.I("VPSHUFD", "$0x4e", T0, T1)
					a.I("VPADDD", T1, T0, T0)
				}
				a.I("VCVTDQ2PS", T0, T0)
				a.I("VMULPS", fmt.Sprintf("%d(R8)", ndmOff(2*q)), A, T1)
				a.I("VFMADD213PS", accm(q, c), T1, T0)
				a.I("VMOVUPS", T0, accm(q, c))
			}
		}
	}
	a.I("ADDQ", fmt.Sprintf("$%d", tb), "R8")
	if k.mins() {
		a.I("ADDQ", fmt.Sprintf("$%d", 32*C), "R11")
	}
	a.I("ADDQ", "$292", "AX")
	if C > 3 {
		a.I("ADDQ", "$292", "DX")
	}
	if C > 6 {
		a.I("ADDQ", "$292", "R14")
	}
	a.I("DECQ", "CX")
	a.I("JNZ", lb)
	// reductions and stores (AX/DX/R14 now output rows 0/3/6)
	a.I("MOVQ", "R9", "AX")
	if C > 3 {
		a.I("LEAQ", "(R9)(R10*2)", "DX")
		a.I("ADDQ", "R10", "DX")
	}
	if C > 6 {
		a.I("LEAQ", "(DX)(R10*2)", "R14")
		a.I("ADDQ", "R10", "R14")
	}
	for c := 0; c < C; c++ {
		for r := 0; r < R; r++ {
			a.I("VMOVUPS", fmt.Sprintf("%d(DI)", 64*(c*P+r/2)+32*(r%2)), "Y0")
			a.I("VEXTRACTF128", "$1", "Y0", "X1")
			a.I("VADDPS", "X0", "X1", "X0")
			a.I("VMOVHLPS", "X0", "X0", "X1")
			a.I("VADDPS", "X1", "X0", "X0")
			a.I("VMOVSHDUP", "X0", "X1")
			a.I("VADDSS", "X1", "X0", "X0")
			if k.mins() {
				m := fmt.Sprintf("%d(DI)", 64*P*C+64*(c*R/4+r/4)+16*(r%4))
				if k.summs {
					a.I("VADDSS", m, "X0", "X0")
					a.I("VMOVSS", "X0", yaddr(c, r))
					continue
				}
				a.I("VMOVUPS", m, "X2")
				a.I("VMOVHLPS", "X2", "X2", "X3")
				a.I("VADDPS", "X3", "X2", "X2")
				a.I("VMOVSHDUP", "X2", "X3")
				a.I("VADDSS", "X3", "X2", "X2")
				a.I("VADDSS", "X2", "X0", "X0")
			}
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

// The nibble part of packQ4KTile (the AVX2 kernels' tile layout, which the
// AVX-512 kernels read too): per weight row and super-block the 128 bytes
// of 4-bit pairs become 8 chunks of 32 bytes, low nibbles of bytes
// 32i..32i+31 as chunk 2i, high nibbles as chunk 2i+1, each at its place
// in the R-row tile. It runs once per weight row and prefill call.
func init() {
	register("pack_kquant_amd64.s", "amd64 && !purego", func(a *Asm) {
		a.Blank()
		a.Comment(`See packK4Tile in gemm_kquant_avx2_amd64.go.`)
		a.Raw("")
		a.Raw("DATA packNibbleMask<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f")
		a.Raw("GLOBL packNibbleMask<>(SB), RODATA|NOPTR, $8")
		a.Blank()
		a.Comment(`packQ4KNibblesAVX2 writes the Q (values) part of nb super-blocks of an
R-row Q4_K tile: dst the tile (324·R bytes per super-block), w row 0 of
the weights (rows wrb bytes apart, 144-byte blocks). Registers: DI the
tile super-block, SI the weights' super-block, R8 the current row, R9 its
chunk-0 place in the tile, R12 that of chunk pair i, R10 32·R (from
chunk 2i to 2i+1), R11 64·R, R13 324·R, R14 R·wrb (the next tile, which
is prefetched), BX wrb, CX super-blocks left, DX rows left, Y15 the
nibble mask.`)
		a.Raw("")
		a.Raw("// func packQ4KNibblesAVX2(dst *byte, w *byte, wrb int, nb int, R int)")
		a.Raw("TEXT ·packQ4KNibblesAVX2(SB), NOSPLIT, $0-40")
		a.I("MOVQ", "dst+0(FP)", "DI")
		a.I("MOVQ", "w+8(FP)", "SI")
		a.I("MOVQ", "wrb+16(FP)", "BX")
		a.I("MOVQ", "nb+24(FP)", "CX")
		a.I("MOVQ", "R+32(FP)", "R10")
		a.I("IMUL3Q", "$324", "R10", "R13")
		a.I("SHLQ", "$5", "R10")
		a.I("LEAQ", "(R10)(R10*1)", "R11")
		a.I("VPBROADCASTQ", "packNibbleMask<>(SB)", "Y15")
		a.I("MOVQ", "R+32(FP)", "R14")
		a.I("IMULQ", "BX", "R14")
		a.I("TESTQ", "CX", "CX")
		a.I("JZ", "pq4done")
		a.Label("pq4blk")
		a.I("MOVQ", "SI", "R8")
		a.I("MOVQ", "DI", "R9")
		a.I("MOVQ", "R+32(FP)", "DX")
		a.Label("pq4row")
		a.I("MOVQ", "R9", "R12")
		// the same block of the next tile's row (the next call's work):
		// short rows spread over many pages defeat the hardware prefetcher
		for o := 0; o < 144; o += 64 {
			a.I("PREFETCHT0", fmt.Sprintf("%d(R8)(R14*1)", o))
		}
		for i := 0; i < 4; i++ {
			a.I("VMOVDQU", fmt.Sprintf("%d(R8)", 16+32*i), "Y0")
			a.I("VPAND", "Y15", "Y0", "Y1")
			a.I("VPSRLW", "$4", "Y0", "Y0")
			a.I("VPAND", "Y15", "Y0", "Y0")
			a.I("VMOVDQU", "Y1", "(R12)")
			a.I("VMOVDQU", "Y0", "(R12)(R10*1)")
			if i < 3 {
				a.I("ADDQ", "R11", "R12")
			}
		}
		a.I("ADDQ", "BX", "R8")
		a.I("ADDQ", "$32", "R9")
		a.I("DECQ", "DX")
		a.I("JNZ", "pq4row")
		a.I("ADDQ", "$144", "SI")
		a.I("ADDQ", "R13", "DI")
		a.I("DECQ", "CX")
		a.I("JNZ", "pq4blk")
		a.Label("pq4done")
		a.I("VZEROUPPER")
		a.I("RET")
		packQ6KQuants(a)
		prefetchRange(a)
	})
}

// prefetchRange writes prefetchL2: PREFETCHT1 of every 64-byte line of
// [p, p+n) (n > 0), so the weight rows the next pack call reads are in L2
// by then instead of each line costing a memory round trip.
func prefetchRange(a *Asm) {
	a.Blank()
	a.Comment(`prefetchL2 asks for the lines of [p, p+n) to be brought into L2 (no
effect on any result). Registers: AX the line, CX the end.`)
	a.Raw("")
	a.Raw("// func prefetchL2(p *byte, n int)")
	a.Raw("TEXT ·prefetchL2(SB), NOSPLIT, $0-16")
	a.I("MOVQ", "p+0(FP)", "AX")
	a.I("MOVQ", "n+8(FP)", "CX")
	a.I("ADDQ", "AX", "CX")
	a.Label("pfloop")
	a.I("PREFETCHT1", "(AX)")
	a.I("ADDQ", "$64", "AX")
	a.I("CMPQ", "AX", "CX")
	a.I("JB", "pfloop")
	a.I("RET")
}

// packQ6KQuants writes packQ6KQuantsAVX2: the Q part of packQ6KTile.
func packQ6KQuants(a *Asm) {
	a.Blank()
	a.Raw("DATA packMask30<>+0(SB)/8, $0x3030303030303030")
	a.Raw("GLOBL packMask30<>(SB), RODATA|NOPTR, $8")
	a.Blank()
	a.Comment(`packQ6KQuantsAVX2 writes the Q (values) part of nb super-blocks of an
R-row Q6_K tile (548·R bytes per super-block; w row 0 of the weights,
rows wrb bytes apart, 210-byte blocks): chunk j = 4n+s of a row is the
6-bit values ql[64n+32(s&1)+l] >> 4(s>>1) & 15 | (qh[32n+l] >> 2s & 3) << 4,
l = 0..31, at 32·(j·R+r) in the tile. Registers: DI the tile
super-block, SI the weights' super-block, R8 the current row, R9 its
chunk-0 place, R12 that of chunk 4n, R10 32·R, AX 96·R, R11 128·R, R13 548·R,
BX wrb, CX super-blocks left, DX rows left, R14 R·wrb (the next tile's
rows, prefetched); Y14 0x0f bytes, Y15 0x30.`)
	a.Raw("")
	a.Raw("// func packQ6KQuantsAVX2(dst *byte, w *byte, wrb int, nb int, R int)")
	a.Raw("TEXT ·packQ6KQuantsAVX2(SB), NOSPLIT, $0-40")
	a.I("MOVQ", "dst+0(FP)", "DI")
	a.I("MOVQ", "w+8(FP)", "SI")
	a.I("MOVQ", "wrb+16(FP)", "BX")
	a.I("MOVQ", "nb+24(FP)", "CX")
	a.I("MOVQ", "R+32(FP)", "R10")
	a.I("IMUL3Q", "$548", "R10", "R13")
	a.I("SHLQ", "$5", "R10")
	a.I("LEAQ", "(R10)(R10*2)", "AX") // 96·R: from chunk 4n to 4n+3
	a.I("MOVQ", "R10", "R11")
	a.I("SHLQ", "$2", "R11")
	a.I("VPBROADCASTQ", "packNibbleMask<>(SB)", "Y14")
	a.I("VPBROADCASTQ", "packMask30<>(SB)", "Y15")
	a.I("MOVQ", "R+32(FP)", "R14")
	a.I("IMULQ", "BX", "R14")
	a.I("TESTQ", "CX", "CX")
	a.I("JZ", "pq6done")
	a.Label("pq6blk")
	a.I("MOVQ", "SI", "R8")
	a.I("MOVQ", "DI", "R9")
	a.I("MOVQ", "R+32(FP)", "DX")
	a.Label("pq6row")
	a.I("MOVQ", "R9", "R12")
	for o := 0; o < 210; o += 64 {
		a.I("PREFETCHT0", fmt.Sprintf("%d(R8)(R14*1)", o))
	}
	for n := 0; n < 2; n++ {
		a.I("VMOVDQU", fmt.Sprintf("%d(R8)", 64*n), "Y0")     // L0
		a.I("VMOVDQU", fmt.Sprintf("%d(R8)", 64*n+32), "Y1")  // L1
		a.I("VMOVDQU", fmt.Sprintf("%d(R8)", 128+32*n), "Y2") // H
		// s = 0: L0 & 15 | (H << 4) & 0x30
		a.I("VPSLLW", "$4", "Y2", "Y3")
		a.I("VPAND", "Y15", "Y3", "Y3")
		a.I("VPAND", "Y14", "Y0", "Y4")
		a.I("VPOR", "Y4", "Y3", "Y3")
		a.I("VMOVDQU", "Y3", "(R12)")
		// s = 1: L1 & 15 | (H << 2) & 0x30
		a.I("VPSLLW", "$2", "Y2", "Y3")
		a.I("VPAND", "Y15", "Y3", "Y3")
		a.I("VPAND", "Y14", "Y1", "Y4")
		a.I("VPOR", "Y4", "Y3", "Y3")
		a.I("VMOVDQU", "Y3", "(R12)(R10*1)")
		// s = 2: L0 >> 4 & 15 | H & 0x30
		a.I("VPAND", "Y15", "Y2", "Y3")
		a.I("VPSRLW", "$4", "Y0", "Y4")
		a.I("VPAND", "Y14", "Y4", "Y4")
		a.I("VPOR", "Y4", "Y3", "Y3")
		a.I("VMOVDQU", "Y3", "(R12)(R10*2)")
		// s = 3: L1 >> 4 & 15 | (H >> 2) & 0x30
		a.I("VPSRLW", "$2", "Y2", "Y3")
		a.I("VPAND", "Y15", "Y3", "Y3")
		a.I("VPSRLW", "$4", "Y1", "Y4")
		a.I("VPAND", "Y14", "Y4", "Y4")
		a.I("VPOR", "Y4", "Y3", "Y3")
		a.I("VMOVDQU", "Y3", "(R12)(AX*1)")
		if n == 0 {
			a.I("ADDQ", "R11", "R12")
		}
	}
	a.I("ADDQ", "BX", "R8")
	a.I("ADDQ", "$32", "R9")
	a.I("DECQ", "DX")
	a.I("JNZ", "pq6row")
	a.I("ADDQ", "$210", "SI")
	a.I("ADDQ", "R13", "DI")
	a.I("DECQ", "CX")
	a.I("JNZ", "pq6blk")
	a.Label("pq6done")
	a.I("VZEROUPPER")
	a.I("RET")
}
