//go:build !purego

#include "textflag.h"

// AVX-512 float32 kernels that reproduce internal/ggmlf32 bit for bit: a
// 16-lane accumulator of the scalar emulation is one ZMM register here,
// every FMA is one VFMADD*PS lane, and the horizontal reductions add in the
// same tree (see f32simd_amd64.go for the contracts).

// REDUCE16 is ggmlf32.Reduce16 of Z0 into the low lane of dst (an X
// register): upper 8 lanes onto the lower 8, then 4, then (b0+b2)+(b1+b3).
// Clobbers Y10-Y13.
#define REDUCE16(dst) \
	VEXTRACTF64X4 $1, Z0, Y10; \
	VADDPS        Y10, Y0, Y10; \
	VEXTRACTF128  $1, Y10, X11; \
	VADDPS        X11, X10, X11; \
	VMOVHLPS      X11, X11, X12; \
	VADDPS        X12, X11, X12; \
	VMOVSHDUP     X12, X13; \
	VADDSS        X13, X12, dst

// EXPCONST loads the constants of EXPF into Z16-Z29.
#define EXPCONST \
	MOVL $0x4B400000, AX; VPBROADCASTD AX, Z16; \
	MOVL $0x3FB8AA3B, AX; VPBROADCASTD AX, Z17; \
	MOVL $0x3F317200, AX; VPBROADCASTD AX, Z18; \
	MOVL $0x35BFBE8E, AX; VPBROADCASTD AX, Z19; \
	MOVL $0x7FFFFFFF, AX; VPBROADCASTD AX, Z20; \
	MOVL $0x43400000, AX; VPBROADCASTD AX, Z21; \
	MOVL $0x3C072010, AX; VPBROADCASTD AX, Z22; \
	MOVL $0x3D2B9F17, AX; VPBROADCASTD AX, Z23; \
	MOVL $0x3E2AAF33, AX; VPBROADCASTD AX, Z24; \
	MOVL $0x3EFFFEDB, AX; VPBROADCASTD AX, Z25; \
	MOVL $0x3F7FFFF6, AX; VPBROADCASTD AX, Z26; \
	MOVL $0x3F800000, AX; VPBROADCASTD AX, Z27; \
	MOVL $0x7F800000, AX; VPBROADCASTD AX, Z28; \
	VPXORD Z29, Z29, Z29                          // 0

// EXPF replaces Z0 by ggml_v_expf(Z0) (AVX-512F/DQ variant), lane for
// lane as ggmlf32.ExpF: z = x·log2e + 0x1.8p23, n = z - 0x1.8p23,
// b = x - n·ln2hi - n·ln2lo (two FNMADDs), u = b·b,
// j = ((c5·b+c4)·u + (c3·b+c2))·u + (c1·b+1), scalef(j, n), then lanes
// with |n| > 192 replaced by 0 (n ≤ 0) or +Inf, NaN lanes by n.
// Needs EXPCONST; clobbers Z1-Z5, K1-K3.
#define EXPF \
	VMOVAPS      Z0, Z1; \
	VFMADD213PS  Z16, Z17, Z1; \
	VSUBPS       Z16, Z1, Z1; \
	VMOVAPS      Z0, Z2; \
	VFNMADD231PS Z18, Z1, Z2; \
	VFNMADD231PS Z19, Z1, Z2; \
	VPANDD       Z20, Z1, Z3; \
	VCMPPS       $0x1e, Z21, Z3, K1; \
	VCMPPS       $0x12, Z29, Z1, K2; \
	VCMPPS       $0x03, Z1, Z1, K3; \
	VMULPS       Z2, Z2, Z3; \
	VMOVAPS      Z22, Z4; \
	VFMADD213PS  Z23, Z2, Z4; \
	VMOVAPS      Z24, Z5; \
	VFMADD213PS  Z25, Z2, Z5; \
	VFMADD213PS  Z5, Z3, Z4; \
	VMOVAPS      Z26, Z5; \
	VFMADD213PS  Z27, Z2, Z5; \
	VFMADD213PS  Z5, Z3, Z4; \
	VSCALEFPS    Z1, Z4, Z0; \
	VMOVAPS      Z28, Z3; \
	VMOVAPS      Z29, K2, Z3; \
	VMOVAPS      Z3, K1, Z0; \
	VMOVAPS      Z1, K3, Z0

