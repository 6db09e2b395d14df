package main

import "fmt"

// AVX-512 VNNI GEMM kernels for the prefill mat-muls of Q8_0, Q5_0 and
// Q4_0 weights against Q8_0 activations (backends/cpu/gemm_amd64.go wraps
// them): one kernel shape, three ways of turning a weight block into 32
// signed bytes. They were hand-unrolled assembly with C-preprocessor
// macros; this description writes the same instructions.
//
// One call computes a tile of 4 weight rows against mt tiles of 4
// activation rows, block by block; every one of the 16 outputs of a tile
// keeps its own 8-lane float accumulator and sees the blocks in
// increasing order, exactly as the row kernels do (integer block dot per
// lane → float → one FMA with the float32 d_w·d_a), then hsum_float_8.
//
// Once per call the weight tile is unpacked into the scratch scr: its d
// as f32 (4 per block), then per block its quants as signed bytes (4×32)
// and their offsets per 4 bytes (4×8 int32: 0x4B400000 − 128·Σ x), so the
// activation tiles that follow only load them. VPDPBUSD takes the
// activations biased to unsigned (y XOR 0x80 = y+128) and the weights
// signed; the offset leaves 0x4B400000 + Σ x·y, which read as a float32 is
// 1.5·2^23 + Σ x·y exactly (|Σ x·y| ≤ 2^16), so subtracting 1.5·2^23 gives
// float32(Σ x·y) as VCVTDQ2PS would (on the float adder, not the multiply
// pipes the dots and FMAs use). Per activation tile the 16 scale products
// d_w(i)·d_a(j) of every block go to a table after those (16 per block, at
// 16j+4i), which the FMAs broadcast from.
//
// Registers in the tile loop: SI the unpacked weight block, DI the
// activation block (tile row 0), R9 activation row stride, R13 3×; BX the
// activation scales (f32, 4 per block: the tile's rows); DX blocks left,
// CX activation tiles left, R11 the block's products, AX temporary;
// locals: 0(SP) the output (tile row 0), 8(SP) the product table, 16(SP)
// the unpacked weights. Y0..Y3 the 4 weight blocks, Y4..Y7 the 4
// activation blocks (biased), Y8..Y11 the weight blocks' offsets, Y12 a
// temporary, Y13 0x80 in every byte, Y14 1.5·2^23, Y15 temporary,
// Y16+4j+i the accumulator of weight row i and activation row j.

// vnniLegacyKind is one weight type of these kernels.
type vnniLegacyKind struct {
	name string // Q8_0, Q5_0, Q4_0 (the kernel is gemm<name>VNNI)
	wts  int    // bytes per weight block
	// unpack writes the 4 weight blocks at SI (row stride R8, 3×R12) as
	// 32 signed bytes each into Y0..Y3.
	unpack func(a *Asm)
}

// vnniWeightRows are the address operands of the block at off in the 4
// rows of the weight tile.
func vnniWeightRows(off int) [4]string {
	return [4]string{
		fmt.Sprintf("%d(SI)", off),
		fmt.Sprintf("%d(SI)(R8*1)", off),
		fmt.Sprintf("%d(SI)(R8*2)", off),
		fmt.Sprintf("%d(SI)(R12*1)", off),
	}
}

var vnniLegacyKinds = []vnniLegacyKind{
	{"Q8_0", 34, func(a *Asm) { // Q8_0 weights as they are
		for i, m := range vnniWeightRows(2) {
			a.I("VMOVDQU", m, fmt.Sprintf("Y%d", i))
		}
	}},
	{"Q5_0", 22, func(a *Asm) {
		// x = nibble + 16·bit − 16: the 16 bytes of nibbles in both lanes,
		// the upper lane shifted by 4, masked; 16 added under the opmask of
		// the 32 high bits; 16 subtracted.
		qh, qs := vnniWeightRows(2), vnniWeightRows(6)
		for i := range 4 {
			y := fmt.Sprintf("Y%d", i)
			vnniNibbles(a, qs[i], y)
			a.I("KMOVD", qh[i], "K1")
			a.I("VPADDB", "gbit16<>(SB)", y, "K1", y)
			a.I("VPSUBB", "gbit16<>(SB)", y, y)
		}
	}},
	{"Q4_0", 18, func(a *Asm) { // x = nibble − 8 (the nibbles as for Q5_0)
		for i, qs := range vnniWeightRows(2) {
			y := fmt.Sprintf("Y%d", i)
			vnniNibbles(a, qs, y)
			a.I("VPSUBB", "gbit8<>(SB)", y, y)
		}
	}},
}

