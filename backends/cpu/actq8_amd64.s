//go:build amd64 && !purego

#include "textflag.h"

// See actq8_amd64.go.

DATA packperm<>+0(SB)/4, $0
DATA packperm<>+4(SB)/4, $4
DATA packperm<>+8(SB)/4, $1
DATA packperm<>+12(SB)/4, $5
DATA packperm<>+16(SB)/4, $2
DATA packperm<>+20(SB)/4, $6
DATA packperm<>+24(SB)/4, $3
DATA packperm<>+28(SB)/4, $7
GLOBL packperm<>(SB), RODATA|NOPTR, $32

// Y15 = 0x7fffffff (abs mask), X14 = 127.0, Y13 = the dword order that
// undoes the lane interleaving of the two packs, Y12 = 0x80 in every byte.
#define ACTCONSTS \
	VPCMPEQD     Y15, Y15, Y15 \
	VPSRLD       $1, Y15, Y15  \
	MOVL         $0x42FE0000, AX \
	VMOVD        AX, X14       \
	VMOVDQU      packperm<>(SB), Y13 \
	MOVL         $0x80808080, AX \
	VMOVD        AX, X12       \
	VPBROADCASTD X12, Y12

// Loads the 32 floats at SI into Y0..Y3, amax into X4, d = amax/127 into
// X5 and its f16 into AX, and multiplies Y0..Y3 by 127/amax (0 when amax
// is 0) and converts them to int32 (round half to even).
#define ACTBLOCK \
	VMOVUPS      (SI), Y0      \
	VMOVUPS      32(SI), Y1    \
	VMOVUPS      64(SI), Y2    \
	VMOVUPS      96(SI), Y3    \
	VANDPS       Y15, Y0, Y4   \
	VANDPS       Y15, Y1, Y5   \
	VANDPS       Y15, Y2, Y6   \
	VANDPS       Y15, Y3, Y7   \
	VMAXPS       Y5, Y4, Y4    \
	VMAXPS       Y7, Y6, Y6    \
	VMAXPS       Y6, Y4, Y4    \
	VEXTRACTF128 $1, Y4, X5    \
	VMAXPS       X5, X4, X4    \
	VMOVHLPS     X4, X4, X5    \
	VMAXPS       X5, X4, X4    \
	VMOVSHDUP    X4, X5        \
	VMAXSS       X5, X4, X4    \
	VDIVSS       X14, X4, X5   \
	VCVTPS2PH    $0, X5, X6    \
	VMOVD        X6, AX        \
	VDIVSS       X4, X14, X8   \
	VXORPS       X7, X7, X7    \
	VCMPSS       $4, X7, X4, X7 \
	VANDPS       X7, X8, X8    \
	VBROADCASTSS X8, Y8        \
	VMULPS       Y8, Y0, Y0    \
	VMULPS       Y8, Y1, Y1    \
	VMULPS       Y8, Y2, Y2    \
	VMULPS       Y8, Y3, Y3    \
	VCVTPS2DQ    Y0, Y0        \
	VCVTPS2DQ    Y1, Y1        \
	VCVTPS2DQ    Y2, Y2        \
	VCVTPS2DQ    Y3, Y3

// Jumps to fallback when a byte of the packed Y0 is -128 (0x80). With a
// normal amax every x·(127/amax) rounds into [-127, 127], so -128 comes
// only from VCVTPS2DQ's integer indefinite 0x80000000 (saturated by the
// packs): some x·id was NaN or ±Inf (a NaN input, an infinite amax, or an
// amax so small, e.g. subnormal, that 127/amax overflows), where quant's
// pure-Go quantizer decides otherwise (it saturates +Inf to 127 and turns
// NaN into 0). Uses Y9.
#define ACTCHECK(fallback) \
	VPCMPEQB Y12, Y0, Y9 \
	VPTEST   Y9, Y9      \
	JNZ      fallback

// Packs Y0..Y3 (int32) to 32 saturated int8 in element order in Y0.
#define ACTPACK \
	VPACKSSDW Y1, Y0, Y0 \
	VPACKSSDW Y3, Y2, Y2 \
	VPACKSSWB Y2, Y0, Y0 \
	VPERMD    Y0, Y13, Y0

// func quantQ8_0AVX2(src *float32, dst *byte, nb int) (done int)
TEXT ·quantQ8_0AVX2(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ nb+16(FP), CX
	MOVQ CX, BX
	ACTCONSTS
q80blk:
	ACTBLOCK
	ACTPACK
	ACTCHECK(q80stop)
	MOVW    AX, (DI)
	VMOVDQU Y0, 2(DI)
	ADDQ    $128, SI
	ADDQ    $34, DI
	DECQ    CX
	JNZ     q80blk
q80stop:
	SUBQ    CX, BX
	MOVQ    BX, done+24(FP)
	VZEROUPPER
	RET

// func quantQ8_1AVX2(src *float32, dst *byte, nb int) (done int)
TEXT ·quantQ8_1AVX2(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ nb+16(FP), CX
	MOVQ CX, BX
	ACTCONSTS
q81blk:
	ACTBLOCK
	MOVW         AX, (DI)
	VPADDD       Y1, Y0, Y9
	VPADDD       Y3, Y2, Y10
	VPADDD       Y10, Y9, Y9
	VEXTRACTI128 $1, Y9, X10
	VPADDD       X10, X9, X9
	VPSHUFD      $0x4E, X9, X10
	VPADDD       X10, X9, X9
	VPSHUFD      $0xB1, X9, X10
	VPADDD       X10, X9, X9
	VCVTDQ2PS    X9, X9
	VMULSS       X9, X5, X9
	VCVTPS2PH    $0, X9, X9
	VMOVD        X9, AX
	MOVW         AX, 2(DI)
	ACTPACK
	ACTCHECK(q81stop)
	VMOVDQU      Y0, 4(DI)
	ADDQ         $128, SI
	ADDQ         $36, DI
	DECQ         CX
	JNZ          q81blk
q81stop:
	SUBQ         CX, BX
	MOVQ         BX, done+24(FP)
	VZEROUPPER
	RET
