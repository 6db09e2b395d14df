package main

import (
	"fmt"
	"strings"
)

// Small-M mat-mul kernels on ZMM for AVX-512 VNNI with two weight rows per
// register (smallzw_amd64.s): Q5_0 and Q4_0 weights against 2..8 Q8_0
// activation rows. smallz.go's kernels hold two activation rows per
// register against one weight row (the weight block in both halves); these
// hold two weight rows, A in the low 256 bits and B in the high, against
// one activation row (its 32 quants in both halves). What that changes, per
// block of a step (R pairs of weight rows, M activation rows):
//
//   - The unpack of a weight row pair is one ZMM's worth: Q5_0's two
//     16-byte nibble blocks in one broadcast and one merge-masked
//     broadcast, one shift, one AND, the two 32-bit high-bit masks
//     joined by KUNPCKDQ into one 64-bit mask and one masked add (8
//     instructions for two rows, smallz.go's 12). (A Q8_0 form, two rows
//     as one load, one insert and one XOR, was generated and measured,
//     see below, and dropped.)
//   - The activation quants are VPDPBUSD's signed operand, so they come
//     straight from the records (a memory operand, no load of their own);
//     the accumulator starts from the record's offsets, loaded (no copy of
//     a register). Per activation row and pair of weight rows: one load,
//     VPDPBUSD, VSUBPS, VPERMILPS, VFMADD231PS — 5 instructions for 64
//     products, and no other per-activation-row work.
//   - The scales: [d_A ×8 | d_B ×8] is one broadcast, one merge-masked
//     broadcast and one conversion of the two f16 values, times the
//     record's activation scales laid out [d_a0..d_a3] in every 128-bit
//     lane (and [d_a4..d_a7] for M > 4): one VMULPS each. Per activation
//     row j one in-lane VPERMILPS (element j%4) then makes [d_A·d_aj ×8 |
//     d_B·d_aj ×8].
//
// A step takes R = 4 pairs (8 weight rows) for M ≤ 4 and R = 2 (4 rows) for
// M > 4, so the R·M pair accumulators fill at most 16 registers; the rows
// left run a pair at a time, an odd last row as both rows of a pair, stored
// once (no pad activation row: an odd M costs no more than its work). At
// M = 8 a step of 4 weight rows is about 113 instructions for Q5_0
// (smallz.go's 128) and 103 for Q8_0 (112), but 32 of them read 64 bytes
// of the records (smallz.go: 8), and the records are twice smallz.go's
// (1152 bytes per block at M = 8): Q5_0 and Q4_0 gain (BenchmarkSmallM
// M=8 Q5_0 77 -> 70 cpu-ns per weight row, in the model's batched step
// 8% less CPU), Q8_0 loses 7-10% and keeps smallz.go's kernels (the
// dispatch in backends/cpu/smallm_amd64.go) — and Q5_0/Q4_0 gain only
// while the records stay in L1 (K ≤ 1120 at M = 8; the dispatch falls back
// to smallz.go's kernels past smallZWRecordBudget). Loading each activation
// row's quants once into a register instead (one more instruction, half
// the loads) or its offsets once for both pairs measured no better.
//
// Where registers are left (M > 4, and M ≤ 3), the unpack is
// software-pipelined: block b+1's weights are unpacked while block b's
// dots run (smallZWBlocks), so the dots do not wait on the weights' loads.
//
// The integer and float steps are smallz.go's, in the same order: the
// weights unsigned (Q5_0's q5 and Q4_0's q4 as stored),
// each lane's dot starting from 0x4B400000 - c·(sum of the 4 activation
// quants), VSUBPS of 1.5·2^23 giving float32(Σ x·y) exactly, one FMA with
// float32(d_w·d_a) per block, blocks in order, then hsum_float_8 of each
// half — the bits of quant's pure-Go dot.
//
//	func smzw<T>x<M>(w *byte, wrb int, p *byte, nb int, y *float32, ldy int, rows int)
//
// w: the first weight row (rows rows, wrb bytes apart, nb blocks each); p:
// the records (64-byte aligned, built by smzwRecordsx<M>, see
// genSmallZWRecords), per block 128 + 128·M bytes: at 0 the scales
// [d_a0, d_a1, d_a2, d_a3] in each 128-bit lane, at 64 [d_a4 .. d_a7]
// (float32, zeros past M), then per activation row j at 128+128j its 32
// quants twice (signed, as in the Q8_0 block) and at 192+128j its 8
// offsets twice (int32); y: the output of weight row 0, activation row 0
// (activation row j's at j·ldy floats).
//
// Registers: Z0..Z(R·M-1) the accumulators (pair r, activation row j in
// Z(r·M+j): low half weight row 2r, high half 2r+1), Z16..Z19 the pairs'
// unsigned weights, Z20..Z23 the pairs' scale products [d_A|d_B]·[d_a0..3]
// (Z22, Z23 the products with [d_a4..7] for M > 4, where R = 2), Z24..Z27
// temporaries, Z28 the nibble shifts (Q5_0, Q4_0), Z29 bytes 16 (Q5_0),
// Z30 bytes 0x0F, Z31 0x4B400000; K1..K4 the
// pairs' 5th bits (Q5_0), K5 words 8..15 (0xFF00), K6 dwords 8..15. R9
// the first weight row of the step, SI its block (weight rows at SI,
// SI+R8, SI+R15, SI+DX, and for R = 4 the next four at R14 likewise; in
// the pair loop rows A and B at SI and DX), R8 wrb, R15 2·wrb, DX 3·wrb,
// DI the records, BX counts blocks, R10 the records, R11 nb, R12 the
// prefetch (then the stores), AX the output, R13 ldy in bytes, CX rows
// left.

