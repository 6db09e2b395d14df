package main

import "fmt"

// The arm64 row kernels (backends/cpu/dot_arm64.s): one weight row at a
// time against one activation row, for the dotprod tier (SDOT) and the
// base NEON tier (SMULL/SADDLP/ADDP), from one description per weight type
// — the tiers differ only in how 16 int8 products become 4 int32 lanes
// (neon.dotNew).
//
// Each kernel gives the bits of quant's pure-Go dot of its type, which
// emulates ggml's x86 AVX2 kernel: 8 int32 lanes per block (lane k: the
// products of elements 4k..4k+3 of each 32-element group, the nibble
// formats' low nibbles in lanes 0..3 and high nibbles in lanes 4..7), kept
// here as two 4-lane vectors (lo = lanes 0..3, hi = lanes 4..7). An SDOT
// of 16 bytes gives exactly 4 such lanes, so the integer sums are the
// oracle's lane for lane (integer adds are exact, their order free). The
// float part is the oracle's instruction for instruction: SCVTF of each
// lane, one FMLA (fused, one rounding, as _mm256_fmadd_ps) per lane and
// block with the float32 product of the two scales, and at the end
// hsum_float_8 as (a0+a2)+(a1+a3) of a = lo+hi (neon.hsum8). So a plan
// gives the same logits on arm64 as on x86.

func init() {
	register("dot_arm64.s", "arm64 && !purego", func(a *Asm) {
		a.Comment(`
Row kernels of the arm64 tiers; see internal/asmgen/arm64dot.go for the
lane layout and float order (the pure-Go oracle's, ggml x86 AVX2's).

Legacy kernels: func(w *byte, wrb int, a *byte, nb int, y *float32, rows int)
K-quant kernels: func(w *byte, wrb int, a *byte, y *float32, rows int, nb int)
y[r] = dot(weight row r at w+r*wrb, activation row a), nb blocks, rows ≥ 1
and nb ≥ 1 (the Go wrappers check both and every bound).

Registers: R0 weight row, R1 wrb, R2 activation row, R3 nb, R4 y, R5 rows,
R6/R7 weight/activation cursors, R8 block count; V0/V1 the float lanes 0..3
/ 4..7, V2 the block's scale product.`)
		a.Blank()
		// Q5_0 tables: TBL indices spreading qh bytes 0,1 (low half) and
		// 2,3 (high half) over 16 lanes each, and the bit of each lane.
		var tab []byte
		for i := 0; i < 16; i++ {
			tab = append(tab, byte(i/8))
		}
		for i := 0; i < 16; i++ {
			tab = append(tab, byte(2+i/8))
		}
		for i := 0; i < 16; i++ {
			tab = append(tab, byte(1<<(i%8)))
		}
		for i := 0; i < len(tab); i += 8 {
			var v uint64
			for j := 7; j >= 0; j-- {
				v = v<<8 | uint64(tab[i+j])
			}
			a.Raw("DATA q5tabARM64<>+%d(SB)/8, $0x%016x", i, v)
		}
		a.Raw("GLOBL q5tabARM64<>(SB), RODATA|NOPTR, $%d", len(tab))
		for _, t := range []struct {
			suffix string
			dot    bool
		}{{"DotProd", true}, {"NEON", false}} {
			n := &neon{a: a, dot: t.dot}
			for _, typ := range []string{"Q8_0", "Q4_0", "Q5_0", "Q4_1", "Q5_1"} {
				genLegacyARM64(n, typ, "rows"+typ+t.suffix)
			}
			genQ45KARM64(n, "kqRowsQ4K"+t.suffix, false)
			genQ45KARM64(n, "kqRowsQ5K"+t.suffix, true)
			genQ6KARM64(n, "kqRowsQ6K"+t.suffix)
			genQ23KARM64(n, "kqRowsQ2K"+t.suffix, false)
			genQ23KARM64(n, "kqRowsQ3K"+t.suffix, true)
		}
	})
}

