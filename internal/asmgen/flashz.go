package main

import "fmt"

// flashz_amd64.s: the AVX-512 score tiles of flash attention over an f16
// cache (backends/cpu/flash.go, flashDot), which the AVX-512 tier runs for
// the keys of a chunk in groups of eight (the rest go to flasht.go's YMM
// tiles). flashDot's eight lanes of two keys share one ZMM register: key c
// in the low half and key c+4 in the high half, so each FMA does the work
// of two YMM ones and the 32 registers hold 4 key pairs × up to 6 queries
// of accumulators. A key pair's piece is its two 8-half pieces (a VMOVDQU
// and a VINSERTI128 into one YMM) converted by one VCVTPH2PS into a ZMM; a
// query's piece is read from a copy of the queries with each 8-float piece
// written twice (dupF32AVX512), one ZMM load (a VBROADCASTF64X4 per piece
// measured 7-8% slower, BenchmarkFlashScores nq8 and nq16). Each lane is
// still the FMA chain of flashDot's lane l over d ≡ l (mod 8) in increasing
// d from +0. The four accumulators of a query are reduced together in
// flashDot's tree with VSHUFPS pairs and VADDPS (the additions VHADDPS
// makes, which has no ZMM form): (l0+l1), (l2+l3), then their sum, the
// same for l4..l7, then the two halves added by a VSHUFF32X4 pair, giving
// the eight scores of keys 0..7 in one YMM.
func init() {
	register("flashz_amd64.s", "!purego", func(a *Asm) {
		a.Blank()
		a.Comment(`AVX-512 score tiles of flash attention over an f16 cache (flash.go):
eight keys per group, two keys per ZMM. Generated: one kernel per number of
queries per pass (rq), listed in f32simd_amd64.go.`)
		for rq := 1; rq <= scoresZMax; rq++ {
			scoresZ(a, rq)
		}
		dupZ(a)
	})
}

// scoresZMax is the most queries per pass of the ZMM score tiles: 4 key
// pairs × 6 queries of accumulators (Z8..Z31), 6 query pieces (Z0..Z5)
// and two converted key pairs (Z6, Z7).
const scoresZMax = 6

