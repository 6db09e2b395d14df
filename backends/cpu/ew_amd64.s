//go:build !purego

#include "textflag.h"

// Element-wise float32 add and multiply of whole vectors (AddCols,
// MulCols: the residual and bias adds, the broadcast scales). One IEEE add
// or multiply per element, whatever the width, so the AVX2 and AVX-512
// forms give the Go loop's bits; tails run one element at a time.

// func addF32AVX2(y, a, b *float32, n int)
// y[i] = a[i] + b[i] for i < n (y may alias a or b).
TEXT ·addF32AVX2(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), BX
	XORQ AX, AX
	MOVQ BX, R9
	ANDQ $-32, R9
	CMPQ AX, R9
	JGE  add2_tail

add2_loop:
	VMOVUPS (SI)(AX*4), Y0
	VMOVUPS 32(SI)(AX*4), Y1
	VMOVUPS 64(SI)(AX*4), Y2
	VMOVUPS 96(SI)(AX*4), Y3
	VADDPS  (DX)(AX*4), Y0, Y0
	VADDPS  32(DX)(AX*4), Y1, Y1
	VADDPS  64(DX)(AX*4), Y2, Y2
	VADDPS  96(DX)(AX*4), Y3, Y3
	VMOVUPS Y0, (DI)(AX*4)
	VMOVUPS Y1, 32(DI)(AX*4)
	VMOVUPS Y2, 64(DI)(AX*4)
	VMOVUPS Y3, 96(DI)(AX*4)
	ADDQ    $32, AX
	CMPQ    AX, R9
	JLT     add2_loop

add2_tail:
	MOVQ BX, R9
	ANDQ $-8, R9

add2_tail8:
	CMPQ    AX, R9
	JGE     add2_tail1
	VMOVUPS (SI)(AX*4), Y0
	VADDPS  (DX)(AX*4), Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    $8, AX
	JMP     add2_tail8

add2_tail1:
	CMPQ   AX, BX
	JGE    add2_done
	VMOVSS (SI)(AX*4), X0
	VADDSS (DX)(AX*4), X0, X0
	VMOVSS X0, (DI)(AX*4)
	INCQ   AX
	JMP    add2_tail1

add2_done:
	VZEROUPPER
	RET

// func mulvF32AVX2(y, a, b *float32, n int)
// y[i] = a[i] * b[i] for i < n (y may alias a or b).
TEXT ·mulvF32AVX2(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), BX
	XORQ AX, AX
	MOVQ BX, R9
	ANDQ $-32, R9
	CMPQ AX, R9
	JGE  mulv2_tail

mulv2_loop:
	VMOVUPS (SI)(AX*4), Y0
	VMOVUPS 32(SI)(AX*4), Y1
	VMOVUPS 64(SI)(AX*4), Y2
	VMOVUPS 96(SI)(AX*4), Y3
	VMULPS  (DX)(AX*4), Y0, Y0
	VMULPS  32(DX)(AX*4), Y1, Y1
	VMULPS  64(DX)(AX*4), Y2, Y2
	VMULPS  96(DX)(AX*4), Y3, Y3
	VMOVUPS Y0, (DI)(AX*4)
	VMOVUPS Y1, 32(DI)(AX*4)
	VMOVUPS Y2, 64(DI)(AX*4)
	VMOVUPS Y3, 96(DI)(AX*4)
	ADDQ    $32, AX
	CMPQ    AX, R9
	JLT     mulv2_loop

mulv2_tail:
	MOVQ BX, R9
	ANDQ $-8, R9

mulv2_tail8:
	CMPQ    AX, R9
	JGE     mulv2_tail1
	VMOVUPS (SI)(AX*4), Y0
	VMULPS  (DX)(AX*4), Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    $8, AX
	JMP     mulv2_tail8

mulv2_tail1:
	CMPQ   AX, BX
	JGE    mulv2_done
	VMOVSS (SI)(AX*4), X0
	VMULSS (DX)(AX*4), X0, X0
	VMOVSS X0, (DI)(AX*4)
	INCQ   AX
	JMP    mulv2_tail1

