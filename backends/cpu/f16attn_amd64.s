//go:build !purego

#include "textflag.h"

// f16-row variants of the attention kernels of f32simd_amd64.s (AVX-512)
// and f32simd_avx2_amd64.s (AVX2+FMA+F16C): the key or value rows are
// little-endian halves, widened to float32 by VCVTPH2PS (exact: every f16
// value is a float32), and then every FMA, lane and reduction is the f32
// kernel's, so the results are ggmlf32's over the converted values.

// REDUCE16H is ggmlf32.Reduce16 of Z0 into the low lane of X0 (the
// REDUCE16 of f32simd_amd64.s). Clobbers Y10-Y13.
#define REDUCE16H \
	VEXTRACTF64X4 $1, Z0, Y10; \
	VADDPS        Y10, Y0, Y10; \
	VEXTRACTF128  $1, Y10, X11; \
	VADDPS        X11, X10, X11; \
	VMOVHLPS      X11, X11, X12; \
	VADDPS        X12, X11, X12; \
	VMOVSHDUP     X12, X13; \
	VADDSS        X13, X12, X0

// func dotsF16(sc *float32, k *byte, kstride, n int, q *float32, hd int)
// sc[j] = ggmlf32.VecDotF32(float32(k_j[:hd]), q[:hd]) for j < n, k_j the
// halves at k + 2·j·kstride: four 16-lane accumulators Z0-Z3 over each 64
// values (the converted k in Z4-Z7), combined (acc0+acc2)+(acc1+acc3),
// Reduce16, then the tail products in order (VMULSS, VADDSS).
TEXT ·dotsF16(SB), NOSPLIT, $0-48
	MOVQ sc+0(FP), DI
	MOVQ k+8(FP), SI
	MOVQ kstride+16(FP), R8
	SHLQ $1, R8
	MOVQ n+24(FP), CX
	MOVQ q+32(FP), DX
	MOVQ hd+40(FP), BX
	MOVQ BX, R9
	ANDQ $-64, R9
	TESTQ CX, CX
	JEQ  dh_done

dh_row:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	XORQ   AX, AX
	CMPQ   AX, R9
	JGE    dh_combine

dh_vec:
	VCVTPH2PS   (SI)(AX*2), Z4
	VCVTPH2PS   32(SI)(AX*2), Z5
	VCVTPH2PS   64(SI)(AX*2), Z6
	VCVTPH2PS   96(SI)(AX*2), Z7
	VFMADD231PS (DX)(AX*4), Z4, Z0
	VFMADD231PS 64(DX)(AX*4), Z5, Z1
	VFMADD231PS 128(DX)(AX*4), Z6, Z2
	VFMADD231PS 192(DX)(AX*4), Z7, Z3
	ADDQ        $64, AX
	CMPQ        AX, R9
	JLT         dh_vec

dh_combine:
	VADDPS Z2, Z0, Z0 // acc0 + acc2
	VADDPS Z3, Z1, Z1 // acc1 + acc3
	VADDPS Z1, Z0, Z0
	REDUCE16H
	CMPQ   AX, BX
	JGE    dh_store

dh_tail:
	MOVWLZX   (SI)(AX*2), R10
	VMOVD     R10, X1
	VCVTPH2PS X1, X1
	VMULSS    (DX)(AX*4), X1, X1
	VADDSS    X1, X0, X0
	INCQ      AX
	CMPQ      AX, BX
	JLT       dh_tail

dh_store:
	VMOVSS X0, (DI)
	ADDQ   $4, DI
	ADDQ   R8, SI
	DECQ   CX
	JNZ    dh_row

dh_done:
	VZEROUPPER
	RET

// func vsumLanesF16(acc *float32, v *byte, vstride int, p *float32, n, L, hd int)
// vsumLanes over f16 rows, continuing the accumulators in acc: for lane
// l < L and d < hd (hd a multiple of 16), the FMA accumulation of
// float32(v[j*vstride+d])·p[j] over j ≡ l (mod L), j < n, in increasing j,
// onto acc[((d/16)*L + l)*16 + d%16] (so a caller may feed the rows in
// chunks of a multiple of L rows). Z0-Z3 accumulate a block of 64 d, Z4 is
// the p[j] broadcast, Z5-Z8 the converted v.
TEXT ·vsumLanesF16(SB), NOSPLIT, $0-56
	MOVQ acc+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ vstride+16(FP), R8
	SHLQ $1, R8           // v row stride, bytes
	MOVQ p+24(FP), DX
	MOVQ n+32(FP), CX
	LEAQ (DX)(CX*4), CX   // end of p
	MOVQ L+40(FP), R10
	MOVQ hd+48(FP), BX
	MOVQ R8, R11
	IMULQ R10, R11        // v step per accumulation, bytes
	MOVQ R10, R12
	SHLQ $2, R12          // p step, bytes
	MOVQ R10, R15
	SHLQ $6, R15          // acc stride of one d-block, bytes
	XORQ R13, R13         // lane l

