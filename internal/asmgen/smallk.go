package main

import (
	"fmt"
	"strings"
)

// Small-M K-quant mat-mul kernels (smallk_amd64.s): Q4_K and Q6_K weights
// against 2..8 Q8_K activation rows on AVX2, the batched decode step of a
// server (see smallm.go for the legacy types). The row kernels
// (rows_avx2.go, dot_kquant_amd64.s) unpack every super-block's nibbles,
// scales and mins once per activation row; these unpack them once per
// weight row and dot them with all M activation rows before the next
// chunk, so the per-row work of a chunk is only VPMADDUBSW, VPMADDWD by
// the scale and VPADDD.
//
// The Go side (backends/cpu/smallk_amd64.go) lays out the M activation
// rows super-block-interleaved as records (so every operand is at a
// constant offset from one pointer), zeroes the float accumulators, runs
// the kernel over tiles of weight rows and segments of super-blocks (the
// accumulators live in memory, so a segment continues where the last one
// stopped: the float order is unchanged), and reduces the accumulators in
// pure Go (hsum_float_8 and the mins sum, as the oracle).
//
//	func smQ<T>KAVX2x<M>(w *byte, wrb int, p *byte, nb int, acc *float32, rows int, t *byte)
//
// w: the first weight row's first super-block of the segment (rows rows,
// wrb bytes apart, nb super-blocks); p: the segment's first record,
// 32 + ss·M + 256·M bytes per super-block: the M activation scales d_a as
// float32 (row j at 4j, padded to 32 bytes), then per row j at 32+ss·j
// its block sums (Q4_K: the 8 int16 sums of each 32 activations, ss=16;
// Q6_K: the 16 int16 bsums of Q8_K, ss=32), then the 256 quants of row j
// at 32+ss·M+256j; acc: the accumulators of weight row 0, 16 floats per
// activation row (8 lanes of acc, then Q4_K's 4 lanes of mins), 16·M
// floats per weight row; t: scratch of the header table, hdr bytes per
// super-block of the segment.
//
// Per weight row, a header pass writes for each super-block of the
// segment a record to t (the products d_w·d_a of the M activation rows as
// one VMULPS, and the scales in the form the chunks read them), then the
// main pass runs the chunks (the header records are read a whole pass
// after they were written: no store-to-load forwarding on the chunks'
// path). Per super-block and activation row the float steps are the
// oracle's (quant.DotQ4KQ8K / DotQ6KQ8K, ggml's AVX2 kernels): acc =
// FMA(cvt(sumi), d_w·d_a, acc); Q4_K's mins accM = FMA(-(d_a·dmin_w),
// cvt(mins·bsum pairs), accM) as one VFNMADD231PS.
//
// Registers: Y0..Y(M-1) the int32 sums of activation rows 0..M-1, Y8..Y13
// the unpacked weights, scales and temporaries, Y14 bytes 0x0F, Y15 the
// mins (Q4_K) or bytes 0x30 (Q6_K). R9 the weight row, R8 wrb, R10 the
// records, R11 nb, AX the accumulators of the weight row, CX rows left,
// R14 t; SI, DI, BX, DX walk the super-blocks, records, header records
// and count.

func init() {
	register("smallk_amd64.s", "amd64 && !purego", genSmallK)
}

// smallKKind is one K-quant weight type of the small-M generator.
type smallKKind struct {
	name string // Q4K, Q6K
	wbs  int    // bytes per super-block
	ss   int    // record bytes of one activation row's block sums
	hdr  int    // header table bytes per super-block
}

var smallKKinds = []smallKKind{{"Q4K", 144, 16, 128}, {"Q6K", 210, 32, 320}}

func genSmallK(a *Asm) {
	a.Blank()
	a.Comment(`Small-M K-quant mat-mul kernels: 2..8 Q8_K activation rows against raw
Q4_K / Q6_K weight rows; see internal/asmgen/smallk.go (the generator)
and backends/cpu/smallk_amd64.go (the Go side).`)
	a.Blank()
	smallKData(a)
	for _, k := range smallKKinds {
		for m := 2; m <= smallMaxM; m++ {
			genSmallKAVX2(a, k, m)
		}
	}
}

