package main

// The arm64 activation quantizers (backends/cpu/actq8_arm64.s): f32 rows
// to Q8_0 and Q8_1 blocks, byte for byte what quant.QuantizeQ8_0Act and
// quant.QuantizeQ8_1Act (ggml's x86 quantize_row_q8_0/q8_1) write, for
// every finite input. Per block of 32: amax = max |x| (FABS, FMAX, FMAXV;
// max is exact, its order free), d = amax/127 (FDIV) stored as f16 by FCVT
// (IEEE round to nearest even, as quant.FP32ToFP16), id = 127/amax (an
// all-zero block gives id = +Inf and 0·Inf = NaN, which FCVTNS makes 0, the
// oracle's id = 0 result), q = FCVTNS(x·id) (round half to even, the
// oracle's roundEven) narrowed with signed saturation (SQXTN twice:
// satI8). Q8_1 also stores s = f16(d·float32(Σq)), Σq added in int32
// (ADD, ADDV; exact).
func init() {
	register("actq8_arm64.s", "arm64 && !purego", func(a *Asm) {
		a.Comment(`
Activation quantizers of the arm64 NEON tier; see internal/asmgen/arm64act.go.

func quantQ8_0NEON(src *float32, dst *byte, nb int)
func quantQ8_1NEON(src *float32, dst *byte, nb int)

nb ≥ 1 blocks of 32 floats at src to 34- (Q8_0) or 36-byte (Q8_1) blocks at
dst. Registers: R0 src, R1 dst, R2 blocks left; V0..V7 the block, V16..V19
amax scratch, V20 127.0, V21 d, V22 id.`)
		for _, q81 := range []bool{false, true} {
			genActQ8ARM64(&neon{a: a}, q81)
		}
		genActQ8KARM64(&neon{a: a})
	})
}

// genActQ8KARM64 writes quantQ8KNEON(src *float32, dst *byte, nb int):
// nb blocks of 256 floats to Q8_K, byte for byte quant.QuantizeQ8KAct
// (ggml's quantize_row_q8_K_ref) for every input the oracle defines:
// amax = max |x| by FMAXNM/FMAXNMV (a NaN never wins, as the oracle's
// a > amax), an all-zero block (amax = 0) written as 292 zero bytes; mx =
// the first x with |x| == amax (a scalar scan of the bits); iscale =
// -127/mx; q = min(127, nearest_int(iscale·x)) with nearest_int the
// oracle's magic-number trick (FMUL, FADD 12582912, AND 0x7fffff, SUB
// 0x400000, SMIN 127) truncated to int8 (XTN); bsums by SADDLV (exact, and
// int16 like the oracle's truncation since |Σ| ≤ 2048); d = 1/iscale.
func genActQ8KARM64(n *neon) {
	a := n.a
	name := "quantQ8KNEON"
	a.Text(name, 0, 24)
	a.I("MOVD", "src+0(FP)", "R0")
	a.I("MOVD", "dst+8(FP)", "R1")
	a.I("MOVD", "nb+16(FP)", "R2")
	a.I("MOVW", "$0x4b400000", "R9") // 12582912.0
	a.I("VDUP", "R9", "V24.S4")
	a.I("MOVW", "$0x007fffff", "R9")
	a.I("VDUP", "R9", "V25.S4")
	a.I("MOVW", "$0x00400000", "R9")
	a.I("VDUP", "R9", "V26.S4")
	a.I("MOVW", "$127", "R9")
	a.I("VDUP", "R9", "V27.S4")
	a.Label(name + "_block")
	// amax
	a.I("MOVD", "R0", "R10")
	a.I("MOVD", "$16", "R11")
	for i := 16; i < 20; i++ {
		n.zero(i)
	}
	a.Label(name + "_amax")
	a.I("VLD1.P", "64(R10)", "[V0.S4, V1.S4, V2.S4, V3.S4]")
	for i := 0; i < 4; i++ {
		n.fabs(i, i)
		n.fmaxnm(16+i, 16+i, i)
	}
	a.I("SUBS", "$1", "R11")
	a.I("BNE", name+"_amax")
	n.fmaxnm(16, 16, 17)
	n.fmaxnm(18, 18, 19)
	n.fmaxnm(16, 16, 18)
	n.fmaxnmv(16, 16)
	a.I("VMOV", "V16.S[0]", "R9")
	a.I("CBZW", "R9", name+"_zero")
	// mx: the first element whose |x| has amax's bits
	a.I("MOVD", "R0", "R10")
	a.Label(name + "_find")
	a.I("MOVWU.P", "4(R10)", "R12")
	a.I("ANDW", "$0x7fffffff", "R12", "R13")
	a.I("CMPW", "R9", "R13")
	a.I("BNE", name+"_find")
	a.I("VMOV", "R12", "V17.S[0]")
	a.I("MOVW", "$0xc2fe0000", "R13") // -127.0
	a.I("VMOV", "R13", "V18.S[0]")
	a.I("FDIVS", "F17", "F18", "F19") // iscale = -127/mx
	a.I("MOVW", "$0x3f800000", "R13") // 1.0
	a.I("VMOV", "R13", "V20.S[0]")
	a.I("FDIVS", "F19", "F20", "F21") // d = 1/iscale
	a.I("FMOVS", "F21", "(R1)")
	a.I("ADD", "$4", "R1", "R14")   // qs
	a.I("ADD", "$260", "R1", "R15") // bsums
	a.I("MOVD", "$16", "R11")
	a.Label(name + "_q")
	a.I("VLD1.P", "64(R0)", "[V0.S4, V1.S4, V2.S4, V3.S4]")
	for i := 0; i < 4; i++ {
		n.fmulElem(i, i, 19, 0)
		n.fadd(i, i, 24)
		n.and(i, i, 25)
		n.sub(i, i, 26)
		n.smin(i, i, 27)
	}
	n.xtnS(0, 0)
	n.xtn2S(0, 1)
	n.xtnS(1, 2)
	n.xtn2S(1, 3)
	n.xtnH(0, 0)
	n.xtn2H(0, 1)
	a.I("VST1.P", "[V0.B16]", "16(R14)")
	n.saddlv(1, 0)
	a.I("VMOV", "V1.H[0]", "R13")
	a.I("MOVH", "R13", "(R15)")
	a.I("ADD", "$2", "R15")
	a.I("SUBS", "$1", "R11")
	a.I("BNE", name+"_q")
	a.I("B", name+"_next")
	a.Label(name + "_zero")
	a.I("MOVD", "R1", "R13")
	a.I("MOVD", "$36", "R11")
	a.Label(name + "_clear")
	a.I("MOVD.P", "ZR", "8(R13)")
	a.I("SUBS", "$1", "R11")
	a.I("BNE", name+"_clear")
	a.I("MOVW", "ZR", "(R13)")
	a.I("ADD", "$1024", "R0")
	a.Label(name + "_next")
	a.I("ADD", "$292", "R1")
	a.I("SUBS", "$1", "R2")
	a.I("BNE", name+"_block")
	a.I("RET")
}