// scoresZ writes scoresF16Z<rq>AVX512(sc *float32, scs int, k *byte,
// kstride, n int, qd *float32, hd int): sc[r*scs+j] = flashDot(float32(k_j),
// q_r) for r < rq, j < n, k_j the hd halves at k + 2·j·kstride, q_r the
// query whose doubled copy (dupF32AVX512) is qd[r*2*hd:], n a positive
// multiple of 8 and hd a positive multiple of 8.
func scoresZ(a *Asm, rq int) {
	name := fmt.Sprintf("scoresF16Z%dAVX512", rq)
	acc := func(r, c int) string { return fmt.Sprintf("Z%d", 8+4*r+c) }
	accy := func(r, c int) string { return fmt.Sprintf("Y%d", 8+4*r+c) }
	qz := func(r int) string { return fmt.Sprintf("Z%d", r) }
	// Key c of a group (c < 4) from R11, key c+4 from R12.
	kaddr := func(base string, c int) string {
		return "(" + base + ")" + []string{"", "(R9*1)", "(R9*2)", "(R13*1)"}[c]
	}
	// Query r's doubled piece from AX: BX = hd·8, R15 = 3·hd·8, R14 = 5·hd·8.
	qaddr := func(r int) string {
		return "(AX)" + []string{"", "(BX*1)", "(BX*2)", "(R15*1)", "(BX*4)", "(R14*1)"}[r]
	}
	a.Blank()
	a.Comment(fmt.Sprintf(`func %s(sc *float32, scs int, k *byte, kstride, n int, qd *float32, hd int)
Scores of %d queries over n (a multiple of 8) f16 rows in flashDot's order,
two keys per ZMM (see scoresZ in internal/asmgen/flashz.go). Registers: DI sc
at key j, R8 scs bytes, SI k_j, R9 kstride bytes (R13 three times it), CX
keys left, DX qd, BX hd·8 (doubled query stride; R15 three and R14 five
times it), R10 pieces left, R11 piece of k_j, R12 piece of k_(j+4), AX
doubled piece of q.
Accumulators Z8..Z%d (query r, keys c and c+4 in Z(8+4r+c)), query pieces
Z0.., key pairs Y6/Z6 and Y7/Z7.`, name, rq, 8+4*rq-1))
	fmt.Fprintf(&a.b, "TEXT ·%s(SB), NOSPLIT, $0-56\n", name)
	a.I("MOVQ", "sc+0(FP), DI")
	a.I("MOVQ", "scs+8(FP), R8")
	a.I("SHLQ", "$2, R8")
	a.I("MOVQ", "k+16(FP), SI")
	a.I("MOVQ", "kstride+24(FP), R9")
	a.I("SHLQ", "$1, R9")
	a.I("LEAQ", "(R9)(R9*2), R13")
	a.I("MOVQ", "n+32(FP), CX")
	a.I("MOVQ", "qd+40(FP), DX")
	a.I("MOVQ", "hd+48(FP), BX")
	a.I("SHLQ", "$3, BX")
	a.I("LEAQ", "(BX)(BX*2), R15")
	a.I("LEAQ", "(BX)(BX*4), R14")
	a.Blank()
	a.Label(name + "_group")
	a.I("TESTQ", "CX, CX")
	a.I("JLE", name+"_done")
	for r := 0; r < rq; r++ {
		for c := 0; c < 4; c++ {
			a.I("VPXORD", acc(r, c)+", "+acc(r, c)+", "+acc(r, c))
		}
	}
	// The next group's rows (the first 256 bytes of each).
	a.I("LEAQ", "(SI)(R9*8), R11")
	a.I("LEAQ", "(R11)(R9*4), R12")
	for _, base := range []string{"R11", "R12"} {
		for c := 0; c < 4; c++ {
			for off := 0; off < 256; off += 64 {
				a.I("PREFETCHT0", fmt.Sprintf("%d%s", off, kaddr(base, c)))
			}
		}
	}
	a.I("MOVQ", "SI, R11")
	a.I("LEAQ", "(SI)(R9*4), R12")
	a.I("MOVQ", "DX, AX")
	a.I("MOVQ", "hd+48(FP), R10")
	a.I("SHRQ", "$3, R10")
	a.Label(name + "_gd")
	for r := 0; r < rq; r++ {
		a.I("VMOVUPS", qaddr(r)+", "+qz(r))
	}
	for c := 0; c < 4; c++ {
		t := 6 + c%2
		a.I("VMOVDQU", kaddr("R11", c)+fmt.Sprintf(", X%d", t))
		a.I("VINSERTI128", "$1, "+kaddr("R12", c)+fmt.Sprintf(", Y%d, Y%d", t, t))
		a.I("VCVTPH2PS", fmt.Sprintf("Y%d, Z%d", t, t))
		for r := 0; r < rq; r++ {
			a.I("VFMADD231PS", qz(r)+fmt.Sprintf(", Z%d, ", t)+acc(r, c))
		}
	}
	a.I("ADDQ", "$16, R11")
	a.I("ADDQ", "$16, R12")
	a.I("ADDQ", "$64, AX")
	a.I("DECQ", "R10")
	a.I("JNZ", name+"_gd")
	// Per query: h1 = hadd(P0, P1), h2 = hadd(P2, P3) lane-wise as
	// VSHUFPS $0x88 (even elements) plus VSHUFPS $0xDD (odd ones) in each
	// 128-bit lane, then hadd(h1, h2): 128-bit lane 0 holds keys 0..3's
	// (l0+l1)+(l2+l3), lane 1 their (l4+l5)+(l6+l7), lanes 2 and 3 the
	// same for keys 4..7; lanes 0,2 plus lanes 1,3 are the eight scores.
	a.I("MOVQ", "DI, R11")
	for r := 0; r < rq; r++ {
		t := qz(r)
		p0, p1, p2, p3 := acc(r, 0), acc(r, 1), acc(r, 2), acc(r, 3)
		a.I("VSHUFPS", "$0x88, "+p1+", "+p0+", "+t)
		a.I("VSHUFPS", "$0xDD, "+p1+", "+p0+", "+p0)
		a.I("VADDPS", p0+", "+t+", "+p0)
		a.I("VSHUFPS", "$0x88, "+p3+", "+p2+", "+t)
		a.I("VSHUFPS", "$0xDD, "+p3+", "+p2+", "+p2)
		a.I("VADDPS", p2+", "+t+", "+p2)
		a.I("VSHUFPS", "$0x88, "+p2+", "+p0+", "+t)
		a.I("VSHUFPS", "$0xDD, "+p2+", "+p0+", "+p0)
		a.I("VADDPS", p0+", "+t+", "+p0)
		a.I("VSHUFF32X4", "$0x08, "+p0+", "+p0+", "+t)
		a.I("VSHUFF32X4", "$0x0D, "+p0+", "+p0+", "+p0)
		a.I("VADDPS", accy(r, 0)+", "+fmt.Sprintf("Y%d", r)+", "+accy(r, 0))
		a.I("VMOVUPS", accy(r, 0)+", (R11)")
		if r+1 < rq {
			a.I("ADDQ", "R8, R11")
		}
	}
	a.I("ADDQ", "$32, DI")
	a.I("LEAQ", "(SI)(R9*8), SI")
	a.I("SUBQ", "$8, CX")
	a.I("JMP", name+"_group")
	a.Blank()
	a.Label(name + "_done")
	a.I("VZEROUPPER")
	a.I("RET")
}

// dupZ writes dupF32AVX512(dst, src *float32, n int): for each 8-float
// piece of src (n a positive multiple of 8), the piece twice at dst: the
// doubled queries scoresF16Z reads with one ZMM load.
func dupZ(a *Asm) {
	a.Blank()
	a.Comment(`func dupF32AVX512(dst, src *float32, n int)
Each 8-float piece of src written twice into dst (see dupZ in
internal/asmgen/flashz.go). DI dst, SI src, CX pieces left, Z0 the piece.`)
	a.Raw("TEXT ·dupF32AVX512(SB), NOSPLIT, $0-24")
	a.I("MOVQ", "dst+0(FP), DI")
	a.I("MOVQ", "src+8(FP), SI")
	a.I("MOVQ", "n+16(FP), CX")
	a.I("SHRQ", "$3, CX")
	a.Label("dupF32AVX512_loop")
	a.I("VBROADCASTF64X4", "(SI), Z0")
	a.I("VMOVUPS", "Z0, (DI)")
	a.I("ADDQ", "$32, SI")
	a.I("ADDQ", "$64, DI")
	a.I("DECQ", "CX")
	a.I("JNZ", "dupF32AVX512_loop")
	a.I("VZEROUPPER")
	a.I("RET")
}
