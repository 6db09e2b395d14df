//go:build amd64 && !purego

#include "textflag.h"

// AVX2 (VEX, 256-bit) row kernels for K-quant weights × Q8_K activations.
// See dot_kquant_amd64.go. Register use common to all kernels:
//   SI  weight row, R8 weight row bytes, DI activation row, R9 output,
//   R10 rows left, AX/BX current weight/activation super-block, CX blocks left,
//   Y0  the 8-lane float accumulator of the row.
// The integer sums are exact (no VPMADDUBSW pair can saturate for valid
// blocks), so only their lane grouping and the float steps matter:
// lane k of a 32-byte chunk holds its bytes 4k..4k+3, as in ggml.

// HSUM8(Y, X, T): X[0] = hsum_float_8(Y): upper 4 lanes onto lower 4,
// movehl, then lane 1 onto lane 0 (all float32 adds).
#define HSUM8(Y, X, T) \
	VEXTRACTF128 $1, Y, T \
	VADDPS       X, T, X  \
	VMOVHLPS     X, X, T  \
	VADDPS       T, X, X  \
	VMOVSHDUP    X, T     \
	VADDSS       T, X, X

// The 6-bit scales and mins of a Q4_K/Q5_K super-block (get_scale_min_k4)
// from X2 = its first 16 bytes [d|dmin, u0, u1, u2] into X6 = bytes
// s0..s7, m0..m7: [u0&K1, u2&K2 | (u0>>6&3)<<4, u1&K1, u2>>4&K2 | (u1>>6&3)<<4]
// per byte. Uses X7, X11..X13 (X11..X13 hold the constants).
#define K4SCALES \
	VPSHUFD $0xED, X2, X6                \
	VPSRLVD kqK4Shift<>(SB), X6, X6      \
	VPAND   kqK4MaskA<>(SB), X6, X6      \
	VPSHUFD $0xA5, X2, X7                \
	VPSRLD  $2, X7, X7                   \
	VPAND   kqK4MaskB<>(SB), X7, X7      \
	VPOR    X7, X6, X6

DATA kqK4Shift<>+0(SB)/8, $0
DATA kqK4Shift<>+8(SB)/8, $0x0000000400000000
GLOBL kqK4Shift<>(SB), RODATA|NOPTR, $16
DATA kqK4MaskA<>+0(SB)/8, $0x0f0f0f0f3f3f3f3f
DATA kqK4MaskA<>+8(SB)/8, $0x0f0f0f0f3f3f3f3f
GLOBL kqK4MaskA<>(SB), RODATA|NOPTR, $16
DATA kqK4MaskB<>+0(SB)/8, $0x3030303000000000
DATA kqK4MaskB<>+8(SB)/8, $0x3030303000000000
GLOBL kqK4MaskB<>(SB), RODATA|NOPTR, $16
DATA kqNegLane1<>+0(SB)/8, $0x8000000000000000
DATA kqNegLane1<>+8(SB)/8, $0
GLOBL kqNegLane1<>(SB), RODATA|NOPTR, $16

// kqQ4KScaleShuf: mask k (32 bytes at 32k) makes 16 words = byte k of the source, zero-extended.
DATA kqQ4KScaleShuf<>+0(SB)/8, $0x8000800080008000
DATA kqQ4KScaleShuf<>+8(SB)/8, $0x8000800080008000
DATA kqQ4KScaleShuf<>+16(SB)/8, $0x8000800080008000
DATA kqQ4KScaleShuf<>+24(SB)/8, $0x8000800080008000
DATA kqQ4KScaleShuf<>+32(SB)/8, $0x8001800180018001
DATA kqQ4KScaleShuf<>+40(SB)/8, $0x8001800180018001
DATA kqQ4KScaleShuf<>+48(SB)/8, $0x8001800180018001
DATA kqQ4KScaleShuf<>+56(SB)/8, $0x8001800180018001
DATA kqQ4KScaleShuf<>+64(SB)/8, $0x8002800280028002
DATA kqQ4KScaleShuf<>+72(SB)/8, $0x8002800280028002
DATA kqQ4KScaleShuf<>+80(SB)/8, $0x8002800280028002
DATA kqQ4KScaleShuf<>+88(SB)/8, $0x8002800280028002
DATA kqQ4KScaleShuf<>+96(SB)/8, $0x8003800380038003
DATA kqQ4KScaleShuf<>+104(SB)/8, $0x8003800380038003
DATA kqQ4KScaleShuf<>+112(SB)/8, $0x8003800380038003
DATA kqQ4KScaleShuf<>+120(SB)/8, $0x8003800380038003
DATA kqQ4KScaleShuf<>+128(SB)/8, $0x8004800480048004
DATA kqQ4KScaleShuf<>+136(SB)/8, $0x8004800480048004
DATA kqQ4KScaleShuf<>+144(SB)/8, $0x8004800480048004
DATA kqQ4KScaleShuf<>+152(SB)/8, $0x8004800480048004
DATA kqQ4KScaleShuf<>+160(SB)/8, $0x8005800580058005
DATA kqQ4KScaleShuf<>+168(SB)/8, $0x8005800580058005
DATA kqQ4KScaleShuf<>+176(SB)/8, $0x8005800580058005
DATA kqQ4KScaleShuf<>+184(SB)/8, $0x8005800580058005
DATA kqQ4KScaleShuf<>+192(SB)/8, $0x8006800680068006
DATA kqQ4KScaleShuf<>+200(SB)/8, $0x8006800680068006
DATA kqQ4KScaleShuf<>+208(SB)/8, $0x8006800680068006
DATA kqQ4KScaleShuf<>+216(SB)/8, $0x8006800680068006
DATA kqQ4KScaleShuf<>+224(SB)/8, $0x8007800780078007
DATA kqQ4KScaleShuf<>+232(SB)/8, $0x8007800780078007
DATA kqQ4KScaleShuf<>+240(SB)/8, $0x8007800780078007
DATA kqQ4KScaleShuf<>+248(SB)/8, $0x8007800780078007
GLOBL kqQ4KScaleShuf<>(SB), RODATA|NOPTR, $256


// Q4_K chunk j (0..3): 32 bytes of nibbles at 16+32j, low nibbles against
// q8[64j..], high against q8[64j+32..], scales 2j and 2j+1 from Y6 (bytes
// s0..s7 in every qword); adds the 8 int32 lanes into ACC.
#define Q4KCHUNK(W, WOFF, AOFF, MLO, MHI, ACC) \
	VMOVDQU    WOFF(W), Y7                \
	VPAND      Y14, Y7, Y8                \
	VPSRLW     $4, Y7, Y7                 \
	VPAND      Y14, Y7, Y7                \
	VPMADDUBSW AOFF(BX), Y8, Y8           \
	VPMADDUBSW AOFF+32(BX), Y7, Y7        \
	VPSHUFB    kqQ4KScaleShuf<>+MLO(SB), Y6, Y9 \
	VPMADDWD   Y9, Y8, Y8                 \
	VPSHUFB    kqQ4KScaleShuf<>+MHI(SB), Y6, Y10 \
	VPMADDWD   Y10, Y7, Y7                \
	VPADDD     Y7, Y8, Y8                 \
	VPADDD     Y8, ACC, ACC

// One Q4_K super-block of the row at W against the activation block at
// BX: acc_m (MACC, 4 lanes) += -d8·dmin × mins·(bsum pairs), ACC (8 lanes)
// += d8·d × sumi. Uses X2..X10.
#define Q4KBLOCK(W, ACC, MACC) \
	VMOVDQU      (W), X2                  \
	VCVTPH2PS    X2, X3                   \
	VBROADCASTSS (BX), X4                 \
	VMULPS       X4, X3, X3               \
	VXORPS       X15, X3, X3              \
	VBROADCASTSS X3, Y4                   \
	VPSHUFD      $0x55, X3, X5            \
	K4SCALES                              \
	VPSRLDQ      $8, X6, X7               \
	VPMOVZXBW    X7, X7                   \
	VMOVDQU      260(BX), X8              \
	VPHADDW      276(BX), X8, X8          \
	VPMADDWD     X8, X7, X7               \
	VCVTDQ2PS    X7, X7                   \
	VFMADD231PS  X7, X5, MACC             \
	VPBROADCASTQ X6, Y6                   \
	VPXOR        Y2, Y2, Y2               \
	Q4KCHUNK(W, 16, 4, 0, 32, Y2)         \
	Q4KCHUNK(W, 48, 68, 64, 96, Y2)       \
	Q4KCHUNK(W, 80, 132, 128, 160, Y2)    \
	Q4KCHUNK(W, 112, 196, 192, 224, Y2)   \
	VCVTDQ2PS    Y2, Y2                   \
	VFMADD231PS  Y2, Y4, ACC

