package main

import (
	"fmt"
	"strings"
)

// Small-M K-quant mat-mul kernels on ZMM for AVX-512 VNNI (smallkz_amd64.s):
// Q4_K and Q6_K weights against 2..8 Q8_K activation rows, two activation
// rows per register (row 2q in the low 256 bits, 2q+1 in the high; an odd
// M gets a pad row of zero quants and scale 0 whose outputs are dropped).
// They follow the AVX2 kernels of smallk.go (records per super-block,
// tiles of weight rows over segments of super-blocks, a header pass per
// weight row and segment, the oracle's float steps per super-block), with
// the integer part per sub-block of 32 elements and row pair reduced to
// two instructions: VPMADDUBSW of the unsigned weight values (the same in
// both halves) with the pair's 64 activation quants (one load), and
// VPDPWSSD with the sub-block's scale as the word pair (s, s) in every
// dword — so lane k gains s·(Σ of elements 4k..4k+3), as the oracle's
// VPMADDWD by the scale words and VPADDD do (|word| ≤ 2·63·128, the
// integer sums are exact in any order). No mixing of sub-blocks: the
// records hold each row's quants in Q8_K's order, the pair's two rows'
// 32 quants of a sub-block side by side.
//
//	func smz<T>x<M>(w *byte, wrb int, p *byte, nb int, acc *float32, rows int, t *byte)
//
// Arguments as smallk.go's, with Mp = M rounded up to even: records of
// 32 + ss·Mp + 256·Mp bytes per super-block (d_a of the Mp rows as
// float32, zeros to 32 bytes; each row's block sums, ss bytes; then per
// sub-block i (32 elements) and pair q at 32 + ss·Mp + 64·(Mp/2·i + q)
// the 32 quants of row 2q and of row 2q+1); acc: 16 floats per activation
// row (8 lanes of acc, then Q4_K's 4 lanes of mins), 16·Mp floats per
// weight row; t: hdr bytes per super-block of the segment.
//
// Header records (t, per super-block):
//
//	Q4_K (128 bytes): 0..31 the 8 sub-block scales as dwords (s, s);
//	  32..47 the mins as words; 64..95 d_w·d_a of the rows; 96..127
//	  dmin_w·d_a (smallKHeaderQ4K, then the scale dwords).
//	Q6_K (64 bytes): 0..31 the 16 scales as words (the bsums term);
//	  32..63 d_w·d_a of the rows. Each quarter's scale vector (g = 4n+i,
//	  32 elements, scales sc[2g] for its first 16 and sc[2g+1] for the
//	  next: dwords (sc[2g], sc[2g]) in lanes 0..3 and 8..11, (sc[2g+1],
//	  sc[2g+1]) in 4..7 and 12..15) is made in the main pass, a VPSHUFB
//	  of the 16 scale bytes (Y23, both 128-bit lanes) and a VPMOVSXBW:
//	  storing the eight in the header pass for the main pass to load
//	  (512 bytes per super-block and weight row) made the kernels 15-20%
//	  slower (K=4864, M=8: 405-415 -> 341-355 cpu-ns per weight row,
//	  alternated runs).
//
// Per super-block and row pair the float steps of each half are the
// oracle's for its row: acc = FMA(cvt(sumi), d_w·d_a, acc) (a masked FMA
// per half with the row's product broadcast), Q4_K's mins accM =
// FNMADD(cvt(mins·bsum pairs), dmin_w·d_a, accM) on a YMM of the pair's
// two 4-lane mins; Q6_K's sumi first loses 32·(sc·bsums) (VPMADDWD of the
// pair's 32 bsums by the scale words, shifted by 5).
//
// Where the time goes (2026-12-02, Q4_K, K=4864, M=8, paired in-process
// runs against variants with parts removed, timing only; branch x8step):
// about 72 cycles per super-block and weight row for about 161
// instructions (2.2 per cycle, where the legacy kernels of smallz.go issue
// about 4): without the header pass 0.90x the time, without the float
// steps 0.94x, with the 32 record loads per super-block turned into a
// register operand 0.87x, without the prefetches 1.00x; splitting each
// accumulator's four VPDPWSSD per super-block over two registers (eight
// more accumulators, summed at the end) 1.02x. No one part dominates.
//
// Registers: Z0..Z7 the int32 sums of the pairs (two chains per pair,
// four for one pair: pair q's chain c in Z(np·c+q)), Z20 and Z21 the
// weight values (Q4_K: a chunk's two sub-blocks; Q6_K: Z20 a quarter), Z22
// the scale vector, Y23 Q6_K's 16 scale bytes in both 128-bit lanes,
// Z8..Z10 Q6_K's ql, ql and qh, Z11 and Z12
// temporaries, Z14 bytes 0x0F, Z15 bytes 0x30 (Q6_K), Z16..Z19 the pairs'
// acc lanes, Y24..Y27 the pairs' mins lanes (Q4_K), Y28 the mins words in
// both 128-bit lanes, K1 and K2 the low and high 8 lanes, K3 and K4 the
// low and high 4 of 8; the header passes use X3, X6, X7, Y10, Y11. The
// general registers as the AVX2 kernels', and R15 16·wrb (the prefetch).