mulv2_done:
	VZEROUPPER
	RET

// func addF32AVX512(y, a, b *float32, n int)
// As addF32AVX2, 64 elements a step in four ZMMs.
TEXT ·addF32AVX512(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), BX
	XORQ AX, AX
	MOVQ BX, R9
	ANDQ $-64, R9
	CMPQ AX, R9
	JGE  add5_tail

add5_loop:
	VMOVUPS (SI)(AX*4), Z0
	VMOVUPS 64(SI)(AX*4), Z1
	VMOVUPS 128(SI)(AX*4), Z2
	VMOVUPS 192(SI)(AX*4), Z3
	VADDPS  (DX)(AX*4), Z0, Z0
	VADDPS  64(DX)(AX*4), Z1, Z1
	VADDPS  128(DX)(AX*4), Z2, Z2
	VADDPS  192(DX)(AX*4), Z3, Z3
	VMOVUPS Z0, (DI)(AX*4)
	VMOVUPS Z1, 64(DI)(AX*4)
	VMOVUPS Z2, 128(DI)(AX*4)
	VMOVUPS Z3, 192(DI)(AX*4)
	ADDQ    $64, AX
	CMPQ    AX, R9
	JLT     add5_loop

add5_tail:
	MOVQ BX, R9
	ANDQ $-16, R9

add5_tail16:
	CMPQ    AX, R9
	JGE     add5_tail1
	VMOVUPS (SI)(AX*4), Z0
	VADDPS  (DX)(AX*4), Z0, Z0
	VMOVUPS Z0, (DI)(AX*4)
	ADDQ    $16, AX
	JMP     add5_tail16

add5_tail1:
	CMPQ   AX, BX
	JGE    add5_done
	VMOVSS (SI)(AX*4), X0
	VADDSS (DX)(AX*4), X0, X0
	VMOVSS X0, (DI)(AX*4)
	INCQ   AX
	JMP    add5_tail1

add5_done:
	VZEROUPPER
	RET

// func mulvF32AVX512(y, a, b *float32, n int)
// As mulvF32AVX2, 64 elements a step in four ZMMs.
TEXT ·mulvF32AVX512(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), BX
	XORQ AX, AX
	MOVQ BX, R9
	ANDQ $-64, R9
	CMPQ AX, R9
	JGE  mulv5_tail

mulv5_loop:
	VMOVUPS (SI)(AX*4), Z0
	VMOVUPS 64(SI)(AX*4), Z1
	VMOVUPS 128(SI)(AX*4), Z2
	VMOVUPS 192(SI)(AX*4), Z3
	VMULPS  (DX)(AX*4), Z0, Z0
	VMULPS  64(DX)(AX*4), Z1, Z1
	VMULPS  128(DX)(AX*4), Z2, Z2
	VMULPS  192(DX)(AX*4), Z3, Z3
	VMOVUPS Z0, (DI)(AX*4)
	VMOVUPS Z1, 64(DI)(AX*4)
	VMOVUPS Z2, 128(DI)(AX*4)
	VMOVUPS Z3, 192(DI)(AX*4)
	ADDQ    $64, AX
	CMPQ    AX, R9
	JLT     mulv5_loop

mulv5_tail:
	MOVQ BX, R9
	ANDQ $-16, R9

mulv5_tail16:
	CMPQ    AX, R9
	JGE     mulv5_tail1
	VMOVUPS (SI)(AX*4), Z0
	VMULPS  (DX)(AX*4), Z0, Z0
	VMOVUPS Z0, (DI)(AX*4)
	ADDQ    $16, AX
	JMP     mulv5_tail16

mulv5_tail1:
	CMPQ   AX, BX
	JGE    mulv5_done
	VMOVSS (SI)(AX*4), X0
	VMULSS (DX)(AX*4), X0, X0
	VMOVSS X0, (DI)(AX*4)
	INCQ   AX
	JMP    mulv5_tail1

mulv5_done:
	VZEROUPPER
	RET