func init() {
	register("smallzw_amd64.s", "amd64 && !purego", genSmallZW)
}

func genSmallZW(a *Asm) {
	a.Blank()
	a.Comment(`Small-M mat-mul kernels on ZMM (AVX-512 VNNI), two weight rows per
register: 2..8 Q8_0 activation rows against raw Q5_0 / Q4_0 weight
rows; see internal/asmgen/smallzw.go (the generator) and
backends/cpu/smallzw_amd64.go (the Go side).`)
	a.Blank()
	// Per-dword right shifts of the nibble bytes: in each 256-bit half
	// (one weight row) the low nibbles to the first 16 bytes, the high
	// ones to the next 16.
	for h := 0; h < 2; h++ {
		a.Raw("DATA smzwshift<>+%d(SB)/8, $0", 32*h)
		a.Raw("DATA smzwshift<>+%d(SB)/8, $0", 32*h+8)
		a.Raw("DATA smzwshift<>+%d(SB)/8, $0x0000000400000004", 32*h+16)
		a.Raw("DATA smzwshift<>+%d(SB)/8, $0x0000000400000004", 32*h+24)
	}
	a.Raw("GLOBL smzwshift<>(SB), RODATA|NOPTR, $64")
	for _, k := range smallKinds {
		if k.name == "Q8_0" {
			continue // slower than smallz.go's (see the header comment)
		}
		for m := 2; m <= smallMaxM; m++ {
			genSmallZW1(a, k, m)
		}
	}
	for m := 2; m <= smallMaxM; m++ {
		genSmallZWRecords(a, m)
	}
}

// smallZWPairs is R, the weight row pairs of a main step, for M rows.
func smallZWPairs(M int) int {
	if M <= 4 {
		return 4
	}
	return 2
}

