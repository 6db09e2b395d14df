package main

import (
	"fmt"
	"strings"
)

// Row-parallel mat-mul kernels on ZMM for AVX-512 VNNI (r16_amd64.s) on
// the sixteen-row layouts Q8_0r16, Q5_0r16 and Q4_0r16 (quant/r16.go): sixteen
// weight rows in the sixteen 32-bit lanes of a register, against 1..8
// Q8_0 activation rows.
//
// Per block of a tile, the weights are made unsigned bytes u = x+128 in
// eight registers W0..W7 (group k: each row's elements 4k..4k+3): Q8_0r16
// stores them so (eight loads); Q5_0r16 stores the nibbles and the fifth
// bits (per pair of groups c, c+4: one load, one shift, two VPTERNLOGD
// (nib & 0x0F) | 0x70, two masked adds of 0x10 under the stored masks);
// Q4_0r16 the nibbles (one load, one shift, two ANDs, two adds of 0x78).
// Per activation row t, the int32 accumulator starts at the record's
// -128·Σy (the activation quants' sum, which turns Σ u·y into Σ x·y) and
// eight VPDPBUSD, each against four of the row's quants broadcast
// (m32bcst, straight from the Q8_0 block), leave every weight row's exact
// block sum in its lane; then one VCVTDQ2PS, the 16 products d_w·d_a (the
// block's 16 scales, converted once, times the record's d_a broadcast) and
// one FMA into the row's float accumulator — the order of quant.DotR16.
// So per (16 weight rows, activation row, block) 12 instructions, and per
// block of the tile the weight unpack once for all activation rows.
//
//	func r16<T>m<M>(w *byte, nb int, a *byte, arb int, rec *byte, y *float32, ldy int, tiles int)
//
// w: the first tile (tiles tiles one after the other, each 16·nb·(34 or
// 22) bytes); a: activation row 0 (Q8_0, nb blocks; row t at t·arb
// bytes); rec: per block b and activation row t at 8·(b·M+t) the int32
// -128·Σ of the block's 32 quants and d_a as float32; y: output of tile 0,
// activation row 0 (16 floats; activation row t's at t·ldy floats, tile
// i's 16 floats further each).
//
// Registers: Z0..Z7 the weights, Z8..Z15 the float accumulators of the
// activation rows, Z16..Z23 their int32 block sums, Z24 the block's 16
// d_w, Z25, Z26 products, Z28..Z30 bytes 0x0F, 0x70, 0x10 (Q5_0r16); K1,
// K2 the fifth bits. AX the block's quants, DX its scales, DI its records,
// BX blocks left, SI activation row 0's block (rows 3, 5 and 7 from R9 =
// SI+3·arb), R10 arb, R11 6·arb, R8 nb, CX tiles left, R12 the tile's
// output, R13 ldy in bytes, R14 a, R15 rec.

// r16PFDist is how far ahead of a block's quants the kernels prefetch, into
// L2 (PREFETCHT2, every line of the block and its scales): measured
// (BenchmarkR16Decode, one activation row over a 1 GiB matrix), PREFETCHT0
// at any distance runs out of the L1's miss buffers (the prefetches
// themselves stall) and reads 10-15 GB/s at K=896; PREFETCHT2 at 8-32 KiB
// reads 18-21 GB/s, the GGUF-layout kernels' rate.
const r16PFDist = 16384

func init() {
	register("r16_amd64.s", "amd64 && !purego", genR16)
}

func genR16(a *Asm) {
	a.Blank()
	a.Comment(`Row-parallel mat-mul kernels on ZMM (AVX-512 VNNI) for the sixteen-row
layouts Q8_0r16 and Q5_0r16 against 1..8 Q8_0 activation rows; see
internal/asmgen/r16.go (the generator), quant/r16.go (the layouts and the
oracle) and backends/cpu/r16_amd64.go (the Go side).`)
	for _, t := range []string{"Q8_0", "Q5_0", "Q4_0"} {
		for m := 1; m <= 8; m++ {
			genR16Kernel(a, t, m)
		}
		genR16Streams(a, t, 4)
	}
}

// r16Act is the address of activation row t's bytes at displacement d of
// the current block.
func r16Act(t, d int) string {
	switch t {
	case 0:
		return fmt.Sprintf("%d(SI)", d)
	case 1:
		return fmt.Sprintf("%d(SI)(R10*1)", d)
	case 2:
		return fmt.Sprintf("%d(SI)(R10*2)", d)
	case 3:
		return fmt.Sprintf("%d(R9)", d)
	case 4:
		return fmt.Sprintf("%d(SI)(R10*4)", d)
	case 5:
		return fmt.Sprintf("%d(R9)(R10*2)", d)
	case 6:
		return fmt.Sprintf("%d(SI)(R11*1)", d)
	default:
		return fmt.Sprintf("%d(R9)(R10*4)", d)
	}
}