// Stores hsum_float_8(ACC) + ((m0+m2)+(m1+m3)) of MACC to OFF(R9)
// (Q4KSTOREM: to the address MEM). Uses X2, X3.
#define Q4KSTOREM(ACC, XACC, MACC, MEM) \
	HSUM8(ACC, XACC, X2)     \
	VMOVHLPS  MACC, MACC, X3 \
	VADDPS    X3, MACC, MACC \
	VMOVSHDUP MACC, X3       \
	VADDSS    X3, MACC, MACC \
	VADDSS    MACC, XACC, XACC \
	VMOVSS    XACC, MEM

#define Q4KSTORE(ACC, XACC, MACC, OFF) Q4KSTOREM(ACC, XACC, MACC, OFF(R9))

// Software prefetch of the next row pair, linear through its bytes,
// KQPFDIST past its start; a prefetch never faults.
#define KQPFDIST 4096

// The spread steps (kqRowsQ4KVNNI's four rows, kqRowsQ6KVNNI's pairs) take
// rows a fraction of the range apart (rows i, q+i, 2q+i, 3q+i of q =
// rows/4 steps; i, q+i of q = rows/2), so each row of a step is a
// sequential stream through consecutive rows, which the hardware
// prefetcher follows (it does not follow neighbouring rows read a
// super-block at a time: see internal/asmgen/rows4_avx2.go, rowsSpread);
// each stream is also prefetched KQSPDIST ahead.
#define KQSPDIST 2048

// 32-byte forms of the K4SCALES constants, for two rows' headers at once
// (row A in the low 128-bit lane, row B in the high one).
DATA kqK4Shift2<>+0(SB)/8, $0
DATA kqK4Shift2<>+8(SB)/8, $0x0000000400000000
DATA kqK4Shift2<>+16(SB)/8, $0
DATA kqK4Shift2<>+24(SB)/8, $0x0000000400000000
GLOBL kqK4Shift2<>(SB), RODATA|NOPTR, $32
DATA kqK4MaskA2<>+0(SB)/8, $0x0f0f0f0f3f3f3f3f
DATA kqK4MaskA2<>+8(SB)/8, $0x0f0f0f0f3f3f3f3f
DATA kqK4MaskA2<>+16(SB)/8, $0x0f0f0f0f3f3f3f3f
DATA kqK4MaskA2<>+24(SB)/8, $0x0f0f0f0f3f3f3f3f
GLOBL kqK4MaskA2<>(SB), RODATA|NOPTR, $32
DATA kqK4MaskB2<>+0(SB)/8, $0x3030303000000000
DATA kqK4MaskB2<>+8(SB)/8, $0x3030303000000000
DATA kqK4MaskB2<>+16(SB)/8, $0x3030303000000000
DATA kqK4MaskB2<>+24(SB)/8, $0x3030303000000000
GLOBL kqK4MaskB2<>(SB), RODATA|NOPTR, $32

// kqMinsZX: bytes 8..15 of each lane (the mins) to zero-extended words.
DATA kqMinsZX<>+0(SB)/8, $0x800b800a80098008
DATA kqMinsZX<>+8(SB)/8, $0x800f800e800d800c
DATA kqMinsZX<>+16(SB)/8, $0x800b800a80098008
DATA kqMinsZX<>+24(SB)/8, $0x800f800e800d800c
GLOBL kqMinsZX<>(SB), RODATA|NOPTR, $32


// Q5_K chunk j: ql nibbles at WOFF, high bits from Y5 (bit 0 for the low
// nibbles, bit 1 for the high ones; the caller shifts Y5 right by 2 after
// each chunk), q8 at AOFF and AOFF+32, scales 2j, 2j+1 from Y6.
#define Q5KCHUNK(WOFF, AOFF, MLO, MHI) \
	VMOVDQU    WOFF(AX), Y7               \
	VPAND      Y14, Y7, Y8                \
	VPSRLW     $4, Y7, Y7                 \
	VPAND      Y14, Y7, Y7                \
	VPSLLW     $4, Y5, Y9                 \
	VPAND      Y12, Y9, Y9                \
	VPOR       Y9, Y8, Y8                 \
	VPSLLW     $3, Y5, Y10                \
	VPAND      Y12, Y10, Y10              \
	VPOR       Y10, Y7, Y7                \
	VPSRLW     $2, Y5, Y5                 \
	VPMADDUBSW AOFF(BX), Y8, Y8           \
	VPMADDUBSW AOFF+32(BX), Y7, Y7        \
	VPSHUFB    kqQ4KScaleShuf<>+MLO(SB), Y6, Y9 \
	VPMADDWD   Y9, Y8, Y8                 \
	VPSHUFB    kqQ4KScaleShuf<>+MHI(SB), Y6, Y10 \
	VPMADDWD   Y10, Y7, Y7                \
	VPADDD     Y7, Y8, Y8                 \
	VPADDD     Y8, Y2, Y2

// Stores hsum_float_8(ACC) + summs (lane 0 of XS) to MEM. Uses X2.
#define Q5KSTOREM(ACC, XACC, XS, MEM) \
	HSUM8(ACC, XACC, X2)   \
	VADDSS XS, XACC, XACC  \
	VMOVSS XACC, MEM

// ---------------------------------------------------------------- AVX-512 VNNI
// (Q4KHDR2V: Q4KHDR2 with the 8+8 scales to dwords in Z7 instead of the stack.)
#define Q4KHDR2V \
	VMOVDQU      260(BX), X13             \
	VPHADDW      276(BX), X13, X13        \
	VPERMQ       $0x44, Y13, Y13          \
	VMOVDQU      (AX), X3                 \
	VINSERTI128  $1, (DX), Y3, Y3         \
	VPERMQ       $0x08, Y3, Y4            \
	VCVTPH2PS    X4, Y4                   \
	VBROADCASTSS (BX), Y5                 \
	VMULPS       Y5, Y4, Y4               \
	VPERMILPS    $0x55, Y4, Y5            \
	VPSHUFD      $0xED, Y3, Y6            \
	VPSRLVD      kqK4Shift2<>(SB), Y6, Y6 \
	VPAND        kqK4MaskA2<>(SB), Y6, Y6 \
	VPSHUFD      $0xA5, Y3, Y7            \
	VPSRLD       $2, Y7, Y7               \
	VPAND        kqK4MaskB2<>(SB), Y7, Y7 \
	VPOR         Y7, Y6, Y6               \
	VPSHUFB      kqMinsZX<>(SB), Y6, Y7   \
	VPMADDWD     Y13, Y7, Y7              \
	VCVTDQ2PS    Y7, Y7                   \
	VFNMADD231PS Y7, Y5, Y2               \
	VPERMQ       $0x08, Y6, Y7            \
	VPMOVZXBD    X7, Z7

// kqRowsQ4KVNNI: the Q4_K row pair on ZMM registers, row A in the low 256
// bits and row B in the high 256 of each. Per chunk j the low (high)
// nibbles of both rows go through one VPDPBUSD against the 32 activations
// q8[64j..] (q8[64j+32..]) broadcast to both halves: dword k of a half =
// Σ bytes 4k..4k+3 (nibble·q8, |Σ| ≤ 4·15·128, a sign-extended int16), so
// VPDPWSSD by the dword s (scale in the low word, 0 in the high one) adds
// s·Σ exactly, the oracle's lane term, to the int32 sums and then one VCVTDQ2PS and one FMA by [dA·d8 ×8 | dB·d8 ×8]
// per super-block, the same float steps per lane as the AVX2 kernel. The
// header (d, dmin, scales, mins for both rows) is the AVX2 pair's.
// Registers: Z0 the pair's 8+8 float accumulators, Y2 the mins (lanes
// 0..3 A, 4..7 B), Z14 nibble mask, Z16..Z23 the VPERMD indices taking
// scale 2j+h of each row to its half (kqVScale), Z24 kqVLane04; Y13 bsum
// pairs; Y3..Y12, Z15 temporaries. A last odd row goes through Q4KBLOCK.
// Rows go four at a time first (q4kvquad): the pairs A,B and C,D in Z0 and
// Z1 share one header pass on four 128-bit lanes (Q4KHDR4V, mins of the
// four rows in Z2) and one broadcast of each activation half (Z11), their
// integer sums in Z15 and Z25 (low nibble halves) and Z3 and Z5 (high
// halves, added in at the end of the super-block: two shorter VPDPWSSD
// chains), Z26..Z31 the weights and scales, the scales picked by VPSHUFD
// from Z9/Z10 (s0..s3) and Z6/Z7 (s4..s7) (Q4KQCHUNKS); then a pair, then
// an odd row. The float steps per row are the pair's.

