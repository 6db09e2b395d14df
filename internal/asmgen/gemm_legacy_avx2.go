package main

import (
	"fmt"
	"strings"
)

// AVX2 GEMM kernels for the prefill mat-muls of the 32-element weight
// formats (Q8_0, Q5_0, Q4_0 against Q8_0 activations; Q4_1, Q5_1 against
// Q8_1): one kernel per
// weight type and tile shape (rw weight rows × ra activation rows, one
// 8-lane float accumulator per output), all of one shape, written here.
//
// One call computes rw weight rows against mt tiles of ra activation rows.
// The caller repacks the activation quants 32-byte aligned (Q4_0/Q5_0:
// biased to unsigned, y XOR 0x80 = y+128) and gives their scales as f32.
// The kernel first unpacks the weight tile into the scratch scr, once: per
// block and row the 32 quants as signed bytes x and a second vector (Q8_0:
// |x|; Q4_0/Q5_0: 128 times the sums of each 4 quants, int32), and the rw
// weight scales as f32 repeated ra times (wrep, the layout of the scale
// products). Per activation tile it then computes the table of scale
// products d_w(i)·d_a(j) of every block (float32 multiplies of wrep by the
// caller's activation scales, laid out alike), and runs the blocks in
// order with the tile's rw·ra accumulators:
//
//   - Q8_0 (weight row outer, activation row inner): |x| of the weight row
//     in a register, the activation block's bytes y signed by x (VPSIGNB,
//     ggml's sign trick), VPMADDUBSW |x|·(±y) into int16 pairs, VPMADDWD by
//     ones into the 8 int32 sums of 4 consecutive products. Exact unless an
//     activation byte is -128, which the activation quantizer never
//     produces (|q| ≤ 127), as for the AVX2 row kernel.
//   - Q4_0/Q5_0 (activation row outer, weight row inner): the biased
//     activation block u in a register, VPMADDUBSW u·x into int16 pairs
//     (|pair| ≤ 2·255·16, exact), VPMADDWD by ones into int32, minus the
//     weight's 128·Σx: the 8 int32 sums of 4 consecutive products, exact
//     for every input.
//   - Q4_1/Q5_1 (weight row outer): the unsigned quants q (< 32) in a
//     register, VPMADDUBSW q·y (|pair| ≤ 2·31·128, exact), VPMADDWD by
//     ones. The m_w·s_a terms: per tile the float32 products summed in
//     block order beside the scale products, added to each output after
//     its hsum_float_8, as the pure-Go dot does.
//
// Then per output VCVTDQ2PS and one FMA per lane with the broadcast
// product, blocks in order; hsum_float_8 at the end — the float order of
// quant's pure-Go dots and of the row kernels, so the bits are the same.
//
// The loads per output and block (operand, scale product) are what bounds
// these kernels on the Zen machines measured, so registers left over by
// the accumulators keep the block's operands: the smaller tiles (4×2,
// 2×4: every operand but the products in registers) are faster than 4×3.

// legacyGemmKind describes one weight type for the AVX2 GEMM generator.
type legacyGemmKind struct {
	name   string // Q8_0, Q5_0, Q4_0, Q4_1, Q5_1
	wts    int    // bytes per weight block
	scheme int    // how the integer dots are formed (below)
}

const (
	schemeSign     = iota // Q8_0: sign trick, weight row outer
	schemeBias            // Q4_0/Q5_0: biased activations, activation row outer
	schemeUnsigned        // Q4_1/Q5_1: unsigned quants as they are, weight row outer; m·s terms
)

var legacyGemmKinds = []legacyGemmKind{
	{"Q8_0", 34, schemeSign},
	{"Q5_0", 22, schemeBias},
	{"Q4_0", 18, schemeBias},
	{"Q4_1", 20, schemeUnsigned},
	{"Q5_1", 24, schemeUnsigned},
	// Q5_0 in the four-row Q5_0x4 layout (quant/q5_0x4.go): a block of
	// 88 bytes holds the tile's four rows, so only 4-row tiles; the
	// unpacking takes a pair of rows at a time as rowsQ5_0x4AVX2 does and
	// writes the same scratch as Q5_0, so the tile loop is Q5_0's.
	{"Q5_0x4", 88, schemeBias},
	{"Q4_0x4", 72, schemeBias}, // Q4_0's four-row layout (quant/q4_0x4.go)
}

