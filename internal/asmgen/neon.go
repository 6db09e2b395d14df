package main

import "fmt"

// An encoder for the few AArch64 Advanced SIMD (NEON) instructions the
// arm64 kernels use and the Go assembler does not know (SDOT, SMULL,
// SADDLP, vector MLA/SCVTF/FADD, ...). Each is written as
//
//	WORD	$0x4e829420	// sdot v0.4s, v1.16b, v2.16b
//
// with the instruction in GNU syntax in the comment. Every encoding is the
// architecture's fixed opcode bits with the register numbers (and the
// index or shift) placed in their fields; neon_test.go assembles each
// comment of the generated files with llvm-mc (when it is installed) and
// checks the WORD is its encoding, and the kernels' tests under qemu
// check what they compute.

// neon writes the instructions of one kernel; dot selects the dotprod
// tier (SDOT) over the base NEON one for dotNew.
type neon struct {
	a   *Asm
	dot bool
}

func (n *neon) word(enc uint32, format string, args ...any) {
	n.a.Raw("\tWORD\t$0x%08x\t// %s", enc, fmt.Sprintf(format, args...))
}

// rrr packs the usual three-register form: Rm at 16, Rn at 5, Rd at 0.
func rrr(base uint32, d, nn, m int) uint32 {
	return base | uint32(m&31)<<16 | uint32(nn&31)<<5 | uint32(d&31)
}

// elemS packs the by-element form with a 32-bit element index i (H at 11,
// L at 21; M:Rm at 16..20).
func elemS(base uint32, d, nn, m, i int) uint32 {
	return rrr(base, d, nn, m) | uint32(i&1)<<21 | uint32(i>>1&1)<<11
}

// Integer dot products and widening multiplies.

func (n *neon) sdot(d, x, y int) {
	n.word(rrr(0x4e809400, d, x, y), "sdot v%d.4s, v%d.16b, v%d.16b", d, x, y)
}
func (n *neon) smullB(d, x, y int) {
	n.word(rrr(0x0e20c000, d, x, y), "smull v%d.8h, v%d.8b, v%d.8b", d, x, y)
}
func (n *neon) smull2B(d, x, y int) {
	n.word(rrr(0x4e20c000, d, x, y), "smull2 v%d.8h, v%d.16b, v%d.16b", d, x, y)
}
func (n *neon) smullH(d, x, y int) {
	n.word(rrr(0x0e60c000, d, x, y), "smull v%d.4s, v%d.4h, v%d.4h", d, x, y)
}
func (n *neon) smull2H(d, x, y int) {
	n.word(rrr(0x4e60c000, d, x, y), "smull2 v%d.4s, v%d.8h, v%d.8h", d, x, y)
}
func (n *neon) saddlp(d, x int) { n.word(rrr(0x4e602800, d, x, 0), "saddlp v%d.4s, v%d.8h", d, x) }

// 32-bit integer lanes.

func (n *neon) addp(d, x, y int) {
	n.word(rrr(0x4ea0bc00, d, x, y), "addp v%d.4s, v%d.4s, v%d.4s", d, x, y)
}
func (n *neon) add(d, x, y int) {
	n.word(rrr(0x4ea08400, d, x, y), "add v%d.4s, v%d.4s, v%d.4s", d, x, y)
}
func (n *neon) sub(d, x, y int) {
	n.word(rrr(0x6ea08400, d, x, y), "sub v%d.4s, v%d.4s, v%d.4s", d, x, y)
}
func (n *neon) addv(d, x int) { n.word(rrr(0x4eb1b800, d, x, 0), "addv s%d, v%d.4s", d, x) }
func (n *neon) mul(d, x, y int) {
	n.word(rrr(0x4ea09c00, d, x, y), "mul v%d.4s, v%d.4s, v%d.4s", d, x, y)
}
func (n *neon) mlaElem(d, x, y, i int) {
	n.word(elemS(0x6f800000, d, x, y, i), "mla v%d.4s, v%d.4s, v%d.s[%d]", d, x, y, i)
}
func (n *neon) shl32(d, x, sh int) {
	n.word(rrr(0x4f005400, d, x, 0)|uint32(32+sh)<<16, "shl v%d.4s, v%d.4s, #%d", d, x, sh)
}
func (n *neon) sxtlB(d, x int)  { n.word(rrr(0x0f08a400, d, x, 0), "sxtl v%d.8h, v%d.8b", d, x) }
func (n *neon) sxtl2B(d, x int) { n.word(rrr(0x4f08a400, d, x, 0), "sxtl2 v%d.8h, v%d.16b", d, x) }
func (n *neon) sxtlH(d, x int)  { n.word(rrr(0x0f10a400, d, x, 0), "sxtl v%d.4s, v%d.4h", d, x) }
func (n *neon) sxtl2H(d, x int) { n.word(rrr(0x4f10a400, d, x, 0), "sxtl2 v%d.4s, v%d.8h", d, x) }
func (n *neon) uxtlB(d, x int)  { n.word(rrr(0x2f08a400, d, x, 0), "uxtl v%d.8h, v%d.8b", d, x) }
func (n *neon) uxtl2B(d, x int) { n.word(rrr(0x6f08a400, d, x, 0), "uxtl2 v%d.8h, v%d.16b", d, x) }
func (n *neon) uxtlH(d, x int)  { n.word(rrr(0x2f10a400, d, x, 0), "uxtl v%d.4s, v%d.4h", d, x) }
func (n *neon) uxtl2H(d, x int) { n.word(rrr(0x6f10a400, d, x, 0), "uxtl2 v%d.4s, v%d.8h", d, x) }

