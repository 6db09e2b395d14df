//go:build !purego

#include "textflag.h"

// AVX2 (+FMA) float32 kernels giving the same bits as the AVX-512 ones of
// f32simd_amd64.s and so as internal/ggmlf32 (see f32simd_amd64.go for
// the contracts). A 16-lane accumulator of the scalar emulation is a pair
// of YMM registers (lanes 0-7, 8-15); every FMA is one VFMADD*PS lane;
// the horizontal reductions add in the same tree. ggml_v_expf's
// _mm512_scalef_ps(j, n), one rounding of j·2^n, becomes two multiplies
// (j·2^⌊n/2⌋)·2^⌈n/2⌉ — the first exact, see EXPF2.
//
// Tails use a lane mask loaded from f32c<>+480: the 8 dwords at
// f32c<>+512-4r have the low r lanes all ones (0 ≤ r ≤ 8).

// Constants, 32-byte vectors of 8 equal dwords.
// 0: c2
DATA f32c<>+0(SB)/8, $0x3EFFFEDB3EFFFEDB
DATA f32c<>+8(SB)/8, $0x3EFFFEDB3EFFFEDB
DATA f32c<>+16(SB)/8, $0x3EFFFEDB3EFFFEDB
DATA f32c<>+24(SB)/8, $0x3EFFFEDB3EFFFEDB
// 32: c1
DATA f32c<>+32(SB)/8, $0x3F7FFFF63F7FFFF6
DATA f32c<>+40(SB)/8, $0x3F7FFFF63F7FFFF6
DATA f32c<>+48(SB)/8, $0x3F7FFFF63F7FFFF6
DATA f32c<>+56(SB)/8, $0x3F7FFFF63F7FFFF6
// 64: one
DATA f32c<>+64(SB)/8, $0x3F8000003F800000
DATA f32c<>+72(SB)/8, $0x3F8000003F800000
DATA f32c<>+80(SB)/8, $0x3F8000003F800000
DATA f32c<>+88(SB)/8, $0x3F8000003F800000
// 96: abs
DATA f32c<>+96(SB)/8, $0x7FFFFFFF7FFFFFFF
DATA f32c<>+104(SB)/8, $0x7FFFFFFF7FFFFFFF
DATA f32c<>+112(SB)/8, $0x7FFFFFFF7FFFFFFF
DATA f32c<>+120(SB)/8, $0x7FFFFFFF7FFFFFFF
// 128: 192
DATA f32c<>+128(SB)/8, $0x4340000043400000
DATA f32c<>+136(SB)/8, $0x4340000043400000
DATA f32c<>+144(SB)/8, $0x4340000043400000
DATA f32c<>+152(SB)/8, $0x4340000043400000
// 160: +Inf
DATA f32c<>+160(SB)/8, $0x7F8000007F800000
DATA f32c<>+168(SB)/8, $0x7F8000007F800000
DATA f32c<>+176(SB)/8, $0x7F8000007F800000
DATA f32c<>+184(SB)/8, $0x7F8000007F800000
// 192: int32 127
DATA f32c<>+192(SB)/8, $0x0000007F0000007F
DATA f32c<>+200(SB)/8, $0x0000007F0000007F
DATA f32c<>+208(SB)/8, $0x0000007F0000007F
DATA f32c<>+216(SB)/8, $0x0000007F0000007F
// 224: shift 0x1.8p23
DATA f32c<>+224(SB)/8, $0x4B4000004B400000
DATA f32c<>+232(SB)/8, $0x4B4000004B400000
DATA f32c<>+240(SB)/8, $0x4B4000004B400000
DATA f32c<>+248(SB)/8, $0x4B4000004B400000
// 256: log2 e
DATA f32c<>+256(SB)/8, $0x3FB8AA3B3FB8AA3B
DATA f32c<>+264(SB)/8, $0x3FB8AA3B3FB8AA3B
DATA f32c<>+272(SB)/8, $0x3FB8AA3B3FB8AA3B
DATA f32c<>+280(SB)/8, $0x3FB8AA3B3FB8AA3B
// 288: ln2 hi
DATA f32c<>+288(SB)/8, $0x3F3172003F317200
DATA f32c<>+296(SB)/8, $0x3F3172003F317200
DATA f32c<>+304(SB)/8, $0x3F3172003F317200
DATA f32c<>+312(SB)/8, $0x3F3172003F317200
// 320: ln2 lo
DATA f32c<>+320(SB)/8, $0x35BFBE8E35BFBE8E
DATA f32c<>+328(SB)/8, $0x35BFBE8E35BFBE8E
DATA f32c<>+336(SB)/8, $0x35BFBE8E35BFBE8E
DATA f32c<>+344(SB)/8, $0x35BFBE8E35BFBE8E
// 352: c5
DATA f32c<>+352(SB)/8, $0x3C0720103C072010
DATA f32c<>+360(SB)/8, $0x3C0720103C072010
DATA f32c<>+368(SB)/8, $0x3C0720103C072010
DATA f32c<>+376(SB)/8, $0x3C0720103C072010
// 384: c4
DATA f32c<>+384(SB)/8, $0x3D2B9F173D2B9F17
DATA f32c<>+392(SB)/8, $0x3D2B9F173D2B9F17
DATA f32c<>+400(SB)/8, $0x3D2B9F173D2B9F17
DATA f32c<>+408(SB)/8, $0x3D2B9F173D2B9F17
// 416: c3
DATA f32c<>+416(SB)/8, $0x3E2AAF333E2AAF33
DATA f32c<>+424(SB)/8, $0x3E2AAF333E2AAF33
DATA f32c<>+432(SB)/8, $0x3E2AAF333E2AAF33
DATA f32c<>+440(SB)/8, $0x3E2AAF333E2AAF33
// 448: -Inf
DATA f32c<>+448(SB)/8, $0xFF800000FF800000
DATA f32c<>+456(SB)/8, $0xFF800000FF800000
DATA f32c<>+464(SB)/8, $0xFF800000FF800000
DATA f32c<>+472(SB)/8, $0xFF800000FF800000
// 480: lane mask: eight -1
DATA f32c<>+480(SB)/8, $0xFFFFFFFFFFFFFFFF
DATA f32c<>+488(SB)/8, $0xFFFFFFFFFFFFFFFF
DATA f32c<>+496(SB)/8, $0xFFFFFFFFFFFFFFFF
DATA f32c<>+504(SB)/8, $0xFFFFFFFFFFFFFFFF
// 512: then eight 0
DATA f32c<>+512(SB)/8, $0x0000000000000000
DATA f32c<>+520(SB)/8, $0x0000000000000000
DATA f32c<>+528(SB)/8, $0x0000000000000000
DATA f32c<>+536(SB)/8, $0x0000000000000000
GLOBL f32c<>(SB), RODATA|NOPTR, $544