// genSmallKAVX2 writes the AVX2 kernel of type k for M activation rows.
func genSmallKAVX2(a *Asm, k smallKKind, M int) {
	name := fmt.Sprintf("sm%sAVX2x%d", k.name, M)
	lbl := strings.ToLower(fmt.Sprintf("smk%s_%d_", k.name, M))
	rs := 32 + k.ss*M + 256*M // record bytes per super-block
	q8 := 32 + k.ss*M         // offset of row 0's quants in a record
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
	a.I("VMOVD", "BX, X14")
	a.I("VPBROADCASTD", "X14, Y14")
	if k.name == "Q6K" {
		a.I("MOVL", "$0x30303030, BX")
		a.I("VMOVD", "BX, X15")
		a.I("VPBROADCASTD", "X15, Y15")
	}
	a.Label(lbl + "row")
	// The header pass.
	a.I("MOVQ", "R9, SI")
	a.I("MOVQ", "R10, DI")
	a.I("MOVQ", "R11, DX")
	a.I("MOVQ", "R14, BX")
	a.Label(lbl + "hdr")
	switch k.name {
	case "Q4K":
		smallKHeaderQ4K(a)
	case "Q6K":
		smallKHeaderQ6K(a)
	}
	a.I("ADDQ", fmt.Sprintf("$%d, SI", k.wbs))
	a.I("ADDQ", fmt.Sprintf("$%d, DI", rs))
	a.I("ADDQ", fmt.Sprintf("$%d, BX", k.hdr))
	a.I("DECQ", "DX")
	a.I("JNZ", lbl+"hdr")
	// The main pass.
	a.I("MOVQ", "R9, SI")
	a.I("MOVQ", "R10, DI")
	a.I("MOVQ", "R11, DX")
	a.I("MOVQ", "R14, BX")
	a.Label(lbl + "blk")
	for i := 0; i < k.wbs; i += 64 {
		a.I("PREFETCHT0", fmt.Sprintf("%d(SI)(R8*1)", i))
	}
	switch k.name {
	case "Q4K":
		smallKChunksQ4K(a, M, q8)
	case "Q6K":
		smallKChunksQ6K(a, M, q8)
	}
	// The float steps of the super-block, per activation row.
	for j := 0; j < M; j++ {
		y, x := fmt.Sprintf("Y%d", j), fmt.Sprintf("X%d", j)
		off := 64 * j
		if k.name == "Q6K" {
			// sumi -= 32·(sc·bsums) over scale pairs (Y9: the 16
			// scales as words).
			a.I("VPMADDWD", fmt.Sprintf("%d(DI)", 32+32*j), "Y9", "Y12")
			a.I("VPSLLD", "$5, Y12, Y12")
			a.I("VPSUBD", "Y12", y, y)
		}
		a.I("VCVTDQ2PS", y, y)
		a.I("VBROADCASTSS", fmt.Sprintf("%d(BX)", dOff(k)+4*j), "Y12")
		a.I("VMOVUPS", fmt.Sprintf("%d(AX)", off), "Y13")
		a.I("VFMADD231PS", y, "Y12", "Y13")
		a.I("VMOVUPS", "Y13", fmt.Sprintf("%d(AX)", off))
		if k.name == "Q4K" {
			a.I("VPMADDWD", fmt.Sprintf("%d(DI)", 32+16*j), "X15", x)
			a.I("VCVTDQ2PS", x, x)
			a.I("VBROADCASTSS", fmt.Sprintf("%d(BX)", 96+4*j), "X12")
			a.I("VMOVUPS", fmt.Sprintf("%d(AX)", off+32), "X13")
			a.I("VFNMADD231PS", x, "X12", "X13")
			a.I("VMOVUPS", "X13", fmt.Sprintf("%d(AX)", off+32))
		}
	}
	a.I("ADDQ", fmt.Sprintf("$%d, SI", k.wbs))
	a.I("ADDQ", fmt.Sprintf("$%d, DI", rs))
	a.I("ADDQ", fmt.Sprintf("$%d, BX", k.hdr))
	a.I("DECQ", "DX")
	a.I("JNZ", lbl+"blk")
	a.I("ADDQ", fmt.Sprintf("$%d, AX", 64*M))
	a.I("ADDQ", "R8, R9")
	a.I("DECQ", "CX")
	a.I("JNZ", lbl+"row")
	a.Label(lbl + "done")
	a.I("VZEROUPPER")
	a.I("RET")
}