// vnniNibbles loads the 16 bytes at m into both lanes of y, shifts the
// upper lane right by 4 and keeps the low nibbles: the 32 values of a
// Q4_0/Q5_0 block in element order.
func vnniNibbles(a *Asm, m, y string) {
	a.I("VBROADCASTI128", m, y)
	a.I("VPSRLVD", "gnibshift<>(SB)", y, y)
	a.I("VPAND", "gmask0f<>(SB)", y, y)
}

func init() {
	register("gemm_legacy_vnni_amd64.s", "amd64 && !purego", func(a *Asm) {
		a.Blank()
		a.Comment("AVX-512 VNNI GEMMs of Q8_0, Q5_0, Q4_0 weights against Q8_0 activations:\n" +
			"4 weight rows × mt tiles of 4 activation rows per call (see\n" +
			"internal/asmgen/gemm_legacy_vnni.go for the scheme and registers).")
		vnniLegacyData(a)
		for _, k := range vnniLegacyKinds {
			vnniLegacyGemm(a, k)
		}
	})
}

// vnniLegacyData writes the constants the kernels read.
func vnniLegacyData(a *Asm) {
	data := func(name string, quads ...uint64) {
		a.Blank()
		for i, q := range quads {
			a.Raw("DATA %s<>+%d(SB)/8, $0x%016x", name, 8*i, q)
		}
		a.Raw("GLOBL %s<>(SB), RODATA|NOPTR, $%d", name, 8*len(quads))
	}
	data("gnibshift", 0, 0, 0x0000000400000004, 0x0000000400000004)
	data("gmask0f", 0x0f0f0f0f0f0f0f0f, 0x0f0f0f0f0f0f0f0f, 0x0f0f0f0f0f0f0f0f, 0x0f0f0f0f0f0f0f0f)
	data("gbit16", 0x1010101010101010, 0x1010101010101010, 0x1010101010101010, 0x1010101010101010)
	data("gbit8", 0x0808080808080808, 0x0808080808080808, 0x0808080808080808, 0x0808080808080808)
	a.Blank()
	a.Comment("0x4B400000 is 1.5·2^23 as a float32: for |x| < 2^22 the int32\n" +
		"0x4B400000 + x read as a float32 is exactly 1.5·2^23 + x.")
	a.Raw("DATA gmagic<>+0(SB)/4, $0x4B400000")
	a.Raw("GLOBL gmagic<>(SB), RODATA|NOPTR, $4")
	data("gpermidx", 0, 0, 0x0000000100000001, 0x0000000100000001,
		0x0000000200000002, 0x0000000200000002, 0x0000000300000003, 0x0000000300000003)
}

