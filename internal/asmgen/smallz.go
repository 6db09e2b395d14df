package main

import (
	"fmt"
	"strings"
)

// Small-M mat-mul kernels on ZMM for AVX-512 VNNI (smallz_amd64.s): Q8_0,
// Q5_0 and Q4_0 weights against 2..8 Q8_0 activation rows, two activation
// rows per register (row 2q in the low 256 bits, 2q+1 in the high), four
// weight rows per step while four are left (smallZFour), then two. They
// replace the earlier ZMM kernels (smallm.go's, removed), which spent most
// of a block on work outside the dots: per weight row a pass that wrote a
// table of the products d_w·d_a (one VPERMPS and one 64-byte store per
// row pair and block) and read it back, and per block the weight's offset
// (a VPDPBUSD and a subtract) — about 12.7 cycles per block at M=8.
//
// What bounds them (throughput microbenchmarks on the Zen 5 VM): VPDPBUSD,
// VFMADD231PS and VMULPS share two pipes (2 ZMM per cycle together);
// VSUBPS and VCVTDQ2PS two others; VPERMPS (cross-lane) costs more than
// its share, VPERMILPS and the bitwise ops go anywhere; 2 ZMM loads and 1
// ZMM store per cycle; and on the kernels' loops the core retires about
// 4.2 vector instructions per cycle whatever their mix (taking any 8 of
// the 55 out of the old two-row loop saved the same 2.5 cycles), so the
// instruction count per weight-row block is what counts. Per block and
// pair of activation rows the float order needs one VPDPBUSD, one
// int→float conversion, one product d_w·d_a per lane and one FMA; these
// kernels add one offset copy and, per weight row, the scale product and
// the unpack:
//
//   - The weights are the unsigned operand of VPDPBUSD (Q5_0's q5 and
//     Q4_0's q4 as stored, Q8_0's x XOR 0x80 = x+128) and the activations
//     the signed one, so the offset that makes Σ u·y into Σ x·y
//     (-c·Σ of each 4 consecutive y, c = 16, 8, 128) depends on the
//     activation row only: the records hold it, with 0x4B400000
//     (1.5·2^23 as float32) added, and each lane's dot starts from it. The
//     lane then holds 1.5·2^23 + Σ x·y exactly (|Σ x·y| ≤ 4·128·127 <
//     2^22), and VSUBPS of 1.5·2^23 gives float32(Σ x·y) exactly, as
//     VCVTDQ2PS would.
//   - A weight row's d_w (f16, broadcast and converted) times the record's
//     16 activation scales, laid out so that 128-bit lanes 0 and 1 hold
//     d_a0, d_a2, d_a4, d_a6 and lanes 2 and 3 d_a1, d_a3, d_a5, d_a7, is
//     one VMULPS for the block; per row pair q one in-lane VPERMILPS
//     (element q of every lane) makes [d_w·d_a2q ×8 | d_w·d_a2q+1 ×8]. No
//     table, no stores.
//   - The activation quants and offsets of a row pair are loaded once for
//     all the weight rows of the step.
//
// The float order is the row kernels' (see smallm.go): per block the 8
// exact int32 lane sums, converted, one FMA with float32(d_w·d_a), blocks
// in order, then hsum_float_8 — the bits of quant's pure-Go dot.
//
//	func smz<T>x<M>(w *byte, wrb int, p *byte, nb int, y *float32, ldy int, rows int)
//
// w: the first weight row (rows rows, wrb bytes apart, nb blocks each); p:
// the records (64-byte aligned; built by smzRecordsx<M>, see
// genSmallZRecords), per block 64 + 128·Mp bytes for the Mp = M rounded
// up to even activation rows (an odd M gets a row of zero quants, scale 0,
// offset 0x4B400000, whose outputs are not stored): the 16 scales as
// above (float32; zeros past M), then per row pair q at 64+128q the 32
// quants of row 2q and of row 2q+1 (signed, as in the Q8_0 block), then
// at 128+128q their 8 offsets each (int32); y: the output of weight row 0,
// activation row 0 (activation row j's at j·ldy floats). After the
// four-row steps, an odd number of rows left runs the last weight row as
// both rows of a two-row step and stores it once.
//
// Tried on the Q8_0 four-row loop at M=8 and not kept (2026-12-02, paired
// in-process runs of the two kernels, 200 alternated rounds, medians of the
// ratio; docs/PERFORMANCE.md, branch x8step): the weight scales one block
// ahead (four merge-masked word broadcasts, one VCVTPH2PS, a VSHUFF32X4 per
// row) 1.00-1.04x the time; the products as VMULPS of a broadcast d_w by
// per-pair activation scales from the records or a register instead of
// VPERMILPS 0.98-1.01x; VBROADCASTF32X2 of product pairs 0.99-1.01x; the
// quants as VPDPBUSD's memory operand and the offsets loaded per row
// instead of copied 0.99-1.02x; an f32 d_w table read by VMULPS's
// embedded broadcast (simulated) 0.98-1.02x. Dropping instructions
// outright (timing only: the 16 VPERMILPS, or the d_w broadcasts and
// conversions) ran 0.86x, so the loop is bound by how many instructions
// and uops it issues (about 114 per step in about 29 cycles), and every
// replacement tried cost what it saved.
//
// Registers of the two-row loop (the four-row loop's: see smallZFour):
// Z0..Z3 the pair accumulators of weight row A, Z4..Z7 of weight row B,
// Z8 and Z9 A's and B's unsigned weights (the block in both halves),
// Z10..Z14 temporaries, Z15 the scales, Z16 and Z17 A's and B's products,
// Z26 and Z27 temporaries of the stores, Z28 the nibble shifts (Q5_0,
// Q4_0), Z29 bytes 16 (Q5_0), Z30 bytes 0x0F (Q5_0, Q4_0) or 0x80 (Q8_0),
// Z31 0x4B400000; K1, K2 the 5th bits of A and B (Q5_0). SI and DX walk
// weight rows A and B, DI the records, BX counts blocks, R9 the weight
// row of the step, R8 wrb, R10 the records, R11 nb, AX the output, R13 ldy
// in bytes, R12 the output of an activation row, CX rows left.