// genSmallZWRecords writes the record builder of the kernels for M
// activation rows:
//
//	func smzwRecordsx<M>(p *byte, act *byte, arb int, nb int, c int)
//
// p: the records (layout in the header comment); act: M Q8_0 rows, arb
// bytes apart, nb blocks each; c: the offset factor of the weight type
// (128, 16, 8). Per row and block it writes the 32 quants twice, the 8
// offsets 0x4B400000 - c·Σ twice (VPDPBUSD of bytes c with the quants,
// subtracted from 0x4B400000) and d_a (f16 converted) to its four places.
// Registers: Z0..Z2 temporaries, Z13 zero, Z14 0x4B400000, Z15 bytes c;
// DI the records, R12 the block's quants of row 0, R13 of row j, R8 arb,
// R9 blocks left.
func genSmallZWRecords(a *Asm, M int) {
	name := fmt.Sprintf("smzwRecordsx%d", M)
	lbl := fmt.Sprintf("smzwrec_%d_", M)
	bs := 128 + 128*M
	a.Text(name, 0, 40)
	a.I("MOVQ", "p+0(FP), DI")
	a.I("MOVQ", "act+8(FP), R12")
	a.I("MOVQ", "arb+16(FP), R8")
	a.I("MOVQ", "nb+24(FP), R9")
	a.I("MOVQ", "c+32(FP), BX")
	a.I("TESTQ", "R9, R9")
	a.I("JZ", lbl+"done")
	a.I("VPBROADCASTB", "BX, Z15")
	a.I("MOVL", "$0x4B400000, BX")
	a.I("VPBROADCASTD", "BX, Z14")
	a.I("VPXORD", "Z13, Z13, Z13")
	a.Label(lbl + "blk")
	a.I("VMOVDQU64", "Z13, (DI)")
	a.I("VMOVDQU64", "Z13, 64(DI)")
	a.I("MOVQ", "R12, R13")
	for j := 0; j < M; j++ {
		qo := 128 + 128*j
		a.I("VBROADCASTI64X4", "2(R13), Z0")
		a.I("VMOVDQU64", fmt.Sprintf("Z0, %d(DI)", qo))
		a.I("VPXORD", "Z1, Z1, Z1")
		a.I("VPDPBUSD", "Z0, Z15, Z1")
		a.I("VPSUBD", "Z1, Z14, Z1")
		a.I("VMOVDQU64", fmt.Sprintf("Z1, %d(DI)", qo+64))
		a.I("VPBROADCASTW", "(R13), X2")
		a.I("VCVTPH2PS", "X2, X2")
		so := 4*(j%4) + 64*(j/4)
		for l := 0; l < 4; l++ {
			a.I("VMOVSS", fmt.Sprintf("X2, %d(DI)", so+16*l))
		}
		if j < M-1 {
			a.I("ADDQ", "R8, R13")
		}
	}
	a.I("ADDQ", "$34, R12")
	a.I("ADDQ", fmt.Sprintf("$%d, DI", bs))
	a.I("DECQ", "R9")
	a.I("JNZ", lbl+"blk")
	a.Label(lbl + "done")
	a.I("VZEROUPPER")
	a.I("RET")
}

// smallZWUnpack writes the unpacking of the weight blocks of rows A (at
// atA) and B (at atB) into z: A's unsigned values in the low half, B's in
// the high; kr is the mask register for Q5_0.
func smallZWUnpack(a *Asm, k smallKind, atA, atB func(int) string, z, kr, kt string) {
	switch k.name {
	case "Q4_0":
		a.I("VBROADCASTI32X4", atA(2)+", "+z)
		a.I("VBROADCASTI32X4", atB(2)+", K6, "+z)
		a.I("VPSRLVD", "Z28, "+z+", "+z)
		a.I("VPANDD", "Z30, "+z+", "+z)
	case "Q5_0":
		a.I("VBROADCASTI32X4", atA(6)+", "+z)
		a.I("KMOVD", atA(2)+", "+kr)
		a.I("VBROADCASTI32X4", atB(6)+", K6, "+z)
		a.I("KMOVD", atB(2)+", "+kt)
		a.I("VPSRLVD", "Z28, "+z+", "+z)
		a.I("KUNPCKDQ", kr+", "+kt+", "+kr) // kr = kt:kr (B's bits high)
		a.I("VPANDD", "Z30, "+z+", "+z)
		a.I("VPADDB", "Z29, "+z+", "+kr+", "+z)
	}
}