vh_lane:
	CMPQ R13, R10
	JGE  vh_done
	XORQ AX, AX           // d0

vh_blk64:
	LEAQ 64(AX), R9
	CMPQ R9, BX
	JGT  vh_blk16
	// acc at &acc[((d0/16)*L + l)*16] = DI + (d0/16)*L*64 + l*64
	MOVQ AX, R9
	SHRQ $4, R9
	IMULQ R15, R9
	ADDQ DI, R9
	MOVQ R13, R14
	SHLQ $6, R14
	ADDQ R14, R9
	VMOVUPS (R9), Z0
	ADDQ R15, R9
	VMOVUPS (R9), Z1
	ADDQ R15, R9
	VMOVUPS (R9), Z2
	ADDQ R15, R9
	VMOVUPS (R9), Z3
	MOVQ R13, R9
	IMULQ R8, R9
	ADDQ SI, R9
	LEAQ (R9)(AX*2), R9   // &v[l*vstride + d0]
	LEAQ (DX)(R13*4), R14 // &p[l]
	CMPQ R14, CX
	JGE  vh_store64

vh_loop64:
	VBROADCASTSS (R14), Z4
	VCVTPH2PS    (R9), Z5
	VCVTPH2PS    32(R9), Z6
	VCVTPH2PS    64(R9), Z7
	VCVTPH2PS    96(R9), Z8
	VFMADD231PS  Z5, Z4, Z0
	VFMADD231PS  Z6, Z4, Z1
	VFMADD231PS  Z7, Z4, Z2
	VFMADD231PS  Z8, Z4, Z3
	ADDQ         R11, R9
	ADDQ         R12, R14
	CMPQ         R14, CX
	JLT          vh_loop64

vh_store64:
	// &acc[((d0/16)*L + l)*16] = DI + (d0/16)*L*64 + l*64
	MOVQ AX, R9
	SHRQ $4, R9
	IMULQ R15, R9
	ADDQ DI, R9
	MOVQ R13, R14
	SHLQ $6, R14
	ADDQ R14, R9
	VMOVUPS Z0, (R9)
	ADDQ R15, R9
	VMOVUPS Z1, (R9)
	ADDQ R15, R9
	VMOVUPS Z2, (R9)
	ADDQ R15, R9
	VMOVUPS Z3, (R9)
	ADDQ $64, AX
	JMP  vh_blk64

vh_blk16:
	CMPQ AX, BX
	JGE  vh_next
	MOVQ AX, R9
	SHRQ $4, R9
	IMULQ R15, R9
	ADDQ DI, R9
	MOVQ R13, R14
	SHLQ $6, R14
	ADDQ R14, R9
	VMOVUPS (R9), Z0
	MOVQ R13, R9
	IMULQ R8, R9
	ADDQ SI, R9
	LEAQ (R9)(AX*2), R9
	LEAQ (DX)(R13*4), R14
	CMPQ R14, CX
	JGE  vh_store16

vh_loop16:
	VBROADCASTSS (R14), Z4
	VCVTPH2PS    (R9), Z5
	VFMADD231PS  Z5, Z4, Z0
	ADDQ         R11, R9
	ADDQ         R12, R14
	CMPQ         R14, CX
	JLT          vh_loop16

vh_store16:
	MOVQ AX, R9
	SHRQ $4, R9
	IMULQ R15, R9
	ADDQ DI, R9
	MOVQ R13, R14
	SHLQ $6, R14
	ADDQ R14, R9
	VMOVUPS Z0, (R9)
	ADDQ $16, AX
	JMP  vh_blk16

vh_next:
	INCQ R13
	JMP  vh_lane

vh_done:
	VZEROUPPER
	RET

// REDUCE16HY is ggmlf32.Reduce16 of the 16 lanes (Y0: 0-7, Y1: 8-15) into
// the low lane of X0 (REDUCE16Y of f32simd_avx2_amd64.s). Clobbers Y1.
#define REDUCE16HY \
	VADDPS       Y1, Y0, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS       X1, X0, X0; \
	VMOVHLPS     X0, X0, X1; \
	VADDPS       X1, X0, X0; \
	VMOVSHDUP    X0, X1; \
	VADDSS       X1, X0, X0