// TAILMASK sets K4 to the low R lanes (0 < R < 16 in reg, clobbers CX, R).
#define TAILMASK(reg) \
	MOVQ reg, CX; \
	MOVL $1, reg; \
	SHLL CX, reg; \
	DECL reg; \
	KMOVW reg, K4

// func dotsF32(sc, k *float32, kstride, n int, q *float32, hd int)
// sc[j] = ggmlf32.VecDotF32(k[j*kstride:][:hd], q[:hd]) for j < n.
TEXT ·dotsF32(SB), NOSPLIT, $0-48
	MOVQ sc+0(FP), DI
	MOVQ k+8(FP), SI
	MOVQ kstride+16(FP), R8
	SHLQ $2, R8
	MOVQ n+24(FP), CX
	MOVQ q+32(FP), DX
	MOVQ hd+40(FP), BX
	MOVQ BX, R9
	ANDQ $-64, R9
	TESTQ CX, CX
	JEQ  dots_done

dots_row:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	XORQ   AX, AX
	CMPQ   AX, R9
	JGE    dots_combine

dots_vec:
	VMOVUPS     (SI)(AX*4), Z4
	VMOVUPS     64(SI)(AX*4), Z5
	VMOVUPS     128(SI)(AX*4), Z6
	VMOVUPS     192(SI)(AX*4), Z7
	VFMADD231PS (DX)(AX*4), Z4, Z0
	VFMADD231PS 64(DX)(AX*4), Z5, Z1
	VFMADD231PS 128(DX)(AX*4), Z6, Z2
	VFMADD231PS 192(DX)(AX*4), Z7, Z3
	ADDQ        $64, AX
	CMPQ        AX, R9
	JLT         dots_vec

dots_combine:
	VADDPS Z2, Z0, Z0 // acc0 + acc2
	VADDPS Z3, Z1, Z1 // acc1 + acc3
	VADDPS Z1, Z0, Z0
	REDUCE16(X0)
	CMPQ   AX, BX
	JGE    dots_store

dots_tail:
	VMOVSS (SI)(AX*4), X1
	VMULSS (DX)(AX*4), X1, X1
	VADDSS X1, X0, X0
	INCQ   AX
	CMPQ   AX, BX
	JLT    dots_tail

dots_store:
	VMOVSS X0, (DI)
	ADDQ   $4, DI
	ADDQ   R8, SI
	DECQ   CX
	JNZ    dots_row

dots_done:
	VZEROUPPER
	RET

// func vsumLanes(acc, v *float32, vstride int, p *float32, n, L, hd int)
// For lane l < L and d < hd (hd a multiple of 16): the FMA accumulation
// Σ v[j*vstride+d]·p[j] over j ≡ l (mod L), j < n, in increasing j, stored
// at acc[((d/16)*L + l)*16 + d%16].
TEXT ·vsumLanes(SB), NOSPLIT, $0-56
	MOVQ acc+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ vstride+16(FP), R8
	SHLQ $2, R8           // v row stride, bytes
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

vs_lane:
	CMPQ R13, R10
	JGE  vs_done
	XORQ AX, AX           // d0

vs_blk64:
	LEAQ 64(AX), R9
	CMPQ R9, BX
	JGT  vs_blk16
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	MOVQ R13, R9
	IMULQ R8, R9
	ADDQ SI, R9
	LEAQ (R9)(AX*4), R9   // &v[l*vstride + d0]
	LEAQ (DX)(R13*4), R14 // &p[l]
	CMPQ R14, CX
	JGE  vs_store64

vs_loop64:
	VBROADCASTSS (R14), Z4
	VFMADD231PS  (R9), Z4, Z0
	VFMADD231PS  64(R9), Z4, Z1
	VFMADD231PS  128(R9), Z4, Z2
	VFMADD231PS  192(R9), Z4, Z3
	ADDQ         R11, R9
	ADDQ         R12, R14
	CMPQ         R14, CX
	JLT          vs_loop64

vs_store64:
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
	JMP  vs_blk64

vs_blk16:
	CMPQ AX, BX
	JGE  vs_next
	VPXORD Z0, Z0, Z0
	MOVQ R13, R9
	IMULQ R8, R9
	ADDQ SI, R9
	LEAQ (R9)(AX*4), R9
	LEAQ (DX)(R13*4), R14
	CMPQ R14, CX
	JGE  vs_store16