// smallZWScales writes the scale products of the pair A, B into lo (and,
// for M > 4, hi): [d_A ×8 | d_B ×8] times the record's scales. Uses Y24.
func smallZWScales(a *Asm, atA, atB func(int) string, M int, lo, hi string) {
	a.I("VPBROADCASTW", atA(0)+", Y24")
	a.I("VPBROADCASTW", atB(0)+", K5, Y24")
	a.I("VCVTPH2PS", "Y24, Z24")
	a.I("VMULPS", "(DI), Z24, "+lo)
	if M > 4 {
		a.I("VMULPS", "64(DI), Z24, "+hi)
	}
}

// smallZWDots writes one block's dots of R pairs (weights in Z16+r, scale
// products in Z20+r and Z22+r) with the M activation rows of the record
// at DI, into the accumulators Z(r·M+j).
func smallZWDots(a *Asm, R, M int, wr []int) {
	n := 0
	for j := 0; j < M; j++ {
		for r := 0; r < R; r++ {
			t, s := fmt.Sprintf("Z%d", 24+2*(n%2)), fmt.Sprintf("Z%d", 25+2*(n%2))
			n++
			p := 20 + r
			if j >= 4 {
				p = 22 + r
			}
			a.I("VMOVDQU64", fmt.Sprintf("%d(DI), %s", 192+128*j, t))
			a.I("VPDPBUSD", fmt.Sprintf("%d(DI), Z%d, %s", 128+128*j, wr[r], t))
			a.I("VSUBPS", fmt.Sprintf("Z31, %s, %s", t, t))
			a.I("VPERMILPS", fmt.Sprintf("$0x%02x, Z%d, %s", 0x55*(j%4), p, s))
			a.I("VFMADD231PS", fmt.Sprintf("%s, %s, Z%d", s, t, r*M+j))
		}
	}
}

// smallZWStore writes hsum_float_8 of each half of the accumulators of
// pair r (Z(r·M+j)) to the outputs of weight rows 2r (low half) and 2r+1
// (high half, unless one is false) of every activation row j (AX + off +
// j·R13). Uses R12, Z26, Z27.
func smallZWStore(a *Asm, M, r int, off int, both bool) {
	hsum := func(acc, accx string) {
		a.I("VEXTRACTF32X4", "$1, "+acc+", X27")
		a.I("VADDPS", "X27, "+accx+", "+accx)
		a.I("VMOVHLPS", accx+", "+accx+", X27")
		a.I("VADDPS", "X27, "+accx+", "+accx)
		a.I("VMOVSHDUP", accx+", X27")
		a.I("VADDSS", "X27, "+accx+", "+accx)
	}
	a.I("MOVQ", "AX, R12")
	for j := 0; j < M; j++ {
		z := r*M + j
		if both {
			a.I("VEXTRACTF64X4", fmt.Sprintf("$1, Z%d, Y26", z))
		}
		hsum(fmt.Sprintf("Y%d", z), fmt.Sprintf("X%d", z))
		a.I("VMOVSS", fmt.Sprintf("X%d, %d(R12)", z, off))
		if both {
			hsum("Y26", "X26")
			a.I("VMOVSS", fmt.Sprintf("X26, %d(R12)", off+4))
		}
		if j < M-1 {
			a.I("ADDQ", "R13, R12")
		}
	}
}