func genR16Kernel(a *Asm, typ string, M int) {
	name := fmt.Sprintf("r16%sm%d", typ, M)
	lbl := fmt.Sprintf("r16%s_%d", strings.ToLower(strings.ReplaceAll(typ, "_", "")), M)
	qb := r16Qb(typ)
	z := func(i int) string { return fmt.Sprintf("Z%d", i) }
	a.Text(name, 0, 64)
	a.I("MOVQ", "w+0(FP), AX")
	a.I("MOVQ", "nb+8(FP), R8")
	a.I("MOVQ", "a+16(FP), R14")
	a.I("MOVQ", "arb+24(FP), R10")
	a.I("MOVQ", "rec+32(FP), R15")
	a.I("MOVQ", "y+40(FP), R12")
	a.I("MOVQ", "ldy+48(FP), R13")
	a.I("SHLQ", "$2, R13")
	a.I("MOVQ", "tiles+56(FP), CX")
	a.I("TESTQ", "CX, CX")
	a.I("JZ", lbl+"_done")
	a.I("TESTQ", "R8, R8")
	a.I("JZ", lbl+"_done")
	if M > 6 {
		a.I("LEAQ", "(R10)(R10*2), R11")
		a.I("SHLQ", "$1, R11")
	}
	r16Consts(a, typ)
	a.Label(lbl + "_tile")
	r16TileStart(a, M)
	a.I("MOVQ", "R14, SI")
	if M > 3 {
		a.I("LEAQ", "(SI)(R10*2), R9")
		a.I("ADDQ", "R10, R9")
	}
	a.I("MOVQ", "R15, DI")
	a.I("MOVQ", "R8, BX")
	a.Label(lbl + "_blk")
	for o := 0; o < qb; o += 64 {
		a.I("PREFETCHT2", fmt.Sprintf("%d(AX)", r16PFDist+o))
	}
	a.I("PREFETCHT2", fmt.Sprintf("%d(DX)", r16PFDist/16))
	a.I("VCVTPH2PS", "(DX), Z24")
	r16Unpack(a, typ, func(d int) string { return fmt.Sprintf("%d(AX)", d) })
	for t := 0; t < M; t++ {
		a.I("VPBROADCASTD", fmt.Sprintf("%d(DI), %s", 8*t, z(16+t)))
	}
	for k := 0; k < 8; k++ {
		for t := 0; t < M; t++ {
			a.I("VPDPBUSD.BCST", r16Act(t, 2+4*k)+", "+z(k)+", "+z(16+t))
		}
	}
	for t := 0; t < M; t++ {
		r16Accumulate(a, t, fmt.Sprintf("%d(DI)", 4+8*t), "Z24", z(25+t%2))
	}
	a.I("ADDQ", fmt.Sprintf("$%d, AX", qb))
	a.I("ADDQ", "$32, DX")
	a.I("ADDQ", fmt.Sprintf("$%d, DI", 8*M))
	a.I("ADDQ", "$34, SI")
	if M > 3 {
		a.I("ADDQ", "$34, R9")
	}
	a.I("DECQ", "BX")
	a.I("JNZ", lbl+"_blk")
	a.I("MOVQ", "R12, BX")
	for t := 0; t < M; t++ {
		a.I("VMOVUPS", z(8+t)+", (BX)")
		if t < M-1 {
			a.I("ADDQ", "R13, BX")
		}
	}
	a.I("ADDQ", "$64, R12")
	a.I("DECQ", "CX")
	a.I("JNZ", lbl+"_tile")
	a.Label(lbl + "_done")
	a.I("VZEROUPPER")
	a.I("RET")
}