// halfScale loads the f16 at off(base) into float register v as float32
// (FCVT is exact, as the oracle's table conversion).
func halfScale(n *neon, base string, off, v int, tmp string) {
	a := n.a
	a.I("MOVHU", fmt.Sprintf("%d(%s)", off, base), tmp)
	a.I("VMOV", tmp, fmt.Sprintf("V%d.S[0]", v))
	n.fcvtHS(v, v)
}

// genLegacyARM64 writes the row kernel of a 32-element weight type against
// Q8_0 activations (34-byte blocks: f16 d, 32 int8) or, for Q4_1 and Q5_1,
// Q8_1 activations (36 bytes: f16 d, f16 s, 32 int8).
//
// Q8_0: lane k = Σ w·a over bytes 4k..4k+3 (two SDOTs of 16 bytes).
// Q4_0: the low nibbles of the 16 quant bytes (elements 0..15) and the
// high ones (16..31) minus 8, as int8, against activation bytes 0..15 and
// 16..31. Q5_0: the same with the 5th bit of element j taken from bit j of
// the 32-bit qh (TBL spreads qh's bytes over the lanes, CMTST with each
// lane's bit, AND 0x10) and 16 subtracted. Q4_1, Q5_1: the unsigned quants
// as they are, and m_w·s_a (float32 product) added to a scalar in block
// order, which is added to the hsum last (the oracle's summs).
func genLegacyARM64(n *neon, typ, name string) {
	a := n.a
	ones := typ == "Q4_1" || typ == "Q5_1" // Q8_1 activations, a min term
	q5 := typ == "Q5_0" || typ == "Q5_1"
	a.Text(name, 0, 48)
	a.I("MOVD", "w+0(FP)", "R0")
	a.I("MOVD", "wrb+8(FP)", "R1")
	a.I("MOVD", "a+16(FP)", "R2")
	a.I("MOVD", "nb+24(FP)", "R3")
	a.I("MOVD", "y+32(FP)", "R4")
	a.I("MOVD", "rows+40(FP)", "R5")
	if typ != "Q8_0" {
		n.moviB(31, 0x0f)
	}
	switch typ {
	case "Q4_0":
		n.moviB(30, 8)
	case "Q5_0":
		n.moviB(30, 16)
	}
	if q5 {
		n.moviB(26, 0x10)
		a.I("MOVD", "$q5tabARM64<>(SB)", "R12")
		a.I("VLD1", "(R12)", "[V27.B16, V28.B16, V29.B16]")
	}
	a.Label(name + "_row")
	a.I("MOVD", "R0", "R6")
	a.I("MOVD", "R2", "R7")
	a.I("MOVD", "R3", "R8")
	n.zero(0)
	n.zero(1)
	if ones {
		n.zero(25)
	}
	a.Label(name + "_block")
	halfScale(n, "R6", 0, 2, "R9")
	halfScale(n, "R7", 0, 3, "R10")
	a.I("FMULS", "F3", "F2", "F2")
	if ones {
		// summs += float32(m_w·s_a), in block order
		halfScale(n, "R6", 2, 11, "R9")
		halfScale(n, "R7", 2, 12, "R10")
		a.I("FMULS", "F12", "F11", "F11")
		a.I("FADDS", "F11", "F25", "F25")
		a.I("ADD", "$4", "R6")
		a.I("ADD", "$4", "R7")
	} else {
		a.I("ADD", "$2", "R6")
		a.I("ADD", "$2", "R7")
	}
	var wlo, whi int
	switch typ {
	case "Q8_0":
		a.I("VLD1.P", "32(R6)", "[V4.B16, V5.B16]")
		wlo, whi = 4, 5
	default:
		if q5 {
			a.I("MOVWU", "(R6)", "R11")
			a.I("ADD", "$4", "R6")
			a.I("VMOV", "R11", "V8.S[0]")
			n.tbl(9, 8, 27)
			n.tbl(10, 8, 28)
			n.cmtst(9, 9, 29)
			n.cmtst(10, 10, 29)
			n.and(9, 9, 26)
			n.and(10, 10, 26)
		}
		a.I("VLD1.P", "16(R6)", "[V4.B16]")
		n.and(5, 4, 31)
		n.ushrB(4, 4, 4)
		if q5 {
			n.orr(5, 5, 9)
			n.orr(4, 4, 10)
		}
		if !ones {
			n.subB(5, 5, 30)
			n.subB(4, 4, 30)
		}
		wlo, whi = 5, 4
	}
	a.I("VLD1.P", "32(R7)", "[V6.B16, V7.B16]")
	n.dotNew(16, wlo, 6, 18)
	n.dotNew(17, whi, 7, 19)
	n.scvtf(16, 16)
	n.scvtf(17, 17)
	n.fmlaElem(0, 16, 2, 0)
	n.fmlaElem(1, 17, 2, 0)
	a.I("SUBS", "$1", "R8")
	a.I("BNE", name+"_block")
	n.hsum8(20, 0, 1, 21, 22)
	if ones {
		a.I("FADDS", "F25", "F20", "F20")
	}
	a.I("FMOVS", "F20", "(R4)")
	a.I("ADD", "$4", "R4")
	a.I("ADD", "R1", "R0")
	a.I("SUBS", "$1", "R5")
	a.I("BNE", name+"_row")
	a.I("RET")
}

