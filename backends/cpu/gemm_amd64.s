//go:build amd64 && !purego

#include "textflag.h"

// See gemm_amd64.go. One call computes a tile of 4 weight rows against
// mt tiles of 4 activation rows, block by block; every one of the 16
// outputs of a tile keeps its own 8-lane float accumulator and sees the
// blocks in increasing order, exactly as the row kernels do (integer
// block dot per lane → float → one FMA with the float32 d_w·d_a), then
// hsum_float_8.
//
// Once per call the weight tile is unpacked into the scratch scr: its d
// as f32 (4 per block), then its quants as unsigned bytes, 4×32 per block
// (Q8_0: x+128, Q5_0: q5 = x+16), so the activation tiles that follow only
// load them. Per activation tile the 16 scale products d_w(i)·d_a(j) of
// every block go to a table after those (16 per block, at 16j+4i), which
// the FMAs broadcast from.
//
// Registers in the tile loop: SI the unpacked weight block, DI the
// activation block (tile row 0), R9 activation row stride, R13 3×; BX
// activation scale (f32, tile row 0), R10 its row stride (nb·4), R14 3×;
// DX blocks left, CX activation tiles left, R11 the block's products, AX
// temporary; locals: 0(SP) the output (tile row 0), 8(SP) the product
// table, 16(SP) the unpacked weights. Y0..Y3 the 4 weight blocks, Y4..Y7
// the 4 activation blocks, Y8..Y11 their offsets −bias·Σ y (per 4 bytes),
// Y12 a temporary, Y13 the bias in every byte (0x80 for Q8_0, 0x10 for
// Q5_0), Y14/Y15 temporaries, Y16+4j+i the accumulator of weight row i
// and activation row j.

DATA gnibshift<>+0(SB)/8, $0
DATA gnibshift<>+8(SB)/8, $0
DATA gnibshift<>+16(SB)/8, $0x0000000400000004
DATA gnibshift<>+24(SB)/8, $0x0000000400000004
GLOBL gnibshift<>(SB), RODATA|NOPTR, $32

DATA gmask0f<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA gmask0f<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA gmask0f<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA gmask0f<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL gmask0f<>(SB), RODATA|NOPTR, $32

#define GLOADARGS \
	MOVQ arb+24(FP), R9   \
	LEAQ (R9)(R9*2), R13  \
	MOVQ as+32(FP), BX    \
	MOVQ nb+40(FP), R10   \
	SHLQ $2, R10          \
	LEAQ (R10)(R10*2), R14 \
	MOVQ y+48(FP), AX     \
	MOVQ AX, 0(SP)        \
	MOVQ mt+64(FP), CX

#define GZERO \
	VPXORD Y16, Y16, Y16 \
	VPXORD Y17, Y17, Y17 \
	VPXORD Y18, Y18, Y18 \
	VPXORD Y19, Y19, Y19 \
	VPXORD Y20, Y20, Y20 \
	VPXORD Y21, Y21, Y21 \
	VPXORD Y22, Y22, Y22 \
	VPXORD Y23, Y23, Y23 \
	VPXORD Y24, Y24, Y24 \
	VPXORD Y25, Y25, Y25 \
	VPXORD Y26, Y26, Y26 \
	VPXORD Y27, Y27, Y27 \
	VPXORD Y28, Y28, Y28 \
	VPXORD Y29, Y29, Y29 \
	VPXORD Y30, Y30, Y30 \
	VPXORD Y31, Y31, Y31

// Unpacks the weight tile (rows at w, stride R8, 3× R12; blocks of wts
// bytes) with unpack(Y0..Y3), which reads the block at SI; leaves the
// product table's address at 8(SP), the unpacked quants' at 16(SP).
#define GUNPACK(wts, unpack) \
	MOVQ      w+0(FP), SI              \
	MOVQ      scr+72(FP), DI           \
	MOVQ      nb+40(FP), DX            \
	MOVQ      DX, R11                  \
	SHLQ      $4, R11                  \
	ADDQ      DI, R11                  \
	MOVQ      R11, 16(SP)              \