// dOff is the offset of the products d_w·d_a in a header record.
func dOff(k smallKKind) int {
	if k.name == "Q6K" {
		return 288
	}
	return 64
}

// smallKHeaderQ4K writes the header record of the Q4_K super-block at SI
// (activation record at DI) to BX:
//
//	0..15    the scales s0..s7 as words (dword j, broadcast, is chunk
//	         j's VPMADDWD multiplier);
//	32..47   the mins m0..m7 as words;
//	64..95   d_w·d_a of the M activation rows;
//	96..127  dmin_w·d_a of the M rows (negated by the FNMADD).
//
// Uses X3, X6, X7, Y10.
func smallKHeaderQ4K(a *Asm) {
	a.I("VPBROADCASTW", "(SI), X10")
	a.I("VCVTPH2PS", "X10, Y10")
	a.I("VMULPS", "(DI), Y10, Y10")
	a.I("VMOVUPS", "Y10, 64(BX)")
	a.I("VPBROADCASTW", "2(SI), X10")
	a.I("VCVTPH2PS", "X10, Y10")
	a.I("VMULPS", "(DI), Y10, Y10")
	a.I("VMOVUPS", "Y10, 96(BX)")
	a.I("VMOVDQU", "(SI), X3")
	a.I("VPSHUFD", "$0xED, X3, X6")
	a.I("VPSRLVD", "smkShift<>(SB), X6, X6")
	a.I("VPAND", "smkMaskA<>(SB), X6, X6")
	a.I("VPSHUFD", "$0xA5, X3, X7")
	a.I("VPSRLD", "$2, X7, X7")
	a.I("VPAND", "smkMaskB<>(SB), X7, X7")
	a.I("VPOR", "X7, X6, X6")
	a.I("VPSHUFB", "smkMinsZX<>(SB), X6, X7")
	a.I("VMOVDQU", "X7, 32(BX)")
	a.I("VPMOVZXBW", "X6, X7")
	a.I("VMOVDQU", "X7, 0(BX)")
}

// smallKHeaderQ6K writes the header record of the Q6_K super-block at SI
// (activation record at DI) to BX:
//
//	0..127   per half n and quarter pair p (at 32·(2n+p)) the VPMADDWD
//	         multiplier: dwords (sc[8n+4p], sc[8n+4p+2]) in the low
//	         128-bit lane (lanes 0..3: elements 0..15 of the quarters),
//	         (sc[8n+4p+1], sc[8n+4p+3]) in the high one;
//	256..287 the 16 scales as words (for the bsums term);
//	288..319 d_w·d_a of the M activation rows.
//
// Uses Y3, Y10.
func smallKHeaderQ6K(a *Asm) {
	a.I("VPBROADCASTW", "208(SI), X10")
	a.I("VCVTPH2PS", "X10, Y10")
	a.I("VMULPS", "(DI), Y10, Y10")
	a.I("VMOVUPS", "Y10, 288(BX)")
	a.I("VPMOVSXBW", "192(SI), Y3")
	a.I("VMOVDQU", "Y3, 256(BX)")
	for c := 0; c < 4; c++ {
		a.I("VPBROADCASTD", fmt.Sprintf("%d(SI), X3", 192+4*c))
		a.I("VPMOVSXBW", "X3, Y3")
		a.I("VPSHUFB", "smkPairQ6<>(SB), Y3, Y3")
		a.I("VMOVDQU", fmt.Sprintf("Y3, %d(BX)", 32*c))
	}
}

