//go:build amd64 && !purego

#include "textflag.h"

// VPERMD index that restores element order after the per-lane packs.
DATA kqQ8KPerm<>+0(SB)/8, $0x0000000400000000
DATA kqQ8KPerm<>+8(SB)/8, $0x0000000500000001
DATA kqQ8KPerm<>+16(SB)/8, $0x0000000600000002
DATA kqQ8KPerm<>+24(SB)/8, $0x0000000700000003
GLOBL kqQ8KPerm<>(SB), RODATA|NOPTR, $32

#define BCAST(imm, X, Y) \
	MOVL $imm, AX \
	VMOVD AX, X   \
	VPBROADCASTD X, Y

// Q8KQ(OFF, V): V = int8(min(127, nearest_int(iscale·x[OFF/4..+8]))) as
// sign-extended dwords: (bits(iscale·x + 12582912) & 0x7fffff) - 0x400000.
#define Q8KQ(OFF, V) \
	VMULPS  OFF(SI), Y8, V \
	VADDPS  Y9, V, V       \
	VPAND   Y10, V, V      \
	VPSUBD  Y11, V, V      \
	VPMINSD Y12, V, V      \
	VPSLLD  $24, V, V      \
	VPSRAD  $24, V, V

// Q8KCHUNK(C): elements 32C..32C+31 (groups 2C and 2C+1): 32 bytes of
// quants and 2 bsums.
#define Q8KCHUNK(C) \
	Q8KQ(128*C, Y0)    \
	Q8KQ(128*C+32, Y1) \
	Q8KQ(128*C+64, Y2) \
	Q8KQ(128*C+96, Y3) \
	VPACKSSDW Y1, Y0, Y4 \
	VPACKSSDW Y3, Y2, Y5 \
	VPACKSSWB Y5, Y4, Y4 \
	VPERMD    Y4, Y13, Y4 \
	VMOVDQU   Y4, 4+32*C(DI) \
	VPADDD    Y1, Y0, Y0 \
	VPADDD    Y3, Y2, Y2 \
	VPHADDD   Y2, Y0, Y0 \
	VPHADDD   Y0, Y0, Y0 \
	VEXTRACTI128 $1, Y0, X1 \
	VPADDD    X1, X0, X0 \
	VPACKSSDW X0, X0, X0 \
	VMOVD     X0, 260+4*C(DI)

// func kqQuantQ8KAVX2(x *float32, y *byte, nb int)
TEXT ·kqQuantQ8KAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ nb+16(FP), CX
	BCAST(0x4B400000, X9, Y9)    // 12582912.0f
	BCAST(0x007fffff, X10, Y10)
	BCAST(0x00400000, X11, Y11)
	BCAST(127, X12, Y12)
	BCAST(0x7fffffff, X15, Y15)
	VMOVDQU kqQ8KPerm<>(SB), Y13

q8kblock:
	// amax = max |x| over non-NaN x (VMAXPS keeps the second source when
	// the first is NaN or not greater)
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ DX, DX

q8kmax:
	VANDPS (SI)(DX*1), Y15, Y4
	VANDPS 32(SI)(DX*1), Y15, Y5
	VANDPS 64(SI)(DX*1), Y15, Y6
	VANDPS 96(SI)(DX*1), Y15, Y7
	VMAXPS Y0, Y4, Y0
	VMAXPS Y1, Y5, Y1
	VMAXPS Y2, Y6, Y2
	VMAXPS Y3, Y7, Y3
	ADDQ $128, DX
	CMPQ DX, $1024
	JNE  q8kmax
	VMAXPS Y1, Y0, Y0
	VMAXPS Y3, Y2, Y2
	VMAXPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0x4E, X0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0xB1, X0, X1
	VMAXPS X1, X0, X0           // amax in every lane
	VXORPS X1, X1, X1
	VUCOMISS X1, X0
	JEQ q8kzero
	VBROADCASTSS X0, Y14

	// max = the first x with |x| == amax
	XORQ DX, DX

q8kfind:
	VANDPS    (SI)(DX*1), Y15, Y4
	VCMPPS    $0, Y14, Y4, Y4
	VMOVMSKPS Y4, R11
	TESTL     R11, R11
	JNZ       q8kfound
	ADDQ      $32, DX
	JMP       q8kfind

q8kfound:
	BSFL   R11, R11
	LEAQ   (DX)(R11*4), DX
	VMOVSS (SI)(DX*1), X0
	MOVL   $0xC2FE0000, AX      // -127.0f
	VMOVD  AX, X1
	VDIVSS X0, X1, X1           // iscale = -127/max
	MOVL   $0x3F800000, AX      // 1.0f
	VMOVD  AX, X2
	VDIVSS X1, X2, X2           // d = 1/iscale
	VMOVSS X2, (DI)
	VBROADCASTSS X1, Y8
	Q8KCHUNK(0)
	Q8KCHUNK(1)
	Q8KCHUNK(2)
	Q8KCHUNK(3)
	Q8KCHUNK(4)
	Q8KCHUNK(5)
	Q8KCHUNK(6)
	Q8KCHUNK(7)
	JMP q8knext

q8kzero:
	VXORPS  Y0, Y0, Y0
	VMOVDQU Y0, (DI)
	VMOVDQU Y0, 32(DI)
	VMOVDQU Y0, 64(DI)
	VMOVDQU Y0, 96(DI)
	VMOVDQU Y0, 128(DI)
	VMOVDQU Y0, 160(DI)
	VMOVDQU Y0, 192(DI)
	VMOVDQU Y0, 224(DI)
	VMOVDQU Y0, 256(DI)
	VMOVDQU X0, 276(DI)

q8knext:
	ADDQ $1024, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  q8kblock
	VZEROUPPER
	RET