// func dotsF16AVX2(sc *float32, k *byte, kstride, n int, q *float32, hd int)
// dotsF16 on AVX2: the four 16-lane accumulators are Y0:Y1, Y2:Y3, Y4:Y5,
// Y6:Y7; the converted k of 64 values goes through Y8-Y15 in two halves.
TEXT ·dotsF16AVX2(SB), NOSPLIT, $0-48
	MOVQ  sc+0(FP), DI
	MOVQ  k+8(FP), SI
	MOVQ  kstride+16(FP), R8
	SHLQ  $1, R8
	MOVQ  n+24(FP), CX
	MOVQ  q+32(FP), DX
	MOVQ  hd+40(FP), BX
	MOVQ  BX, R9
	ANDQ  $-64, R9
	TESTQ CX, CX
	JEQ   dh2_done

dh2_row:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	XORQ   AX, AX
	CMPQ   AX, R9
	JGE    dh2_combine

dh2_vec:
	VCVTPH2PS   (SI)(AX*2), Y8
	VCVTPH2PS   16(SI)(AX*2), Y9
	VCVTPH2PS   32(SI)(AX*2), Y10
	VCVTPH2PS   48(SI)(AX*2), Y11
	VCVTPH2PS   64(SI)(AX*2), Y12
	VCVTPH2PS   80(SI)(AX*2), Y13
	VCVTPH2PS   96(SI)(AX*2), Y14
	VCVTPH2PS   112(SI)(AX*2), Y15
	VFMADD231PS (DX)(AX*4), Y8, Y0
	VFMADD231PS 32(DX)(AX*4), Y9, Y1
	VFMADD231PS 64(DX)(AX*4), Y10, Y2
	VFMADD231PS 96(DX)(AX*4), Y11, Y3
	VFMADD231PS 128(DX)(AX*4), Y12, Y4
	VFMADD231PS 160(DX)(AX*4), Y13, Y5
	VFMADD231PS 192(DX)(AX*4), Y14, Y6
	VFMADD231PS 224(DX)(AX*4), Y15, Y7
	ADDQ        $64, AX
	CMPQ        AX, R9
	JLT         dh2_vec

dh2_combine:
	VADDPS Y4, Y0, Y0 // acc0 + acc2
	VADDPS Y5, Y1, Y1
	VADDPS Y6, Y2, Y2 // acc1 + acc3
	VADDPS Y7, Y3, Y3
	VADDPS Y2, Y0, Y0
	VADDPS Y3, Y1, Y1
	REDUCE16HY
	CMPQ   AX, BX
	JGE    dh2_store

dh2_tail:
	MOVWLZX   (SI)(AX*2), R10
	VMOVD     R10, X1
	VCVTPH2PS X1, X1
	VMULSS    (DX)(AX*4), X1, X1
	VADDSS    X1, X0, X0
	INCQ      AX
	CMPQ      AX, BX
	JLT       dh2_tail

dh2_store:
	VMOVSS X0, (DI)
	ADDQ   $4, DI
	ADDQ   R8, SI
	DECQ   CX
	JNZ    dh2_row

dh2_done:
	VZEROUPPER
	RET

// func vsumLanesF16AVX2(acc *float32, v *byte, vstride int, p *float32, n, L, hd int)
// vsumLanesF16 on AVX2 (accumulating onto acc too): a block of 64 d
// accumulates in Y0-Y7, the p[j]
// broadcast is Y8, the converted v Y9-Y12 (two passes of four).
TEXT ·vsumLanesF16AVX2(SB), NOSPLIT, $0-56
	MOVQ  acc+0(FP), DI
	MOVQ  v+8(FP), SI
	MOVQ  vstride+16(FP), R8
	SHLQ  $1, R8          // v row stride, bytes
	MOVQ  p+24(FP), DX
	MOVQ  n+32(FP), CX
	LEAQ  (DX)(CX*4), CX  // end of p
	MOVQ  L+40(FP), R10
	MOVQ  hd+48(FP), BX
	MOVQ  R8, R11
	IMULQ R10, R11        // v step per accumulation, bytes
	MOVQ  R10, R12
	SHLQ  $2, R12         // p step, bytes
	MOVQ  R10, R15
	SHLQ  $6, R15         // acc stride of one d-block, bytes
	XORQ  R13, R13        // lane l

vh2_lane:
	CMPQ R13, R10
	JGE  vh2_done
	XORQ AX, AX           // d0