// kqPrologue loads the K-quant kernel arguments.
func kqPrologue(a *Asm) {
	a.I("MOVD", "w+0(FP)", "R0")
	a.I("MOVD", "wrb+8(FP)", "R1")
	a.I("MOVD", "a+16(FP)", "R2")
	a.I("MOVD", "y+24(FP)", "R4")
	a.I("MOVD", "rows+32(FP)", "R5")
	a.I("MOVD", "nb+40(FP)", "R3")
}

// genQ45KARM64 writes the Q4_K × Q8_K kernel (quant.DotQ4KQ8K's order) or,
// with q5, the Q5_K one (DotQ5KQ8K). Per super-block, sumi lane k = Σ_j
// s(2j)·(low nibbles · q8[64j..]) + s(2j+1)·(high nibbles · q8[64j+32..])
// (MLA by element with the unpacked 6-bit scales), then FMLA with d =
// yd·d_w. Q5_K adds bit 2j (low) and 2j+1 (high) of qh as bit 4 of the
// quants (shifted there and masked with 0x10). The mins: with
// p = SADDLP(bsums), Q4_K keeps lane k = m(2k)·p(2k) + m(2k+1)·p(2k+1)
// (MUL, ADDP) in its own 4-lane accumulator, FMLA with dmin =
// -(yd·dmin_w), and the result is hsum8(acc) + ((m0+m2)+(m1+m3)); Q5_K
// sums all eight products to one int32 (ADDV), converts it and FMAs it
// into a scalar summs (lane 0 of V30), added to hsum8(acc) last.
//
// The scales and mins are unpacked in general registers from the three
// 32-bit words u0, u1, u2 of the 12 packed bytes: scales 0..3 = bytes of
// u0&0x3f3f3f3f, scales 4..7 = bytes of (u2&0x0f0f0f0f) |
// ((u0>>6)&0x03030303)<<4, mins 0..3 = u1&0x3f3f3f3f, mins 4..7 =
// ((u2>>4)&0x0f0f0f0f) | ((u1>>6)&0x03030303)<<4 (get_scale_min_k4 four
// at a time), then widened to int32 lanes: V23/V24 scales, V25/V26 mins.
func genQ45KARM64(n *neon, name string, q5 bool) {
	a := n.a
	a.Text(name, 0, 48)
	kqPrologue(a)
	n.moviB(31, 0x0f)
	if q5 {
		n.moviB(29, 0x10)
	}
	a.Label(name + "_row")
	a.I("MOVD", "R0", "R6")
	a.I("MOVD", "R2", "R7")
	a.I("MOVD", "R3", "R8")
	n.zero(0)
	n.zero(1)
	n.zero(30)
	a.Label(name + "_block")
	halfScale(n, "R6", 0, 2, "R9")
	halfScale(n, "R6", 2, 3, "R10")
	a.I("FMOVS", "(R7)", "F4")
	a.I("FMULS", "F4", "F2", "F2")
	a.I("FMULS", "F4", "F3", "F3")
	a.I("FNEGS", "F3", "F3")
	a.I("MOVWU", "4(R6)", "R11")
	a.I("MOVWU", "8(R6)", "R12")
	a.I("MOVWU", "12(R6)", "R13")
	a.I("ANDW", "$0x3f3f3f3f", "R11", "R14")
	a.I("ANDW", "$0x0f0f0f0f", "R13", "R15")
	a.I("LSRW", "$6", "R11", "R19")
	a.I("ANDW", "$0x03030303", "R19", "R19")
	a.I("ORRW", "R19<<4", "R15", "R15")
	a.I("ORR", "R15<<32", "R14", "R14")
	a.I("ANDW", "$0x3f3f3f3f", "R12", "R20")
	a.I("LSRW", "$4", "R13", "R15")
	a.I("ANDW", "$0x0f0f0f0f", "R15", "R15")
	a.I("LSRW", "$6", "R12", "R19")
	a.I("ANDW", "$0x03030303", "R19", "R19")
	a.I("ORRW", "R19<<4", "R15", "R15")
	a.I("ORR", "R15<<32", "R20", "R20")
	a.I("VMOV", "R14", "V20.D[0]")
	a.I("VMOV", "R20", "V20.D[1]")
	n.uxtlB(21, 20)
	n.uxtl2B(22, 20)
	n.uxtlH(23, 21)
	n.uxtl2H(24, 21)
	n.uxtlH(25, 22)
	n.uxtl2H(26, 22)
	a.I("ADD", "$260", "R7", "R19")
	a.I("VLD1", "(R19)", "[V14.H8, V15.H8]")
	n.saddlp(14, 14)
	n.saddlp(15, 15)
	n.mul(14, 14, 25)
	n.mul(15, 15, 26)
	if q5 {
		n.add(14, 14, 15)
		n.addv(14, 14)
	} else {
		n.addp(14, 14, 15)
	}
	n.scvtf(14, 14)
	n.fmlaElem(30, 14, 3, 0)
	a.I("ADD", "$16", "R6")
	a.I("ADD", "$4", "R7")
	if q5 {
		a.I("VLD1.P", "32(R6)", "[V14.B16, V15.B16]")
	}
	n.zero(16)
	n.zero(17)
	for j := 0; j < 4; j++ {
		a.I("VLD1.P", "32(R6)", "[V4.B16, V5.B16]")
		a.I("VLD1.P", "64(R7)", "[V6.B16, V7.B16, V8.B16, V9.B16]")
		n.and(10, 4, 31)
		n.and(11, 5, 31)
		n.ushrB(12, 4, 4)
		n.ushrB(13, 5, 4)
		if q5 {
			for i, dst := range []int{10, 11, 12, 13} {
				src, bit := 14+i%2, 2*j+i/2
				if bit == 4 {
					n.and(20, src, 29)
				} else {
					n.bitTo4(20, src, bit)
					n.and(20, 20, 29)
				}
				n.orr(dst, dst, 20)
			}
		}
		s1, s2 := 2*j, 2*j+1
		n.dotNew(18, 10, 6, 27)
		n.dotNew(19, 11, 7, 28)
		n.mlaElem(16, 18, 23+s1/4, s1%4)
		n.mlaElem(17, 19, 23+s1/4, s1%4)
		n.dotNew(18, 12, 8, 27)
		n.dotNew(19, 13, 9, 28)
		n.mlaElem(16, 18, 23+s2/4, s2%4)
		n.mlaElem(17, 19, 23+s2/4, s2%4)
	}
	a.I("ADD", "$32", "R7")
	n.scvtf(16, 16)
	n.scvtf(17, 17)
	n.fmlaElem(0, 16, 2, 0)
	n.fmlaElem(1, 17, 2, 0)
	a.I("SUBS", "$1", "R8")
	a.I("BNE", name+"_block")
	n.hsum8(20, 0, 1, 21, 22)
	if q5 {
		a.I("FADDS", "F30", "F20", "F20")
	} else {
		n.hsum4(23, 30, 24)
		a.I("FADDS", "F23", "F20", "F20")
	}
	a.I("FMOVS", "F20", "(R4)")
	a.I("ADD", "$4", "R4")
	a.I("ADD", "R1", "R0")
	a.I("SUBS", "$1", "R5")
	a.I("BNE", name+"_row")
	a.I("RET")
}

