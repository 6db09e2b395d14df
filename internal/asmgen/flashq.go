package main

import "fmt"

// flashq_amd64.s: the multi-query v sums of flash attention over an f16
// cache (backends/cpu/flash.go): each V row is converted from f16 once
// (VCVTPH2PS, exact) and used, while in registers, by several probability
// rows — the G query heads of a KV head in decode, the tokens × heads of a
// prefill tile — with every query's float order that of the one-query
// kernel (vaccF16), so the bits are the same. Plus the f32→f16 conversion
// of the KV store (VCVTPS2PH, round to nearest even). The scores are
// flasht.go's.
func init() {
	register("flashq_amd64.s", "!purego", func(a *Asm) {
		a.Blank()
		a.Comment(`Multi-query flash attention v sums over f16 rows (flash.go) and the f32→f16
conversion of the KV store (kv.go). Generated: one kernel per tier and
number of queries per pass (qp), listed in f32simd_amd64.go.`)
		for qp := 1; qp <= vaccQMax[false]; qp++ {
			vaccQ(a, false, qp)
		}
		for qp := 1; qp <= vaccQMax[true]; qp++ {
			vaccQ(a, true, qp)
		}
		toF16(a, false)
		toF16(a, true)
	})
}

// Queries per pass of the v-sum kernels, by tier (z: AVX-512): as many as
// the 16 YMM or 32 ZMM registers hold.
var vaccQMax = map[bool]int{false: 3, true: 4}

func tierSuffix(z bool) string {
	if z {
		return "AVX512"
	}
	return "AVX2"
}

// vreg names vector register i of the tier (Y or Z), and xreg/yreg its
// narrower views.
func vreg(z bool, i int) string {
	if z {
		return fmt.Sprintf("Z%d", i)
	}
	return fmt.Sprintf("Y%d", i)
}
func xreg(i int) string { return fmt.Sprintf("X%d", i) }
func yreg(i int) string { return fmt.Sprintf("Y%d", i) }

// scaledAddr is off(base) plus r times a stride held in registers: st1 =
// stride, st3 = 3·stride, st5 = 5·stride, st7 = 7·stride (r < 9).
func scaledAddr(off int, base string, r int, st1, st3, st5, st7 string) string {
	idx := map[int]string{0: "", 1: "(" + st1 + "*1)", 2: "(" + st1 + "*2)", 3: "(" + st3 + "*1)", 4: "(" + st1 + "*4)",
		5: "(" + st5 + "*1)", 6: "(" + st3 + "*2)", 7: "(" + st7 + "*1)", 8: "(" + st1 + "*8)"}[r]
	return fmt.Sprintf("%d(%s)%s", off, base, idx)
}