// Bytes.

func (n *neon) and(d, x, y int) {
	n.word(rrr(0x4e201c00, d, x, y), "and v%d.16b, v%d.16b, v%d.16b", d, x, y)
}
func (n *neon) orr(d, x, y int) {
	if x == y {
		panic("orr with equal sources is the mov alias")
	}
	n.word(rrr(0x4ea01c00, d, x, y), "orr v%d.16b, v%d.16b, v%d.16b", d, x, y)
}
func (n *neon) subB(d, x, y int) {
	n.word(rrr(0x6e208400, d, x, y), "sub v%d.16b, v%d.16b, v%d.16b", d, x, y)
}
func (n *neon) cmtst(d, x, y int) {
	n.word(rrr(0x4e208c00, d, x, y), "cmtst v%d.16b, v%d.16b, v%d.16b", d, x, y)
}
func (n *neon) tbl(d, t, idx int) {
	n.word(rrr(0x4e000000, d, t, idx), "tbl v%d.16b, {v%d.16b}, v%d.16b", d, t, idx)
}
func (n *neon) ushrB(d, x, sh int) {
	n.word(rrr(0x6f000400, d, x, 0)|uint32(16-sh)<<16, "ushr v%d.16b, v%d.16b, #%d", d, x, sh)
}
func (n *neon) shlB(d, x, sh int) {
	n.word(rrr(0x4f005400, d, x, 0)|uint32(8+sh)<<16, "shl v%d.16b, v%d.16b, #%d", d, x, sh)
}

// bitTo4 sets d to the bytes of x shifted so that bit b lands on bit 4
// (the caller masks with 0x10).
func (n *neon) bitTo4(d, x, b int) {
	switch {
	case b < 4:
		n.shlB(d, x, 4-b)
	case b > 4:
		n.ushrB(d, x, b-4)
	default:
		panic("bitTo4: bit 4 needs no shift")
	}
}
func (n *neon) moviB(d, imm int) {
	n.word(0x4f00e400|uint32(imm>>5&7)<<16|uint32(imm&31)<<5|uint32(d), "movi v%d.16b, #%d", d, imm)
}
func (n *neon) zero(d int) { n.word(0x6f00e400|uint32(d), "movi v%d.2d, #0", d) }
func (n *neon) ext(d, x, y, imm int) {
	n.word(rrr(0x6e004000, d, x, y)|uint32(imm)<<11, "ext v%d.16b, v%d.16b, v%d.16b, #%d", d, x, y, imm)
}

// float32 lanes.

func (n *neon) scvtf(d, x int) { n.word(rrr(0x4e21d800, d, x, 0), "scvtf v%d.4s, v%d.4s", d, x) }
func (n *neon) fmlaElem(d, x, y, i int) {
	n.word(elemS(0x4f801000, d, x, y, i), "fmla v%d.4s, v%d.4s, v%d.s[%d]", d, x, y, i)
}
func (n *neon) fadd(d, x, y int) {
	n.word(rrr(0x4e20d400, d, x, y), "fadd v%d.4s, v%d.4s, v%d.4s", d, x, y)
}
func (n *neon) fadd2(d, x, y int) {
	n.word(rrr(0x0e20d400, d, x, y), "fadd v%d.2s, v%d.2s, v%d.2s", d, x, y)
}
func (n *neon) faddp2(d, x int) { n.word(rrr(0x7e30d800, d, x, 0), "faddp s%d, v%d.2s", d, x) }
func (n *neon) fcvtHS(d, x int) { n.word(rrr(0x1ee24000, d, x, 0), "fcvt s%d, h%d", d, x) }