// REDUCE16Y is ggmlf32.Reduce16 of the 16 lanes (Y0: 0-7, Y1: 8-15) into
// the low lane of X0: lanes k+8 onto k, then k+4 onto k, then
// (b0+b2)+(b1+b3). Clobbers Y1.
#define REDUCE16Y \
	VADDPS       Y1, Y0, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS       X1, X0, X0; \
	VMOVHLPS     X0, X0, X1; \
	VADDPS       X1, X0, X0; \
	VMOVSHDUP    X0, X1; \
	VADDSS       X1, X0, X0

// EXPCONST2 loads the register constants of EXPF2 into Y8-Y14.
#define EXPCONST2 \
	VMOVUPS f32c<>+224(SB), Y8; \
	VMOVUPS f32c<>+256(SB), Y9; \
	VMOVUPS f32c<>+288(SB), Y10; \
	VMOVUPS f32c<>+320(SB), Y11; \
	VMOVUPS f32c<>+352(SB), Y12; \
	VMOVUPS f32c<>+384(SB), Y13; \
	VMOVUPS f32c<>+416(SB), Y14

// EXPF2 replaces Y0 by ggml_v_expf(Y0), lane for lane as ggmlf32.ExpF and
// the AVX-512 EXPF: z = x·log2e + 0x1.8p23, n = z - 0x1.8p23,
// b = x - n·ln2hi - n·ln2lo (two FNMADDs), u = b·b,
// j = ((c5·b+c4)·u + (c3·b+c2))·u + (c1·b+1), then j·2^n rounded once:
// with n1 = ⌊n/2⌋ and n2 = n - n1 (both in [-96, 96] when |n| ≤ 192),
// j·2^n1 is exact (j is within [0.7, 1.5], so the product is a normal
// float32) and ·2^n2 rounds the exact j·2^n once, to a subnormal, zero or
// +Inf if need be — what VSCALEFPS computes. Lanes with |n| > 192 become
// max(0, n·Inf) (0 for n < 0, +Inf for n > 0), NaN lanes n (n·Inf is the
// quiet NaN n itself), as the AVX-512 blends.
// Needs EXPCONST2; clobbers Y1-Y5.
#define EXPF2 \
	VMOVAPS      Y0, Y1; \
	VFMADD213PS  Y8, Y9, Y1; \
	VSUBPS       Y8, Y1, Y1; \
	VMOVAPS      Y0, Y2; \
	VFNMADD231PS Y10, Y1, Y2; \
	VFNMADD231PS Y11, Y1, Y2; \
	VMULPS       Y2, Y2, Y3; \
	VMOVAPS      Y12, Y4; \
	VFMADD213PS  Y13, Y2, Y4; \
	VMOVAPS      Y14, Y5; \
	VFMADD213PS  f32c<>+0(SB), Y2, Y5; \
	VFMADD213PS  Y5, Y3, Y4; \
	VMOVUPS      f32c<>+32(SB), Y5; \
	VFMADD213PS  f32c<>+64(SB), Y2, Y5; \
	VFMADD213PS  Y5, Y3, Y4; \
	VCVTPS2DQ    Y1, Y3; \
	VPSRAD       $1, Y3, Y5; \
	VPSUBD       Y5, Y3, Y3; \
	VPADDD       f32c<>+192(SB), Y5, Y5; \
	VPSLLD       $23, Y5, Y5; \
	VPADDD       f32c<>+192(SB), Y3, Y3; \
	VPSLLD       $23, Y3, Y3; \
	VMULPS       Y5, Y4, Y4; \
	VMULPS       Y3, Y4, Y4; \
	VMULPS       f32c<>+160(SB), Y1, Y2; \
	VXORPS       Y3, Y3, Y3; \
	VMAXPS       Y2, Y3, Y2; \
	VANDPS       f32c<>+96(SB), Y1, Y3; \
	VCMPPS       $0x16, f32c<>+128(SB), Y3, Y3; \
	VBLENDVPS    Y3, Y2, Y4, Y0