// smallKChunksQ4K writes the integer part of one Q4_K super-block. Per
// chunk j (64 elements: 32 bytes of nibbles, sub-blocks 2j and 2j+1) the
// nibbles are unpacked once into two vectors that mix the sub-blocks word
// by word: W1 has in dword k the low nibbles 4k, 4k+1 then the high
// nibbles 4k+2, 4k+3, W2 the low nibbles 4k+2, 4k+3 then the high 4k,
// 4k+1 (the records hold the activations in the same order). Per
// activation row VPMADDUBSW of each against its 32 quants, VPADDW of the
// two (word 2k: Σ of low nibbles 4k..4k+3 · q8, word 2k+1: the high
// ones; |word| ≤ 4·15·128, exact), one VPMADDWD by the scale words
// (s_2j, s_2j+1) — lane k is then ggml's s_2j·(low 4k..4k+3) +
// s_2j+1·(high 4k..4k+3) — and VPADDD into the row's sums (the first
// chunk writes them). Leaves the mins words in X15.
func smallKChunksQ4K(a *Asm, M, q8 int) {
	a.I("VMOVDQU", "32(BX), X15")
	for j := 0; j < 4; j++ {
		a.I("VMOVDQU", fmt.Sprintf("%d(SI), Y9", 16+32*j))
		a.I("VPSRLW", "$4, Y9, Y10")
		a.I("VPAND", "Y14, Y9, Y9")
		a.I("VPAND", "Y14, Y10, Y10")
		a.I("VPBLENDW", "$0xAA, Y10, Y9, Y8")
		a.I("VPBLENDW", "$0xAA, Y9, Y10, Y9")
		a.I("VPSHUFB", "smkSwapW<>(SB), Y9, Y9")
		a.I("VPBROADCASTD", fmt.Sprintf("%d(BX), Y10", 4*j))
		for r := 0; r < M; r++ {
			y := fmt.Sprintf("Y%d", r)
			off := q8 + 256*r + 64*j
			a.I("VPMADDUBSW", fmt.Sprintf("%d(DI)", off), "Y8", "Y12")
			a.I("VPMADDUBSW", fmt.Sprintf("%d(DI)", off+32), "Y9", "Y13")
			a.I("VPADDW", "Y13, Y12, Y12")
			if j == 0 {
				a.I("VPMADDWD", "Y10, Y12", y)
				continue
			}
			a.I("VPMADDWD", "Y10, Y12, Y12")
			a.I("VPADDD", "Y12", y, y)
		}
	}
}