// dotNew sets the 4 int32 lanes of t to the dot products of 4 consecutive
// int8 lanes of x and y (lane k: bytes 4k..4k+3), exactly: SDOT on the
// dotprod tier; on base NEON SMULL/SMULL2 (int8·int8 fits int16, even
// -128·-128), SADDLP of the product pairs and ADDP of the pair sums, which
// adds the same four products. tmp is scratch for base NEON.
func (n *neon) dotNew(t, x, y, tmp int) {
	if n.dot {
		n.zero(t)
		n.sdot(t, x, y)
		return
	}
	n.smullB(t, x, y)
	n.smull2B(tmp, x, y)
	n.saddlp(t, t)
	n.saddlp(tmp, tmp)
	n.addp(t, t, tmp)
}

// hsum8 writes to float register dst the ggmlf32.HSum8 of the 8 float32
// lanes lo (0..3) and hi (4..7): (lo+hi) lane-wise, then lanes 2,3 onto
// 0,1, then lane 1 onto lane 0 — (a0+a2)+(a1+a3) with a = lo+hi, the
// order of ggml's hsum_float_8. t1, t2 are scratch.
func (n *neon) hsum8(dst, lo, hi, t1, t2 int) {
	n.fadd(t1, lo, hi)
	n.hsum4(dst, t1, t2)
}

// hsum4 writes (v0+v2)+(v1+v3) of v's 4 lanes to float register dst.
func (n *neon) hsum4(dst, v, t int) {
	n.ext(t, v, v, 8)
	n.fadd2(t, v, t)
	n.faddp2(dst, t)
}

// Activation quantizer instructions.

func (n *neon) fabs(d, x int) { n.word(rrr(0x4ea0f800, d, x, 0), "fabs v%d.4s, v%d.4s", d, x) }
func (n *neon) fmax(d, x, y int) {
	n.word(rrr(0x4e20f400, d, x, y), "fmax v%d.4s, v%d.4s, v%d.4s", d, x, y)
}
func (n *neon) fmaxv(d, x int) { n.word(rrr(0x6e30f800, d, x, 0), "fmaxv s%d, v%d.4s", d, x) }
func (n *neon) fmulElem(d, x, y, i int) {
	n.word(elemS(0x4f809000, d, x, y, i), "fmul v%d.4s, v%d.4s, v%d.s[%d]", d, x, y, i)
}
func (n *neon) fcvtns(d, x int) { n.word(rrr(0x4e21a800, d, x, 0), "fcvtns v%d.4s, v%d.4s", d, x) }
func (n *neon) sqxtnS(d, x int) { n.word(rrr(0x0e614800, d, x, 0), "sqxtn v%d.4h, v%d.4s", d, x) }
func (n *neon) sqxtn2S(d, x int) {
	n.word(rrr(0x4e614800, d, x, 0), "sqxtn2 v%d.8h, v%d.4s", d, x)
}
func (n *neon) sqxtnH(d, x int) { n.word(rrr(0x0e214800, d, x, 0), "sqxtn v%d.8b, v%d.8h", d, x) }
func (n *neon) sqxtn2H(d, x int) {
	n.word(rrr(0x4e214800, d, x, 0), "sqxtn2 v%d.16b, v%d.8h", d, x)
}
func (n *neon) fcvtSH(d, x int) { n.word(rrr(0x1e23c000, d, x, 0), "fcvt h%d, s%d", d, x) }
func (n *neon) scvtfS(d, x int) { n.word(rrr(0x5e21d800, d, x, 0), "scvtf s%d, s%d", d, x) }

// Q8_K quantizer instructions.

func (n *neon) fmaxnm(d, x, y int) {
	n.word(rrr(0x4e20c400, d, x, y), "fmaxnm v%d.4s, v%d.4s, v%d.4s", d, x, y)
}
func (n *neon) fmaxnmv(d, x int) { n.word(rrr(0x6e30c800, d, x, 0), "fmaxnmv s%d, v%d.4s", d, x) }
func (n *neon) smin(d, x, y int) {
	n.word(rrr(0x4ea06c00, d, x, y), "smin v%d.4s, v%d.4s, v%d.4s", d, x, y)
}
func (n *neon) xtnS(d, x int)   { n.word(rrr(0x0e612800, d, x, 0), "xtn v%d.4h, v%d.4s", d, x) }
func (n *neon) xtn2S(d, x int)  { n.word(rrr(0x4e612800, d, x, 0), "xtn2 v%d.8h, v%d.4s", d, x) }
func (n *neon) xtnH(d, x int)   { n.word(rrr(0x0e212800, d, x, 0), "xtn v%d.8b, v%d.8h", d, x) }
func (n *neon) xtn2H(d, x int)  { n.word(rrr(0x4e212800, d, x, 0), "xtn2 v%d.16b, v%d.8h", d, x) }
func (n *neon) saddlv(d, x int) { n.word(rrr(0x4e303800, d, x, 0), "saddlv h%d, v%d.16b", d, x) }