vh2_blk64:
	LEAQ   64(AX), R9
	CMPQ   R9, BX
	JGT    vh2_blk16
	// acc at &acc[((d0/16)*L + l)*16] = DI + (d0/16)*L*64 + l*64
	MOVQ    AX, R9
	SHRQ    $4, R9
	IMULQ   R15, R9
	ADDQ    DI, R9
	MOVQ    R13, R14
	SHLQ    $6, R14
	ADDQ    R14, R9
	VMOVUPS (R9), Y0
	VMOVUPS 32(R9), Y1
	ADDQ    R15, R9
	VMOVUPS (R9), Y2
	VMOVUPS 32(R9), Y3
	ADDQ    R15, R9
	VMOVUPS (R9), Y4
	VMOVUPS 32(R9), Y5
	ADDQ    R15, R9
	VMOVUPS (R9), Y6
	VMOVUPS 32(R9), Y7
	MOVQ   R13, R9
	IMULQ  R8, R9
	ADDQ   SI, R9
	LEAQ   (R9)(AX*2), R9   // &v[l*vstride + d0]
	LEAQ   (DX)(R13*4), R14 // &p[l]
	CMPQ   R14, CX
	JGE    vh2_store64

vh2_loop64:
	VBROADCASTSS (R14), Y8
	VCVTPH2PS    (R9), Y9
	VCVTPH2PS    16(R9), Y10
	VCVTPH2PS    32(R9), Y11
	VCVTPH2PS    48(R9), Y12
	VFMADD231PS  Y9, Y8, Y0
	VFMADD231PS  Y10, Y8, Y1
	VFMADD231PS  Y11, Y8, Y2
	VFMADD231PS  Y12, Y8, Y3
	VCVTPH2PS    64(R9), Y9
	VCVTPH2PS    80(R9), Y10
	VCVTPH2PS    96(R9), Y11
	VCVTPH2PS    112(R9), Y12
	VFMADD231PS  Y9, Y8, Y4
	VFMADD231PS  Y10, Y8, Y5
	VFMADD231PS  Y11, Y8, Y6
	VFMADD231PS  Y12, Y8, Y7
	ADDQ         R11, R9
	ADDQ         R12, R14
	CMPQ         R14, CX
	JLT          vh2_loop64

vh2_store64:
	// &acc[((d0/16)*L + l)*16] = DI + (d0/16)*L*64 + l*64
	MOVQ    AX, R9
	SHRQ    $4, R9
	IMULQ   R15, R9
	ADDQ    DI, R9
	MOVQ    R13, R14
	SHLQ    $6, R14
	ADDQ    R14, R9
	VMOVUPS Y0, (R9)
	VMOVUPS Y1, 32(R9)
	ADDQ    R15, R9
	VMOVUPS Y2, (R9)
	VMOVUPS Y3, 32(R9)
	ADDQ    R15, R9
	VMOVUPS Y4, (R9)
	VMOVUPS Y5, 32(R9)
	ADDQ    R15, R9
	VMOVUPS Y6, (R9)
	VMOVUPS Y7, 32(R9)
	ADDQ    $64, AX
	JMP     vh2_blk64

vh2_blk16:
	CMPQ   AX, BX
	JGE    vh2_next
	MOVQ    AX, R9
	SHRQ    $4, R9
	IMULQ   R15, R9
	ADDQ    DI, R9
	MOVQ    R13, R14
	SHLQ    $6, R14
	ADDQ    R14, R9
	VMOVUPS (R9), Y0
	VMOVUPS 32(R9), Y1
	MOVQ   R13, R9
	IMULQ  R8, R9
	ADDQ   SI, R9
	LEAQ   (R9)(AX*2), R9
	LEAQ   (DX)(R13*4), R14
	CMPQ   R14, CX
	JGE    vh2_store16

vh2_loop16:
	VBROADCASTSS (R14), Y8
	VCVTPH2PS    (R9), Y9
	VCVTPH2PS    16(R9), Y10
	VFMADD231PS  Y9, Y8, Y0
	VFMADD231PS  Y10, Y8, Y1
	ADDQ         R11, R9
	ADDQ         R12, R14
	CMPQ         R14, CX
	JLT          vh2_loop16

vh2_store16:
	MOVQ    AX, R9
	SHRQ    $4, R9
	IMULQ   R15, R9
	ADDQ    DI, R9
	MOVQ    R13, R14
	SHLQ    $6, R14
	ADDQ    R14, R9
	VMOVUPS Y0, (R9)
	VMOVUPS Y1, 32(R9)
	ADDQ    $16, AX
	JMP     vh2_blk16

vh2_next:
	INCQ R13
	JMP  vh2_lane

vh2_done:
	VZEROUPPER
	RET