func init() {
	register("smallz_amd64.s", "amd64 && !purego", genSmallZ)
}

func genSmallZ(a *Asm) {
	a.Blank()
	a.Comment(`Small-M mat-mul kernels on ZMM (AVX-512 VNNI), four or two weight rows per step:
2..8 Q8_0 activation rows against raw Q8_0 / Q5_0 / Q4_0 weight rows;
see internal/asmgen/smallz.go (the generator) and
backends/cpu/smallm_amd64.go (the Go side).`)
	a.Blank()
	// Per-dword right shifts of the nibble bytes: the low nibbles to the
	// first 16 bytes of each half, the high ones to the next 16.
	for h := 0; h < 2; h++ {
		a.Raw("DATA smzshift<>+%d(SB)/8, $0", 32*h)
		a.Raw("DATA smzshift<>+%d(SB)/8, $0", 32*h+8)
		a.Raw("DATA smzshift<>+%d(SB)/8, $0x0000000400000004", 32*h+16)
		a.Raw("DATA smzshift<>+%d(SB)/8, $0x0000000400000004", 32*h+24)
	}
	a.Raw("GLOBL smzshift<>(SB), RODATA|NOPTR, $64")
	for _, k := range smallKinds {
		for m := 2; m <= smallMaxM; m++ {
			genSmallZ2(a, k, m)
		}
	}
	for m := 2; m <= smallMaxM; m++ {
		genSmallZRecords(a, m)
	}
}

