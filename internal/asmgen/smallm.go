package main

import (
	"fmt"
	"strings"
)

// Small-M mat-mul kernels (smallm_amd64.s): the batched decode step of a
// server, where every mat-mul has one activation row per sequence (2..8)
// instead of one. The prefill GEMMs unpack a weight tile into scratch per
// call, which pays off only over many activation rows; these kernels read
// the raw GGUF weight blocks instead, unpack each block into registers once
// and dot it with every activation row of the call before the next block.
//
// One kernel per weight type, tier and number of activation rows M. The Go
// side (backends/cpu/smallm_amd64.go) first lays out the M activation rows
// block-interleaved as records, so that every operand of a block is at a
// constant offset from one pointer (see each family's comment).
//
// The float order of every output is the row kernels' and quant's pure-Go
// dot's: per 32-element block the 8 exact int32 sums of 4 consecutive
// products (lane k: elements 4k..4k+3), converted to float32, one FMA per
// lane with the float32 product d_w·d_a, blocks in order, then
// hsum_float_8 — so the bits are the same as the single-row kernels'.

// smallKind is one weight type of the small-M generator.
type smallKind struct {
	name string // Q8_0, Q5_0, Q4_0
	wts  int    // bytes per weight block
}

var smallKinds = []smallKind{{"Q8_0", 34}, {"Q5_0", 22}, {"Q4_0", 18}}

// smallMaxM is the most activation rows one kernel takes.
const smallMaxM = 8

func init() {
	register("smallm_amd64.s", "amd64 && !purego", genSmallM)
}

func genSmallM(a *Asm) {
	a.Blank()
	a.Comment(`Small-M mat-mul kernels: 2..8 activation rows against raw GGUF weight
blocks; see internal/asmgen/smallm.go (the generator) and
backends/cpu/smallm_amd64.go (the Go side).`)
	a.Blank()
	smallConst(a, "smsixteen", "0x1010101010101010")
	smallConst(a, "smeight", "0x0808080808080808")
	smallConst(a, "smbitsel", "0x8040201008040201")
	a.Raw("DATA smnibshift<>+0(SB)/8, $0")
	a.Raw("DATA smnibshift<>+8(SB)/8, $0")
	a.Raw("DATA smnibshift<>+16(SB)/8, $0x0000000400000004")
	a.Raw("DATA smnibshift<>+24(SB)/8, $0x0000000400000004")
	a.Raw("GLOBL smnibshift<>(SB), RODATA|NOPTR, $32")
	a.Blank()
	a.Raw("DATA smqhshuf<>+0(SB)/8, $0x0000000000000000")
	a.Raw("DATA smqhshuf<>+8(SB)/8, $0x0101010101010101")
	a.Raw("DATA smqhshuf<>+16(SB)/8, $0x0202020202020202")
	a.Raw("DATA smqhshuf<>+24(SB)/8, $0x0303030303030303")
	a.Raw("GLOBL smqhshuf<>(SB), RODATA|NOPTR, $32")
	for _, vnni := range []bool{false, true} {
		for _, k := range smallKinds {
			for m := 2; m <= smallMaxM; m++ {
				genSmallAVX2(a, k, m, vnni)
			}
		}
	}
}

// smallConst writes a 32-byte constant of one repeated quadword.
func smallConst(a *Asm, name, q string) {
	for o := 0; o < 32; o += 8 {
		a.Raw("DATA %s<>+%d(SB)/8, $%s", name, o, q)
	}
	a.Raw("GLOBL %s<>(SB), RODATA|NOPTR, $32", name)
	a.Blank()
}