// TAILMASK2 sets reg to the address of the mask of the low r lanes
// (0 ≤ r ≤ 8 in r; clobbers r).
#define TAILMASK2(r, reg) \
	LEAQ f32c<>+512(SB), reg; \
	SHLQ $2, r; \
	SUBQ r, reg

// func dotsF32AVX2(sc, k *float32, kstride, n int, q *float32, hd int)
// sc[j] = ggmlf32.VecDotF32(k[j*kstride:][:hd], q[:hd]) for j < n: the
// four 16-lane accumulators are Y0:Y1, Y2:Y3, Y4:Y5, Y6:Y7.
TEXT ·dotsF32AVX2(SB), NOSPLIT, $0-48
	MOVQ  sc+0(FP), DI
	MOVQ  k+8(FP), SI
	MOVQ  kstride+16(FP), R8
	SHLQ  $2, R8
	MOVQ  n+24(FP), CX
	MOVQ  q+32(FP), DX
	MOVQ  hd+40(FP), BX
	MOVQ  BX, R9
	ANDQ  $-64, R9
	TESTQ CX, CX
	JEQ   d2_done

d2_row:
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
	JGE    d2_combine

d2_vec:
	VMOVUPS     (SI)(AX*4), Y8
	VMOVUPS     32(SI)(AX*4), Y9
	VMOVUPS     64(SI)(AX*4), Y10
	VMOVUPS     96(SI)(AX*4), Y11
	VMOVUPS     128(SI)(AX*4), Y12
	VMOVUPS     160(SI)(AX*4), Y13
	VMOVUPS     192(SI)(AX*4), Y14
	VMOVUPS     224(SI)(AX*4), Y15
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
	JLT         d2_vec

d2_combine:
	VADDPS Y4, Y0, Y0 // acc0 + acc2
	VADDPS Y5, Y1, Y1
	VADDPS Y6, Y2, Y2 // acc1 + acc3
	VADDPS Y7, Y3, Y3
	VADDPS Y2, Y0, Y0
	VADDPS Y3, Y1, Y1
	REDUCE16Y
	CMPQ   AX, BX
	JGE    d2_store