func genSmallZW1(a *Asm, k smallKind, M int) {
	name := fmt.Sprintf("smzw%sx%d", k.name, M)
	lbl := strings.ToLower(fmt.Sprintf("smzw%s_%d_", strings.ReplaceAll(k.name, "_", ""), M))
	bs := 128 + 128*M // record bytes per block
	R := smallZWPairs(M)
	a.Text(name, 0, 56)
	a.I("MOVQ", "w+0(FP), R9")
	a.I("MOVQ", "wrb+8(FP), R8")
	a.I("MOVQ", "p+16(FP), R10")
	a.I("MOVQ", "nb+24(FP), R11")
	a.I("MOVQ", "y+32(FP), AX")
	a.I("MOVQ", "ldy+40(FP), R13")
	a.I("SHLQ", "$2, R13")
	a.I("MOVQ", "rows+48(FP), CX")
	a.I("TESTQ", "CX, CX")
	a.I("JZ", lbl+"done")
	a.I("MOVL", "$0x4B400000, BX")
	a.I("VPBROADCASTD", "BX, Z31")
	a.I("MOVL", "$0x0F0F0F0F, BX")
	a.I("VPBROADCASTD", "BX, Z30")
	a.I("VMOVDQU64", "smzwshift<>(SB), Z28")
	if k.name == "Q5_0" {
		a.I("MOVL", "$0x10101010, BX")
		a.I("VPBROADCASTD", "BX, Z29")
	}
	a.I("MOVL", "$0xFF00, BX")
	a.I("KMOVW", "BX, K5")
	a.I("KMOVW", "BX, K6")
	a.I("MOVQ", "R8, R15")
	a.I("SHLQ", "$1, R15")
	a.I("LEAQ", "(R15)(R8*1), DX")

	// The main steps: R pairs, 2R weight rows.
	ats := []func(int) string{smallZAt("SI", ""), smallZAt("SI", "R8"), smallZAt("SI", "R15"), smallZAt("SI", "DX"),
		smallZAt("R14", ""), smallZAt("R14", "R8"), smallZAt("R14", "R15"), smallZAt("R14", "DX")}
	a.Label(lbl + "main")
	a.I("CMPQ", fmt.Sprintf("CX, $%d", 2*R))
	a.I("JLT", lbl+"pair")
	for c := 0; c < R*M; c++ {
		a.I("VPXORD", fmt.Sprintf("Z%d, Z%d, Z%d", c, c, c))
	}
	a.I("MOVQ", "R9, SI")
	if R > 2 {
		a.I("LEAQ", "(R9)(R8*4), R14")
	}
	a.I("MOVQ", "R10, DI")
	a.I("MOVQ", "R11, BX")
	// The prefetch runs two steps ahead: from row 4R on.
	a.I("MOVQ", "R8, R12")
	a.I("SHLQ", fmt.Sprintf("$%d, R12", log2(4*R)))
	a.I("ADDQ", "R9, R12")
	var nxt []int
	switch {
	case R == 2:
		nxt = []int{18, 19}
	case R == 4 && M <= 3:
		nxt = []int{12, 13, 14, 15}
	}
	smallZWBlocks(a, k, M, R, ats, lbl+"m", []int{16, 17, 18, 19}[:R], nxt, 2*R*k.wts, func() {
		a.I("ADDQ", fmt.Sprintf("$%d, SI", k.wts))
		if R > 2 {
			a.I("ADDQ", fmt.Sprintf("$%d, R14", k.wts))
		}
		a.I("ADDQ", fmt.Sprintf("$%d, DI", bs))
		a.I("DECQ", "BX")
	})
	for r := 0; r < R; r++ {
		smallZWStore(a, M, r, 8*r, true)
	}
	a.I("ADDQ", fmt.Sprintf("$%d, AX", 8*R))
	a.I("MOVQ", "R8, R12")
	a.I("SHLQ", fmt.Sprintf("$%d, R12", log2(2*R)))
	a.I("ADDQ", "R12, R9")
	a.I("SUBQ", fmt.Sprintf("$%d, CX", 2*R))
	a.I("JMP", lbl+"main")

	// The pairs left: rows A at SI, B at DX (an odd last row: both A).
	atA, atB := smallZAt("SI", ""), smallZAt("DX", "")
	a.Label(lbl + "pair")
	a.I("TESTQ", "CX, CX")
	a.I("JZ", lbl+"done")
	for j := 0; j < M; j++ {
		a.I("VPXORD", fmt.Sprintf("Z%d, Z%d, Z%d", j, j, j))
	}
	a.I("MOVQ", "R9, SI")
	a.I("LEAQ", "(R9)(R8*1), DX")
	a.I("CMPQ", "CX, $1")
	a.I("JNE", lbl+"two")
	a.I("MOVQ", "R9, DX")
	a.Label(lbl + "two")
	a.I("MOVQ", "R10, DI")
	a.I("MOVQ", "R11, BX")
	a.I("LEAQ", "(R9)(R8*4), R12")
	pn := []int{17}
	smallZWBlocks(a, k, M, 1, []func(int) string{atA, atB}, lbl+"p", []int{16}, pn, 2*k.wts, func() {
		a.I("ADDQ", fmt.Sprintf("$%d, SI", k.wts))
		a.I("ADDQ", fmt.Sprintf("$%d, DX", k.wts))
		a.I("ADDQ", fmt.Sprintf("$%d, DI", bs))
		a.I("DECQ", "BX")
	})
	a.I("CMPQ", "CX, $1")
	a.I("JEQ", lbl+"one")
	smallZWStore(a, M, 0, 0, true)
	a.I("ADDQ", "$8, AX")
	a.I("LEAQ", "(R9)(R8*2), R9")
	a.I("SUBQ", "$2, CX")
	a.I("JMP", lbl+"pair")
	a.Label(lbl + "one")
	smallZWStore(a, M, 0, 0, false)
	a.Label(lbl + "done")
	a.I("VZEROUPPER")
	a.I("RET")
}