func init() {
	register("smallkz_amd64.s", "amd64 && !purego", genSmallKZ)
}

func genSmallKZ(a *Asm) {
	a.Blank()
	a.Comment(`Small-M K-quant mat-mul kernels on ZMM (AVX-512 VNNI): 2..8 Q8_K
activation rows against raw Q4_K / Q6_K weight rows; see
internal/asmgen/smallkz.go (the generator) and backends/cpu/smallkz_amd64.go
(the Go side).`)
	a.Blank()
	smallKData(a)
	// Q6_K scale vectors: VPSHUFB controls making, from the 16 scale bytes in
	// each 128-bit lane, bytes sc[2g] ×8 then sc[2g+1] ×8 in each lane.
	for g := 0; g < 8; g++ {
		for o := 0; o < 32; o += 8 {
			v := 2 * g
			if o%16 == 8 {
				v++
			}
			a.Raw("DATA smkzQ6Sh<>+%d(SB)/8, $0x%016x", 32*g+o, uint64(v)*0x0101010101010101)
		}
	}
	a.Raw("GLOBL smkzQ6Sh<>(SB), RODATA|NOPTR, $256")
	for _, k := range smallKKinds {
		for m := 2; m <= smallMaxM; m++ {
			genSmallKZ1(a, k, m)
		}
	}
}

// smallKZHdr is the header record size of the ZMM kernels.
func smallKZHdr(k smallKKind) int {
	if k.name == "Q6K" {
		return 64
	}
	return 128
}

// smallKZHeaderQ6K writes the Q6_K header record (see the top comment) of
// the super-block at SI, activation record at DI, to BX. Uses Y10.
func smallKZHeaderQ6K(a *Asm) {
	a.I("VPMOVSXBW", "192(SI), Y10")
	a.I("VMOVDQU", "Y10, 0(BX)")
	a.I("VPBROADCASTW", "208(SI), X10")
	a.I("VCVTPH2PS", "X10, Y10")
	a.I("VMULPS", "(DI), Y10, Y10")
	a.I("VMOVUPS", "Y10, 32(BX)")
}