vs_loop16:
	VBROADCASTSS (R14), Z4
	VFMADD231PS  (R9), Z4, Z0
	ADDQ         R11, R9
	ADDQ         R12, R14
	CMPQ         R14, CX
	JLT          vs_loop16

vs_store16:
	MOVQ AX, R9
	SHRQ $4, R9
	IMULQ R15, R9
	ADDQ DI, R9
	MOVQ R13, R14
	SHLQ $6, R14
	ADDQ R14, R9
	VMOVUPS Z0, (R9)
	ADDQ $16, AX
	JMP  vs_blk16

vs_next:
	INCQ R13
	JMP  vs_lane

vs_done:
	VZEROUPPER
	RET

// COMB64 sets z to lane l of ggml_vec_dot_f32's combined accumulator over
// a d-block of 64 lane vectors at SI: (A[l]+A[l+32]) + (A[l+16]+A[l+48]);
// the offsets are l·64, (l+32)·64, (l+16)·64, (l+48)·64 bytes.
#define COMB64(o0, o2, o1, o3, z) \
	VMOVUPS o0(SI), z; \
	VADDPS  o2(SI), z, z; \
	VMOVUPS o1(SI), Z31; \
	VADDPS  o3(SI), Z31, Z31; \
	VADDPS  Z31, z, z

// func reduceLanes(out, acc *float32, hd, L int)
// out[d] for d < hd from vsumLanes' accumulators: L == 64 combines them as
// ggmlf32.VecDotCombine, L == 16 as ggmlf32.Reduce16, vectorized over d.
TEXT ·reduceLanes(SB), NOSPLIT, $0-32
	MOVQ out+0(FP), DI
	MOVQ acc+8(FP), SI
	MOVQ hd+16(FP), BX
	MOVQ L+24(FP), R10
	SHRQ $4, BX           // d-blocks
	JEQ  rl_done
	MOVQ R10, R15
	SHLQ $6, R15          // bytes per d-block

rl_blk:
	CMPQ R10, $64
	JNE  rl_load16
	COMB64(0, 2048, 1024, 3072, Z0)
	COMB64(64, 2112, 1088, 3136, Z1)
	COMB64(128, 2176, 1152, 3200, Z2)
	COMB64(192, 2240, 1216, 3264, Z3)
	COMB64(256, 2304, 1280, 3328, Z4)
	COMB64(320, 2368, 1344, 3392, Z5)
	COMB64(384, 2432, 1408, 3456, Z6)
	COMB64(448, 2496, 1472, 3520, Z7)
	COMB64(512, 2560, 1536, 3584, Z8)
	COMB64(576, 2624, 1600, 3648, Z9)
	COMB64(640, 2688, 1664, 3712, Z10)
	COMB64(704, 2752, 1728, 3776, Z11)
	COMB64(768, 2816, 1792, 3840, Z12)
	COMB64(832, 2880, 1856, 3904, Z13)
	COMB64(896, 2944, 1920, 3968, Z14)
	COMB64(960, 3008, 1984, 4032, Z15)
	JMP  rl_reduce

rl_load16:
	VMOVUPS 0(SI), Z0
	VMOVUPS 64(SI), Z1
	VMOVUPS 128(SI), Z2
	VMOVUPS 192(SI), Z3
	VMOVUPS 256(SI), Z4
	VMOVUPS 320(SI), Z5
	VMOVUPS 384(SI), Z6
	VMOVUPS 448(SI), Z7
	VMOVUPS 512(SI), Z8
	VMOVUPS 576(SI), Z9
	VMOVUPS 640(SI), Z10
	VMOVUPS 704(SI), Z11
	VMOVUPS 768(SI), Z12
	VMOVUPS 832(SI), Z13
	VMOVUPS 896(SI), Z14
	VMOVUPS 960(SI), Z15

rl_reduce:
	// Reduce16 across the 16 lane vectors: a_k = s_k + s_{k+8},
	// b_k = a_k + a_{k+4}, (b0+b2) + (b1+b3).
	VADDPS Z8, Z0, Z0
	VADDPS Z9, Z1, Z1
	VADDPS Z10, Z2, Z2
	VADDPS Z11, Z3, Z3
	VADDPS Z12, Z4, Z4
	VADDPS Z13, Z5, Z5
	VADDPS Z14, Z6, Z6
	VADDPS Z15, Z7, Z7
	VADDPS Z4, Z0, Z0
	VADDPS Z5, Z1, Z1
	VADDPS Z6, Z2, Z2
	VADDPS Z7, Z3, Z3
	VADDPS Z2, Z0, Z0
	VADDPS Z3, Z1, Z1
	VADDPS Z1, Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ $64, DI
	ADDQ R15, SI
	DECQ BX
	JNZ  rl_blk