d2_tail:
	VMOVSS (SI)(AX*4), X1
	VMULSS (DX)(AX*4), X1, X1
	VADDSS X1, X0, X0
	INCQ   AX
	CMPQ   AX, BX
	JLT    d2_tail

d2_store:
	VMOVSS X0, (DI)
	ADDQ   $4, DI
	ADDQ   R8, SI
	DECQ   CX
	JNZ    d2_row

d2_done:
	VZEROUPPER
	RET

// func vsumLanesAVX2(acc, v *float32, vstride int, p *float32, n, L, hd int)
// vsumLanes: for lane l < L and d < hd (hd a multiple of 16), the FMA
// accumulation Σ v[j*vstride+d]·p[j] over j ≡ l (mod L), j < n, in
// increasing j, stored at acc[((d/16)*L + l)*16 + d%16]. A block of 64 d
// accumulates in Y0-Y7, the p[j] broadcast is Y8.
TEXT ·vsumLanesAVX2(SB), NOSPLIT, $0-56
	MOVQ  acc+0(FP), DI
	MOVQ  v+8(FP), SI
	MOVQ  vstride+16(FP), R8
	SHLQ  $2, R8          // v row stride, bytes
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

vs2_lane:
	CMPQ R13, R10
	JGE  vs2_done
	XORQ AX, AX           // d0

vs2_blk64:
	LEAQ   64(AX), R9
	CMPQ   R9, BX
	JGT    vs2_blk16
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ   R13, R9
	IMULQ  R8, R9
	ADDQ   SI, R9
	LEAQ   (R9)(AX*4), R9   // &v[l*vstride + d0]
	LEAQ   (DX)(R13*4), R14 // &p[l]
	CMPQ   R14, CX
	JGE    vs2_store64

vs2_loop64:
	VBROADCASTSS (R14), Y8
	VFMADD231PS  (R9), Y8, Y0
	VFMADD231PS  32(R9), Y8, Y1
	VFMADD231PS  64(R9), Y8, Y2
	VFMADD231PS  96(R9), Y8, Y3
	VFMADD231PS  128(R9), Y8, Y4
	VFMADD231PS  160(R9), Y8, Y5
	VFMADD231PS  192(R9), Y8, Y6
	VFMADD231PS  224(R9), Y8, Y7
	ADDQ         R11, R9
	ADDQ         R12, R14
	CMPQ         R14, CX
	JLT          vs2_loop64

vs2_store64:
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
	JMP     vs2_blk64

vs2_blk16:
	CMPQ   AX, BX
	JGE    vs2_next
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	MOVQ   R13, R9
	IMULQ  R8, R9
	ADDQ   SI, R9
	LEAQ   (R9)(AX*4), R9
	LEAQ   (DX)(R13*4), R14
	CMPQ   R14, CX
	JGE    vs2_store16

vs2_loop16:
	VBROADCASTSS (R14), Y8
	VFMADD231PS  (R9), Y8, Y0
	VFMADD231PS  32(R9), Y8, Y1
	ADDQ         R11, R9
	ADDQ         R12, R14
	CMPQ         R14, CX
	JLT          vs2_loop16

vs2_store16:
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
	JMP     vs2_blk16

vs2_next:
	INCQ R13
	JMP  vs2_lane

vs2_done:
	VZEROUPPER
	RET

// COMB2 sets y to lane l of ggml_vec_dot_f32's combined accumulator for 8
// values of d at R9: (A[l]+A[l+32]) + (A[l+16]+A[l+48]), the offsets
// l·64, (l+32)·64, (l+16)·64, (l+48)·64 bytes. Clobbers Y15.
#define COMB2(o0, o2, o1, o3, y) \
	VMOVUPS o0(R9), y; \
	VADDPS  o2(R9), y, y; \
	VMOVUPS o1(R9), Y15; \
	VADDPS  o3(R9), Y15, Y15; \
	VADDPS  Y15, y, y

// A64 sets y to s_k + s_{k+8} of the L == 64 combined lanes (COMB2).
// Clobbers Y14, Y15.
#define A64(a0, a2, a1, a3, b0, b2, b1, b3, y) \
	COMB2(a0, a2, a1, a3, y); \
	COMB2(b0, b2, b1, b3, Y14); \
	VADDPS Y14, y, y

// A16 sets y to s_k + s_{k+8} of the L == 16 lanes at o and o+512.
#define A16(o, y) \
	VMOVUPS o(R9), y; \
	VADDPS  o+512(R9), y, y