// genQ6KARM64 writes the Q6_K × Q8_K kernel (quant.DotQ6KQ8K's order): for
// each half n and 16-byte part h (lanes 4h..4h+3), the four 6-bit quants
// (0..63, as int8: low/high nibbles of ql with 2 bits of qh shifted to
// bits 4,5 — (qh<<4)&0x30, (qh<<2)&0x30, qh&0x30, (qh>>2)&0x30) dotted with
// their activations and multiplied by scale 8n+h+2i (MLA by element,
// scales sign-extended to int32 in V23..V26); minus 32·(sc(2k)·bsum(2k) +
// sc(2k+1)·bsum(2k+1)) per lane (SMULL of the int16 scales and bsums, ADDP,
// SHL 5), then FMLA with d = yd·d_w.
func genQ6KARM64(n *neon, name string) {
	a := n.a
	a.Text(name, 0, 48)
	kqPrologue(a)
	n.moviB(3, 0x0f)
	n.moviB(31, 0x30)
	a.Label(name + "_row")
	a.I("MOVD", "R0", "R6")
	a.I("MOVD", "R2", "R7")
	a.I("MOVD", "R3", "R8")
	n.zero(0)
	n.zero(1)
	a.Label(name + "_block")
	halfScale(n, "R6", 208, 2, "R9")
	a.I("FMOVS", "(R7)", "F4")
	a.I("FMULS", "F4", "F2", "F2")
	a.I("ADD", "$192", "R6", "R19")
	a.I("VLD1", "(R19)", "[V20.B16]")
	n.sxtlB(21, 20)
	n.sxtl2B(22, 20)
	n.sxtlH(23, 21)
	n.sxtl2H(24, 21)
	n.sxtlH(25, 22)
	n.sxtl2H(26, 22)
	a.I("ADD", "$260", "R7", "R19")
	a.I("VLD1", "(R19)", "[V14.H8, V15.H8]")
	n.smullH(28, 14, 21)
	n.smull2H(29, 14, 21)
	n.addp(28, 28, 29)
	n.smullH(29, 15, 22)
	n.smull2H(30, 15, 22)
	n.addp(29, 29, 30)
	n.shl32(28, 28, 5)
	n.shl32(29, 29, 5)
	a.I("ADD", "$128", "R6", "R20")
	a.I("ADD", "$4", "R7")
	n.zero(18)
	n.zero(19)
	for half := 0; half < 2; half++ {
		a.I("VLD1.P", "64(R6)", "[V4.B16, V5.B16, V6.B16, V7.B16]")
		a.I("VLD1.P", "32(R20)", "[V8.B16, V9.B16]")
		a.I("VLD1.P", "64(R7)", "[V10.B16, V11.B16, V12.B16, V13.B16]")
		a.I("VLD1.P", "64(R7)", "[V14.B16, V15.B16, V16.B16, V17.B16]")
		for h := 0; h < 2; h++ {
			qlA, qlB, qh, acc := 4+h, 6+h, 8+h, 18+h
			for i := 0; i < 4; i++ {
				switch i {
				case 0:
					n.shlB(20, qh, 4)
					n.and(20, 20, 31)
					n.and(21, qlA, 3)
				case 1:
					n.shlB(20, qh, 2)
					n.and(20, 20, 31)
					n.and(21, qlB, 3)
				case 2:
					n.and(20, qh, 31)
					n.ushrB(21, qlA, 4)
				case 3:
					n.ushrB(20, qh, 2)
					n.and(20, 20, 31)
					n.ushrB(21, qlB, 4)
				}
				n.orr(21, 21, 20)
				n.dotNew(22, 21, 10+2*i+h, 27)
				s := 8*half + h + 2*i
				n.mlaElem(acc, 22, 23+s/4, s%4)
			}
		}
	}
	a.I("ADD", "$82", "R6")
	a.I("ADD", "$32", "R7")
	n.sub(18, 18, 28)
	n.sub(19, 19, 29)
	n.scvtf(18, 18)
	n.scvtf(19, 19)
	n.fmlaElem(0, 18, 2, 0)
	n.fmlaElem(1, 19, 2, 0)
	a.I("SUBS", "$1", "R8")
	a.I("BNE", name+"_block")
	n.hsum8(20, 0, 1, 21, 22)
	a.I("FMOVS", "F20", "(R4)")
	a.I("ADD", "$4", "R4")
	a.I("ADD", "R1", "R0")
	a.I("SUBS", "$1", "R5")
	a.I("BNE", name+"_row")
	a.I("RET")
}