// genSmallAVX2 writes the AVX2 kernel of type k for M activation rows:
//
//	func sm<T>AVX2x<M>(w *byte, wrb int, p *byte, nb int, y *float32, ldy int, rows int, t *float32)
//
// w: the first weight row (rows rows, wrb bytes apart, nb blocks each);
// p: the activation records, block after block, 32+32·M bytes each: the
// M rows' scales d_a of block b as float32 (row j at 4j, padded to 32
// bytes), then the 32 quants of block b of each row j at 32+32j; y: the
// output of weight row 0, activation row 0 (activation row j's at j·ldy
// floats); t: scratch of nb·8 floats for the products of a weight row.
//
// Per weight row, a pass writes the table t of the M products d_w·d_a of
// every block (smallProducts). Then per block the weight's 32 values
// become signed bytes x (Q8_0 as stored; Q5_0 q5-16; Q4_0 q4-8) and |x|,
// and per activation row ggml's sign trick forms the products: y signed
// by x (VPSIGNB), VPMADDUBSW |x|·(±y) into int16 pairs (|pair| ≤
// 2·128·127, exact unless an activation byte is -128, which the
// activation quantizer never produces), VPMADDWD by ones into the 8 int32
// sums, VCVTDQ2PS, and one FMA per lane with d_w·d_a broadcast from t.
//
// The block loop is software-pipelined: it unpacks the next block (into
// Y12, Y13) before the current block's work, so the unpack's latency is
// off the block's path — until then the Q5_0 kernels, whose unpack is a
// chain of 12 instructions, ran well below Q8_0's instruction rate. (The
// weights as VPMADDUBSW's unsigned operand, with the activation offsets
// -c·Σy in the records as the ZMM kernels do, saves the VPSIGNB but
// costs a load per activation row and block; on the Zen 5 VM VPMADDUBSW,
// VPMADDWD and VFMADD231PS share two pipes and 256-bit loads two more,
// and that variant measured no faster.)
//
// With vnni (sm<T>AVXVNNIx<M>, for CPUs with AVX-VNNI and no AVX-512):
// the VEX VPDPBUSD of |x| and ±y into a zeroed register gives the 8 int32
// sums at once, in place of VPMADDUBSW and VPMADDWD — the same exact
// integers, so the same bits, one vector op fewer per activation row and
// block.
//
// Registers: Y0..Y(M-1) the accumulators of activation rows 0..M-1, Y8
// x, Y9 |x|, Y12 and Y13 the next block's, Y10 each product broadcast
// (and a temporary of the unpack; with vnni the integer sums), Y11 a
// temporary, Y14 bytes 0x0F, Y15 int16 ones. SI walks the weight row's blocks, DI the records, BX the
// table, DX counts blocks, R9 the weight row, R10 the records, R14 t,
// R11 nb, R8 wrb, AX the output, R13 ldy in bytes, R12 the output of
// activation row j, CX rows left.
func genSmallAVX2(a *Asm, k smallKind, M int, vnni bool) {
	name := fmt.Sprintf("sm%sAVX2x%d", k.name, M)
	lbl := strings.ToLower(fmt.Sprintf("sma%s_%d_", strings.ReplaceAll(k.name, "_", ""), M))
	if vnni {
		name = fmt.Sprintf("sm%sAVXVNNIx%d", k.name, M)
		lbl = "v" + lbl
	}
	bs := 32 + 32*M // record bytes per block
	a.Text(name, 0, 64)
	a.I("MOVQ", "w+0(FP), R9")
	a.I("MOVQ", "wrb+8(FP), R8")
	a.I("MOVQ", "p+16(FP), R10")
	a.I("MOVQ", "nb+24(FP), R11")
	a.I("MOVQ", "y+32(FP), AX")
	a.I("MOVQ", "ldy+40(FP), R13")
	a.I("SHLQ", "$2, R13")
	a.I("MOVQ", "rows+48(FP), CX")
	a.I("MOVQ", "t+56(FP), R14")
	a.I("TESTQ", "CX, CX")
	a.I("JZ", lbl+"done")
	a.I("VPCMPEQW", "Y15, Y15, Y15")
	a.I("VPSRLW", "$15, Y15, Y15")
	a.I("MOVL", "$0x0F0F0F0F, BX")
	a.I("VMOVD", "BX, X14")
	a.I("VPBROADCASTD", "X14, Y14")
	a.Label(lbl + "row")
	for j := 0; j < M; j++ {
		a.I("VXORPS", fmt.Sprintf("Y%d, Y%d, Y%d", j, j, j))
	}
	smallProducts(a, lbl, k.wts, bs)
	a.I("MOVQ", "R14, BX")
	a.I("MOVQ", "R9, SI")
	a.I("MOVQ", "R10, DI")
	a.I("MOVQ", "R11, DX")
	// unpack writes the weight block at off(SI): x to dst, |x| to abs;
	// tmp is a temporary.
	unpack := func(off int, dst, abs, tmp string) {
		at := func(o int) string { return fmt.Sprintf("%d(SI)", off+o) }
		switch k.name {
		case "Q8_0":
			a.I("VMOVDQU", at(2)+", "+dst)
		case "Q4_0":
			a.I("VBROADCASTI128", at(2)+", "+dst)
			a.I("VPSRLVD", "smnibshift<>(SB), "+dst+", "+dst)
			a.I("VPAND", "Y14, "+dst+", "+dst)
			a.I("VPSUBB", "smeight<>(SB), "+dst+", "+dst)
		case "Q5_0":
			a.I("VBROADCASTI128", at(6)+", "+dst)
			a.I("VPSRLVD", "smnibshift<>(SB), "+dst+", "+dst)
			a.I("VPAND", "Y14, "+dst+", "+dst)
			// tmp = 0xFF where the 5th bit is set; 16 where it is
			// clear is subtracted: x = nibble - 16·(1 - bit).
			a.I("VPBROADCASTD", at(2)+", "+tmp)
			a.I("VPSHUFB", "smqhshuf<>(SB), "+tmp+", "+tmp)
			a.I("VPAND", "smbitsel<>(SB), "+tmp+", "+tmp)
			a.I("VPCMPEQB", "smbitsel<>(SB), "+tmp+", "+tmp)
			a.I("VPANDN", "smsixteen<>(SB), "+tmp+", "+tmp)
			a.I("VPSUBB", tmp+", "+dst+", "+dst)
		}
		a.I("VPABSB", dst+", "+abs)
	}
	// pairs writes the block's work for the M activation rows against
	// x in Y8 and |x| in Y9, the products at BX.
	pairs := func() {
		for j := 0; j < M; j++ {
			a.I("VMOVDQU", fmt.Sprintf("%d(DI), Y11", 32+32*j))
			a.I("VPSIGNB", "Y8, Y11, Y11")
			if vnni {
				a.I("VPXOR", "Y10, Y10, Y10")
				vexVPDPBUSD(a, "Y11", "Y9", "Y10")
				a.I("VCVTDQ2PS", "Y10, Y10")
				a.I("VBROADCASTSS", fmt.Sprintf("%d(BX), Y11", 4*j))
				a.I("VFMADD231PS", fmt.Sprintf("Y10, Y11, Y%d", j))
				continue
			}
			a.I("VPMADDUBSW", "Y11, Y9, Y11")
			a.I("VPMADDWD", "Y15, Y11, Y11")
			a.I("VCVTDQ2PS", "Y11, Y11")
			a.I("VBROADCASTSS", fmt.Sprintf("%d(BX), Y10", 4*j))
			a.I("VFMADD231PS", fmt.Sprintf("Y11, Y10, Y%d", j))
		}
	}
	// The last block runs after the loop, with nothing to read ahead.
	unpack(0, "Y8", "Y9", "Y11")
	a.I("DECQ", "DX")
	a.I("JZ", lbl+"last")
	a.Label(lbl + "blk")
	a.I("PREFETCHT0", "1024(SI)")
	unpack(k.wts, "Y12", "Y13", "Y10")
	pairs()
	a.I("VMOVDQA", "Y12, Y8")
	a.I("VMOVDQA", "Y13, Y9")
	a.I("ADDQ", fmt.Sprintf("$%d, SI", k.wts))
	a.I("ADDQ", fmt.Sprintf("$%d, DI", bs))
	a.I("ADDQ", "$32, BX")
	a.I("DECQ", "DX")
	a.I("JNZ", lbl+"blk")
	a.Label(lbl + "last")
	pairs()
	// hsum_float_8 of each accumulator (ggml's order: lanes 4..7 onto
	// 0..3, then 2,3 onto 0,1, then 1 onto 0), stored to its row.
	a.I("MOVQ", "AX, R12")
	for j := 0; j < M; j++ {
		acc, accx := fmt.Sprintf("Y%d", j), fmt.Sprintf("X%d", j)
		a.I("VEXTRACTF128", "$1, "+acc+", X11")
		a.I("VADDPS", "X11, "+accx+", "+accx)
		a.I("VMOVHLPS", accx+", "+accx+", X11")
		a.I("VADDPS", "X11, "+accx+", "+accx)
		a.I("VMOVSHDUP", accx+", X11")
		a.I("VADDSS", "X11, "+accx+", "+accx)
		a.I("VMOVSS", accx+", (R12)")
		if j < M-1 {
			a.I("ADDQ", "R13, R12")
		}
	}
	a.I("ADDQ", "$4, AX")
	a.I("ADDQ", "R8, R9")
	a.I("DECQ", "CX")
	a.I("JNZ", lbl+"row")
	a.Label(lbl + "done")
	a.I("VZEROUPPER")
	a.I("RET")
}