// func reduceLanesAVX2(out, acc *float32, hd, L int)
// reduceLanes: out[d] for d < hd from vsumLanes' accumulators, L == 64
// combined as ggmlf32.VecDotCombine, L == 16 as ggmlf32.Reduce16; 8 values
// of d at a time (R9 the half block's lanes, R8 its output), the Reduce16
// tree over the 16 lane vectors as a_k = s_k + s_{k+8} (Y0-Y7),
// b_k = a_k + a_{k+4}, (b0+b2) + (b1+b3).
TEXT ·reduceLanesAVX2(SB), NOSPLIT, $0-32
	MOVQ out+0(FP), DI
	MOVQ acc+8(FP), SI
	MOVQ hd+16(FP), BX
	MOVQ L+24(FP), R10
	SHRQ $4, BX           // d-blocks
	JEQ  rl2_done
	MOVQ R10, R15
	SHLQ $6, R15          // bytes per d-block

rl2_blk:
	MOVQ SI, R9
	MOVQ DI, R8
	MOVQ $2, R13

rl2_half:
	CMPQ R10, $64
	JNE  rl2_h16
	A64(0, 2048, 1024, 3072, 512, 2560, 1536, 3584, Y0)
	A64(64, 2112, 1088, 3136, 576, 2624, 1600, 3648, Y1)
	A64(128, 2176, 1152, 3200, 640, 2688, 1664, 3712, Y2)
	A64(192, 2240, 1216, 3264, 704, 2752, 1728, 3776, Y3)
	A64(256, 2304, 1280, 3328, 768, 2816, 1792, 3840, Y4)
	A64(320, 2368, 1344, 3392, 832, 2880, 1856, 3904, Y5)
	A64(384, 2432, 1408, 3456, 896, 2944, 1920, 3968, Y6)
	A64(448, 2496, 1472, 3520, 960, 3008, 1984, 4032, Y7)
	JMP  rl2_tree

rl2_h16:
	A16(0, Y0)
	A16(64, Y1)
	A16(128, Y2)
	A16(192, Y3)
	A16(256, Y4)
	A16(320, Y5)
	A16(384, Y6)
	A16(448, Y7)

rl2_tree:
	VADDPS  Y4, Y0, Y0
	VADDPS  Y5, Y1, Y1
	VADDPS  Y6, Y2, Y2
	VADDPS  Y7, Y3, Y3
	VADDPS  Y2, Y0, Y0
	VADDPS  Y3, Y1, Y1
	VADDPS  Y1, Y0, Y0
	VMOVUPS Y0, (R8)
	ADDQ    $32, R9
	ADDQ    $32, R8
	DECQ    R13
	JNZ     rl2_half
	ADDQ    $64, DI
	ADDQ    R15, SI
	DECQ    BX
	JNZ     rl2_blk

rl2_done:
	VZEROUPPER
	RET

// func scaleMaxF32AVX2(dst, src *float32, n int, scale float32) float32
// dst[i] = src[i]·scale for i < n; returns the max of dst[:n] (-Inf when
// n == 0). NaNs may or may not win the max.
TEXT ·scaleMaxF32AVX2(SB), NOSPLIT, $0-36
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         n+16(FP), BX
	VBROADCASTSS scale+24(FP), Y8
	VMOVUPS      f32c<>+448(SB), Y9 // running max, -Inf
	XORQ         AX, AX
	MOVQ         BX, R9
	ANDQ         $-8, R9
	CMPQ         AX, R9
	JGE          sm2_reduce

sm2_loop:
	VMULPS  (SI)(AX*4), Y8, Y0
	VMOVUPS Y0, (DI)(AX*4)
	VMAXPS  Y0, Y9, Y9
	ADDQ    $8, AX
	CMPQ    AX, R9
	JLT     sm2_loop

sm2_reduce:
	VEXTRACTF128 $1, Y9, X0
	VMAXPS       X0, X9, X0
	VMOVHLPS     X0, X0, X1
	VMAXPS       X1, X0, X0
	VMOVSHDUP    X0, X1
	VMAXSS       X1, X0, X0
	CMPQ         AX, BX
	JGE          sm2_done

sm2_tail:
	VMOVSS (SI)(AX*4), X1
	VMULSS X8, X1, X1
	VMOVSS X1, (DI)(AX*4)
	VMAXSS X1, X0, X0
	INCQ   AX
	CMPQ   AX, BX
	JLT    sm2_tail