rl_done:
	VZEROUPPER
	RET

// func scaleMaxF32(dst, src *float32, n int, scale float32) float32
// dst[i] = src[i]·scale for i < n; returns the max of dst[:n] (-Inf when
// n == 0). NaNs may or may not win the max.
TEXT ·scaleMaxF32(SB), NOSPLIT, $0-36
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         n+16(FP), BX
	VBROADCASTSS scale+24(FP), Z8
	MOVL         $0xFF800000, AX
	VPBROADCASTD AX, Z9 // running max, -Inf
	XORQ         AX, AX
	MOVQ         BX, R9
	ANDQ         $-16, R9
	CMPQ         AX, R9
	JGE          sm_tail

sm_loop:
	VMULPS  (SI)(AX*4), Z8, Z0
	VMOVUPS Z0, (DI)(AX*4)
	VMAXPS  Z0, Z9, Z9
	ADDQ    $16, AX
	CMPQ    AX, R9
	JLT     sm_loop

sm_tail:
	MOVQ    BX, R8
	SUBQ    AX, R8
	JEQ     sm_reduce
	TAILMASK(R8)
	VMOVUPS.Z (SI)(AX*4), K4, Z0
	VMULPS  Z8, Z0, Z0
	VMOVUPS Z0, K4, (DI)(AX*4)
	VMAXPS  Z0, Z9, K4, Z9

sm_reduce:
	VEXTRACTF64X4 $1, Z9, Y0
	VMAXPS        Y0, Y9, Y0
	VEXTRACTF128  $1, Y0, X1
	VMAXPS        X1, X0, X0
	VMOVHLPS      X0, X0, X1
	VMAXPS        X1, X0, X0
	VMOVSHDUP     X0, X1
	VMAXSS        X1, X0, X0
	VMOVSS        X0, ret+32(FP)
	VZEROUPPER
	RET

// func mulF32(x *float32, n int, s float32)
// x[i] *= s for i < n.
TEXT ·mulF32(SB), NOSPLIT, $0-20
	MOVQ         x+0(FP), DI
	MOVQ         n+8(FP), BX
	VBROADCASTSS s+16(FP), Z8
	XORQ         AX, AX
	MOVQ         BX, R9
	ANDQ         $-16, R9
	CMPQ         AX, R9
	JGE          mul_tail

mul_loop:
	VMULPS  (DI)(AX*4), Z8, Z0
	VMOVUPS Z0, (DI)(AX*4)
	ADDQ    $16, AX
	CMPQ    AX, R9
	JLT     mul_loop

mul_tail:
	MOVQ    BX, R8
	SUBQ    AX, R8
	JEQ     mul_done
	TAILMASK(R8)
	VMOVUPS.Z (DI)(AX*4), K4, Z0
	VMULPS  Z8, Z0, Z0
	VMOVUPS Z0, K4, (DI)(AX*4)

mul_done:
	VZEROUPPER
	RET

// func expSumF32(x *float32, n, nvalid int, maxv float32) float64
// For the 16-wide chunks of x[:n] (n a multiple of 16): x[i] =
// ggmlf32.ExpF(x[i]-maxv) for i < nvalid, 0 for i >= nvalid; returns the
// float64 sum of the chunks' Reduce16, as ggml_vec_soft_max_f32.
TEXT ·expSumF32(SB), NOSPLIT, $0-40
	EXPCONST
	MOVQ         x+0(FP), DI
	MOVQ         n+8(FP), BX
	MOVQ         nvalid+16(FP), DX
	VBROADCASTSS maxv+24(FP), Z8
	VXORPD       X14, X14, X14 // float64 sum
	XORQ         AX, AX
	CMPQ         AX, BX
	JGE          es_done

es_loop:
	MOVQ DX, R8
	SUBQ AX, R8           // valid lanes in this chunk
	CMPQ R8, $16
	JGE  es_full
	KXORW K4, K4, K4
	CMPQ R8, $0
	JLE  es_masked
	TAILMASK(R8)
	JMP  es_masked

es_full:
	KXNORW K4, K4, K4

