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
// as f32 (4 per block), then per block its quants as signed bytes (4×32)
// and their offsets per 4 bytes (4×8 int32: 0x4B400000 − 128·Σ x), so
// the activation tiles that follow only load them. VPDPBUSD takes the
// activations biased to unsigned (y XOR 0x80 = y+128) and the weights
// signed; the offset leaves 0x4B400000 + Σ x·y, which read as a float32
// is 1.5·2^23 + Σ x·y exactly (|Σ x·y| ≤ 2^16), so subtracting 1.5·2^23
// gives float32(Σ x·y) as VCVTDQ2PS would. Per activation tile the 16
// scale products d_w(i)·d_a(j) of every block go to a table after those
// (16 per block, at 16j+4i), which the FMAs broadcast from.
//
// Registers in the tile loop: SI the unpacked weight block, DI the
// activation block (tile row 0), R9 activation row stride, R13 3×; BX
// the activation scales (f32, 4 per block: the tile's rows); DX blocks
// left, CX activation tiles left, R11 the block's products, AX
// temporary; locals: 0(SP) the output (tile row 0), 8(SP) the product
// table, 16(SP) the unpacked weights. Y0..Y3 the 4 weight blocks, Y4..Y7
// the 4 activation blocks (biased), Y8..Y11 the weight blocks' offsets,
// Y12 a temporary, Y13 0x80 in every byte, Y14 1.5·2^23, Y15 temporary,
// Y16+4j+i the accumulator of weight row i and activation row j.

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

DATA gbit16<>+0(SB)/8, $0x1010101010101010
DATA gbit16<>+8(SB)/8, $0x1010101010101010
DATA gbit16<>+16(SB)/8, $0x1010101010101010
DATA gbit16<>+24(SB)/8, $0x1010101010101010
GLOBL gbit16<>(SB), RODATA|NOPTR, $32

DATA gbit8<>+0(SB)/8, $0x0808080808080808
DATA gbit8<>+8(SB)/8, $0x0808080808080808
DATA gbit8<>+16(SB)/8, $0x0808080808080808
DATA gbit8<>+24(SB)/8, $0x0808080808080808
GLOBL gbit8<>(SB), RODATA|NOPTR, $32

// 0x4B400000 is 1.5·2^23 as a float32: for |x| < 2^22 the int32
// 0x4B400000 + x read as a float32 is exactly 1.5·2^23 + x, so
// subtracting 1.5·2^23 gives float32(x) exactly, as VCVTDQ2PS would (on
// the float adder, not the multiply pipes the dots and FMAs use).
DATA gmagic<>+0(SB)/4, $0x4B400000
GLOBL gmagic<>(SB), RODATA|NOPTR, $4

DATA gpermidx<>+0(SB)/8, $0x0000000000000000
DATA gpermidx<>+8(SB)/8, $0x0000000000000000
DATA gpermidx<>+16(SB)/8, $0x0000000100000001
DATA gpermidx<>+24(SB)/8, $0x0000000100000001
DATA gpermidx<>+32(SB)/8, $0x0000000200000002
DATA gpermidx<>+40(SB)/8, $0x0000000200000002
DATA gpermidx<>+48(SB)/8, $0x0000000300000003
DATA gpermidx<>+56(SB)/8, $0x0000000300000003
GLOBL gpermidx<>(SB), RODATA|NOPTR, $64

#define GLOADARGS \
	MOVQ arb+24(FP), R9   \
	LEAQ (R9)(R9*2), R13  \
	MOVQ as+32(FP), BX    \
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
	VPXOR     Y15, Y15, Y15            \
	GOFF(Y0, Y4)                       \
	GOFF(Y1, Y5)                       \
	GOFF(Y2, Y6)                       \
	GOFF(Y3, Y7)                       \
	VMOVDQU   Y4, 128(R11)             \
	VMOVDQU   Y5, 160(R11)             \
	VMOVDQU   Y6, 192(R11)             \
	VMOVDQU   Y7, 224(R11)             \
	ADDQ      $wts, SI                 \
	ADDQ      $16, DI                  \
	ADDQ      $256, R11                \
	DECQ      DX                       \
	JNZ       wsc                      \
	MOVQ      R11, 8(SP)

// The product table of the activation tile whose scales are at BX (4
// per block: rows 0..3): per block one 16-lane multiply of the weight
// scales [w0..w3] repeated 4 times by [a0×4, a1×4, a2×4, a3×4]; leaves BX
// at the next tile's scales.
#define GPRODUCTS \
	MOVQ            scr+72(FP), SI     \
	MOVQ            8(SP), R11         \
	MOVQ            nb+40(FP), DX      \
	VMOVDQU32       gpermidx<>(SB), Z11 \
prd:                                     \
	VBROADCASTF32X4 (SI), Z12          \
	VMOVUPS         (BX), X15          \
	VPERMPS         Z15, Z11, Z15      \
	VMULPS          Z15, Z12, Z15      \
	VMOVUPS         Z15, (R11)         \
	ADDQ            $16, SI            \
	ADDQ            $16, BX            \
	ADDQ            $64, R11           \
	DECQ            DX                 \
	JNZ             prd