wsc:                                     \
	MOVWLZX   (SI), AX                 \
	VMOVD     AX, X14                  \
	VPINSRW   $1, (SI)(R8*1), X14, X14 \
	VPINSRW   $2, (SI)(R8*2), X14, X14 \
	VPINSRW   $3, (SI)(R12*1), X14, X14 \
	VCVTPH2PS X14, X14                 \
	VMOVUPS   X14, (DI)                \
	unpack                             \
	VMOVDQU   Y0, (R11)                \
	VMOVDQU   Y1, 32(R11)              \
	VMOVDQU   Y2, 64(R11)              \
	VMOVDQU   Y3, 96(R11)              \
	ADDQ      $wts, SI                 \
	ADDQ      $16, DI                  \
	ADDQ      $128, R11                \
	DECQ      DX                       \
	JNZ       wsc                      \
	MOVQ      R11, 8(SP)

// The product table of the activation tile at BX: 16 d_w(i)·d_a(j) per
// block; moves BX to the next tile's scales.
#define GPRODUCTS \
	MOVQ        scr+72(FP), SI       \
	MOVQ        8(SP), R11           \
	MOVQ        nb+40(FP), DX        \
prd:                                   \
	VMOVUPS     (SI), X14            \
	VMULPS.BCST (BX), X14, X15       \
	VMOVUPS     X15, (R11)           \
	VMULPS.BCST (BX)(R10*1), X14, X15 \
	VMOVUPS     X15, 16(R11)         \
	VMULPS.BCST (BX)(R10*2), X14, X15 \
	VMOVUPS     X15, 32(R11)         \
	VMULPS.BCST (BX)(R14*1), X14, X15 \
	VMOVUPS     X15, 48(R11)         \
	ADDQ        $16, SI              \
	ADDQ        $4, BX               \
	ADDQ        $64, R11             \
	DECQ        DX                   \
	JNZ         prd                  \
	ADDQ        R14, BX

// The 4 activation blocks (Q8_0: f16 d, 32 int8) and their offsets.
#define GACTS \
	VMOVDQU  2(DI), Y4          \
	VMOVDQU  2(DI)(R9*1), Y5    \
	VMOVDQU  2(DI)(R9*2), Y6    \
	VMOVDQU  2(DI)(R13*1), Y7   \
	VPXOR    Y14, Y14, Y14      \
	VPXOR    Y8, Y8, Y8         \
	VPXOR    Y9, Y9, Y9         \
	VPXOR    Y10, Y10, Y10      \
	VPXOR    Y11, Y11, Y11      \
	VPDPBUSD Y4, Y13, Y8        \
	VPDPBUSD Y5, Y13, Y9        \
	VPDPBUSD Y6, Y13, Y10       \
	VPDPBUSD Y7, Y13, Y11       \
	VPSUBD   Y8, Y14, Y8        \
	VPSUBD   Y9, Y14, Y9        \
	VPSUBD   Y10, Y14, Y10      \
	VPSUBD   Y11, Y14, Y11

// Q8_0 weights biased to unsigned: x XOR 0x80 = x+128.
#define GW80 \
	VPXOR 2(SI), Y13, Y0          \
	VPXOR 2(SI)(R8*1), Y13, Y1    \
	VPXOR 2(SI)(R8*2), Y13, Y2    \
	VPXOR 2(SI)(R12*1), Y13, Y3

// One Q5_0 weight block as q5 = nibble + 16·bit (0..31): the 16 bytes of
// nibbles in both lanes, the upper lane shifted by 4, masked; then 16
// added under the opmask of the 32 high bits.
#define GW50ONE(qh, qs, yi) \
	VBROADCASTI128 qs, yi                  \
	VPSRLVD        gnibshift<>(SB), yi, yi \
	VPAND          gmask0f<>(SB), yi, yi   \
	KMOVD          qh, K1                  \
	VPADDB         Y13, yi, K1, yi

#define GW50 \
	GW50ONE(2(SI), 6(SI), Y0)                   \
	GW50ONE(2(SI)(R8*1), 6(SI)(R8*1), Y1)       \
	GW50ONE(2(SI)(R8*2), 6(SI)(R8*2), Y2)       \
	GW50ONE(2(SI)(R12*1), 6(SI)(R12*1), Y3)

// acc += float(off + Σ w·y) · product.
#define GDOT(w, a, off, p, acc) \
	VMOVDQA          off, Y12    \
	VPDPBUSD         a, w, Y12   \
	VCVTDQ2PS        Y12, Y12    \
	VFMADD231PS.BCST p(R11), Y12, acc