// legacyGemmTiles are the generated tile shapes (weight rows × activation
// rows); the Go side picks one.
var legacyGemmTiles = [][2]int{{4, 2}, {2, 4}, {4, 3}}

func init() {
	register("gemm_legacy_avx2_amd64.s", "amd64 && !purego", genLegacyGemmAVX2)
}

func genLegacyGemmAVX2(a *Asm) {
	a.Blank()
	a.Comment(`AVX2 GEMM kernels for Q8_0, Q5_0 and Q4_0 weights against Q8_0
activations, Q4_1 and Q5_1 against Q8_1; see
internal/asmgen/gemm_legacy_avx2.go (the generator) and
backends/cpu/gemm_legacy_avx2_amd64.go (the Go side).

func gemm<T>AVX2x<rw>x<ra>(w *byte, wrb int, a *byte, arb int, as *float32,
	nb int, y *float32, ldy int, mt int, scr *byte)

w: the tile's first weight row (rw rows, wrb bytes apart); a: the first of
mt·ra activation rows of 32-byte blocks of quants (arb bytes apart;
Q4_0/Q5_0: biased, y XOR 0x80); as: the activation scales as f32, per
tile and block rw·ra floats (d_a(j) at j·rw+i; Q4_1/Q5_1: then as many
of s_a); y: the output of weight row 0 and activation row 0 (ldy floats
per activation row); scr: scratch of 64 + nb·(64·rw + 12·rw·ra) bytes.

Scratch: 64 bytes for the tile's m·s sums (Q4_1/Q5_1); nb blocks of
rw·64 bytes, row i at 64·i: 32 quants as signed bytes, then |x| (Q8_0)
or 128·Σ of each 4 quants (int32) (Q4_1/Q5_1: rw·32 bytes of unsigned
quants); then wrep, the weight scales of each block repeated ra times
(nb·4·rw·ra bytes, then as many of m for Q4_1/Q5_1; at 0(SP)); then the
product table (nb·4·rw·ra bytes, at R11).

Registers in the block loop: SI the unpacked weight block, DI the
activation block of tile row 0 (R14 of row 3), R9 the activation row
stride, R13 3×, R10 the tile's first activation row; AX the block's
products; DX blocks left; CX tiles left; BX the activation scales; R8
the output of the tile's row 0, R12 ldy in bytes. Y0.. the accumulators
(weight row i, activation row j at Y(j·rw+i)), then: a register operand
(|x|, the biased activation or the unsigned quants), two temporaries,
int16 ones, and operands kept for the whole block (each kernel's
comment).`)
	a.Blank()
	dataConst(a, "glaones", "0x0001000100010001")
	dataConst(a, "glabias", "0x8080808080808080")
	dataConst(a, "glamask0f", "0x0f0f0f0f0f0f0f0f")
	dataConst(a, "glabit16", "0x1010101010101010")
	dataConst(a, "glabit8", "0x0808080808080808")
	dataConst(a, "glabitsel", "0x8040201008040201")
	a.Raw("DATA glanibshift<>+0(SB)/8, $0")
	a.Raw("DATA glanibshift<>+8(SB)/8, $0")
	a.Raw("DATA glanibshift<>+16(SB)/8, $0x0000000400000004")
	a.Raw("DATA glanibshift<>+24(SB)/8, $0x0000000400000004")
	a.Raw("GLOBL glanibshift<>(SB), RODATA|NOPTR, $32")
	a.Blank()
	a.Raw("DATA glaqhshuf<>+0(SB)/8, $0x0000000000000000")
	a.Raw("DATA glaqhshuf<>+8(SB)/8, $0x0101010101010101")
	a.Raw("DATA glaqhshuf<>+16(SB)/8, $0x0202020202020202")
	a.Raw("DATA glaqhshuf<>+24(SB)/8, $0x0303030303030303")
	a.Raw("GLOBL glaqhshuf<>(SB), RODATA|NOPTR, $32")
	a.Raw("DATA glax4shr<>+0(SB)/8, $0")
	a.Raw("DATA glax4shr<>+8(SB)/8, $1")
	a.Raw("DATA glax4shr<>+16(SB)/8, $2")
	a.Raw("DATA glax4shr<>+24(SB)/8, $3")
	a.Raw("GLOBL glax4shr<>(SB), RODATA|NOPTR, $32")
	a.Raw("DATA glax4shl<>+0(SB)/8, $4")
	a.Raw("DATA glax4shl<>+8(SB)/8, $3")
	a.Raw("DATA glax4shl<>+16(SB)/8, $2")
	a.Raw("DATA glax4shl<>+24(SB)/8, $1")
	a.Raw("GLOBL glax4shl<>(SB), RODATA|NOPTR, $32")
	for _, k := range legacyGemmKinds {
		for _, t := range legacyGemmTiles {
			// the four-row layouts: the installed 4×2 tile only
			if strings.HasSuffix(k.name, "x4") && t != [2]int{4, 2} {
				continue
			}
			genLegacyGemmKernel(a, k, t[0], t[1])
		}
	}
}