// vnniLegacyGemm writes
//
//	func gemm<name>VNNI(w *byte, wrb int, a *byte, arb int, as *float32, nb int, y *float32, ldy int, mt int, scr *float32)
func vnniLegacyGemm(a *Asm, k vnniLegacyKind) {
	name := "gemm" + k.name + "VNNI"
	a.Raw("\n// func %s(w *byte, wrb int, a *byte, arb int, as *float32, nb int, y *float32, ldy int, mt int, scr *float32)", name)
	a.Raw("TEXT ·%s(SB), NOSPLIT, $24-80", name)
	a.I("MOVQ", "arb+24(FP)", "R9")
	a.I("LEAQ", "(R9)(R9*2)", "R13")
	a.I("MOVQ", "as+32(FP)", "BX")
	a.I("MOVQ", "y+48(FP)", "AX")
	a.I("MOVQ", "AX", "0(SP)")
	a.I("MOVQ", "mt+64(FP)", "CX")
	a.I("MOVQ", "wrb+8(FP)", "R8")
	a.I("LEAQ", "(R8)(R8*2)", "R12")
	a.I("MOVL", "$0x80808080", "AX")
	a.I("VMOVD", "AX", "X13")
	a.I("VPBROADCASTD", "X13", "Y13")

	// Unpack the weight tile: per block the 4 scales as f32 into scr, the
	// quants and their offsets after the scales (16·nb bytes on).
	a.Comment("Unpack the weight tile: per block its 4 scales as f32 at scr, its quants\n" +
		"(4×32 signed bytes) and offsets (4×8 int32) from scr+16·nb on.")
	a.I("MOVQ", "w+0(FP)", "SI")
	a.I("MOVQ", "scr+72(FP)", "DI")
	a.I("MOVQ", "nb+40(FP)", "DX")
	a.I("MOVQ", "DX", "R11")
	a.I("SHLQ", "$4", "R11")
	a.I("ADDQ", "DI", "R11")
	a.I("MOVQ", "R11", "16(SP)")
	a.Label("wsc")
	a.I("MOVWLZX", "(SI)", "AX")
	a.I("VMOVD", "AX", "X14")
	a.I("VPINSRW", "$1", "(SI)(R8*1)", "X14", "X14")
	a.I("VPINSRW", "$2", "(SI)(R8*2)", "X14", "X14")
	a.I("VPINSRW", "$3", "(SI)(R12*1)", "X14", "X14")
	a.I("VCVTPH2PS", "X14", "X14")
	a.I("VMOVUPS", "X14", "(DI)")
	k.unpack(a)
	for i := range 4 {
		a.I("VMOVDQU", fmt.Sprintf("Y%d", i), fmt.Sprintf("%d(R11)", 32*i))
	}
	// Offsets: 0x4B400000 − 128·Σ of each 4 weight bytes (Y15 zero).
	a.I("VPXOR", "Y15", "Y15", "Y15")
	for i := range 4 {
		w, off := fmt.Sprintf("Y%d", i), fmt.Sprintf("Y%d", 4+i)
		a.I("VPXOR", off, off, off)
		a.I("VPDPBUSD", w, "Y13", off)
		a.I("VPSUBD", off, "Y15", off)
		a.I("VPADDD.BCST", "gmagic<>(SB)", off, off)
	}
	for i := range 4 {
		a.I("VMOVDQU", fmt.Sprintf("Y%d", 4+i), fmt.Sprintf("%d(R11)", 128+32*i))
	}
	a.I("ADDQ", fmt.Sprintf("$%d", k.wts), "SI")
	a.I("ADDQ", "$16", "DI")
	a.I("ADDQ", "$256", "R11")
	a.I("DECQ", "DX")
	a.I("JNZ", "wsc")
	a.I("MOVQ", "R11", "8(SP)")

	a.I("VPBROADCASTD", "gmagic<>(SB)", "Y14")
	a.I("MOVQ", "a+16(FP)", "DI")
	a.Label("gtile")
	// The product table of this activation tile (scales at BX, 4 per
	// block): per block one 16-lane multiply of the weight scales
	// [w0..w3] repeated 4 times by [a0×4, a1×4, a2×4, a3×4].
	a.I("MOVQ", "scr+72(FP)", "SI")
	a.I("MOVQ", "8(SP)", "R11")
	a.I("MOVQ", "nb+40(FP)", "DX")
	a.I("VMOVDQU32", "gpermidx<>(SB)", "Z11")
	a.Label("prd")
	a.I("VBROADCASTF32X4", "(SI)", "Z12")
	a.I("VMOVUPS", "(BX)", "X15")
	a.I("VPERMPS", "Z15", "Z11", "Z15")
	a.I("VMULPS", "Z15", "Z12", "Z15")
	a.I("VMOVUPS", "Z15", "(R11)")
	a.I("ADDQ", "$16", "SI")
	a.I("ADDQ", "$16", "BX")
	a.I("ADDQ", "$64", "R11")
	a.I("DECQ", "DX")
	a.I("JNZ", "prd")

	a.I("MOVQ", "16(SP)", "SI")
	a.I("MOVQ", "8(SP)", "R11")
	a.I("MOVQ", "nb+40(FP)", "DX")
	for r := 16; r < 32; r++ {
		a.I("VPXORD", fmt.Sprintf("Y%d", r), fmt.Sprintf("Y%d", r), fmt.Sprintf("Y%d", r))
	}
	a.Label("gblk")
	// The 4 activation blocks (Q8_0: f16 d, 32 int8) biased to unsigned,
	// the weight blocks' offsets and quants.
	for j, m := range []string{"2(DI)", "2(DI)(R9*1)", "2(DI)(R9*2)", "2(DI)(R13*1)"} {
		a.I("VPXOR", m, "Y13", fmt.Sprintf("Y%d", 4+j))
	}
	for i := range 4 {
		a.I("VMOVDQU", fmt.Sprintf("%d(SI)", 128+32*i), fmt.Sprintf("Y%d", 8+i))
	}
	for i := range 4 {
		a.I("VMOVDQU", fmt.Sprintf("%d(SI)", 32*i), fmt.Sprintf("Y%d", i))
	}
	// acc(i,j) += float(Σ w_i·y_j) · product(i,j).
	for j := range 4 {
		for i := range 4 {
			a.I("VMOVDQA", fmt.Sprintf("Y%d", 8+i), "Y12")
			a.I("VPDPBUSD", fmt.Sprintf("Y%d", i), fmt.Sprintf("Y%d", 4+j), "Y12")
			a.I("VSUBPS", "Y14", "Y12", "Y12")
			a.I("VFMADD231PS.BCST", fmt.Sprintf("%d(R11)", 4*(4*j+i)), "Y12", fmt.Sprintf("Y%d", 16+4*j+i))
		}
	}
	a.I("ADDQ", "$256", "SI")
	a.I("ADDQ", "$34", "DI")
	a.I("ADDQ", "$64", "R11")
	a.I("DECQ", "DX")
	a.I("JNZ", "gblk")

	// Store the tile: hsum_float_8 of each accumulator (lanes 4..7 onto
	// 0..3, then 2,3 onto 0,1, then 1 onto 0), row by row; DI moves to the
	// next activation tile (it stands one row past this tile's first).
	a.I("MOVQ", "ldy+56(FP)", "AX")
	a.I("SHLQ", "$2", "AX")
	a.I("MOVQ", "0(SP)", "DX")
	for j := range 4 {
		for i := range 4 {
			r := 16 + 4*j + i
			a.I("VEXTRACTF32X4", "$1", fmt.Sprintf("Y%d", r), "X1")
			a.I("VADDPS", "X1", fmt.Sprintf("X%d", r), "X0")
			a.I("VMOVHLPS", "X0", "X0", "X1")
			a.I("VADDPS", "X1", "X0", "X0")
			a.I("VMOVSHDUP", "X0", "X1")
			a.I("VADDSS", "X1", "X0", "X0")
			a.I("VMOVSS", "X0", fmt.Sprintf("%d(DX)", 4*i))
		}
		a.I("ADDQ", "AX", "DX")
	}
	a.I("MOVQ", "DX", "0(SP)")
	a.I("ADDQ", "R13", "DI")
	a.I("DECQ", "CX")
	a.I("JNZ", "gtile")
	a.I("VZEROUPPER")
	a.I("RET")
}