// vaccQ writes vaccF16Q<qp><tier>(o *float32, os int, v *byte, vstride int,
// p *float32, ps int, n, hd, cont int): for r < qp and d < hd (hd a multiple
// of 16), o[r*os+d] = the fused multiply-add chain over the n ≥ 1 rows,
// fma(p[r*ps+j], float32(v[j*vstride+d]), ·) in increasing j from 0 — the
// chain of vaccF16 for each query, the row piece converted once for all qp
// of them — starting from +0, or with cont ≠ 0 from o's values (the chain
// continued over a further run of rows). Blocks of 64 d (AVX-512, four ZMM per query) or 32 d (AVX2, four
// YMM per query), then blocks of 16.
func vaccQ(a *Asm, z bool, qp int) {
	name := fmt.Sprintf("vaccF16Q%d%s", qp, tierSuffix(z))
	vw := 8
	if z {
		vw = 16
	}
	W := 4 * vw
	acc := func(r, i int) string { return vreg(z, 4*r+i) }
	bc := func(r int) string { return vreg(z, 4*qp+r) }
	tmp := vreg(z, 5*qp)
	zero := "VXORPS"
	if z {
		zero = "VPXORD"
	}
	a.Blank()
	a.Comment(fmt.Sprintf(`func %s(o *float32, os int, v *byte, vstride int, p *float32, ps int, n, hd, cont int)
The v sums of %d queries over n ≥ 1 f16 rows (see vaccQ in
internal/asmgen/flashq.go). Registers: DI o, R8 os bytes, SI v, R9 vstride
bytes (R15 = 64 rows), DX p, BX ps bytes (R13 = 3·BX), CX n, R10 hd, AX d0,
R11 v_j at d0 (o at d0 while the sums are loaded), R12 rows left (cont
before), R14 p at j. Query r accumulates a block of %d d in
%s..%s (four registers each), its p_r[j] broadcast in %s.., the
converted row piece in %s.`, name, qp, W, acc(0, 0), acc(qp-1, 3), bc(0), tmp))
	fmt.Fprintf(&a.b, "TEXT ·%s(SB), NOSPLIT, $0-72\n", name)
	a.I("MOVQ", "o+0(FP), DI")
	a.I("MOVQ", "os+8(FP), R8")
	a.I("SHLQ", "$2, R8")
	a.I("MOVQ", "v+16(FP), SI")
	a.I("MOVQ", "vstride+24(FP), R9")
	a.I("SHLQ", "$1, R9")
	a.I("MOVQ", "p+32(FP), DX")
	a.I("MOVQ", "ps+40(FP), BX")
	a.I("SHLQ", "$2, BX")
	a.I("MOVQ", "n+48(FP), CX")
	a.I("MOVQ", "hd+56(FP), R10")
	a.I("LEAQ", "(BX)(BX*2), R13")
	a.I("MOVQ", "R9, R15")
	a.I("SHLQ", "$6, R15")
	a.I("XORQ", "AX, AX")
	block := func(lbl string, np, width int, next string) {
		a.Blank()
		a.Label(lbl)
		if width == 16 {
			a.I("CMPQ", "AX, R10")
			a.I("JGE", next)
		} else {
			a.I("LEAQ", fmt.Sprintf("%d(AX), R11", width))
			a.I("CMPQ", "R11, R10")
			a.I("JGT", next)
		}
		a.I("MOVQ", "cont+64(FP), R12")
		a.I("TESTQ", "R12, R12")
		a.I("JNZ", lbl+"_load")
		for r := 0; r < qp; r++ {
			for i := 0; i < np; i++ {
				a.I(zero, acc(r, i)+", "+acc(r, i)+", "+acc(r, i))
			}
		}
		a.I("JMP", lbl+"_go")
		a.Label(lbl + "_load")
		a.I("LEAQ", "(DI)(AX*4), R11")
		for r := 0; r < qp; r++ {
			for i := 0; i < np; i++ {
				a.I("VMOVUPS", fmt.Sprintf("%d(R11), %s", i*vw*4, acc(r, i)))
			}
			if r+1 < qp {
				a.I("ADDQ", "R8, R11")
			}
		}
		a.Label(lbl + "_go")
		a.I("LEAQ", "(SI)(AX*2), R11")
		a.I("MOVQ", "DX, R14")
		a.I("MOVQ", "CX, R12")
		a.Label(lbl + "_rows")
		// This pass's part of row j+64.
		a.I("PREFETCHT0", "(R11)(R15*1)")
		if width*2 > 64 {
			a.I("PREFETCHT0", "64(R11)(R15*1)")
		}
		for r := 0; r < qp; r++ {
			a.I("VBROADCASTSS", scaledAddr(0, "R14", r, "BX", "R13", "", "")+", "+bc(r))
		}
		for i := 0; i < np; i++ {
			a.I("VCVTPH2PS", fmt.Sprintf("%d(R11), %s", i*vw*2, tmp))
			for r := 0; r < qp; r++ {
				a.I("VFMADD231PS", tmp+", "+bc(r)+", "+acc(r, i))
			}
		}
		a.I("ADDQ", "R9, R11")
		a.I("ADDQ", "$4, R14")
		a.I("DECQ", "R12")
		a.I("JNZ", lbl+"_rows")
		a.I("LEAQ", "(DI)(AX*4), R11")
		for r := 0; r < qp; r++ {
			for i := 0; i < np; i++ {
				a.I("VMOVUPS", fmt.Sprintf("%s, %d(R11)", acc(r, i), i*vw*4))
			}
			if r+1 < qp {
				a.I("ADDQ", "R8, R11")
			}
		}
		a.I("ADDQ", fmt.Sprintf("$%d, AX", width))
		a.I("JMP", lbl)
	}
	block(name+"_big", 4, W, name+"_blk16")
	block(name+"_blk16", 16/vw, 16, name+"_done")
	a.Blank()
	a.Label(name + "_done")
	a.I("VZEROUPPER")
	a.I("RET")
}

// toF16 writes f32ToF16<tier>(dst *byte, src *float32, n int) int: converts
// the floats of src to IEEE halves (VCVTPS2PH, round to nearest even: the
// bits of quant.FP32ToFP16 for every input but NaN) in chunks of 8 (AVX2)
// or 16 (AVX-512), stopping before the first chunk that holds a NaN or
// before the last partial chunk; returns how many floats it converted (the
// caller converts the rest, NaNs included, in Go).
func toF16(a *Asm, z bool) {
	name := "f32ToF16" + tierSuffix(z)
	vw := 8
	if z {
		vw = 16
	}
	a.Blank()
	a.Comment(fmt.Sprintf(`func %s(dst *byte, src *float32, n int) int
Chunks of %d floats: %s the source, a NaN test (VCMPPS unordered), then
VCVTPS2PH $0 (round to nearest even, exceptions masked). DI dst, SI src,
CX n, AX floats done.`, name, vw, vreg(z, 0)))
	fmt.Fprintf(&a.b, "TEXT ·%s(SB), NOSPLIT, $0-32\n", name)
	a.I("MOVQ", "dst+0(FP), DI")
	a.I("MOVQ", "src+8(FP), SI")
	a.I("MOVQ", "n+16(FP), CX")
	a.I("XORQ", "AX, AX")
	a.Label(name + "_loop")
	a.I("LEAQ", fmt.Sprintf("%d(AX), DX", vw))
	a.I("CMPQ", "DX, CX")
	a.I("JGT", name+"_done")
	a.I("VMOVUPS", "(SI)(AX*4), "+vreg(z, 0))
	if z {
		a.I("VCMPPS", "$3, Z0, Z0, K1")
		a.I("KORTESTW", "K1, K1")
		a.I("JNZ", name+"_done")
		a.I("VCVTPS2PH", "$0, Z0, (DI)(AX*2)")
	} else {
		a.I("VCMPPS", "$3, Y0, Y0, Y1")
		a.I("VMOVMSKPS", "Y1, DX")
		a.I("TESTL", "DX, DX")
		a.I("JNZ", name+"_done")
		a.I("VCVTPS2PH", "$0, Y0, (DI)(AX*2)")
	}
	a.I("ADDQ", fmt.Sprintf("$%d, AX", vw))
	a.I("JMP", name+"_loop")
	a.Label(name + "_done")
	a.I("MOVQ", "AX, ret+24(FP)")
	a.I("VZEROUPPER")
	a.I("RET")
}