sm2_done:
	VMOVSS X0, ret+32(FP)
	VZEROUPPER
	RET

// func mulF32AVX2(x *float32, n int, s float32)
// x[i] *= s for i < n.
TEXT ·mulF32AVX2(SB), NOSPLIT, $0-20
	MOVQ         x+0(FP), DI
	MOVQ         n+8(FP), BX
	VBROADCASTSS s+16(FP), Y8
	XORQ         AX, AX
	MOVQ         BX, R9
	ANDQ         $-16, R9
	CMPQ         AX, R9
	JGE          mul2_tail

mul2_loop:
	VMULPS  (DI)(AX*4), Y8, Y0
	VMULPS  32(DI)(AX*4), Y8, Y1
	VMOVUPS Y0, (DI)(AX*4)
	VMOVUPS Y1, 32(DI)(AX*4)
	ADDQ    $16, AX
	CMPQ    AX, R9
	JLT     mul2_loop

mul2_tail:
	CMPQ   AX, BX
	JGE    mul2_done
	VMOVSS (DI)(AX*4), X0
	VMULSS X8, X0, X0
	VMOVSS X0, (DI)(AX*4)
	INCQ   AX
	JMP    mul2_tail

mul2_done:
	VZEROUPPER
	RET

// func expSumF32AVX2(x *float32, n, nvalid int, maxv float32) float64
// For the 16-wide chunks of x[:n] (n a multiple of 16): x[i] =
// ggmlf32.ExpF(x[i]-maxv) for i < nvalid, 0 for i >= nvalid; returns the
// float64 sum (X15) of the chunks' Reduce16, as ggml_vec_soft_max_f32.
// The low half of a chunk is kept in Y7 while the high half is computed;
// a chunk crossing nvalid ANDs each half with its lane mask.
TEXT ·expSumF32AVX2(SB), NOSPLIT, $0-40
	EXPCONST2
	MOVQ         x+0(FP), DI
	MOVQ         n+8(FP), BX
	MOVQ         nvalid+16(FP), DX
	VBROADCASTSS maxv+24(FP), Y6
	VXORPD       X15, X15, X15
	XORQ         AX, AX
	CMPQ         AX, BX
	JGE          es2_done

es2_loop:
	MOVQ DX, R8
	SUBQ AX, R8           // valid lanes in this chunk
	CMPQ R8, $16
	JLT  es2_part
	VMOVUPS (DI)(AX*4), Y0
	VSUBPS  Y6, Y0, Y0
	EXPF2
	VMOVUPS Y0, (DI)(AX*4)
	VMOVAPS Y0, Y7
	VMOVUPS 32(DI)(AX*4), Y0
	VSUBPS  Y6, Y0, Y0
	EXPF2
	VMOVUPS Y0, 32(DI)(AX*4)
	JMP     es2_sum

es2_part:
	// R10 = min(max(R8, 0), 8) lanes of the low half, R11 = min(max(R8-8, 0), 8)
	XORQ    R12, R12
	MOVQ    $8, R13
	MOVQ    R8, R10
	CMPQ    R10, $0
	CMOVQLT R12, R10
	CMPQ    R10, $8
	CMOVQGT R13, R10
	MOVQ    R8, R11
	SUBQ    $8, R11
	CMPQ    R11, $0
	CMOVQLT R12, R11
	CMPQ    R11, $8
	CMOVQGT R13, R11
	TAILMASK2(R10, R12)
	TAILMASK2(R11, R13)
	VMOVUPS (DI)(AX*4), Y0
	VSUBPS  Y6, Y0, Y0
	EXPF2
	VANDPS  (R12), Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	VMOVAPS Y0, Y7
	VMOVUPS 32(DI)(AX*4), Y0
	VSUBPS  Y6, Y0, Y0
	EXPF2
	VANDPS  (R13), Y0, Y0
	VMOVUPS Y0, 32(DI)(AX*4)

es2_sum:
	VMOVAPS   Y0, Y1
	VMOVAPS   Y7, Y0
	REDUCE16Y
	VCVTSS2SD X0, X0, X0
	VADDSD    X0, X15, X15
	ADDQ      $16, AX
	CMPQ      AX, BX
	JLT       es2_loop

es2_done:
	VMOVSD X15, ret+32(FP)
	VZEROUPPER
	RET