// genSmallZRecords writes the record builder of the kernels for M
// activation rows:
//
//	func smzRecordsx<M>(p *byte, act *byte, arb int, nb int, c int)
//
// p: the records (layout in the header comment); act: M Q8_0 rows, arb
// bytes apart, nb blocks each; c: the offset factor of the weight type
// (128, 16, 8). Per row and block it copies the 32 quants, converts d_a
// (f16) and makes the 8 offsets 0x4B400000 - c·Σ (VPDPBUSD of bytes c
// with the quants, subtracted from 0x4B400000). Registers: Y0..Y2
// temporaries, Y13 zero, Y14 0x4B400000, Y15 bytes c; DI the records, R12
// the block's quants of row 0, R13 of row j, R8 arb, R9 blocks left.
func genSmallZRecords(a *Asm, M int) {
	name := fmt.Sprintf("smzRecordsx%d", M)
	lbl := fmt.Sprintf("smzrec_%d_", M)
	mp := (M + 1) &^ 1
	bs := 64 + 64*mp
	a.Text(name, 0, 40)
	a.I("MOVQ", "p+0(FP), DI")
	a.I("MOVQ", "act+8(FP), R12")
	a.I("MOVQ", "arb+16(FP), R8")
	a.I("MOVQ", "nb+24(FP), R9")
	a.I("MOVQ", "c+32(FP), BX")
	a.I("TESTQ", "R9, R9")
	a.I("JZ", lbl+"done")
	a.I("VPBROADCASTB", "BX, Y15")
	a.I("MOVL", "$0x4B400000, BX")
	a.I("VPBROADCASTD", "BX, Y14")
	a.I("VPXOR", "Y13, Y13, Y13")
	a.Label(lbl + "blk")
	a.I("VMOVDQU", "Y13, (DI)")
	a.I("VMOVDQU", "Y13, 32(DI)")
	a.I("MOVQ", "R12, R13")
	for j := 0; j < mp; j++ {
		qo := 64 + 128*(j/2) + 32*(j%2)
		if j >= M {
			a.I("VMOVDQU", fmt.Sprintf("Y13, %d(DI)", qo))
			a.I("VMOVDQU", fmt.Sprintf("Y14, %d(DI)", qo+64))
			continue
		}
		a.I("VMOVDQU", "2(R13), Y0")
		a.I("VMOVDQU", fmt.Sprintf("Y0, %d(DI)", qo))
		a.I("VPXOR", "Y1, Y1, Y1")
		a.I("VPDPBUSD", "Y0, Y15, Y1")
		a.I("VPSUBD", "Y1, Y14, Y1")
		a.I("VMOVDQU", fmt.Sprintf("Y1, %d(DI)", qo+64))
		a.I("VPBROADCASTW", "(R13), X2")
		a.I("VCVTPH2PS", "X2, X2")
		so := 4 * (8*(j%2) + j/2) // see the header comment: the scales' order
		a.I("VMOVSS", fmt.Sprintf("X2, %d(DI)", so))
		a.I("VMOVSS", fmt.Sprintf("X2, %d(DI)", so+16))
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

// smallZWeights writes the unpacking of the weight block at at(0) into its
// unsigned values in both halves of z (at(off) is the operand of the
// block's byte off); kr is the mask register for Q5_0.
func smallZWeights(a *Asm, k smallKind, at func(off int) string, z, kr string) {
	switch k.name {
	case "Q8_0":
		a.I("VBROADCASTI64X4", at(2)+", "+z)
		a.I("VPXORD", "Z30, "+z+", "+z)
	case "Q4_0":
		a.I("VBROADCASTI32X4", at(2)+", "+z)
		a.I("VPSRLVD", "Z28, "+z+", "+z)
		a.I("VPANDD", "Z30, "+z+", "+z)
	case "Q5_0":
		a.I("VBROADCASTI32X4", at(6)+", "+z)
		a.I("KMOVD", at(2)+", "+kr)
		a.I("VPSRLVD", "Z28, "+z+", "+z)
		a.I("KUNPCKDQ", kr+", "+kr+", "+kr)
		a.I("VPANDD", "Z30, "+z+", "+z)
		a.I("VPADDB", "Z29, "+z+", "+kr+", "+z)
	}
}

// smallZAt returns the operand maker of a weight row based at reg (and
// index idx·1 when idx is not empty).
func smallZAt(reg, idx string) func(int) string {
	return func(off int) string {
		if idx == "" {
			return fmt.Sprintf("%d(%s)", off, reg)
		}
		return fmt.Sprintf("%d(%s)(%s*1)", off, reg, idx)
	}
}

// smallZFour writes the loop over four weight rows at a time (while at
// least four are left) of the kernel for M activation rows: weight rows
// A..D at SI, SI+wrb, SI+2·wrb, SI+3·wrb (R8 = wrb, DX = 3·wrb), the
// accumulators of row r's pair q in Z(np·r+q), the weights in Z16..Z19,
// the products in Z20..Z23, K1..K4 their 5th bits (Q5_0), Z24 the pair's
// quants, Z25 its offsets, Z26 and Z27 temporaries (Z26 the scales first).
// Per pair the quants and offsets are loaded once for the four rows.
func smallZFour(a *Asm, k smallKind, M int, lbl string) {
	mp := (M + 1) &^ 1
	np := mp / 2
	bs := 64 + 128*np
	ats := []func(int) string{smallZAt("SI", ""), smallZAt("SI", "R8"), smallZAt("SI", "R15"), smallZAt("SI", "DX")}
	a.I("MOVQ", "R8, R15")
	a.I("SHLQ", "$1, R15")
	a.I("LEAQ", "(R15)(R8*1), DX")
	a.Label(lbl + "four")
	a.I("CMPQ", "CX, $4")
	a.I("JLT", lbl+"row")
	for c := 0; c < 4*np; c++ {
		a.I("VPXORD", fmt.Sprintf("Z%d, Z%d, Z%d", c, c, c))
	}
	a.I("MOVQ", "R9, SI")
	a.I("MOVQ", "R10, DI")
	a.I("MOVQ", "R11, BX")
	a.I("LEAQ", "(R9)(R8*8), R12")
	a.Label(lbl + "fblk")
	smallZPrefetch(a, 4*k.wts)
	a.I("VMOVUPS", "(DI), Z26")
	for r := 0; r < 4; r++ {
		a.I("VPBROADCASTW", fmt.Sprintf("%s, Y%d", ats[r](0), 20+r))
		a.I("VCVTPH2PS", fmt.Sprintf("Y%d, Z%d", 20+r, 20+r))
		a.I("VMULPS", fmt.Sprintf("Z26, Z%d, Z%d", 20+r, 20+r))
	}
	for r := 0; r < 4; r++ {
		smallZWeights(a, k, ats[r], fmt.Sprintf("Z%d", 16+r), fmt.Sprintf("K%d", 1+r))
	}
	for q := 0; q < np; q++ {
		a.I("VMOVDQU64", fmt.Sprintf("%d(DI), Z24", 64+128*q))
		a.I("VMOVDQU64", fmt.Sprintf("%d(DI), Z25", 128+128*q))
		for r := 0; r < 4; r++ {
			t := "Z26"
			if r < 3 {
				a.I("VMOVDQA64", "Z25, Z26")
			} else {
				t = "Z25"
			}
			a.I("VPDPBUSD", fmt.Sprintf("Z24, Z%d, %s", 16+r, t))
			a.I("VSUBPS", fmt.Sprintf("Z31, %s, %s", t, t))
			a.I("VPERMILPS", fmt.Sprintf("$0x%02x, Z%d, Z27", 0x55*q, 20+r))
			a.I("VFMADD231PS", fmt.Sprintf("Z27, %s, Z%d", t, np*r+q))
		}
	}
	a.I("ADDQ", fmt.Sprintf("$%d, SI", k.wts))
	a.I("ADDQ", fmt.Sprintf("$%d, DI", bs))
	a.I("DECQ", "BX")
	a.I("JNZ", lbl+"fblk")
	for r := 0; r < 4; r++ {
		smallZStore(a, M, r*np, 4*r)
	}
	a.I("ADDQ", "$16, AX")
	a.I("LEAQ", "(R9)(R8*4), R9")
	a.I("SUBQ", "$4, CX")
	a.I("JMP", lbl+"four")
}

// smallZPrefetch writes the software prefetch of a block step: the weight
// rows two steps ahead (from R12, which moves by step bytes, the weights
// of a step's rows per block), one line per 64 bytes. The rows of a step
// are short streams side by side, which the hardware prefetchers leave to
// the demand misses: without it the kernels ran 2.5× slower on weights
// from DRAM than from L2 (BenchmarkSmallM's are in L2).
func smallZPrefetch(a *Asm, step int) {
	for o := 0; o < step; o += 64 {
		a.I("PREFETCHT0", fmt.Sprintf("%d(R12)", o))
	}
	a.I("ADDQ", fmt.Sprintf("$%d, R12", step))
}

// smallZStore writes hsum_float_8 of each half of the pair accumulators
// Z(base)..Z(base+np-1) to the M outputs of one weight row (activation
// row j's at AX + off + j·R13; not the pad row). Uses R12, Z26, Z27.
func smallZStore(a *Asm, M, base, off int) {
	np := (M + 1) / 2
	hsum := func(acc, accx string) {
		a.I("VEXTRACTF32X4", "$1, "+acc+", X27")
		a.I("VADDPS", "X27, "+accx+", "+accx)
		a.I("VMOVHLPS", accx+", "+accx+", X27")
		a.I("VADDPS", "X27, "+accx+", "+accx)
		a.I("VMOVSHDUP", accx+", X27")
		a.I("VADDSS", "X27, "+accx+", "+accx)
	}
	a.I("MOVQ", "AX, R12")
	for q := 0; q < np; q++ {
		z := base + q
		a.I("VEXTRACTF64X4", fmt.Sprintf("$1, Z%d, Y26", z))
		hsum(fmt.Sprintf("Y%d", z), fmt.Sprintf("X%d", z))
		a.I("VMOVSS", fmt.Sprintf("X%d, %d(R12)", z, off))
		if 2*q+1 < M {
			a.I("ADDQ", "R13, R12")
			hsum("Y26", "X26")
			a.I("VMOVSS", fmt.Sprintf("X26, %d(R12)", off))
			if 2*q+2 < M {
				a.I("ADDQ", "R13, R12")
			}
		}
	}
}

func genSmallZ2(a *Asm, k smallKind, M int) {
	name := fmt.Sprintf("smz%sx%d", k.name, M)
	lbl := strings.ToLower(fmt.Sprintf("smz%s_%d_", strings.ReplaceAll(k.name, "_", ""), M))
	mp := (M + 1) &^ 1
	np := mp / 2
	bs := 64 + 128*np // record bytes per block
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
	switch k.name {
	case "Q8_0":
		a.I("MOVL", "$0x80808080, BX")
		a.I("VPBROADCASTD", "BX, Z30")
	default:
		a.I("MOVL", "$0x0F0F0F0F, BX")
		a.I("VPBROADCASTD", "BX, Z30")
		a.I("VMOVDQU64", "smzshift<>(SB), Z28")
	}
	if k.name == "Q5_0" {
		a.I("MOVL", "$0x10101010, BX")
		a.I("VPBROADCASTD", "BX, Z29")
	}
	smallZFour(a, k, M, lbl)
	a.Label(lbl + "row")
	a.I("TESTQ", "CX, CX")
	a.I("JZ", lbl+"done")
	for q := 0; q < np; q++ {
		a.I("VPXORD", fmt.Sprintf("Z%d, Z%d, Z%d", q, q, q))
		a.I("VPXORD", fmt.Sprintf("Z%d, Z%d, Z%d", 4+q, 4+q, 4+q))
	}
	a.I("MOVQ", "R9, SI")
	a.I("LEAQ", "(R9)(R8*1), DX")
	a.I("CMPQ", "CX, $1")
	a.I("JNE", lbl+"two")
	a.I("MOVQ", "R9, DX") // one row left: run it as both rows
	a.Label(lbl + "two")
	a.I("MOVQ", "R10, DI")
	a.I("MOVQ", "R11, BX")
	a.I("LEAQ", "(R9)(R8*4), R12")
	a.Label(lbl + "blk")
	smallZPrefetch(a, 2*k.wts)
	// The 16 products [d_A·d_a0..7 | d_B·d_a0..7].
	a.I("VMOVUPS", "(DI), Z15")
	a.I("VPBROADCASTW", "(SI), Y16")
	a.I("VPBROADCASTW", "(DX), Y17")
	a.I("VCVTPH2PS", "Y16, Z16")
	a.I("VCVTPH2PS", "Y17, Z17")
	a.I("VMULPS", "Z15, Z16, Z16")
	a.I("VMULPS", "Z15, Z17, Z17")
	smallZWeights(a, k, smallZAt("SI", ""), "Z8", "K1")
	smallZWeights(a, k, smallZAt("DX", ""), "Z9", "K2")
	for q := 0; q < np; q++ {
		qo, oo := 64+128*q, 128+128*q
		a.I("VMOVDQU64", fmt.Sprintf("%d(DI), Z11", qo))
		a.I("VMOVDQU64", fmt.Sprintf("%d(DI), Z10", oo))
		a.I("VMOVDQA64", "Z10, Z12")
		a.I("VPDPBUSD", "Z11, Z8, Z12")
		a.I("VPDPBUSD", "Z11, Z9, Z10")
		a.I("VSUBPS", "Z31, Z12, Z12")
		a.I("VSUBPS", "Z31, Z10, Z10")
		a.I("VPERMILPS", fmt.Sprintf("$0x%02x, Z16, Z13", 0x55*q))
		a.I("VPERMILPS", fmt.Sprintf("$0x%02x, Z17, Z14", 0x55*q))
		a.I("VFMADD231PS", fmt.Sprintf("Z13, Z12, Z%d", q))
		a.I("VFMADD231PS", fmt.Sprintf("Z14, Z10, Z%d", 4+q))
	}
	a.I("ADDQ", fmt.Sprintf("$%d, SI", k.wts))
	a.I("ADDQ", fmt.Sprintf("$%d, DX", k.wts))
	a.I("ADDQ", fmt.Sprintf("$%d, DI", bs))
	a.I("DECQ", "BX")
	a.I("JNZ", lbl+"blk")
	// A's outputs at AX, B's at AX+4 (not B when it is A).
	smallZStore(a, M, 0, 0)
	a.I("CMPQ", "CX, $1")
	a.I("JEQ", lbl+"done")
	smallZStore(a, M, 4, 4)
	a.I("ADDQ", "$8, AX")
	a.I("LEAQ", "(R9)(R8*2), R9")
	a.I("SUBQ", "$2, CX")
	a.I("JNZ", lbl+"row")
	a.Label(lbl + "done")
	a.I("VZEROUPPER")
	a.I("RET")
}