// genQ23KARM64 writes the Q2_K × Q8_K kernel (quant.DotQ2KQ8K's order) or,
// with q3, the Q3_K one (DotQ3KQ8K). For each half and j = 0..3 the 2-bit
// quants (q >> 2j) & 3 — Q3_K: minus 4 where the hmask bit 4·half+j is
// clear, as int8 — are dotted with their 32 activations, lanes 0..3
// (bytes 0..15) scaled by scale 8·half+2j and lanes 4..7 by the next one
// (MLA by element; the 16 scales widened to int32 in V23..V26). Q2_K
// first FMAs its mins lanes, m(2k)·bsum(2k) + m(2k+1)·bsum(2k+1) with the
// high scale nibbles (SMULL, ADDP), with dmin = -(yd·dmin_w), then the
// sums with d = yd·d_w, as the oracle's two MulAdds; Q3_K has only the
// second. Q3_K's scales (6 bits, minus 32) are unpacked in general
// registers from the words u0, u1, u2 of the 12 bytes: scales 0..3 =
// (u0&0x0f0f0f0f) | (u2&0x03030303)<<4, 4..7 = (u1&0x0f0f0f0f) |
// ((u2>>2)&0x03030303)<<4, 8..11 = ((u0>>4)&0x0f0f0f0f) |
// ((u2>>4)&0x03030303)<<4, 12..15 = ((u1>>4)&0x0f0f0f0f) |
// ((u2>>6)&0x03030303)<<4.
func genQ23KARM64(n *neon, name string, q3 bool) {
	a := n.a
	a.Text(name, 0, 48)
	kqPrologue(a)
	n.moviB(31, 3)
	if q3 {
		n.moviB(30, 4)
		n.moviB(29, 32)
	} else {
		n.moviB(29, 0x0f)
	}
	a.Label(name + "_row")
	a.I("MOVD", "R0", "R6")
	a.I("MOVD", "R2", "R7")
	a.I("MOVD", "R3", "R8")
	n.zero(0)
	n.zero(1)
	a.Label(name + "_block")
	a.I("FMOVS", "(R7)", "F4")
	a.I("ADD", "$260", "R7", "R19")
	if q3 {
		halfScale(n, "R6", 108, 2, "R9")
		a.I("FMULS", "F4", "F2", "F2")
		a.I("MOVWU", "96(R6)", "R11")
		a.I("MOVWU", "100(R6)", "R12")
		a.I("MOVWU", "104(R6)", "R13")
		// scales 0..3 | 4..7 << 32
		a.I("ANDW", "$0x0f0f0f0f", "R11", "R14")
		a.I("ANDW", "$0x03030303", "R13", "R15")
		a.I("ORRW", "R15<<4", "R14", "R14")
		a.I("ANDW", "$0x0f0f0f0f", "R12", "R20")
		a.I("LSRW", "$2", "R13", "R15")
		a.I("ANDW", "$0x03030303", "R15", "R15")
		a.I("ORRW", "R15<<4", "R20", "R20")
		a.I("ORR", "R20<<32", "R14", "R14")
		// scales 8..11 | 12..15 << 32
		a.I("LSRW", "$4", "R11", "R21")
		a.I("ANDW", "$0x0f0f0f0f", "R21", "R21")
		a.I("LSRW", "$4", "R13", "R15")
		a.I("ANDW", "$0x03030303", "R15", "R15")
		a.I("ORRW", "R15<<4", "R21", "R21")
		a.I("LSRW", "$4", "R12", "R20")
		a.I("ANDW", "$0x0f0f0f0f", "R20", "R20")
		a.I("LSRW", "$6", "R13", "R15")
		a.I("ANDW", "$0x03030303", "R15", "R15")
		a.I("ORRW", "R15<<4", "R20", "R20")
		a.I("ORR", "R20<<32", "R21", "R21")
		a.I("VMOV", "R14", "V20.D[0]")
		a.I("VMOV", "R21", "V20.D[1]")
		n.subB(20, 20, 29)
		n.sxtlB(21, 20)
		n.sxtl2B(22, 20)
		n.sxtlH(23, 21)
		n.sxtl2H(24, 21)
		n.sxtlH(25, 22)
		n.sxtl2H(26, 22)
		a.I("VLD1", "(R6)", "[V14.B16, V15.B16]") // hmask
		a.I("ADD", "$32", "R6", "R20")
	} else {
		halfScale(n, "R6", 80, 2, "R9")
		halfScale(n, "R6", 82, 3, "R10")
		a.I("FMULS", "F4", "F2", "F2")
		a.I("FMULS", "F4", "F3", "F3")
		a.I("FNEGS", "F3", "F3")
		a.I("VLD1", "(R6)", "[V20.B16]")
		a.I("VLD1", "(R19)", "[V14.H8, V15.H8]")
		n.ushrB(21, 20, 4)
		n.uxtlB(22, 21)
		n.uxtl2B(23, 21)
		n.smullH(24, 14, 22)
		n.smull2H(25, 14, 22)
		n.addp(24, 24, 25)
		n.smullH(25, 15, 23)
		n.smull2H(26, 15, 23)
		n.addp(25, 25, 26)
		n.scvtf(24, 24)
		n.scvtf(25, 25)
		n.fmlaElem(0, 24, 3, 0)
		n.fmlaElem(1, 25, 3, 0)
		n.and(20, 20, 29)
		n.uxtlB(21, 20)
		n.uxtl2B(22, 20)
		n.uxtlH(23, 21)
		n.uxtl2H(24, 21)
		n.uxtlH(25, 22)
		n.uxtl2H(26, 22)
		a.I("ADD", "$16", "R6", "R20")
	}
	a.I("ADD", "$4", "R7")
	n.zero(16)
	n.zero(17)
	for half := 0; half < 2; half++ {
		a.I("VLD1.P", "32(R20)", "[V4.B16, V5.B16]")
		for j := 0; j < 4; j++ {
			a.I("VLD1.P", "32(R7)", "[V6.B16, V7.B16]")
			if j == 0 {
				n.and(10, 4, 31)
				n.and(11, 5, 31)
			} else {
				n.ushrB(10, 4, 2*j)
				n.ushrB(11, 5, 2*j)
				n.and(10, 10, 31)
				n.and(11, 11, 31)
			}
			if q3 {
				n.moviB(13, 1<<(4*half+j))
				for i, dst := range []int{10, 11} {
					n.cmtst(12, 14+i, 13)
					n.and(12, 12, 30)
					n.orr(dst, dst, 12)
					n.subB(dst, dst, 30)
				}
			}
			s0, s1 := half*8+2*j, half*8+2*j+1
			n.dotNew(18, 10, 6, 27)
			n.dotNew(19, 11, 7, 8)
			n.mlaElem(16, 18, 23+s0/4, s0%4)
			n.mlaElem(17, 19, 23+s1/4, s1%4)
		}
	}
	a.I("ADD", "$32", "R7")
	if q3 {
		a.I("ADD", "$110", "R6")
	} else {
		a.I("ADD", "$84", "R6")
	}
	n.scvtf(16, 16)
	n.scvtf(17, 17)
	n.fmlaElem(0, 16, 2, 0)
	n.fmlaElem(1, 17, 2, 0)
	a.I("SUBS", "$1", "R8")
	a.I("BNE", name+"_block")
	n.hsum8(20, 0, 1, 21, 22)
	a.I("FMOVS", "F20", "(R4)")
	a.I("ADD", "$4", "R4")
	a.I("ADD", "R1", "R0")
	a.I("SUBS", "$1", "R5")
	a.I("BNE", name+"_row")
	a.I("RET")
}
