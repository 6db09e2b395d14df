//go:build amd64 && !purego

#include "textflag.h"

// See dot_legacy_amd64.go. Register use in every row kernel:
// R9 weight row, R8 weight row stride, R10 activation row, R11 blocks per
// row, BX output, CX rows left; SI/DI walk the blocks of one row, DX counts
// them; Y0 is the 8-lane float accumulator (Acc8), X9 the Q4_1/Q5_1 m·s sum.

// ggml's hsum_float_8 of Y0 into X0 (lanes 4..7 onto 0..3, then 2,3 onto
// 0,1, then 1 onto 0), clobbering X1.
#define HSUM8 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS       X1, X0, X0 \
	VMOVHLPS     X0, X0, X1 \
	VADDPS       X1, X0, X0 \
	VMOVSHDUP    X0, X1     \
	VADDSS       X1, X0, X0

#define LOADARGS \
	MOVQ w+0(FP), R9    \
	MOVQ wrb+8(FP), R8  \
	MOVQ a+16(FP), R10  \
	MOVQ nb+24(FP), R11 \
	MOVQ y+32(FP), BX   \
	MOVQ rows+40(FP), CX

// Y15 = int16 ones (for VPMADDWD), Y14 = bytes 0x0F.
#define CONSTS \
	VPCMPEQW     Y15, Y15, Y15 \
	VPSRLW       $15, Y15, Y15 \
	MOVL         $0x0F0F0F0F, AX \
	VMOVD        AX, X14 \
	VPBROADCASTD X14, Y14

// The scale d_w·d_a (both f16) in all 8 lanes of Y1.
#define SCALE8 \
	VPBROADCASTW (SI), X1 \
	VPBROADCASTW (DI), X2 \
	VCVTPH2PS    X1, Y1   \
	VCVTPH2PS    X2, Y2   \
	VMULPS       Y2, Y1, Y1

// Y1 = d_w·d_a in all lanes, and X9 += m_w·s_a (Q4_1/Q5_1 with Q8_1).
#define SCALE8MIN \
	VMOVD        (SI), X1 \
	VMOVD        (DI), X2 \
	VCVTPH2PS    X1, X1   \
	VCVTPH2PS    X2, X2   \
	VMULPS       X2, X1, X1 \
	VMOVSHDUP    X1, X2   \
	VADDSS       X2, X9, X9 \
	VBROADCASTSS X1, Y1

// The 32 nibbles at off(SI) as bytes in Y3 (low nibbles of the 16 bytes,
// then the high ones); clobbers X4.
#define NIBBLES(off) \
	VMOVDQU     off(SI), X3 \
	VPSRLW      $4, X3, X4  \
	VINSERTI128 $1, X4, Y3, Y3 \
	VPAND       Y14, Y3, Y3

// ORs the 5th bits (the u32 at off(SI)) into the bytes of Y3 as 0x10;
// needs Y12 (byte shuffle), Y11 (bit selectors), Y10 (0x10 bytes);
// clobbers Y5.
#define HIGHBITS(off) \
	VPBROADCASTD off(SI), Y5 \
	VPSHUFB      Y12, Y5, Y5 \
	VPAND        Y11, Y5, Y5 \
	VPCMPEQB     Y11, Y5, Y5 \
	VPAND        Y10, Y5, Y5 \
	VPOR         Y5, Y3, Y3

// Y3 = int32 4-element sums of (Y3 bytes, unsigned) × (activation bytes
// at off(DI), signed) minus the offset Y13 (bytes) times the same; then
// converted and accumulated with the scale Y1 into Y0.
#define DOTOFF(off) \
	VMOVDQU     off(DI), Y4 \
	VPMADDUBSW  Y4, Y3, Y3  \
	VPMADDUBSW  Y4, Y13, Y5 \
	VPSUBW      Y5, Y3, Y3  \
	VPMADDWD    Y15, Y3, Y3 \
	VCVTDQ2PS   Y3, Y3      \
	VFMADD231PS Y3, Y1, Y0

#define DOTU(off) \
	VMOVDQU     off(DI), Y4 \
	VPMADDUBSW  Y4, Y3, Y3  \
	VPMADDWD    Y15, Y3, Y3 \
	VCVTDQ2PS   Y3, Y3      \
	VFMADD231PS Y3, Y1, Y0

// Y12: byte i of a lane-broadcast u32 picks its byte i/8; Y11 selects bit i%8.
#define BITCONSTS \
	VMOVDQU      qhshuf<>(SB), Y12 \
	MOVQ         $0x8040201008040201, AX \
	MOVQ         AX, X11 \
	VPBROADCASTQ X11, Y11 \
	MOVL         $0x10101010, AX \
	VMOVD        AX, X10 \
	VPBROADCASTD X10, Y10