#define GDOTS \
	GDOT(Y0, Y4, Y8, 0, Y16)   \
	GDOT(Y1, Y4, Y8, 4, Y17)   \
	GDOT(Y2, Y4, Y8, 8, Y18)   \
	GDOT(Y3, Y4, Y8, 12, Y19)  \
	GDOT(Y0, Y5, Y9, 16, Y20)  \
	GDOT(Y1, Y5, Y9, 20, Y21)  \
	GDOT(Y2, Y5, Y9, 24, Y22)  \
	GDOT(Y3, Y5, Y9, 28, Y23)  \
	GDOT(Y0, Y6, Y10, 32, Y24) \
	GDOT(Y1, Y6, Y10, 36, Y25) \
	GDOT(Y2, Y6, Y10, 40, Y26) \
	GDOT(Y3, Y6, Y10, 44, Y27) \
	GDOT(Y0, Y7, Y11, 48, Y28) \
	GDOT(Y1, Y7, Y11, 52, Y29) \
	GDOT(Y2, Y7, Y11, 56, Y30) \
	GDOT(Y3, Y7, Y11, 60, Y31)

// hsum_float_8 of acc (its low half accx) into X0: lanes 4..7 onto 0..3,
// then 2,3 onto 0,1, then 1 onto 0.
#define GHSUM(acc, accx) \
	VEXTRACTF32X4 $1, acc, X1 \
	VADDPS        X1, accx, X0 \
	VMOVHLPS      X0, X0, X1   \
	VADDPS        X1, X0, X0   \
	VMOVSHDUP     X0, X1       \
	VADDSS        X1, X0, X0

#define GSTROW(a0, a1, a2, a3, x0, x1, x2, x3) \
	GHSUM(a0, x0)      \
	VMOVSS X0, (DX)    \
	GHSUM(a1, x1)      \
	VMOVSS X0, 4(DX)   \
	GHSUM(a2, x2)      \
	VMOVSS X0, 8(DX)   \
	GHSUM(a3, x3)      \
	VMOVSS X0, 12(DX)  \
	ADDQ   AX, DX

// Stores the tile (AX = ldy in bytes, DX walks its rows) and moves to the
// next activation tile: DI stands one row past the tile's first row.
#define GSTORE \
	MOVQ ldy+56(FP), AX \
	SHLQ $2, AX         \
	MOVQ 0(SP), DX      \
	GSTROW(Y16, Y17, Y18, Y19, X16, X17, X18, X19) \
	GSTROW(Y20, Y21, Y22, Y23, X20, X21, X22, X23) \
	GSTROW(Y24, Y25, Y26, Y27, X24, X25, X26, X27) \
	GSTROW(Y28, Y29, Y30, Y31, X28, X29, X30, X31) \
	MOVQ DX, 0(SP)      \
	ADDQ R13, DI

// The tile loop, after GUNPACK and with Y13 set.
#define GTILES \
	MOVQ  a+16(FP), DI    \
gtile:                    \
	GPRODUCTS             \
	MOVQ  16(SP), SI      \
	MOVQ  8(SP), R11      \
	MOVQ  nb+40(FP), DX   \
	GZERO                 \
gblk:                     \
	GACTS                 \
	VMOVDQU (SI), Y0      \
	VMOVDQU 32(SI), Y1    \
	VMOVDQU 64(SI), Y2    \
	VMOVDQU 96(SI), Y3    \
	GDOTS                 \
	ADDQ  $128, SI        \
	ADDQ  $34, DI         \
	ADDQ  $64, R11        \
	DECQ  DX              \
	JNZ   gblk            \
	GSTORE                \
	DECQ  CX              \
	JNZ   gtile           \
	VZEROUPPER            \
	RET

// func gemmQ8_0VNNI(w *byte, wrb int, a *byte, arb int, as *float32, nb int, y *float32, ldy int, mt int, scr *float32)
TEXT ·gemmQ8_0VNNI(SB), NOSPLIT, $24-80
	GLOADARGS
	MOVQ         wrb+8(FP), R8
	LEAQ         (R8)(R8*2), R12
	MOVL         $0x80808080, AX
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13
	GUNPACK(34, GW80)
	GTILES

// func gemmQ5_0VNNI(w *byte, wrb int, a *byte, arb int, as *float32, nb int, y *float32, ldy int, mt int, scr *float32)
TEXT ·gemmQ5_0VNNI(SB), NOSPLIT, $24-80
	GLOADARGS
	MOVQ         wrb+8(FP), R8
	LEAQ         (R8)(R8*2), R12
	MOVL         $0x10101010, AX
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13
	GUNPACK(22, GW50)
	GTILES