// smallProducts writes the pass that starts each weight row: per block
// the M products d_w·d_a (d_w the f16 at the block's start, converted;
// the activation scales the first 32 bytes of the block's records at DI)
// as one VMULPS, stored to the table at R14 (32 bytes per block), which
// the block loop then broadcasts from — written a whole row earlier, so
// the loads never wait on the stores (making them in the block loop, a
// block ahead, ran 15-20% slower). Uses SI, DI, DX, BX, Y10.
func smallProducts(a *Asm, lbl string, wts, bs int) {
	a.I("MOVQ", "R9, SI")
	a.I("MOVQ", "R10, DI")
	a.I("MOVQ", "R11, DX")
	a.I("MOVQ", "R14, BX")
	a.Label(lbl + "prod")
	a.I("VPBROADCASTW", "(SI), X10")
	a.I("VCVTPH2PS", "X10, Y10")
	a.I("VMULPS", "(DI), Y10, Y10")
	a.I("VMOVUPS", "Y10, (BX)")
	a.I("ADDQ", fmt.Sprintf("$%d, SI", wts))
	a.I("ADDQ", fmt.Sprintf("$%d, DI", bs))
	a.I("ADDQ", "$32, BX")
	a.I("DECQ", "DX")
	a.I("JNZ", lbl+"prod")
}