// dataConst writes a 32-byte constant of one repeated quadword.
func dataConst(a *Asm, name, q string) {
	for o := 0; o < 32; o += 8 {
		a.Raw("DATA %s<>+%d(SB)/8, $%s", name, o, q)
	}
	a.Raw("GLOBL %s<>(SB), RODATA|NOPTR, $32", name)
	a.Blank()
}

// y returns the name of YMM register i.
func y(i int) string { return fmt.Sprintf("Y%d", i) }

// x returns the name of XMM register i.
func x(i int) string { return fmt.Sprintf("X%d", i) }

// wrow is the address of weight row i (at most 4 rows) at offset off of
// the block at SI: R8 the row stride, R12 3×.
func wrow(off, i int) string {
	o := ""
	if off != 0 {
		o = fmt.Sprint(off)
	}
	switch i {
	case 0:
		return o + "(SI)"
	case 1:
		return o + "(SI)(R8*1)"
	case 2:
		return o + "(SI)(R8*2)"
	case 3:
		return o + "(SI)(R12*1)"
	}
	panic("wrow: more than 4 weight rows")
}

// arow is the address of activation row j (at most 6 rows) at offset off
// of the block at DI: R9 the row stride, R13 3×, R10 = DI + 3 rows.
func arow(off, j int) string {
	o := ""
	if off != 0 {
		o = fmt.Sprint(off)
	}
	switch j {
	case 0:
		return o + "(DI)"
	case 1:
		return o + "(DI)(R9*1)"
	case 2:
		return o + "(DI)(R9*2)"
	case 3:
		return o + "(R14)"
	case 4:
		return o + "(R14)(R9*1)"
	case 5:
		return o + "(R14)(R9*2)"
	}
	panic("arow: more than 6 activation rows")
}