// func siluF32AVX2(y, x *float32, n int)
// y[i] = ggmlf32.SiLUVec(x[i]) = x / (1 + ExpF(0 - x)) for i < n; x in
// Y6, the tail's lane mask in Y7.
TEXT ·siluF32AVX2(SB), NOSPLIT, $0-24
	EXPCONST2
	MOVQ   y+0(FP), DI
	MOVQ   x+8(FP), SI
	MOVQ   n+16(FP), BX
	VXORPS Y15, Y15, Y15
	XORQ   AX, AX
	MOVQ   BX, R9
	ANDQ   $-8, R9
	CMPQ   AX, R9
	JGE    silu2_tail

silu2_loop:
	VMOVUPS (SI)(AX*4), Y6
	VSUBPS  Y6, Y15, Y0
	EXPF2
	VADDPS  f32c<>+64(SB), Y0, Y0
	VDIVPS  Y0, Y6, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, R9
	JLT     silu2_loop

silu2_tail:
	MOVQ       BX, R8
	SUBQ       AX, R8
	JEQ        silu2_done
	TAILMASK2(R8, R10)
	VMOVUPS    (R10), Y7
	VMASKMOVPS (SI)(AX*4), Y7, Y6
	VSUBPS     Y6, Y15, Y0
	EXPF2
	VADDPS     f32c<>+64(SB), Y0, Y0
	VDIVPS     Y0, Y6, Y0
	VMASKMOVPS Y0, Y7, (DI)(AX*4)

silu2_done:
	VZEROUPPER
	RET

// func swigluF32AVX2(y, gate, u *float32, n int)
// y[i] = ggmlf32.SiLUVec(gate[i]) · u[i] for i < n; gate in Y6, the
// tail's lane mask in Y7 and u in Y15 there.
TEXT ·swigluF32AVX2(SB), NOSPLIT, $0-32
	EXPCONST2
	MOVQ y+0(FP), DI
	MOVQ gate+8(FP), SI
	MOVQ u+16(FP), DX
	MOVQ n+24(FP), BX
	XORQ AX, AX
	MOVQ BX, R9
	ANDQ $-8, R9
	CMPQ AX, R9
	JGE  sw2_tail

sw2_loop:
	VMOVUPS (SI)(AX*4), Y6
	VXORPS  Y0, Y0, Y0
	VSUBPS  Y6, Y0, Y0
	EXPF2
	VADDPS  f32c<>+64(SB), Y0, Y0
	VDIVPS  Y0, Y6, Y0
	VMULPS  (DX)(AX*4), Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, R9
	JLT     sw2_loop

sw2_tail:
	MOVQ       BX, R8
	SUBQ       AX, R8
	JEQ        sw2_done
	TAILMASK2(R8, R10)
	VMOVUPS    (R10), Y7
	VMASKMOVPS (SI)(AX*4), Y7, Y6
	VMASKMOVPS (DX)(AX*4), Y7, Y15
	VXORPS     Y0, Y0, Y0
	VSUBPS     Y6, Y0, Y0
	EXPF2
	VADDPS     f32c<>+64(SB), Y0, Y0
	VDIVPS     Y0, Y6, Y0
	VMULPS     Y15, Y0, Y0
	VMASKMOVPS Y0, Y7, (DI)(AX*4)

sw2_done:
	VZEROUPPER
	RET

// func expF32AVX2(y, x *float32, n int)
// y[i] = ggmlf32.ExpF(x[i]) for i < n (the tests; flashMerge's block weights); the tail's lane mask
// in Y7.
TEXT ·expF32AVX2(SB), NOSPLIT, $0-24
	EXPCONST2
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), BX
	XORQ AX, AX
	MOVQ BX, R9
	ANDQ $-8, R9
	CMPQ AX, R9
	JGE  ex2_tail

ex2_loop:
	VMOVUPS (SI)(AX*4), Y0
	EXPF2
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, R9
	JLT     ex2_loop

ex2_tail:
	MOVQ       BX, R8
	SUBQ       AX, R8
	JEQ        ex2_done
	TAILMASK2(R8, R10)
	VMOVUPS    (R10), Y7
	VMASKMOVPS (SI)(AX*4), Y7, Y0
	EXPF2
	VMASKMOVPS Y0, Y7, (DI)(AX*4)

ex2_done:
	VZEROUPPER
	RET