DATA kqVScale0<>+0(SB)/8, $0x0000000000000000
DATA kqVScale0<>+8(SB)/8, $0x0000000000000000
DATA kqVScale0<>+16(SB)/8, $0x0000000000000000
DATA kqVScale0<>+24(SB)/8, $0x0000000000000000
DATA kqVScale0<>+32(SB)/8, $0x0000000800000008
DATA kqVScale0<>+40(SB)/8, $0x0000000800000008
DATA kqVScale0<>+48(SB)/8, $0x0000000800000008
DATA kqVScale0<>+56(SB)/8, $0x0000000800000008
GLOBL kqVScale0<>(SB), RODATA|NOPTR, $64
DATA kqVScale1<>+0(SB)/8, $0x0000000100000001
DATA kqVScale1<>+8(SB)/8, $0x0000000100000001
DATA kqVScale1<>+16(SB)/8, $0x0000000100000001
DATA kqVScale1<>+24(SB)/8, $0x0000000100000001
DATA kqVScale1<>+32(SB)/8, $0x0000000900000009
DATA kqVScale1<>+40(SB)/8, $0x0000000900000009
DATA kqVScale1<>+48(SB)/8, $0x0000000900000009
DATA kqVScale1<>+56(SB)/8, $0x0000000900000009
GLOBL kqVScale1<>(SB), RODATA|NOPTR, $64
DATA kqVScale2<>+0(SB)/8, $0x0000000200000002
DATA kqVScale2<>+8(SB)/8, $0x0000000200000002
DATA kqVScale2<>+16(SB)/8, $0x0000000200000002
DATA kqVScale2<>+24(SB)/8, $0x0000000200000002
DATA kqVScale2<>+32(SB)/8, $0x0000000a0000000a
DATA kqVScale2<>+40(SB)/8, $0x0000000a0000000a
DATA kqVScale2<>+48(SB)/8, $0x0000000a0000000a
DATA kqVScale2<>+56(SB)/8, $0x0000000a0000000a
GLOBL kqVScale2<>(SB), RODATA|NOPTR, $64
DATA kqVScale3<>+0(SB)/8, $0x0000000300000003
DATA kqVScale3<>+8(SB)/8, $0x0000000300000003
DATA kqVScale3<>+16(SB)/8, $0x0000000300000003
DATA kqVScale3<>+24(SB)/8, $0x0000000300000003
DATA kqVScale3<>+32(SB)/8, $0x0000000b0000000b
DATA kqVScale3<>+40(SB)/8, $0x0000000b0000000b
DATA kqVScale3<>+48(SB)/8, $0x0000000b0000000b
DATA kqVScale3<>+56(SB)/8, $0x0000000b0000000b
GLOBL kqVScale3<>(SB), RODATA|NOPTR, $64
DATA kqVScale4<>+0(SB)/8, $0x0000000400000004
DATA kqVScale4<>+8(SB)/8, $0x0000000400000004
DATA kqVScale4<>+16(SB)/8, $0x0000000400000004
DATA kqVScale4<>+24(SB)/8, $0x0000000400000004
DATA kqVScale4<>+32(SB)/8, $0x0000000c0000000c
DATA kqVScale4<>+40(SB)/8, $0x0000000c0000000c
DATA kqVScale4<>+48(SB)/8, $0x0000000c0000000c
DATA kqVScale4<>+56(SB)/8, $0x0000000c0000000c
GLOBL kqVScale4<>(SB), RODATA|NOPTR, $64
DATA kqVScale5<>+0(SB)/8, $0x0000000500000005
DATA kqVScale5<>+8(SB)/8, $0x0000000500000005
DATA kqVScale5<>+16(SB)/8, $0x0000000500000005
DATA kqVScale5<>+24(SB)/8, $0x0000000500000005
DATA kqVScale5<>+32(SB)/8, $0x0000000d0000000d
DATA kqVScale5<>+40(SB)/8, $0x0000000d0000000d
DATA kqVScale5<>+48(SB)/8, $0x0000000d0000000d
DATA kqVScale5<>+56(SB)/8, $0x0000000d0000000d
GLOBL kqVScale5<>(SB), RODATA|NOPTR, $64
DATA kqVScale6<>+0(SB)/8, $0x0000000600000006
DATA kqVScale6<>+8(SB)/8, $0x0000000600000006
DATA kqVScale6<>+16(SB)/8, $0x0000000600000006
DATA kqVScale6<>+24(SB)/8, $0x0000000600000006
DATA kqVScale6<>+32(SB)/8, $0x0000000e0000000e
DATA kqVScale6<>+40(SB)/8, $0x0000000e0000000e
DATA kqVScale6<>+48(SB)/8, $0x0000000e0000000e
DATA kqVScale6<>+56(SB)/8, $0x0000000e0000000e
GLOBL kqVScale6<>(SB), RODATA|NOPTR, $64
DATA kqVScale7<>+0(SB)/8, $0x0000000700000007
DATA kqVScale7<>+8(SB)/8, $0x0000000700000007
DATA kqVScale7<>+16(SB)/8, $0x0000000700000007
DATA kqVScale7<>+24(SB)/8, $0x0000000700000007
DATA kqVScale7<>+32(SB)/8, $0x0000000f0000000f
DATA kqVScale7<>+40(SB)/8, $0x0000000f0000000f
DATA kqVScale7<>+48(SB)/8, $0x0000000f0000000f
DATA kqVScale7<>+56(SB)/8, $0x0000000f0000000f
GLOBL kqVScale7<>(SB), RODATA|NOPTR, $64
DATA kqVLane04<>+0(SB)/8, $0x0000000000000000
DATA kqVLane04<>+8(SB)/8, $0x0000000000000000
DATA kqVLane04<>+16(SB)/8, $0x0000000000000000
DATA kqVLane04<>+24(SB)/8, $0x0000000000000000
DATA kqVLane04<>+32(SB)/8, $0x0000000400000004
DATA kqVLane04<>+40(SB)/8, $0x0000000400000004
DATA kqVLane04<>+48(SB)/8, $0x0000000400000004
DATA kqVLane04<>+56(SB)/8, $0x0000000400000004
GLOBL kqVLane04<>(SB), RODATA|NOPTR, $64
DATA kqVNib<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA kqVNib<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA kqVNib<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA kqVNib<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA kqVNib<>+32(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA kqVNib<>+40(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA kqVNib<>+48(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA kqVNib<>+56(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL kqVNib<>(SB), RODATA|NOPTR, $64

// Chunk j, nibble half H (0 low, 1 high) of the pair: weights in Z9 (both
// rows' 32 bytes, already masked to the half's nibbles) against
// q8 at AOFF; Z15 += s_{2j+H}·Σ in one VPDPWSSD (the dword Σ times the
// dword s as word pairs: Σ's low word times s plus its sign word times 0;
// exact int32, no saturation).
#define Q4KVHALF(NIB, AOFF, IDX) \
	VBROADCASTI64X4 AOFF(BX), Z11    \
	VPXORD          Z12, Z12, Z12    \
	VPDPBUSD        Z11, NIB, Z12    \
	VPERMD          Z7, IDX, Z11     \
	VPDPWSSD        Z11, Z12, Z15

#define Q4KVCHUNK(WOFF, AOFF, IDXL, IDXH) \
	VMOVDQU      WOFF(AX), Y9                   \
	VINSERTI64X4 $1, WOFF(DX), Z9, Z9          \
	VPANDD       Z14, Z9, Z10                   \
	VPSRLW       $4, Z9, Z9                     \
	VPANDD       Z14, Z9, Z9                    \
	Q4KVHALF(Z10, AOFF, IDXL)                   \
	Q4KVHALF(Z9, AOFF+32, IDXH)


// 64-byte forms of the K4SCALES constants, for four rows' headers at once
// (row r in 128-bit lane r).
DATA kqK4Shift4<>+0(SB)/8, $0
DATA kqK4Shift4<>+8(SB)/8, $0x0000000400000000
DATA kqK4Shift4<>+16(SB)/8, $0
DATA kqK4Shift4<>+24(SB)/8, $0x0000000400000000
DATA kqK4Shift4<>+32(SB)/8, $0
DATA kqK4Shift4<>+40(SB)/8, $0x0000000400000000
DATA kqK4Shift4<>+48(SB)/8, $0
DATA kqK4Shift4<>+56(SB)/8, $0x0000000400000000
GLOBL kqK4Shift4<>(SB), RODATA|NOPTR, $64
DATA kqK4MaskA4<>+0(SB)/8, $0x0f0f0f0f3f3f3f3f
DATA kqK4MaskA4<>+8(SB)/8, $0x0f0f0f0f3f3f3f3f
DATA kqK4MaskA4<>+16(SB)/8, $0x0f0f0f0f3f3f3f3f
DATA kqK4MaskA4<>+24(SB)/8, $0x0f0f0f0f3f3f3f3f
DATA kqK4MaskA4<>+32(SB)/8, $0x0f0f0f0f3f3f3f3f
DATA kqK4MaskA4<>+40(SB)/8, $0x0f0f0f0f3f3f3f3f
DATA kqK4MaskA4<>+48(SB)/8, $0x0f0f0f0f3f3f3f3f
DATA kqK4MaskA4<>+56(SB)/8, $0x0f0f0f0f3f3f3f3f
GLOBL kqK4MaskA4<>(SB), RODATA|NOPTR, $64
DATA kqK4MaskB4<>+0(SB)/8, $0x3030303000000000
DATA kqK4MaskB4<>+8(SB)/8, $0x3030303000000000
DATA kqK4MaskB4<>+16(SB)/8, $0x3030303000000000
DATA kqK4MaskB4<>+24(SB)/8, $0x3030303000000000
DATA kqK4MaskB4<>+32(SB)/8, $0x3030303000000000
DATA kqK4MaskB4<>+40(SB)/8, $0x3030303000000000
DATA kqK4MaskB4<>+48(SB)/8, $0x3030303000000000
DATA kqK4MaskB4<>+56(SB)/8, $0x3030303000000000
GLOBL kqK4MaskB4<>(SB), RODATA|NOPTR, $64
DATA kqMinsZX4<>+0(SB)/8, $0x800b800a80098008
DATA kqMinsZX4<>+8(SB)/8, $0x800f800e800d800c
DATA kqMinsZX4<>+16(SB)/8, $0x800b800a80098008
DATA kqMinsZX4<>+24(SB)/8, $0x800f800e800d800c
DATA kqMinsZX4<>+32(SB)/8, $0x800b800a80098008
DATA kqMinsZX4<>+40(SB)/8, $0x800f800e800d800c
DATA kqMinsZX4<>+48(SB)/8, $0x800b800a80098008
DATA kqMinsZX4<>+56(SB)/8, $0x800f800e800d800c
GLOBL kqMinsZX4<>(SB), RODATA|NOPTR, $64
// kqQuadHdr: VPERMD indices taking dword 0 of each 128-bit lane (the
// rows' f16 d|dmin) to dwords 0..3; kqQuadScl: VPERMQ indices taking
// qword 0 of each lane (the rows' scales) to qwords 0..3.
DATA kqQuadHdr<>+0(SB)/8, $0x0000000400000000
DATA kqQuadHdr<>+8(SB)/8, $0x0000000c00000008
DATA kqQuadHdr<>+16(SB)/8, $0
DATA kqQuadHdr<>+24(SB)/8, $0
DATA kqQuadHdr<>+32(SB)/8, $0
DATA kqQuadHdr<>+40(SB)/8, $0
DATA kqQuadHdr<>+48(SB)/8, $0
DATA kqQuadHdr<>+56(SB)/8, $0
GLOBL kqQuadHdr<>(SB), RODATA|NOPTR, $64
DATA kqQuadScl<>+0(SB)/8, $0
DATA kqQuadScl<>+8(SB)/8, $2
DATA kqQuadScl<>+16(SB)/8, $4
DATA kqQuadScl<>+24(SB)/8, $6
DATA kqQuadScl<>+32(SB)/8, $0
DATA kqQuadScl<>+40(SB)/8, $0
DATA kqQuadScl<>+48(SB)/8, $0
DATA kqQuadScl<>+56(SB)/8, $0
GLOBL kqQuadScl<>(SB), RODATA|NOPTR, $64
// VPERMPS indices over [dA, dmA, dB, dmB, dC, dmC, dD, dmD] (times d8):
// kqQuadDAB = dA ×8 | dB ×8, kqQuadDCD = dC ×8 | dD ×8, kqQuadDM =
// dmA ×4 | dmB ×4 | dmC ×4 | dmD ×4.
DATA kqQuadDAB<>+0(SB)/8, $0
DATA kqQuadDAB<>+8(SB)/8, $0
DATA kqQuadDAB<>+16(SB)/8, $0
DATA kqQuadDAB<>+24(SB)/8, $0
DATA kqQuadDAB<>+32(SB)/8, $0x0000000200000002
DATA kqQuadDAB<>+40(SB)/8, $0x0000000200000002
DATA kqQuadDAB<>+48(SB)/8, $0x0000000200000002
DATA kqQuadDAB<>+56(SB)/8, $0x0000000200000002
GLOBL kqQuadDAB<>(SB), RODATA|NOPTR, $64
DATA kqQuadDCD<>+0(SB)/8, $0x0000000400000004
DATA kqQuadDCD<>+8(SB)/8, $0x0000000400000004
DATA kqQuadDCD<>+16(SB)/8, $0x0000000400000004
DATA kqQuadDCD<>+24(SB)/8, $0x0000000400000004
DATA kqQuadDCD<>+32(SB)/8, $0x0000000600000006
DATA kqQuadDCD<>+40(SB)/8, $0x0000000600000006
DATA kqQuadDCD<>+48(SB)/8, $0x0000000600000006
DATA kqQuadDCD<>+56(SB)/8, $0x0000000600000006
GLOBL kqQuadDCD<>(SB), RODATA|NOPTR, $64
DATA kqQuadDM<>+0(SB)/8, $0x0000000100000001
DATA kqQuadDM<>+8(SB)/8, $0x0000000100000001
DATA kqQuadDM<>+16(SB)/8, $0x0000000300000003
DATA kqQuadDM<>+24(SB)/8, $0x0000000300000003
DATA kqQuadDM<>+32(SB)/8, $0x0000000500000005
DATA kqQuadDM<>+40(SB)/8, $0x0000000500000005
DATA kqQuadDM<>+48(SB)/8, $0x0000000700000007
DATA kqQuadDM<>+56(SB)/8, $0x0000000700000007
GLOBL kqQuadDM<>(SB), RODATA|NOPTR, $64

// Q4KHDR4V: the header work of four rows A (AX), B (DX), C (R11), D (R12)
// against the activation block at BX, one row per 128-bit lane:
//   Y4  = [dA·d8, dmA·d8, dB·d8, dmB·d8, dC·d8, dmC·d8, dD·d8, dmD·d8]
//   Z2 -= (dm·d8) × mins·(bsum pairs)  (lanes 4r..4r+3 row r; the pair
//         kernel's FNMADD per lane)
//   Z9, Z10 = the scales of rows A,B / C,D as dwords (the pair kernel's Z7)
// Uses Z3, Z5..Z8, Z13.
#define Q4KHDR4V \
	VMOVDQU      260(BX), X13             \
	VPHADDW      276(BX), X13, X13        \
	VSHUFI32X4   $0, Z13, Z13, Z13        \
	VMOVDQU      (AX), X3                 \
	VINSERTI128  $1, (DX), Y3, Y3         \
	VMOVDQU      (R11), X5                \
	VINSERTI128  $1, (R12), Y5, Y5        \
	VINSERTI64X4 $1, Y5, Z3, Z3           \
	VMOVDQU64    kqQuadHdr<>(SB), Z5      \
	VPERMD       Z3, Z5, Z4               \
	VCVTPH2PS    X4, Y4                   \
	VBROADCASTSS (BX), Y5                 \
	VMULPS       Y5, Y4, Y4               \
	VPSHUFD      $0xED, Z3, Z6            \
	VPSRLVD      kqK4Shift4<>(SB), Z6, Z6 \
	VPANDD       kqK4MaskA4<>(SB), Z6, Z6 \
	VPSHUFD      $0xA5, Z3, Z7            \
	VPSRLD       $2, Z7, Z7               \
	VPANDD       kqK4MaskB4<>(SB), Z7, Z7 \
	VPORD        Z7, Z6, Z6               \
	VPSHUFB      kqMinsZX4<>(SB), Z6, Z7  \
	VPMADDWD     Z13, Z7, Z7              \
	VCVTDQ2PS    Z7, Z7                   \
	VMOVDQU64    kqQuadDM<>(SB), Z5       \
	VPERMPS      Z4, Z5, Z5               \
	VFNMADD231PS Z7, Z5, Z2               \
	VMOVDQU64    kqQuadScl<>(SB), Z5      \
	VPERMQ       Z6, Z5, Z8               \
	VPMOVZXBD    X8, Z9                   \
	VEXTRACTI128 $1, Y8, X8               \
	VPMOVZXBD    X8, Z10

// Chunk half of both pairs: the activations q8 at AOFF broadcast once
// (Z11), then per pair Q4KVHALF's VPDPBUSD and scaled VPDPWSSD.
#define Q4KQHALF(NAB, NCD, AOFF, IDX) \
	VBROADCASTI64X4 AOFF(BX), Z11    \
	VPXORD          Z12, Z12, Z12    \
	VPDPBUSD        Z11, NAB, Z12    \
	VPERMD          Z9, IDX, Z31     \
	VPDPWSSD        Z31, Z12, Z15    \
	VPXORD          Z13, Z13, Z13    \
	VPDPBUSD        Z11, NCD, Z13    \
	VPERMD          Z10, IDX, Z30    \
	VPDPWSSD        Z30, Z13, Z25

#define Q4KQCHUNK(WOFF, AOFF, IDXL, IDXH) \
	VMOVDQU64    WOFF(AX), Y26                  \
	VINSERTI64X4 $1, WOFF(DX), Z26, Z26         \
	VMOVDQU64    WOFF(R11), Y28                 \
	VINSERTI64X4 $1, WOFF(R12), Z28, Z28        \
	VPANDD       Z14, Z26, Z27                  \
	VPSRLW       $4, Z26, Z26                   \
	VPANDD       Z14, Z26, Z26                  \
	VPANDD       Z14, Z28, Z29                  \
	VPSRLW       $4, Z28, Z28                   \
	VPANDD       Z14, Z28, Z28                  \
	Q4KQHALF(Z27, Z29, AOFF, IDXL)              \
	Q4KQHALF(Z26, Z28, AOFF+32, IDXH)

// Q4KQHALFS / Q4KQCHUNKS: Q4KQHALF / Q4KQCHUNK with the scale dwords taken
// by an in-lane VPSHUFD (immediate IMM: dword k%4 to every dword of each
// 128-bit lane) from SAB / SCD = the pair's scales s0..s3 (or s4..s7) of
// row A in 128-bit lanes 0,1 and of row B in lanes 2,3, instead of a
// VPERMD by an index register: the same dwords, and on the Zen 5 machine
// the kernels were tuned on VPSHUFD mixes with VPDPBUSD/VPDPWSSD better
// than VPERMD does.
#define Q4KQHALFS(NAB, NCD, AOFF, SAB, SCD, IMM, AAB, ACD) \
	VBROADCASTI64X4 AOFF(BX), Z11    \
	VPXORD          Z12, Z12, Z12    \
	VPDPBUSD        Z11, NAB, Z12    \
	VPSHUFD         IMM, SAB, Z31    \
	VPDPWSSD        Z31, Z12, AAB    \
	VPXORD          Z13, Z13, Z13    \
	VPDPBUSD        Z11, NCD, Z13    \
	VPSHUFD         IMM, SCD, Z30    \
	VPDPWSSD        Z30, Z13, ACD

#define Q4KQCHUNKS(WOFF, AOFF, SAB, SCD, IMML, IMMH) \
	VMOVDQU64    WOFF(AX), Y26                  \
	VINSERTI64X4 $1, WOFF(DX), Z26, Z26         \
	VMOVDQU64    WOFF(R11), Y28                 \
	VINSERTI64X4 $1, WOFF(R12), Z28, Z28        \
	VPANDD       Z14, Z26, Z27                  \
	VPSRLW       $4, Z26, Z26                   \
	VPANDD       Z14, Z26, Z26                  \
	VPANDD       Z14, Z28, Z29                  \
	VPSRLW       $4, Z28, Z28                   \
	VPANDD       Z14, Z28, Z28                  \
	Q4KQHALFS(Z27, Z29, AOFF, SAB, SCD, IMML, Z15, Z25)   \
	Q4KQHALFS(Z26, Z28, AOFF+32, SAB, SCD, IMMH, Z3, Z5)

// func kqRowsQ4KVNNI(w *byte, wrb int, a *byte, y *float32, rows int, nb int)
TEXT ·kqRowsQ4KVNNI(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ wrb+8(FP), R8
	MOVQ a+16(FP), DI
	MOVQ y+24(FP), R9
	MOVQ rows+32(FP), R10
	VMOVDQU64 kqVNib<>(SB), Z14
	VMOVDQU64 kqVScale0<>(SB), Z16
	VMOVDQU64 kqVScale1<>(SB), Z17
	VMOVDQU64 kqVScale2<>(SB), Z18
	VMOVDQU64 kqVScale3<>(SB), Z19
	VMOVDQU64 kqVScale4<>(SB), Z20
	VMOVDQU64 kqVScale5<>(SB), Z21
	VMOVDQU64 kqVScale6<>(SB), Z22
	VMOVDQU64 kqVScale7<>(SB), Z23
	VMOVDQU64 kqVLane04<>(SB), Z24

	// Four rows at a time: pairs A,B (Z0) and C,D (Z1) sharing the
	// header work (Q4KHDR4V) and the activation loads; mins in Z2.
	// Spread (KQSPDIST): rows i, q+i, 2q+i, 3q+i of q = rows/4 steps;
	// R14 steps left, R8 the stride q·wrb between a step's rows, R15 4·q
	// (between their results).
	MOVQ R10, R15
	SHRQ $2, R15
	JZ   q4kvpair
	MOVQ R15, R14
	IMULQ R15, R8
	SHLQ $2, R15
q4kvquad:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	MOVQ SI, AX
	LEAQ (SI)(R8*1), DX
	LEAQ (SI)(R8*2), R11
	LEAQ (R11)(R8*1), R12
	MOVQ DI, BX
	MOVQ nb+40(FP), CX

q4kvqblock:
	PREFETCHT0 KQSPDIST(AX)
	PREFETCHT0 KQSPDIST+64(AX)
	PREFETCHT0 KQSPDIST+128(AX)
	PREFETCHT0 KQSPDIST(DX)
	PREFETCHT0 KQSPDIST+64(DX)
	PREFETCHT0 KQSPDIST+128(DX)
	PREFETCHT0 KQSPDIST(R11)
	PREFETCHT0 KQSPDIST+64(R11)
	PREFETCHT0 KQSPDIST+128(R11)
	PREFETCHT0 KQSPDIST(R12)
	PREFETCHT0 KQSPDIST+64(R12)
	PREFETCHT0 KQSPDIST+128(R12)
	Q4KHDR4V
	// Z9 / Z10 = [A s0..s3 | A s4..s7 | B s0..s3 | B s4..s7] (C, D):
	// s0..s3 of each row to both its lanes in Z9 / Z10, s4..s7 in Z6 / Z7.
	VSHUFI64X2   $0xF5, Z9, Z9, Z6
	VSHUFI64X2   $0xA0, Z9, Z9, Z9
	VSHUFI64X2   $0xF5, Z10, Z10, Z7
	VSHUFI64X2   $0xA0, Z10, Z10, Z10
	VPXORD       Z15, Z15, Z15
	VPXORD       Z25, Z25, Z25
	VPXORD       Z3, Z3, Z3
	VPXORD       Z5, Z5, Z5
	Q4KQCHUNKS(16, 4, Z9, Z10, $0x00, $0x55)
	Q4KQCHUNKS(48, 68, Z9, Z10, $0xAA, $0xFF)
	Q4KQCHUNKS(80, 132, Z6, Z7, $0x00, $0x55)
	Q4KQCHUNKS(112, 196, Z6, Z7, $0xAA, $0xFF)
	VPADDD       Z3, Z15, Z15
	VPADDD       Z5, Z25, Z25
	VCVTDQ2PS    Z15, Z15
	VMOVDQU64    kqQuadDAB<>(SB), Z8
	VPERMPS      Z4, Z8, Z8
	VFMADD231PS  Z15, Z8, Z0
	VCVTDQ2PS    Z25, Z25
	VMOVDQU64    kqQuadDCD<>(SB), Z8
	VPERMPS      Z4, Z8, Z8
	VFMADD231PS  Z25, Z8, Z1
	ADDQ $144, AX
	ADDQ $144, DX
	ADDQ $144, R11
	ADDQ $144, R12
	ADDQ $292, BX
	DECQ CX
	JNZ  q4kvqblock

	VEXTRACTF64X4 $1, Z0, Y5
	VEXTRACTF64X4 $1, Z1, Y6
	VMOVAPS       X2, X10
	VEXTRACTF32X4 $1, Z2, X11
	VEXTRACTF32X4 $2, Z2, X12
	VEXTRACTF32X4 $3, Z2, X13
	Q4KSTOREM(Y0, X0, X10, (R9))
	Q4KSTOREM(Y5, X5, X11, (R9)(R15*1))
	Q4KSTOREM(Y1, X1, X12, (R9)(R15*2))
	LEAQ (R9)(R15*2), R13
	Q4KSTOREM(Y6, X6, X13, (R13)(R15*1))
	ADDQ $4, R9
	ADDQ wrb+8(FP), SI
	DECQ R14
	JNZ  q4kvquad
	// On to the 0..3 rows after the 4q.
	LEAQ (SI)(R8*2), SI
	ADDQ R8, SI
	LEAQ (R9)(R15*2), R9
	ADDQ R15, R9
	ANDQ $3, R10
	MOVQ wrb+8(FP), R8

q4kvpair:
	CMPQ R10, $2
	JLT  q4kvone
	VPXORD Z0, Z0, Z0
	VXORPS Y2, Y2, Y2
	MOVQ SI, AX
	LEAQ (SI)(R8*1), DX
	LEAQ KQPFDIST(SI)(R8*2), R13
	MOVQ DI, BX
	MOVQ nb+40(FP), CX

q4kvblock:
	PREFETCHT0 (R13)
	PREFETCHT0 64(R13)
	PREFETCHT0 128(R13)
	PREFETCHT0 192(R13)
	PREFETCHT0 256(R13)
	ADDQ $288, R13
	Q4KHDR2V
	VPXORD       Z15, Z15, Z15
	Q4KVCHUNK(16, 4, Z16, Z17)
	Q4KVCHUNK(48, 68, Z18, Z19)
	Q4KVCHUNK(80, 132, Z20, Z21)
	Q4KVCHUNK(112, 196, Z22, Z23)
	VCVTDQ2PS    Z15, Z15
	VPERMPS      Z4, Z24, Z8
	VFMADD231PS  Z15, Z8, Z0
	ADDQ $144, AX
	ADDQ $144, DX
	ADDQ $292, BX
	DECQ CX
	JNZ  q4kvblock

	VEXTRACTF64X4 $1, Z0, Y1
	VEXTRACTF128 $1, Y2, X12
	VMOVAPS      X2, X11
	Q4KSTORE(Y0, X0, X11, 0)
	Q4KSTORE(Y1, X1, X12, 4)
	ADDQ $8, R9
	LEAQ (SI)(R8*2), SI
	SUBQ $2, R10
	JMP  q4kvpair

q4kvone:
	TESTQ R10, R10
	JZ    q4kvdone
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	VMOVDQU kqNegLane1<>(SB), X15
	VXORPS Y0, Y0, Y0
	VXORPS X1, X1, X1
	MOVQ SI, AX
	MOVQ DI, BX
	MOVQ nb+40(FP), CX

q4kvblock1:
	Q4KBLOCK(AX, Y0, X1)
	ADDQ $144, AX
	ADDQ $292, BX
	DECQ CX
	JNZ  q4kvblock1
	Q4KSTORE(Y0, X0, X1, 0)

q4kvdone:
	VZEROUPPER
	RET

// ---------------------------------------------------------------- Q6_K, AVX-512 VNNI
// kqRowsQ6KVNNI: one ZMM holds two 32-element sub-blocks of one row (c in
// the low 256 bits, c+1 in the high ones), so the activations are one
// contiguous 64-byte operand of VPDPBUSD. Per half n of a super-block:
// ql[64n..64n+63] loaded once, qh[32n..] broadcast to both halves; the
// 6-bit values (0..63) of sub-blocks 0,1 are ql&15 | (qh<<{4,2})&0x30
// and of sub-blocks 2,3 (ql>>4)&15 | (qh>>{0,2})&0x30 (VPSLLVW/VPSRLVW
// per half, one VPTERNLOGD to merge). VPDPBUSD gives dword k of a half =
// Σ of 4 products (|Σ| ≤ 4·63·128, a sign-extended int16), VPDPWSSD by the
// dword (scale, 0) adds scale·Σ exactly to the int32 lane, scales per
// 16 elements chosen by VPERMD from the row's 16 sign-extended scales. The
// int lanes start at the oracle's -32·(sc·bsums) term (lanes 0..7, the AVX2
// kernel's VPMADDWD), the two halves are added at the end of the
// super-block (exact int32), then one VCVTDQ2PS and one FMA by d8·d, the
// oracle's float steps; the result is hsum_float_8. Rows go in pairs
// (row A: Y0, Z2, Z23..Z30; row B: Y1, Z3, Z4..Z9) for independent work,
// rows i and q+i of q = rows/2 steps (KQSPDIST); a last odd row goes alone. Z14 bytes 0x0F, Z15 bytes 0x30, Z16..Z19 the
// VPERMD scale indices, Z20 / Z21 the VPSLLVW / VPSRLVW counts, Z22 dwords
// 0xFFFF.

DATA kq6VIdx<>+0(SB)/8, $0x0000000000000000
DATA kq6VIdx<>+8(SB)/8, $0x0000000000000000
DATA kq6VIdx<>+16(SB)/8, $0x0000000100000001
DATA kq6VIdx<>+24(SB)/8, $0x0000000100000001
DATA kq6VIdx<>+32(SB)/8, $0x0000000200000002
DATA kq6VIdx<>+40(SB)/8, $0x0000000200000002
DATA kq6VIdx<>+48(SB)/8, $0x0000000300000003
DATA kq6VIdx<>+56(SB)/8, $0x0000000300000003
GLOBL kq6VIdx<>(SB), RODATA|NOPTR, $64
// VPSLLVW counts: 4 in the low half, 2 in the high half; VPSRLVW: 0, 2.
DATA kq6VShl<>+0(SB)/8, $0x0004000400040004
DATA kq6VShl<>+8(SB)/8, $0x0004000400040004
DATA kq6VShl<>+16(SB)/8, $0x0004000400040004
DATA kq6VShl<>+24(SB)/8, $0x0004000400040004
DATA kq6VShl<>+32(SB)/8, $0x0002000200020002
DATA kq6VShl<>+40(SB)/8, $0x0002000200020002
DATA kq6VShl<>+48(SB)/8, $0x0002000200020002
DATA kq6VShl<>+56(SB)/8, $0x0002000200020002
GLOBL kq6VShl<>(SB), RODATA|NOPTR, $64
DATA kq6VShr<>+0(SB)/8, $0
DATA kq6VShr<>+8(SB)/8, $0
DATA kq6VShr<>+16(SB)/8, $0
DATA kq6VShr<>+24(SB)/8, $0
DATA kq6VShr<>+32(SB)/8, $0x0002000200020002
DATA kq6VShr<>+40(SB)/8, $0x0002000200020002
DATA kq6VShr<>+48(SB)/8, $0x0002000200020002
DATA kq6VShr<>+56(SB)/8, $0x0002000200020002
GLOBL kq6VShr<>(SB), RODATA|NOPTR, $64

// One sub-block pair: T = the u8 values, against the 64 activations at
// AOFF(BX); IDX picks the scales from S; ACC += scale·Σ.
#define Q6KVDOT(T, AOFF, S, IDX, D, SC, ACC) \
	VPXORD   D, D, D           \
	VPDPBUSD AOFF(BX), T, D    \
	VPERMD   S, IDX, SC        \
	VPDPWSSD SC, D, ACC

// Half n of a super-block (ql at QLO, qh at QHO, q8 at AOFF).
#define Q6KVHALF(W, QLO, QHO, AOFF, IDXA, IDXB, S, ACC, QL, QH, T, U, D, SC) \
	VMOVDQU64       QLO(W), QL                \
	VBROADCASTI64X4 QHO(W), QH                \
	VPANDD          Z14, QL, T                \
	VPSLLVW         Z20, QH, U                \
	VPTERNLOGD      $0xF8, Z15, U, T          \
	Q6KVDOT(T, AOFF, S, IDXA, D, SC, ACC)     \
	VPSRLW          $4, QL, T                 \
	VPANDD          Z14, T, T                 \
	VPSRLVW         Z21, QH, U                \
	VPTERNLOGD      $0xF8, Z15, U, T          \
	Q6KVDOT(T, AOFF+64, S, IDXB, D, SC, ACC)

// One Q6_K super-block of the row at W: FACC += d8·d × sumi.
#define Q6KVBLOCK(W, FACC, ACC, YACC, YT, XT, YD, XD, GR, S, QL, QH, T, U, D, SC) \
	VPMOVSXBD    192(W), S                    \
	VPANDD       Z22, S, S                    \
	VPMOVSXBW    192(W), YT                   \
	VPMADDWD     260(BX), YT, YT              \
	VPSLLD       $5, YT, YT                   \
	VPXOR        YACC, YACC, YACC             \
	VPSUBD       YT, YACC, YACC               \
	MOVWLZX      208(W), GR                   \
	VMOVD        GR, XD                       \
	VCVTPH2PS    XD, XD                       \
	VMULSS       (BX), XD, XD                 \
	VBROADCASTSS XD, YD                       \
	Q6KVHALF(W, 0, 128, 4, Z16, Z17, S, ACC, QL, QH, T, U, D, SC)   \
	Q6KVHALF(W, 64, 160, 132, Z18, Z19, S, ACC, QL, QH, T, U, D, SC) \
	VEXTRACTI64X4 $1, ACC, YT                 \
	VPADDD       YT, YACC, YACC               \
	VCVTDQ2PS    YACC, YACC                   \
	VFMADD231PS  YACC, YD, FACC

#define Q6KVBLOCKA(W) Q6KVBLOCK(W, Y0, Z2, Y2, Y10, X10, Y12, X12, R11, Z23, Z24, Z25, Z26, Z27, Z28, Z29)
#define Q6KVBLOCKB(W) Q6KVBLOCK(W, Y1, Z3, Y3, Y11, X11, Y13, X13, R12, Z30, Z4, Z5, Z6, Z7, Z8, Z9)

// func kqRowsQ6KVNNI(w *byte, wrb int, a *byte, y *float32, rows int, nb int)
TEXT ·kqRowsQ6KVNNI(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ wrb+8(FP), R8
	MOVQ a+16(FP), DI
	MOVQ y+24(FP), R9
	MOVQ rows+32(FP), R10
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z14
	MOVL $0x30303030, AX
	VPBROADCASTD AX, Z15
	MOVL $0x0000ffff, AX
	VPBROADCASTD AX, Z22
	VMOVDQU64 kq6VIdx<>(SB), Z16
	MOVL $4, AX
	VPBROADCASTD AX, Z17
	VPADDD Z17, Z16, Z17
	VPADDD Z17, Z17, Z18
	VPSUBD Z16, Z18, Z18
	VPADDD Z17, Z18, Z19
	VPSUBD Z16, Z19, Z19
	VMOVDQU64 kq6VShl<>(SB), Z20
	VMOVDQU64 kq6VShr<>(SB), Z21

	// Spread (KQSPDIST): rows i, q+i of q = rows/2 steps; R14 steps
	// left, R8 the stride q·wrb between a step's rows, R15 4·q.
	MOVQ R10, R15
	SHRQ $1, R15
	JZ   q6kvone
	MOVQ R15, R14
	IMULQ R15, R8
	SHLQ $2, R15
q6kvpair:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	MOVQ SI, AX
	LEAQ (SI)(R8*1), DX
	MOVQ DI, BX
	MOVQ nb+40(FP), CX

q6kvblock2:
	PREFETCHT0 KQSPDIST(AX)
	PREFETCHT0 KQSPDIST+64(AX)
	PREFETCHT0 KQSPDIST+128(AX)
	PREFETCHT0 KQSPDIST+192(AX)
	PREFETCHT0 KQSPDIST(DX)
	PREFETCHT0 KQSPDIST+64(DX)
	PREFETCHT0 KQSPDIST+128(DX)
	PREFETCHT0 KQSPDIST+192(DX)
	Q6KVBLOCKA(AX)
	Q6KVBLOCKB(DX)
	ADDQ $210, AX
	ADDQ $210, DX
	ADDQ $292, BX
	DECQ CX
	JNZ  q6kvblock2

	HSUM8(Y0, X0, X2)
	VMOVSS X0, (R9)
	HSUM8(Y1, X1, X2)
	VMOVSS X1, (R9)(R15*1)
	ADDQ $4, R9
	ADDQ wrb+8(FP), SI
	DECQ R14
	JNZ  q6kvpair
	// On to the row after the 2q, if any.
	ADDQ R8, SI
	ADDQ R15, R9
	ANDQ $1, R10

q6kvone:
	TESTQ R10, R10
	JZ    q6kvdone
	VXORPS Y0, Y0, Y0
	MOVQ SI, AX
	MOVQ DI, BX
	MOVQ nb+40(FP), CX

q6kvblock1:
	Q6KVBLOCKA(AX)
	ADDQ $210, AX
	ADDQ $292, BX
	DECQ CX
	JNZ  q6kvblock1
	HSUM8(Y0, X0, X2)
	VMOVSS X0, (R9)

q6kvdone:
	VZEROUPPER
	RET

// ---------------------------------------------------------------- Q5_K, AVX-512 VNNI
// kqRowsQ5KVNNI: the Q4_K quad kernel (kqRowsQ4KVNNI's q4kvquad) with the
// Q5_K 5th bits and mins term. rows must be a multiple of 4 (the Go
// wrapper sends the rest to the AVX2 kernel). Per super-block the qh bytes
// of the pairs A,B and C,D are loaded once (Z3, Z5); for chunk j the low
// nibbles take bit 2j and the high ones bit 2j+1 of each qh byte, moved to
// bit 4 by one VPROLD (by 4-b mod 32: a rotation keeps bit b of every
// byte inside the byte) and merged by VPTERNLOGD with the 0x10 mask (Z24):
// values 0..31. The mins: the four dword products of a row are added
// (exact int32) to summ, and lane 4r of Z2 takes the oracle's scalar
// summs = FMA(-dmin·d8, summ, summs) as one FNMADD; the result is
// hsum_float_8(acc) + summs (Q5KSTOREM). Its four-row steps spread over
// the range as kqRowsQ4KVNNI's (KQSPDIST).

#define Q5KHDR4V \
	VMOVDQU      260(BX), X13             \
	VPHADDW      276(BX), X13, X13        \
	VSHUFI32X4   $0, Z13, Z13, Z13        \
	VMOVDQU      (AX), X3                 \
	VINSERTI128  $1, (DX), Y3, Y3         \
	VMOVDQU      (R11), X5                \
	VINSERTI128  $1, (R12), Y5, Y5        \
	VINSERTI64X4 $1, Y5, Z3, Z3           \
	VMOVDQU64    kqQuadHdr<>(SB), Z5      \
	VPERMD       Z3, Z5, Z4               \
	VCVTPH2PS    X4, Y4                   \
	VBROADCASTSS (BX), Y5                 \
	VMULPS       Y5, Y4, Y4               \
	VPSHUFD      $0xED, Z3, Z6            \
	VPSRLVD      kqK4Shift4<>(SB), Z6, Z6 \
	VPANDD       kqK4MaskA4<>(SB), Z6, Z6 \
	VPSHUFD      $0xA5, Z3, Z7            \
	VPSRLD       $2, Z7, Z7               \
	VPANDD       kqK4MaskB4<>(SB), Z7, Z7 \
	VPORD        Z7, Z6, Z6               \
	VPSHUFB      kqMinsZX4<>(SB), Z6, Z7  \
	VPMADDWD     Z13, Z7, Z7              \
	VPSHUFD      $0x4E, Z7, Z5            \
	VPADDD       Z5, Z7, Z7               \
	VPSHUFD      $0xB1, Z7, Z5            \
	VPADDD       Z5, Z7, Z7               \
	VCVTDQ2PS    Z7, Z7                   \
	VMOVDQU64    kqQuadDM<>(SB), Z5       \
	VPERMPS      Z4, Z5, Z5               \
	VFNMADD231PS Z7, Z5, Z2               \
	VMOVDQU64    kqQuadScl<>(SB), Z5      \
	VPERMQ       Z6, Z5, Z8               \
	VPMOVZXBD    X8, Z9                   \
	VEXTRACTI128 $1, Y8, X8               \
	VPMOVZXBD    X8, Z10                  \
	VMOVDQU64    16(AX), Y3               \
	VINSERTI64X4 $1, 16(DX), Z3, Z3       \
	VMOVDQU64    16(R11), Y5              \
	VINSERTI64X4 $1, 16(R12), Z5, Z5

// NIB |= bit 4 of (QH rotated left by R): the 5th bit of each value.
#define Q5KVBIT(R, QH, NIB) \
	VPROLD     $R, QH, Z6              \
	VPTERNLOGD $0xF8, Z24, Z6, NIB

#define Q5KVBIT0(QH, NIB) \
	VPTERNLOGD $0xF8, Z24, QH, NIB

#define Q5KQCHUNK(WOFF, AOFF, IDXL, IDXH, BITLO, BITHI) \
	VMOVDQU64    WOFF(AX), Y26                  \
	VINSERTI64X4 $1, WOFF(DX), Z26, Z26         \
	VMOVDQU64    WOFF(R11), Y28                 \
	VINSERTI64X4 $1, WOFF(R12), Z28, Z28        \
	VPANDD       Z14, Z26, Z27                  \
	VPSRLW       $4, Z26, Z26                   \
	VPANDD       Z14, Z26, Z26                  \
	VPANDD       Z14, Z28, Z29                  \
	VPSRLW       $4, Z28, Z28                   \
	VPANDD       Z14, Z28, Z28                  \
	BITLO(Z3, Z27)                              \
	BITLO(Z5, Z29)                              \
	BITHI(Z3, Z26)                              \
	BITHI(Z5, Z28)                              \
	Q4KQHALF(Z27, Z29, AOFF, IDXL)              \
	Q4KQHALF(Z26, Z28, AOFF+32, IDXH)

#define Q5KB4(QH, NIB) Q5KVBIT(4, QH, NIB)
#define Q5KB3(QH, NIB) Q5KVBIT(3, QH, NIB)
#define Q5KB2(QH, NIB) Q5KVBIT(2, QH, NIB)
#define Q5KB1(QH, NIB) Q5KVBIT(1, QH, NIB)
#define Q5KB31(QH, NIB) Q5KVBIT(31, QH, NIB)
#define Q5KB30(QH, NIB) Q5KVBIT(30, QH, NIB)
#define Q5KB29(QH, NIB) Q5KVBIT(29, QH, NIB)

// func kqRowsQ5KVNNI(w *byte, wrb int, a *byte, y *float32, rows int, nb int)
TEXT ·kqRowsQ5KVNNI(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ wrb+8(FP), R8
	MOVQ a+16(FP), DI
	MOVQ y+24(FP), R9
	MOVQ rows+32(FP), R10
	VMOVDQU64 kqVNib<>(SB), Z14
	VMOVDQU64 kqVScale0<>(SB), Z16
	VMOVDQU64 kqVScale1<>(SB), Z17
	VMOVDQU64 kqVScale2<>(SB), Z18
	VMOVDQU64 kqVScale3<>(SB), Z19
	VMOVDQU64 kqVScale4<>(SB), Z20
	VMOVDQU64 kqVScale5<>(SB), Z21
	VMOVDQU64 kqVScale6<>(SB), Z22
	VMOVDQU64 kqVScale7<>(SB), Z23
	MOVL $0x10101010, AX
	VPBROADCASTD AX, Z24

	// Spread (KQSPDIST): rows i, q+i, 2q+i, 3q+i of q = rows/4 steps;
	// R14 steps left, R8 the stride q·wrb between a step's rows, R15 4·q.
	MOVQ R10, R15
	SHRQ $2, R15
	JZ   q5kvdone
	MOVQ R15, R14
	IMULQ R15, R8
	SHLQ $2, R15
q5kvquad:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	MOVQ SI, AX
	LEAQ (SI)(R8*1), DX
	LEAQ (SI)(R8*2), R11
	LEAQ (R11)(R8*1), R12
	MOVQ DI, BX
	MOVQ nb+40(FP), CX

q5kvqblock:
	PREFETCHT0 KQSPDIST(AX)
	PREFETCHT0 KQSPDIST+64(AX)
	PREFETCHT0 KQSPDIST+128(AX)
	PREFETCHT0 KQSPDIST(DX)
	PREFETCHT0 KQSPDIST+64(DX)
	PREFETCHT0 KQSPDIST+128(DX)
	PREFETCHT0 KQSPDIST(R11)
	PREFETCHT0 KQSPDIST+64(R11)
	PREFETCHT0 KQSPDIST+128(R11)
	PREFETCHT0 KQSPDIST(R12)
	PREFETCHT0 KQSPDIST+64(R12)
	PREFETCHT0 KQSPDIST+128(R12)
	Q5KHDR4V
	VPXORD       Z15, Z15, Z15
	VPXORD       Z25, Z25, Z25
	Q5KQCHUNK(48, 4, Z16, Z17, Q5KB4, Q5KB3)
	Q5KQCHUNK(80, 68, Z18, Z19, Q5KB2, Q5KB1)
	Q5KQCHUNK(112, 132, Z20, Z21, Q5KVBIT0, Q5KB31)
	Q5KQCHUNK(144, 196, Z22, Z23, Q5KB30, Q5KB29)
	VCVTDQ2PS    Z15, Z15
	VMOVDQU64    kqQuadDAB<>(SB), Z8
	VPERMPS      Z4, Z8, Z8
	VFMADD231PS  Z15, Z8, Z0
	VCVTDQ2PS    Z25, Z25
	VMOVDQU64    kqQuadDCD<>(SB), Z8
	VPERMPS      Z4, Z8, Z8
	VFMADD231PS  Z25, Z8, Z1
	ADDQ $176, AX
	ADDQ $176, DX
	ADDQ $176, R11
	ADDQ $176, R12
	ADDQ $292, BX
	DECQ CX
	JNZ  q5kvqblock

	VEXTRACTF64X4 $1, Z0, Y5
	VEXTRACTF64X4 $1, Z1, Y6
	VMOVAPS       X2, X10
	VEXTRACTF32X4 $1, Z2, X11
	VEXTRACTF32X4 $2, Z2, X12
	VEXTRACTF32X4 $3, Z2, X13
	Q5KSTOREM(Y0, X0, X10, (R9))
	Q5KSTOREM(Y5, X5, X11, (R9)(R15*1))
	Q5KSTOREM(Y1, X1, X12, (R9)(R15*2))
	LEAQ (R9)(R15*2), R13
	Q5KSTOREM(Y6, X6, X13, (R13)(R15*1))
	ADDQ $4, R9
	ADDQ wrb+8(FP), SI
	DECQ R14
	JNZ  q5kvquad

q5kvdone:
	VZEROUPPER
	RET