// smallKChunksQ6K writes the integer part of one Q6_K super-block. Per
// half n and quarter i (32 elements) the 6-bit values are unpacked once
// (4 low bits from ql, 2 high bits from qh, unsigned bytes 0..63), and
// the quarters 2p and 2p+1 mixed word by word as the Q4_K kernel mixes
// its sub-blocks (W1: dword k = quarter 2p's values 4k, 4k+1 then 2p+1's
// 4k+2, 4k+3; W2: 2p's 4k+2, 4k+3 then 2p+1's 4k, 4k+1; the records hold
// the activations in the same order). Per activation row VPMADDUBSW of
// each against its 32 quants, VPADDW (|word| ≤ 4·63·128 < 2^15, exact),
// one VPMADDWD by the pair's scale words from the header record (lane k:
// quarter 2p's scale, then 2p+1's, of lane k's 16-element group) and
// VPADDD into the row's sums (the first pair writes them). Leaves the 16
// scales as words in Y9 (for the bsums term).
func smallKChunksQ6K(a *Asm, M, q8 int) {
	// quarter writes the values of quarter i of the half into dst.
	quarter := func(i int, dst string) {
		ql := "Y9"
		if i%2 == 1 {
			ql = "Y10"
		}
		if i < 2 {
			a.I("VPAND", "Y14", ql, dst)
		} else {
			a.I("VPSRLW", "$4", ql, dst)
			a.I("VPAND", "Y14", dst, dst)
		}
		switch i {
		case 0:
			a.I("VPSLLW", "$4, Y8, Y12")
			a.I("VPAND", "Y15, Y12, Y12")
		case 1:
			a.I("VPSLLW", "$2, Y8, Y12")
			a.I("VPAND", "Y15, Y12, Y12")
		case 2:
			a.I("VPAND", "Y15, Y8, Y12")
		case 3:
			a.I("VPSRLW", "$2, Y8, Y12")
			a.I("VPAND", "Y15, Y12, Y12")
		}
		a.I("VPOR", "Y12", dst, dst)
	}
	for n := 0; n < 2; n++ {
		for p := 0; p < 2; p++ {
			// The row loop takes Y8..Y10 as temporaries: each pair
			// loads ql and qh anew.
			a.I("VMOVDQU", fmt.Sprintf("%d(SI), Y9", 64*n))
			a.I("VMOVDQU", fmt.Sprintf("%d(SI), Y10", 64*n+32))
			a.I("VMOVDQU", fmt.Sprintf("%d(SI), Y8", 128+32*n))
			quarter(2*p, "Y11")
			quarter(2*p+1, "Y13")
			a.I("VPBLENDW", "$0xAA, Y13, Y11, Y12")
			a.I("VPBLENDW", "$0xAA, Y11, Y13, Y13")
			a.I("VPSHUFB", "smkSwapW<>(SB), Y13, Y13")
			// Y12: W1, Y13: W2.
			sc := fmt.Sprintf("%d(BX)", 32*(2*n+p))
			for r := 0; r < M; r++ {
				y := fmt.Sprintf("Y%d", r)
				off := q8 + 256*r + 128*n + 64*p
				a.I("VPMADDUBSW", fmt.Sprintf("%d(DI)", off), "Y12", "Y9")
				a.I("VPMADDUBSW", fmt.Sprintf("%d(DI)", off+32), "Y13", "Y10")
				a.I("VPADDW", "Y10, Y9, Y9")
				if n == 0 && p == 0 {
					a.I("VPMADDWD", sc, "Y9", y)
					continue
				}
				a.I("VPMADDWD", sc, "Y9", "Y9")
				a.I("VPADDD", "Y9", y, y)
			}
		}
	}
	a.I("VMOVDQU", "256(BX), Y9")
}

// smallKData writes the file-local constants the K-quant header passes
// and chunks use (each generated file that calls them writes its own).
func smallKData(a *Asm) {
	data := func(name string, qwords ...uint64) {
		for i, q := range qwords {
			a.Raw("DATA %s<>+%d(SB)/8, $0x%016x", name, 8*i, q)
		}
		a.Raw("GLOBL %s<>(SB), RODATA|NOPTR, $%d", name, 8*len(qwords))
	}
	// get_scale_min_k4 on one 16-byte Q4_K header (dwords: d|dmin, u0,
	// u1, u2): after VPSHUFD $0xED [u0, u2, u1, u2] >> [0, 0, 0, 4] &
	// [3f.., 0f.., 3f.., 0f..] | ([u0, u0, u1, u1] >> 2 & [0, 30.., 0,
	// 30..]) = bytes s0..s3, s4..s7, m0..m3, m4..m7.
	data("smkShift", 0, 0x0000000400000000)
	data("smkMaskA", 0x0f0f0f0f3f3f3f3f, 0x0f0f0f0f3f3f3f3f)
	data("smkMaskB", 0x3030303000000000, 0x3030303000000000)
	// Bytes 8..15 (the mins) zero-extended to words.
	data("smkMinsZX", 0x800b800a80098008, 0x800f800e800d800c)
	// Swaps the two words of each dword.
	data("smkSwapW", 0x0504070601000302, 0x0d0c0f0e09080b0a, 0x0504070601000302, 0x0d0c0f0e09080b0a)
	// Q6_K: words [a, b, c, d, a, b, c, d] in each lane to dwords (a, c)
	// in the low 128-bit lane and (b, d) in the high one.
	data("smkPairQ6", 0x0504010005040100, 0x0504010005040100, 0x0706030207060302, 0x0706030207060302)
}