// genR16Streams writes the one-activation-row kernel that runs J streams
// of tiles at once (decode): the rows of a call split into J equal runs
// of tiles, stride bytes apart, and each block step takes block b of the
// current tile of every run, so that the memory system reads J places at
// once. Measured end to end (Qwen2.5-0.5B decode, minfer bench tg64, three
// alternated rounds), one run read slower than the GGUF layout's kernels
// at two threads (68.7 against 74.2 tok/s, medians) and four runs as fast
// (74.2), two no better than one. Per stream the
// arithmetic is genR16Kernel's for M = 1, so every output has the same
// bits.
//
//	func r16<T>m1s<J>(w *byte, nb int, a *byte, rec *byte, y *float32, stride int, ystride int, steps int)
//
// w: run 0's first tile (run j's at w + j·stride); y: its output (run j's
// at y + j·ystride bytes); steps tiles per run.
//
// Registers: Z0..Z7 the weights of one tile's block (reused run after
// run), Z8+j run j's float accumulator, Z16+j its block sums, Z20+j its
// products, Z24+j its 16 d_w, Z28..Z30 the Q5_0 constants. AX run 0's
// block quants (runs 1, 2 at (AX)(R10*1), (AX)(R10*2), run 3 at R9), DX
// its scales (R11 for run 3), R10 stride, SI the activation block, DI its
// record, BX blocks left, CX steps left, R12 the output, R13 ystride, R8
// nb, R14 a, R15 rec.
func genR16Streams(a *Asm, typ string, J int) {
	name := fmt.Sprintf("r16%sm1s%d", typ, J)
	lbl := fmt.Sprintf("r16%s_s%d", strings.ToLower(strings.ReplaceAll(typ, "_", "")), J)
	qb := r16Qb(typ)
	z := func(i int) string { return fmt.Sprintf("Z%d", i) }
	q := func(j, d int) string { // run j's block quants at displacement d
		switch j {
		case 0:
			return fmt.Sprintf("%d(AX)", d)
		case 1:
			return fmt.Sprintf("%d(AX)(R10*1)", d)
		case 2:
			return fmt.Sprintf("%d(AX)(R10*2)", d)
		}
		return fmt.Sprintf("%d(R9)", d)
	}
	sc := func(j, d int) string { // run j's block scales
		switch j {
		case 0:
			return fmt.Sprintf("%d(DX)", d)
		case 1:
			return fmt.Sprintf("%d(DX)(R10*1)", d)
		case 2:
			return fmt.Sprintf("%d(DX)(R10*2)", d)
		}
		return fmt.Sprintf("%d(R11)", d)
	}
	a.Text(name, 0, 64)
	a.I("MOVQ", "w+0(FP), AX")
	a.I("MOVQ", "nb+8(FP), R8")
	a.I("MOVQ", "a+16(FP), R14")
	a.I("MOVQ", "rec+24(FP), R15")
	a.I("MOVQ", "y+32(FP), R12")
	a.I("MOVQ", "stride+40(FP), R10")
	a.I("MOVQ", "ystride+48(FP), R13")
	a.I("MOVQ", "steps+56(FP), CX")
	a.I("TESTQ", "CX, CX")
	a.I("JZ", lbl+"_done")
	a.I("TESTQ", "R8, R8")
	a.I("JZ", lbl+"_done")
	r16Consts(a, typ)
	a.Label(lbl + "_tile")
	r16TileStart(a, J)
	if J > 3 {
		a.I("LEAQ", "(AX)(R10*2), R9")
		a.I("ADDQ", "R10, R9")
		a.I("LEAQ", "(DX)(R10*2), R11")
		a.I("ADDQ", "R10, R11")
	}
	a.I("MOVQ", "R14, SI")
	a.I("MOVQ", "R15, DI")
	a.I("MOVQ", "R8, BX")
	a.Label(lbl + "_blk")
	for j := 0; j < J; j++ {
		for o := 0; o < qb; o += 64 {
			a.I("PREFETCHT2", q(j, r16PFDist+o))
		}
		a.I("PREFETCHT2", sc(j, r16PFDist/16))
	}
	for j := 0; j < J; j++ {
		a.I("VCVTPH2PS", sc(j, 0)+", "+z(24+j))
		a.I("VPBROADCASTD", "(DI), "+z(16+j))
	}
	for j := 0; j < J; j++ {
		r16Unpack(a, typ, func(d int) string { return q(j, d) })
		for k := 0; k < 8; k++ {
			a.I("VPDPBUSD.BCST", fmt.Sprintf("%d(SI), %s, %s", 2+4*k, z(k), z(16+j)))
		}
	}
	for j := 0; j < J; j++ {
		r16Accumulate(a, j, "4(DI)", z(24+j), z(20+j))
	}
	a.I("ADDQ", fmt.Sprintf("$%d, AX", qb))
	a.I("ADDQ", "$32, DX")
	if J > 3 {
		a.I("ADDQ", fmt.Sprintf("$%d, R9", qb))
		a.I("ADDQ", "$32, R11")
	}
	a.I("ADDQ", "$34, SI")
	a.I("ADDQ", "$8, DI")
	a.I("DECQ", "BX")
	a.I("JNZ", lbl+"_blk")
	a.I("VMOVUPS", "Z8, (R12)")
	if J > 1 {
		a.I("VMOVUPS", "Z9, (R12)(R13*1)")
	}
	if J > 2 {
		a.I("VMOVUPS", "Z10, (R12)(R13*2)")
	}
	if J > 3 {
		a.I("LEAQ", "(R12)(R13*2), BX")
		a.I("VMOVUPS", "Z11, (BX)(R13*1)")
	}
	a.I("ADDQ", "$64, R12")
	a.I("DECQ", "CX")
	a.I("JNZ", lbl+"_tile")
	a.Label(lbl + "_done")
	a.I("VZEROUPPER")
	a.I("RET")
}