es_masked:
	VMOVUPS.Z (DI)(AX*4), K4, Z0
	VSUBPS    Z8, Z0, Z0
	EXPF
	VMOVAPS.Z Z0, K4, Z0
	VMOVUPS   Z0, (DI)(AX*4)
	REDUCE16(X0)
	VCVTSS2SD X0, X0, X0
	VADDSD    X0, X14, X14
	ADDQ      $16, AX
	CMPQ      AX, BX
	JLT       es_loop

es_done:
	VMOVSD X14, ret+32(FP)
	VZEROUPPER
	RET

// func siluF32(y, x *float32, n int)
// y[i] = ggmlf32.SiLUVec(x[i]) = x / (1 + ExpF(0 - x)) for i < n.
TEXT ·siluF32(SB), NOSPLIT, $0-24
	EXPCONST
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), BX
	XORQ AX, AX
	MOVQ BX, R9
	ANDQ $-16, R9
	CMPQ AX, R9
	JGE  silu_tail

silu_loop:
	VMOVUPS (SI)(AX*4), Z6
	VSUBPS  Z6, Z29, Z0
	EXPF
	VADDPS  Z0, Z27, Z0
	VDIVPS  Z0, Z6, Z0
	VMOVUPS Z0, (DI)(AX*4)
	ADDQ    $16, AX
	CMPQ    AX, R9
	JLT     silu_loop

silu_tail:
	MOVQ BX, R8
	SUBQ AX, R8
	JEQ  silu_done
	TAILMASK(R8)
	VMOVUPS.Z (SI)(AX*4), K4, Z6
	VSUBPS    Z6, Z29, Z0
	EXPF
	VADDPS    Z0, Z27, Z0
	VDIVPS    Z0, Z6, Z0
	VMOVUPS   Z0, K4, (DI)(AX*4)

silu_done:
	VZEROUPPER
	RET

// func swigluF32(y, gate, u *float32, n int)
// y[i] = ggmlf32.SiLUVec(gate[i]) · u[i] for i < n.
TEXT ·swigluF32(SB), NOSPLIT, $0-32
	EXPCONST
	MOVQ y+0(FP), DI
	MOVQ gate+8(FP), SI
	MOVQ u+16(FP), DX
	MOVQ n+24(FP), BX
	XORQ AX, AX
	MOVQ BX, R9
	ANDQ $-16, R9
	CMPQ AX, R9
	JGE  sw_tail

sw_loop:
	VMOVUPS (SI)(AX*4), Z6
	VSUBPS  Z6, Z29, Z0
	EXPF
	VADDPS  Z0, Z27, Z0
	VDIVPS  Z0, Z6, Z0
	VMULPS  (DX)(AX*4), Z0, Z0
	VMOVUPS Z0, (DI)(AX*4)
	ADDQ    $16, AX
	CMPQ    AX, R9
	JLT     sw_loop

sw_tail:
	MOVQ BX, R8
	SUBQ AX, R8
	JEQ  sw_done
	TAILMASK(R8)
	VMOVUPS.Z (SI)(AX*4), K4, Z6
	VMOVUPS.Z (DX)(AX*4), K4, Z7
	VSUBPS    Z6, Z29, Z0
	EXPF
	VADDPS    Z0, Z27, Z0
	VDIVPS    Z0, Z6, Z0
	VMULPS    Z7, Z0, Z0
	VMOVUPS   Z0, K4, (DI)(AX*4)

sw_done:
	VZEROUPPER
	RET

// func expF32(y, x *float32, n int)
// y[i] = ggmlf32.ExpF(x[i]) for i < n (the tests; flashMerge's block weights).
TEXT ·expF32(SB), NOSPLIT, $0-24
	EXPCONST
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), BX
	XORQ AX, AX
	MOVQ BX, R9
	ANDQ $-16, R9
	CMPQ AX, R9
	JGE  ex_tail

ex_loop:
	VMOVUPS (SI)(AX*4), Z0
	EXPF
	VMOVUPS Z0, (DI)(AX*4)
	ADDQ    $16, AX
	CMPQ    AX, R9
	JLT     ex_loop

ex_tail:
	MOVQ BX, R8
	SUBQ AX, R8
	JEQ  ex_done
	TAILMASK(R8)
	VMOVUPS.Z (SI)(AX*4), K4, Z0
	EXPF
	VMOVUPS   Z0, K4, (DI)(AX*4)

ex_done:
	VZEROUPPER
	RET