// log2 returns the base-2 logarithm of a power of two.
func log2(n int) int {
	l := 0
	for n > 1 {
		n >>= 1
		l++
	}
	return l
}

// smallZWBlocks writes the loop over the nb (≥ 1, in BX) blocks of a step
// of R pairs (weight rows ats[2r] and ats[2r+1]) with M activation rows:
// per block the prefetch (pf bytes), the scale products, the unpack and the
// dots, then adv (which moves the pointers on and decrements BX). With nxt,
// the unpack is software-pipelined: block b+1's weights go to nxt while
// block b's dots run on cur, the two register sets swapping every block
// (the loop unrolled by two; the last block unpacks nothing, so nothing
// past the rows is read).
func smallZWBlocks(a *Asm, k smallKind, M, R int, ats []func(int) string, lbl string, cur, nxt []int, pf int, adv func()) {
	unpack := func(set []int, off int) {
		for r := 0; r < R; r++ {
			atA, atB := ats[2*r], ats[2*r+1]
			smallZWUnpack(a, k, func(o int) string { return atA(o + off) }, func(o int) string { return atB(o + off) },
				fmt.Sprintf("Z%d", set[r]), fmt.Sprintf("K%d", 1+r), "K7")
		}
	}
	body := func(w, next []int, inline bool) {
		smallZPrefetch(a, pf)
		for r := 0; r < R; r++ {
			smallZWScales(a, ats[2*r], ats[2*r+1], M, fmt.Sprintf("Z%d", 20+r), fmt.Sprintf("Z%d", 22+r))
		}
		if inline {
			unpack(w, 0)
		}
		if next != nil {
			unpack(next, k.wts)
		}
		smallZWDots(a, R, M, w)
		adv()
	}
	if nxt == nil {
		a.Label(lbl + "blk")
		body(cur, nil, true)
		a.I("JNZ", lbl+"blk")
		return
	}
	unpack(cur, 0)
	a.Label(lbl + "blk")
	a.I("CMPQ", "BX, $1")
	a.I("JEQ", lbl+"lasta")
	body(cur, nxt, false)
	a.I("CMPQ", "BX, $1")
	a.I("JEQ", lbl+"lastb")
	body(nxt, cur, false)
	a.I("JMP", lbl+"blk")
	a.Label(lbl + "lasta")
	body(cur, nil, false)
	a.I("JMP", lbl+"end")
	a.Label(lbl + "lastb")
	body(nxt, nil, false)
	a.Label(lbl + "end")
}