// genLegacyGemmKernel writes one kernel: type k, tile rw × ra.
func genLegacyGemmKernel(a *Asm, k legacyGemmKind, rw, ra int) {
	nacc := rw * ra
	spare := 16 - nacc - 4 // registers beyond the accumulators, rop, t1, t2, ones
	if spare < 0 || rw > 4 || ra > 6 {
		panic(fmt.Sprintf("gemm %s %dx%d: tile does not fit", k.name, rw, ra))
	}
	name := fmt.Sprintf("gemm%sAVX2x%dx%d", k.name, rw, ra)
	lbl := strings.ToLower(fmt.Sprintf("gla%s_%dx%d_", strings.ReplaceAll(k.name, "_", ""), rw, ra))
	rop, t1, t2, ones := nacc, nacc+1, nacc+2, nacc+3
	hasMin := k.scheme == schemeUnsigned
	ps := 4 * nacc // bytes of products per block (and of wrep, as; twice that with the mins)
	ws := ps       // bytes of wrep (and as) per block
	if hasMin {
		ws = 2 * ps
	}
	qv := 2 // vectors per unpacked weight row
	if hasMin {
		qv = 1
	}
	qb := 32 * qv * rw // bytes of unpacked quants per block

	// Spare registers hold operands for the whole block instead of
	// loading them once per output: Q8_0 the weight row's x and then
	// activation blocks; Q4_0/Q5_0 the weight rows' offsets and then
	// quants; Q4_1/Q5_1 activation blocks.
	next := nacc + 4
	take := func(n int) []int {
		var r []int
		for ; n > 0 && next < 16; n-- {
			r = append(r, next)
			next++
		}
		return r
	}
	var xreg, yreg, offreg []int
	switch k.scheme {
	case schemeSign:
		xreg = take(1)
		yreg = take(ra)
	case schemeBias:
		offreg = take(rw)
		xreg = take(rw)
	case schemeUnsigned:
		yreg = take(ra)
	}
	a.Text(name, 8, 80)
	desc := fmt.Sprintf("%s weights, tile of %d weight rows × %d activation rows: accumulators Y0..Y%d,\n", k.name, rw, ra, nacc-1)
	switch k.scheme {
	case schemeSign:
		desc += fmt.Sprintf("Y%d |x| of the weight row, Y%d/Y%d temporaries, Y%d int16 ones", rop, t1, t2, ones)
		if len(xreg) > 0 {
			desc += fmt.Sprintf(", Y%d its x", xreg[0])
		}
	case schemeBias:
		desc += fmt.Sprintf("Y%d the biased activation block, Y%d/Y%d temporaries, Y%d int16 ones", rop, t1, t2, ones)
		if len(offreg) > 0 {
			desc += fmt.Sprintf(", Y%d.. the offsets of the first %d weight rows", offreg[0], len(offreg))
		}
		if len(xreg) > 0 {
			desc += fmt.Sprintf(", Y%d.. the quants of the first %d", xreg[0], len(xreg))
		}
	case schemeUnsigned:
		desc += fmt.Sprintf("Y%d the weight row's quants, Y%d/Y%d temporaries, Y%d int16 ones", rop, t1, t2, ones)
	}
	if len(yreg) > 0 {
		desc += fmt.Sprintf(", Y%d.. the first %d activation blocks", yreg[0], len(yreg))
	}
	a.Comment(desc + ".")

	// ---- unpack the weight tile into the scratch: quants (SI → DI, after
	// the 64 bytes of m·s sums), then the scales (→ R11); Y1..Y5
	// temporaries.
	a.I("MOVQ", "w+0(FP)", "SI")
	a.I("MOVQ", "wrb+8(FP)", "R8")
	a.I("LEAQ", "(R8)(R8*2)", "R12")
	a.I("MOVQ", "scr+72(FP)", "DI")
	a.I("ADDQ", "$64", "DI")
	a.I("MOVQ", "nb+40(FP)", "DX")
	a.I("MOVQ", "DX", "R11")
	a.I("IMULQ", fmt.Sprintf("$%d", qb), "R11")
	a.I("ADDQ", "DI", "R11")
	a.I("MOVQ", "R11", "0(SP)") // wrep
	a.I("VMOVDQU", "glaones<>(SB)", "Y5")
	if k.name == "Q5_0" || k.name == "Q5_1" {
		a.I("VPBROADCASTQ", "glabitsel<>(SB)", "Y4")
	}
	a.Label(lbl + "unpack")
	// scales: rw f16 d (and m) to f32 in X0 (X1), stored ra times (wrep)
	scales := []string{"X0"}
	if hasMin {
		scales = append(scales, "X1")
	}
	for h, xs := range scales {
		if strings.HasSuffix(k.name, "x4") { // the four d side by side
			a.I("VCVTPH2PS", "(SI)", xs)
			for j := 0; j < ra; j++ {
				for i := 0; i < rw; i++ {
					a.I("VEXTRACTPS", fmt.Sprintf("$%d", i), xs, fmt.Sprintf("%d(R11)", 4*(j*rw+i)))
				}
			}
			continue
		}
		a.I("MOVWLZX", wrow(2*h, 0), "AX")
		a.I("VMOVD", "AX", xs)
		for i := 1; i < rw; i++ {
			a.I("VPINSRW", fmt.Sprintf("$%d", i), wrow(2*h, i), xs, xs)
		}
		a.I("VCVTPH2PS", xs, xs)
		for j := 0; j < ra; j++ {
			for i := 0; i < rw; i++ {
				a.I("VEXTRACTPS", fmt.Sprintf("$%d", i), xs, fmt.Sprintf("%d(R11)", h*ps+4*(j*rw+i)))
			}
		}
	}
	// quants of each row: Y1 = x, Y2 = |x| or offsets
	nibbles := func(qs string) {
		a.I("VBROADCASTI128", qs, "Y1")
		a.I("VPSRLVD", "glanibshift<>(SB)", "Y1", "Y1")
		a.I("VPAND", "glamask0f<>(SB)", "Y1", "Y1")
	}
	// Y3 = 16 in byte b where bit b of the u32 at qh is set
	bit16 := func(qh string) {
		a.I("VPBROADCASTD", qh, "Y3")
		a.I("VPSHUFB", "glaqhshuf<>(SB)", "Y3", "Y3")
		a.I("VPAND", "Y4", "Y3", "Y3")
		a.I("VPCMPEQB", "Y4", "Y3", "Y3")
		a.I("VPAND", "glabit16<>(SB)", "Y3", "Y3")
	}
	if x4 := strings.HasSuffix(k.name, "x4"); x4 {
		// a pair of rows at a time: [a 0..15 | b 0..15] and [a 16..31 |
		// b 16..31] (with their spread 5th bits for Q5_0x4), then each
		// row's 32 in order
		q5 := k.name == "Q5_0x4"
		qs0, sub := 8, "glabit8<>(SB)"
		if q5 {
			qs0, sub = 24, "glabit16<>(SB)"
		}
		for p := 0; p < 2; p++ {
			a.I("VMOVDQU", fmt.Sprintf("%d(SI)", qs0+32*p), "Y1")
			a.I("VPSRLW", "$4", "Y1", "Y2")
			a.I("VPAND", "glamask0f<>(SB)", "Y1", "Y1")
			a.I("VPAND", "glamask0f<>(SB)", "Y2", "Y2")
			if q5 {
				a.I("VPBROADCASTQ", fmt.Sprintf("%d(SI)", 8+8*p), "Y3")
				a.I("VPSRLVQ", "glax4shr<>(SB)", "Y3", "Y6")
				a.I("VPAND", "glabit16<>(SB)", "Y6", "Y6")
				a.I("VPOR", "Y6", "Y1", "Y1")
				a.I("VPSLLVQ", "glax4shl<>(SB)", "Y3", "Y3")
				a.I("VPAND", "glabit16<>(SB)", "Y3", "Y3")
				a.I("VPOR", "Y3", "Y2", "Y2")
			}
			a.I("VPERM2I128", "$0x20", "Y2", "Y1", "Y6")
			a.I("VPERM2I128", "$0x31", "Y2", "Y1", "Y7")
			for q, r := range []string{"Y6", "Y7"} {
				i := 2*p + q
				a.I("VPSUBB", sub, r, r)
				a.I("VMOVDQU", "glabias<>(SB)", "Y2")
				a.I("VPMADDUBSW", r, "Y2", "Y2")
				a.I("VPMADDWD", "Y5", "Y2", "Y2")
				a.I("VMOVDQU", r, fmt.Sprintf("%d(DI)", 64*i))
				a.I("VMOVDQU", "Y2", fmt.Sprintf("%d(DI)", 64*i+32))
			}
		}
	}
	for i := 0; i < rw && !strings.HasSuffix(k.name, "x4"); i++ {
		switch k.name {
		case "Q8_0":
			a.I("VMOVDQU", wrow(2, i), "Y1")
			a.I("VPABSB", "Y1", "Y2")
		case "Q4_0": // x = nibble − 8
			nibbles(wrow(2, i))
			a.I("VPSUBB", "glabit8<>(SB)", "Y1", "Y1")
		case "Q5_0": // x = nibble | 16·bit − 16
			nibbles(wrow(6, i))
			bit16(wrow(2, i))
			a.I("VPOR", "Y3", "Y1", "Y1")
			a.I("VPSUBB", "glabit16<>(SB)", "Y1", "Y1")
		case "Q4_1": // q = nibble
			nibbles(wrow(4, i))
		case "Q5_1": // q = nibble | 16·bit
			nibbles(wrow(8, i))
			bit16(wrow(4, i))
			a.I("VPOR", "Y3", "Y1", "Y1")
		}
		if k.scheme == schemeBias {
			// 128·Σ of each 4 quants: VPMADDUBSW 0x80 (128 unsigned) by x, pairs by ones
			a.I("VMOVDQU", "glabias<>(SB)", "Y2")
			a.I("VPMADDUBSW", "Y1", "Y2", "Y2")
			a.I("VPMADDWD", "Y5", "Y2", "Y2")
		}
		a.I("VMOVDQU", "Y1", fmt.Sprintf("%d(DI)", 32*qv*i))
		if qv == 2 {
			a.I("VMOVDQU", "Y2", fmt.Sprintf("%d(DI)", 64*i+32))
		}
	}
	a.I("ADDQ", fmt.Sprintf("$%d", k.wts), "SI")
	a.I("ADDQ", fmt.Sprintf("$%d", qb), "DI")
	a.I("ADDQ", fmt.Sprintf("$%d", ws), "R11")
	a.I("DECQ", "DX")
	a.I("JNZ", lbl+"unpack")
	// R11 now stands at the product table.

	// ---- the activation tiles
	a.I("VMOVDQU", "glaones<>(SB)", y(ones))
	a.I("MOVQ", "arb+24(FP)", "R9")
	a.I("LEAQ", "(R9)(R9*2)", "R13")
	a.I("MOVQ", "a+16(FP)", "R10") // the tile's first activation row
	a.I("MOVQ", "as+32(FP)", "BX")
	a.I("MOVQ", "y+48(FP)", "R8")
	a.I("MOVQ", "ldy+56(FP)", "R12")
	a.I("SHLQ", "$2", "R12")
	a.I("MOVQ", "mt+64(FP)", "CX")
	a.Label(lbl + "tile")
	// product table: wrep · the tile's activation scales, block by block;
	// with the mins, the m·s products summed in block order in Y0.. (one
	// register per chunk of the table) and stored at the scratch's start.
	type chunk struct{ o, n int }
	var chunks []chunk
	for o := 0; o < ps; {
		n := 4
		if ps-o >= 32 {
			n = 32
		} else if ps-o >= 16 {
			n = 16
		}
		chunks = append(chunks, chunk{o, n})
		o += n
	}
	reg := func(c chunk, r int) string {
		if c.n == 32 {
			return y(r)
		}
		return x(r)
	}
	mov := func(c chunk) string {
		if c.n == 4 {
			return "VMOVSS"
		}
		return "VMOVUPS"
	}
	mul := func(c chunk) string {
		if c.n == 4 {
			return "VMULSS"
		}
		return "VMULPS"
	}
	add := func(c chunk) string {
		if c.n == 4 {
			return "VADDSS"
		}
		return "VADDPS"
	}
	a.I("MOVQ", "0(SP)", "SI")
	a.I("MOVQ", "R11", "AX")
	a.I("MOVQ", "nb+40(FP)", "DX")
	if hasMin {
		for c := range chunks {
			a.I("VXORPS", y(c), y(c), y(c))
		}
	}
	a.Label(lbl + "prod")
	for c, ch := range chunks {
		a.I(mov(ch), fmt.Sprintf("%d(SI)", ch.o), reg(ch, t1))
		a.I(mul(ch), fmt.Sprintf("%d(BX)", ch.o), reg(ch, t1), reg(ch, t1))
		a.I(mov(ch), reg(ch, t1), fmt.Sprintf("%d(AX)", ch.o))
		if hasMin {
			a.I(mov(ch), fmt.Sprintf("%d(SI)", ps+ch.o), reg(ch, t2))
			a.I(mul(ch), fmt.Sprintf("%d(BX)", ps+ch.o), reg(ch, t2), reg(ch, t2))
			a.I(add(ch), reg(ch, t2), reg(ch, c), reg(ch, c))
		}
	}
	a.I("ADDQ", fmt.Sprintf("$%d", ws), "SI")
	a.I("ADDQ", fmt.Sprintf("$%d", ws), "BX")
	a.I("ADDQ", fmt.Sprintf("$%d", ps), "AX")
	a.I("DECQ", "DX")
	a.I("JNZ", lbl+"prod")
	a.I("MOVQ", "scr+72(FP)", "SI")
	if hasMin {
		for c, ch := range chunks {
			a.I(mov(ch), reg(ch, c), fmt.Sprintf("%d(SI)", ch.o))
		}
	}

	// the blocks, in order
	a.I("ADDQ", "$64", "SI")
	a.I("MOVQ", "R11", "AX")
	a.I("MOVQ", "R10", "DI")
	if ra > 3 {
		a.I("LEAQ", "(R10)(R13*1)", "R14")
	}
	a.I("MOVQ", "nb+40(FP)", "DX")
	for i := 0; i < nacc; i++ {
		a.I("VXORPS", y(i), y(i), y(i))
	}
	a.Label(lbl + "blk")
	finish := func(i, j int) {
		a.I("VPMADDWD", y(ones), y(t1), y(t1))
		if k.scheme == schemeBias {
			if i < len(offreg) {
				a.I("VPSUBD", y(offreg[i]), y(t1), y(t1))
			} else {
				a.I("VPSUBD", fmt.Sprintf("%d(SI)", 64*i+32), y(t1), y(t1))
			}
		}
		// (converting by adding 0x4B400000 and subtracting 1.5·2^23, as the
		// VNNI kernels do to spare the multiply pipes, measured slower here)
		a.I("VCVTDQ2PS", y(t1), y(t1))
		a.I("VBROADCASTSS", fmt.Sprintf("%d(AX)", 4*(j*rw+i)), y(t2))
		a.I("VFMADD231PS", y(t1), y(t2), y(j*rw+i))
	}
	for j, r := range yreg {
		a.I("VMOVDQU", arow(0, j), y(r))
	}
	switch k.scheme {
	case schemeSign:
		for i := 0; i < rw; i++ {
			a.I("VMOVDQU", fmt.Sprintf("%d(SI)", 64*i+32), y(rop))
			xs := fmt.Sprintf("%d(SI)", 64*i)
			if len(xreg) > 0 {
				a.I("VMOVDQU", xs, y(xreg[0]))
				xs = y(xreg[0])
			}
			for j := 0; j < ra; j++ {
				if j < len(yreg) {
					a.I("VPSIGNB", xs, y(yreg[j]), y(t1))
				} else {
					a.I("VMOVDQU", arow(0, j), y(t1))
					a.I("VPSIGNB", xs, y(t1), y(t1))
				}
				a.I("VPMADDUBSW", y(t1), y(rop), y(t1))
				finish(i, j)
			}
		}
	case schemeBias:
		for i, r := range offreg {
			a.I("VMOVDQU", fmt.Sprintf("%d(SI)", 64*i+32), y(r))
		}
		for i, r := range xreg {
			a.I("VMOVDQU", fmt.Sprintf("%d(SI)", 64*i), y(r))
		}
		for j := 0; j < ra; j++ {
			a.I("VMOVDQU", arow(0, j), y(rop))
			for i := 0; i < rw; i++ {
				xs := fmt.Sprintf("%d(SI)", 64*i)
				if i < len(xreg) {
					xs = y(xreg[i])
				}
				a.I("VPMADDUBSW", xs, y(rop), y(t1))
				finish(i, j)
			}
		}
	case schemeUnsigned:
		for i := 0; i < rw; i++ {
			a.I("VMOVDQU", fmt.Sprintf("%d(SI)", 32*i), y(rop))
			for j := 0; j < ra; j++ {
				ys := arow(0, j)
				if j < len(yreg) {
					ys = y(yreg[j])
				}
				a.I("VPMADDUBSW", ys, y(rop), y(t1))
				finish(i, j)
			}
		}
	}
	a.I("ADDQ", fmt.Sprintf("$%d", qb), "SI")
	a.I("ADDQ", "$32", "DI")
	if ra > 3 {
		a.I("ADDQ", "$32", "R14")
	}
	a.I("ADDQ", fmt.Sprintf("$%d", ps), "AX")
	a.I("DECQ", "DX")
	a.I("JNZ", lbl+"blk")

	// hsum_float_8 of each accumulator into its output: lanes 4..7 onto
	// 0..3, then 2,3 onto 0,1, then 1 onto 0; then with the mins their sum
	// added.
	if hasMin {
		a.I("MOVQ", "scr+72(FP)", "SI")
	}
	for j := 0; j < ra; j++ {
		for i := 0; i < rw; i++ {
			acc := j*rw + i
			a.I("VEXTRACTF128", "$1", y(acc), x(t1))
			a.I("VADDPS", x(t1), x(acc), x(acc))
			a.I("VMOVHLPS", x(acc), x(acc), x(t1))
			a.I("VADDPS", x(t1), x(acc), x(acc))
			a.I("VMOVSHDUP", x(acc), x(t1))
			a.I("VADDSS", x(t1), x(acc), x(acc))
			if hasMin {
				a.I("VADDSS", fmt.Sprintf("%d(SI)", 4*acc), x(acc), x(acc))
			}
			a.I("VMOVSS", x(acc), fmt.Sprintf("%d(R8)", 4*i))
		}
		a.I("ADDQ", "R12", "R8")
	}
	for j := 0; j < ra; j++ {
		a.I("ADDQ", "R9", "R10")
	}
	a.I("DECQ", "CX")
	a.I("JNZ", lbl+"tile")
	a.I("VZEROUPPER")
	a.I("RET")
}