DATA qhshuf<>+0(SB)/8, $0x0000000000000000
DATA qhshuf<>+8(SB)/8, $0x0101010101010101
DATA qhshuf<>+16(SB)/8, $0x0202020202020202
DATA qhshuf<>+24(SB)/8, $0x0303030303030303
GLOBL qhshuf<>(SB), RODATA|NOPTR, $32

// func rowsQ8_0AVX2(w *byte, wrb int, a *byte, nb int, y *float32, rows int)
TEXT ·rowsQ8_0AVX2(SB), NOSPLIT, $0-48
	LOADARGS
	CONSTS
q80row:
	VXORPS Y0, Y0, Y0
	MOVQ   R9, SI
	MOVQ   R10, DI
	MOVQ   R11, DX
q80blk:
	SCALE8
	VMOVDQU     2(SI), Y3
	VMOVDQU     2(DI), Y4
	VPSIGNB     Y3, Y4, Y4
	VPABSB      Y3, Y3
	VPMADDUBSW  Y4, Y3, Y3
	VPMADDWD    Y15, Y3, Y3
	VCVTDQ2PS   Y3, Y3
	VFMADD231PS Y3, Y1, Y0
	ADDQ        $34, SI
	ADDQ        $34, DI
	DECQ        DX
	JNZ         q80blk
	HSUM8
	VMOVSS      X0, (BX)
	ADDQ        $4, BX
	ADDQ        R8, R9
	DECQ        CX
	JNZ         q80row
	VZEROUPPER
	RET

// func rowsQ4_0AVX2(w *byte, wrb int, a *byte, nb int, y *float32, rows int)
TEXT ·rowsQ4_0AVX2(SB), NOSPLIT, $0-48
	LOADARGS
	CONSTS
	MOVL         $0x08080808, AX
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13
q40row:
	VXORPS Y0, Y0, Y0
	MOVQ   R9, SI
	MOVQ   R10, DI
	MOVQ   R11, DX
q40blk:
	SCALE8
	NIBBLES(2)
	DOTOFF(2)
	ADDQ   $18, SI
	ADDQ   $34, DI
	DECQ   DX
	JNZ    q40blk
	HSUM8
	VMOVSS X0, (BX)
	ADDQ   $4, BX
	ADDQ   R8, R9
	DECQ   CX
	JNZ    q40row
	VZEROUPPER
	RET

// func rowsQ5_0AVX2(w *byte, wrb int, a *byte, nb int, y *float32, rows int)
TEXT ·rowsQ5_0AVX2(SB), NOSPLIT, $0-48
	LOADARGS
	CONSTS
	BITCONSTS
	MOVL         $0x10101010, AX
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13
q50row:
	VXORPS Y0, Y0, Y0
	MOVQ   R9, SI
	MOVQ   R10, DI
	MOVQ   R11, DX
q50blk:
	SCALE8
	NIBBLES(6)
	HIGHBITS(2)
	DOTOFF(2)
	ADDQ   $22, SI
	ADDQ   $34, DI
	DECQ   DX
	JNZ    q50blk
	HSUM8
	VMOVSS X0, (BX)
	ADDQ   $4, BX
	ADDQ   R8, R9
	DECQ   CX
	JNZ    q50row
	VZEROUPPER
	RET

// func rowsQ4_1AVX2(w *byte, wrb int, a *byte, nb int, y *float32, rows int)
TEXT ·rowsQ4_1AVX2(SB), NOSPLIT, $0-48
	LOADARGS
	CONSTS
q41row:
	VXORPS Y0, Y0, Y0
	VXORPS X9, X9, X9
	MOVQ   R9, SI
	MOVQ   R10, DI
	MOVQ   R11, DX
q41blk:
	SCALE8MIN
	NIBBLES(4)
	DOTU(4)
	ADDQ   $20, SI
	ADDQ   $36, DI
	DECQ   DX
	JNZ    q41blk
	HSUM8
	VADDSS X9, X0, X0
	VMOVSS X0, (BX)
	ADDQ   $4, BX
	ADDQ   R8, R9
	DECQ   CX
	JNZ    q41row
	VZEROUPPER
	RET

// func rowsQ5_1AVX2(w *byte, wrb int, a *byte, nb int, y *float32, rows int)
TEXT ·rowsQ5_1AVX2(SB), NOSPLIT, $0-48
	LOADARGS
	CONSTS
	BITCONSTS
q51row:
	VXORPS Y0, Y0, Y0
	VXORPS X9, X9, X9
	MOVQ   R9, SI
	MOVQ   R10, DI
	MOVQ   R11, DX
q51blk:
	SCALE8MIN
	NIBBLES(8)
	HIGHBITS(4)
	DOTU(4)
	ADDQ   $24, SI
	ADDQ   $36, DI
	DECQ   DX
	JNZ    q51blk
	HSUM8
	VADDSS X9, X0, X0
	VMOVSS X0, (BX)
	ADDQ   $4, BX
	ADDQ   R8, R9
	DECQ   CX
	JNZ    q51row
	VZEROUPPER
	RET