// genSmallKZ1 writes the kernel of type k for M activation rows.
func genSmallKZ1(a *Asm, k smallKKind, M int) {
	name := fmt.Sprintf("smz%sx%d", k.name, M)
	lbl := strings.ToLower(fmt.Sprintf("smkz%s_%d_", k.name, M))
	mp := (M + 1) &^ 1
	np := mp / 2
	rs := 32 + k.ss*mp + 256*mp // record bytes per super-block
	q8 := 32 + k.ss*mp          // offset of the quants in a record
	hdr := smallKZHdr(k)
	q4 := k.name == "Q4K"
	a.Text(name, 0, 56)
	a.I("MOVQ", "w+0(FP), R9")
	a.I("MOVQ", "wrb+8(FP), R8")
	a.I("MOVQ", "p+16(FP), R10")
	a.I("MOVQ", "nb+24(FP), R11")
	a.I("MOVQ", "acc+32(FP), AX")
	a.I("MOVQ", "rows+40(FP), CX")
	a.I("MOVQ", "t+48(FP), R14")
	a.I("TESTQ", "CX, CX")
	a.I("JZ", lbl+"done")
	a.I("TESTQ", "R11, R11")
	a.I("JZ", lbl+"done")
	a.I("MOVL", "$0x0F0F0F0F, BX")
	a.I("VPBROADCASTD", "BX, Z14")
	if !q4 {
		a.I("MOVL", "$0x30303030, BX")
		a.I("VPBROADCASTD", "BX, Z15")
	}
	for i, m := range []int{0x00FF, 0xFF00, 0x0F, 0xF0} {
		a.I("MOVL", fmt.Sprintf("$0x%04x, BX", m))
		a.I("KMOVW", fmt.Sprintf("BX, K%d", i+1))
	}
	a.I("MOVQ", "R8, R15")
	a.I("SHLQ", "$4, R15")
	a.Label(lbl + "row")
	// The header pass.
	a.I("MOVQ", "R9, SI")
	a.I("MOVQ", "R10, DI")
	a.I("MOVQ", "R11, DX")
	a.I("MOVQ", "R14, BX")
	a.Label(lbl + "hdr")
	if q4 {
		smallKHeaderQ4K(a)
		// The scale dwords (s, s) over the words s0..s7 (X6: bytes s0..s7).
		a.I("VPMOVZXBD", "X6, Y7")
		a.I("VPSLLD", "$16, Y7, Y3")
		a.I("VPOR", "Y3, Y7, Y7")
		a.I("VMOVDQU", "Y7, 0(BX)")
	} else {
		smallKZHeaderQ6K(a)
	}
	a.I("ADDQ", fmt.Sprintf("$%d, SI", k.wbs))
	a.I("ADDQ", fmt.Sprintf("$%d, DI", rs))
	a.I("ADDQ", fmt.Sprintf("$%d, BX", hdr))
	a.I("DECQ", "DX")
	a.I("JNZ", lbl+"hdr")
	// The pairs' accumulators: acc lanes of row 2q at 128q(AX), of 2q+1
	// 64 bytes on; mins lanes 32 bytes after each.
	for q := 0; q < np; q++ {
		z := fmt.Sprintf("Z%d", 16+q)
		a.I("VMOVUPS", fmt.Sprintf("%d(AX), Y%d", 128*q, 16+q))
		a.I("VINSERTF64X4", fmt.Sprintf("$1, %d(AX), %s, %s", 128*q+64, z, z))
		if q4 {
			y := fmt.Sprintf("Y%d", 24+q)
			a.I("VMOVUPS", fmt.Sprintf("%d(AX), X%d", 128*q+32, 24+q))
			a.I("VINSERTF32X4", fmt.Sprintf("$1, %d(AX), %s, %s", 128*q+96, y, y))
		}
	}
	// The main pass.
	a.I("MOVQ", "R9, SI")
	a.I("MOVQ", "R10, DI")
	a.I("MOVQ", "R11, DX")
	a.I("MOVQ", "R14, BX")
	a.Label(lbl + "blk")
	// Prefetch the super-block of the weight row 16 rows on: the next
	// tile's (smallKTile on the Go side), read a tile later, from L2.
	for i := 0; i < k.wbs; i += 64 {
		a.I("PREFETCHT0", fmt.Sprintf("%d(SI)(R15*1)", i))
	}
	// Sub-block i adds into chain i%nc of each pair (register
	// Z(np·(i%nc)+q)), so that the VPDPWSSD latency chains are short; the
	// chains are added up before the float steps.
	nc := 2
	if np == 1 {
		nc = 4
	}
	for c := 0; c < nc*np; c++ {
		a.I("VPXORD", fmt.Sprintf("Z%d, Z%d, Z%d", c, c, c))
	}
	// dots writes the sub-block i's work against the weight values in wz
	// with the scale vector in Z22.
	dots := func(i int, wz string) {
		for q := 0; q < np; q++ {
			a.I("VPMADDUBSW", fmt.Sprintf("%d(DI), %s, Z11", q8+64*(np*i+q), wz))
			a.I("VPDPWSSD", fmt.Sprintf("Z22, Z11, Z%d", np*(i%nc)+q))
		}
	}
	if q4 {
		for j := 0; j < 4; j++ {
			a.I("VBROADCASTI64X4", fmt.Sprintf("%d(SI), Z20", 16+32*j))
			a.I("VPSRLW", "$4, Z20, Z21")
			a.I("VPANDD", "Z14, Z20, Z20")
			a.I("VPANDD", "Z14, Z21, Z21")
			a.I("VPBROADCASTD", fmt.Sprintf("%d(BX), Z22", 8*j))
			dots(2*j, "Z20")
			a.I("VPBROADCASTD", fmt.Sprintf("%d(BX), Z22", 8*j+4))
			dots(2*j+1, "Z21")
		}
	} else {
		a.I("VBROADCASTI32X4", "192(SI), Y23")
		for n := 0; n < 2; n++ {
			a.I("VBROADCASTI64X4", fmt.Sprintf("%d(SI), Z8", 64*n))
			a.I("VBROADCASTI64X4", fmt.Sprintf("%d(SI), Z9", 64*n+32))
			a.I("VBROADCASTI64X4", fmt.Sprintf("%d(SI), Z10", 128+32*n))
			for i := 0; i < 4; i++ {
				// Quarter i: the low (i < 2) or high nibbles of ql
				// (Z8 for even i, Z9 for odd), bits 2i, 2i+1 of qh
				// to bits 4, 5.
				ql := "Z8"
				if i%2 == 1 {
					ql = "Z9"
				}
				if i < 2 {
					a.I("VPANDD", "Z14, "+ql+", Z20")
				} else {
					a.I("VPSRLW", "$4, "+ql+", Z20")
					a.I("VPANDD", "Z14, Z20, Z20")
				}
				switch i {
				case 0:
					a.I("VPSLLW", "$4, Z10, Z12")
				case 1:
					a.I("VPSLLW", "$2, Z10, Z12")
				case 3:
					a.I("VPSRLW", "$2, Z10, Z12")
				}
				hb := "Z12"
				if i == 2 {
					hb = "Z10" // bits 4, 5 in place
				}
				a.I("VPTERNLOGD", "$0xF8, Z15, "+hb+", Z20") // Z20 |= hb & Z15
				a.I("VPSHUFB", fmt.Sprintf("smkzQ6Sh<>+%d(SB), Y23, Y22", 32*(4*n+i)))
				a.I("VPMOVSXBW", "Y22, Z22")
				dots(4*n+i, "Z20")
			}
		}
	}
	for c := 1; c < nc; c++ {
		for q := 0; q < np; q++ {
			a.I("VPADDD", fmt.Sprintf("Z%d, Z%d, Z%d", np*c+q, q, q))
		}
	}
	if !q4 {
		// sumi -= 32·(sc·bsums).
		a.I("VBROADCASTI64X4", "0(BX), Z22")
		for q := 0; q < np; q++ {
			a.I("VPMADDWD", fmt.Sprintf("%d(DI), Z22, Z11", 32+64*q))
			a.I("VPSLLD", "$5, Z11, Z11")
			a.I("VPSUBD", fmt.Sprintf("Z11, Z%d, Z%d", q, q))
		}
	}
	// The float steps of the super-block, per pair.
	pOff := 64
	if !q4 {
		pOff = 32
	}
	if q4 {
		a.I("VBROADCASTI32X4", "32(BX), Y28")
	}
	for q := 0; q < np; q++ {
		a.I("VCVTDQ2PS", fmt.Sprintf("Z%d, Z%d", q, q))
		a.I("VFMADD231PS.BCST", fmt.Sprintf("%d(BX), Z%d, K1, Z%d", pOff+8*q, q, 16+q))
		a.I("VFMADD231PS.BCST", fmt.Sprintf("%d(BX), Z%d, K2, Z%d", pOff+8*q+4, q, 16+q))
		if q4 {
			a.I("VPMADDWD", fmt.Sprintf("%d(DI), Y28, Y11", 32+32*q))
			a.I("VCVTDQ2PS", "Y11, Y11")
			a.I("VFNMADD231PS.BCST", fmt.Sprintf("%d(BX), Y11, K3, Y%d", 96+8*q, 24+q))
			a.I("VFNMADD231PS.BCST", fmt.Sprintf("%d(BX), Y11, K4, Y%d", 96+8*q+4, 24+q))
		}
	}
	a.I("ADDQ", fmt.Sprintf("$%d, SI", k.wbs))
	a.I("ADDQ", fmt.Sprintf("$%d, DI", rs))
	a.I("ADDQ", fmt.Sprintf("$%d, BX", hdr))
	a.I("DECQ", "DX")
	a.I("JNZ", lbl+"blk")
	for q := 0; q < np; q++ {
		z := fmt.Sprintf("Z%d", 16+q)
		a.I("VMOVUPS", fmt.Sprintf("Y%d, %d(AX)", 16+q, 128*q))
		a.I("VEXTRACTF64X4", fmt.Sprintf("$1, %s, %d(AX)", z, 128*q+64))
		if q4 {
			y := fmt.Sprintf("Y%d", 24+q)
			a.I("VMOVUPS", fmt.Sprintf("X%d, %d(AX)", 24+q, 128*q+32))
			a.I("VEXTRACTF32X4", fmt.Sprintf("$1, %s, %d(AX)", y, 128*q+96))
		}
	}
	a.I("ADDQ", fmt.Sprintf("$%d, AX", 64*mp))
	a.I("ADDQ", "R8, R9")
	a.I("DECQ", "CX")
	a.I("JNZ", lbl+"row")
	a.Label(lbl + "done")
	a.I("VZEROUPPER")
	a.I("RET")
}