// r16Qb is the bytes of a tile's block of quants of layout typ.
func r16Qb(typ string) int {
	switch typ {
	case "Q8_0":
		return 512
	case "Q4_0":
		return 256
	}
	return 320
}

// r16Consts loads the byte constants of the unpack of typ: Z28 0x0F, Z29
// 0x70 and Z30 0x10 (Q5_0: (nib & 0x0F) | 0x70, plus 0x10 where the fifth
// bit is set, is q5+112 = x+128) or Z28 0x0F and Z29 0x78 (Q4_0:
// (nib & 0x0F) + 0x78 = x+128).
func r16Consts(a *Asm, typ string) {
	var cs []string
	switch typ {
	case "Q5_0":
		cs = []string{"0x0F0F0F0F", "0x70707070", "0x10101010"}
	case "Q4_0":
		cs = []string{"0x0F0F0F0F", "0x78787878"}
	}
	for i, c := range cs {
		a.I("MOVL", "$"+c+", BX")
		a.I("VPBROADCASTD", fmt.Sprintf("BX, Z%d", 28+i))
	}
}

// r16Unpack makes the block's weights unsigned bytes x+128 in Z0..Z7 (group
// k in Zk), reading the block's quants at q(displacement).
func r16Unpack(a *Asm, typ string, q func(d int) string) {
	z := func(i int) string { return fmt.Sprintf("Z%d", i) }
	if typ == "Q8_0" {
		for k := 0; k < 8; k++ {
			a.I("VMOVDQU64", q(64*k)+", "+z(k))
		}
		return
	}
	for c := 0; c < 4; c++ {
		lo, hi := z(c), z(c+4)
		if typ == "Q4_0" {
			a.I("VMOVDQU64", q(64*c)+", "+lo)
			a.I("VPSRLW", "$4, "+lo+", "+hi)
			a.I("VPANDD", "Z28, "+lo+", "+lo)
			a.I("VPANDD", "Z28, "+hi+", "+hi)
			a.I("VPADDB", "Z29, "+lo+", "+lo)
			a.I("VPADDB", "Z29, "+hi+", "+hi)
			continue
		}
		a.I("VMOVDQU64", q(64+64*c)+", "+lo)
		a.I("VPSRLW", "$4, "+lo+", "+hi)
		a.I("VPTERNLOGD", "$0xEA, Z29, Z28, "+lo)
		a.I("VPTERNLOGD", "$0xEA, Z29, Z28, "+hi)
		a.I("KMOVQ", q(8*c)+", K1")
		a.I("KMOVQ", q(8*(c+4))+", K2")
		a.I("VPADDB", "Z30, "+lo+", K1, "+lo)
		a.I("VPADDB", "Z30, "+hi+", K2, "+hi)
	}
}

// r16TileStart starts a tile of the kernels: n float accumulators (Z8..)
// zeroed, DX at the tile's scales (AX), AX past them at its first block's
// quants (nb·32 bytes, nb in R8).
func r16TileStart(a *Asm, n int) {
	for i := 0; i < n; i++ {
		a.I("VPXORD", fmt.Sprintf("Z%d, Z%d, Z%d", 8+i, 8+i, 8+i))
	}
	a.I("MOVQ", "AX, DX")
	a.I("MOVQ", "R8, BX")
	a.I("SHLQ", "$5, BX")
	a.I("ADDQ", "BX, AX")
}

// r16Accumulate ends a block for accumulator i: its int32 block sums
// (Z16+i) converted, the products of the 16 d_w (dw) by d_a (the float at
// da, broadcast) into prod, and one FMA into the float accumulator Z8+i —
// quant.DotR16's acc = fma(d_w·d_a, Σ x·y, acc).
func r16Accumulate(a *Asm, i int, da, dw, prod string) {
	sum := fmt.Sprintf("Z%d", 16+i)
	a.I("VCVTDQ2PS", sum+", "+sum)
	a.I("VMULPS.BCST", da+", "+dw+", "+prod)
	a.I("VFMADD231PS", prod+", "+sum+", "+fmt.Sprintf("Z%d", 8+i))
}