// The 4 activation blocks (Q8_0: f16 d, 32 int8) and their offsets.
#define GACTS \
	VPXOR   2(DI), Y13, Y4        \
	VPXOR   2(DI)(R9*1), Y13, Y5  \
	VPXOR   2(DI)(R9*2), Y13, Y6  \
	VPXOR   2(DI)(R13*1), Y13, Y7 \
	VMOVDQU 128(SI), Y8           \
	VMOVDQU 160(SI), Y9           \
	VMOVDQU 192(SI), Y10          \
	VMOVDQU 224(SI), Y11

// Q8_0 weights as they are.
#define GW80 \
	VMOVDQU 2(SI), Y0          \
	VMOVDQU 2(SI)(R8*1), Y1    \
	VMOVDQU 2(SI)(R8*2), Y2    \
	VMOVDQU 2(SI)(R12*1), Y3

// One Q5_0 weight block as x = nibble + 16·bit − 16: the 16 bytes of
// nibbles in both lanes, the upper lane shifted by 4, masked; 16 added
// under the opmask of the 32 high bits; 16 subtracted.
#define GW50ONE(qh, qs, yi) \
	VBROADCASTI128 qs, yi                  \
	VPSRLVD        gnibshift<>(SB), yi, yi \
	VPAND          gmask0f<>(SB), yi, yi   \
	KMOVD          qh, K1                  \
	VPADDB         gbit16<>(SB), yi, K1, yi \
	VPSUBB         gbit16<>(SB), yi, yi

#define GW50 \
	GW50ONE(2(SI), 6(SI), Y0)                   \
	GW50ONE(2(SI)(R8*1), 6(SI)(R8*1), Y1)       \
	GW50ONE(2(SI)(R8*2), 6(SI)(R8*2), Y2)       \
	GW50ONE(2(SI)(R12*1), 6(SI)(R12*1), Y3)

// One Q4_0 weight block as x = nibble − 8 (the nibbles as for Q5_0).
#define GW40ONE(qs, yi) \
	VBROADCASTI128 qs, yi                  \
	VPSRLVD        gnibshift<>(SB), yi, yi \
	VPAND          gmask0f<>(SB), yi, yi   \
	VPSUBB         gbit8<>(SB), yi, yi

#define GW40 \
	GW40ONE(2(SI), Y0)           \
	GW40ONE(2(SI)(R8*1), Y1)     \
	GW40ONE(2(SI)(R8*2), Y2)     \
	GW40ONE(2(SI)(R12*1), Y3)

// Y(off) = 0x4B400000 − 128·Σ (Y(w) bytes) per 4 bytes; Y15 is zero.
#define GOFF(w, off) \
	VPXOR        off, off, off        \
	VPDPBUSD     w, Y13, off          \
	VPSUBD       off, Y15, off        \
	VPADDD.BCST  gmagic<>(SB), off, off

// acc += float(Σ w·y) · product: the offset leaves 0x4B400000 + Σ w·y
// (|Σ w·y| ≤ 4·128·128), a float32 1.5·2^23 above it (Y14).
#define GDOT(w, a, off, p, acc) \
	VMOVDQA          off, Y12    \
	VPDPBUSD         w, a, Y12   \
	VSUBPS           Y14, Y12, Y12 \
	VFMADD231PS.BCST p(R11), Y12, acc

#define GDOTS \
	GDOT(Y0, Y4, Y8, 0, Y16) \
	GDOT(Y1, Y4, Y9, 4, Y17) \
	GDOT(Y2, Y4, Y10, 8, Y18) \
	GDOT(Y3, Y4, Y11, 12, Y19) \
	GDOT(Y0, Y5, Y8, 16, Y20) \
	GDOT(Y1, Y5, Y9, 20, Y21) \
	GDOT(Y2, Y5, Y10, 24, Y22) \
	GDOT(Y3, Y5, Y11, 28, Y23) \
	GDOT(Y0, Y6, Y8, 32, Y24) \
	GDOT(Y1, Y6, Y9, 36, Y25) \
	GDOT(Y2, Y6, Y10, 40, Y26) \
	GDOT(Y3, Y6, Y11, 44, Y27) \
	GDOT(Y0, Y7, Y8, 48, Y28) \
	GDOT(Y1, Y7, Y9, 52, Y29) \
	GDOT(Y2, Y7, Y10, 56, Y30) \
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
	VPBROADCASTD gmagic<>(SB), Y14 \
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
	ADDQ  $256, SI        \
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
	MOVL         $0x80808080, AX
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13
	GUNPACK(22, GW50)
	GTILES


// func gemmQ4_0VNNI(w *byte, wrb int, a *byte, arb int, as *float32, nb int, y *float32, ldy int, mt int, scr *float32)
TEXT ·gemmQ4_0VNNI(SB), NOSPLIT, $24-80
	GLOADARGS
	MOVQ         wrb+8(FP), R8
	LEAQ         (R8)(R8*2), R12
	MOVL         $0x80808080, AX
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13
	GUNPACK(18, GW40)
	GTILES