func genActQ8ARM64(n *neon, q81 bool) {
	a := n.a
	name, qoff, bsz := "quantQ8_0NEON", "2", "$34"
	if q81 {
		name, qoff, bsz = "quantQ8_1NEON", "4", "$36"
	}
	a.Text(name, 0, 24)
	a.I("MOVD", "src+0(FP)", "R0")
	a.I("MOVD", "dst+8(FP)", "R1")
	a.I("MOVD", "nb+16(FP)", "R2")
	a.I("MOVW", "$0x42fe0000", "R9") // 127.0
	a.I("VMOV", "R9", "V20.S[0]")
	a.Label(name + "_block")
	a.I("VLD1.P", "64(R0)", "[V0.S4, V1.S4, V2.S4, V3.S4]")
	a.I("VLD1.P", "64(R0)", "[V4.S4, V5.S4, V6.S4, V7.S4]")
	for i := 0; i < 4; i++ {
		n.fabs(16+i, 2*i)
		n.fabs(23+i, 2*i+1)
		n.fmax(16+i, 16+i, 23+i)
	}
	n.fmax(16, 16, 17)
	n.fmax(18, 18, 19)
	n.fmax(16, 16, 18)
	n.fmaxv(16, 16)
	a.I("FDIVS", "F20", "F16", "F21") // d = amax/127
	a.I("FDIVS", "F16", "F20", "F22") // id = 127/amax
	n.fcvtSH(17, 21)
	a.I("VMOV", "V17.H[0]", "R10")
	a.I("MOVH", "R10", "(R1)")
	for i := 0; i < 8; i++ {
		n.fmulElem(i, i, 22, 0)
		n.fcvtns(i, i)
	}
	if q81 {
		n.add(16, 0, 1)
		n.add(17, 2, 3)
		n.add(18, 4, 5)
		n.add(19, 6, 7)
		n.add(16, 16, 17)
		n.add(18, 18, 19)
		n.add(16, 16, 18)
		n.addv(16, 16)
		n.scvtfS(16, 16)
		a.I("FMULS", "F21", "F16", "F16") // d·Σq
		n.fcvtSH(16, 16)
		a.I("VMOV", "V16.H[0]", "R10")
		a.I("MOVH", "R10", "2(R1)")
	}
	for i := 0; i < 4; i++ {
		n.sqxtnS(i, 2*i)
		n.sqxtn2S(i, 2*i+1)
	}
	n.sqxtnH(0, 0)
	n.sqxtn2H(0, 1)
	n.sqxtnH(1, 2)
	n.sqxtn2H(1, 3)
	a.I("ADD", "$"+qoff, "R1", "R11")
	a.I("VST1", "[V0.B16, V1.B16]", "(R11)")
	a.I("ADD", bsz, "R1")
	a.I("SUBS", "$1", "R2")
	a.I("BNE", name+"_block")
	a.I("RET")
}
