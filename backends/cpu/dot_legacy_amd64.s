//go:build amd64 && !purego

#include "textflag.h"

// See dot_legacy_amd64.go. The hand-written row kernels (Q4_1, Q5_1; the
// Q8_0, Q5_0 and Q4_0 ones are generated) sweep four weight rows at a
// time (four independent FMA chains; one chain alone is bound by the FMA
// latency, one block per 4 cycles), then the rows left one at a time; each
// row keeps its own accumulator and block order, so the bits do not depend
// on the grouping.
//
// Registers: R9 weight row (of the group), R8 row stride, R12 3·stride,
// R10 activation row, R11 blocks per row, BX output, CX rows left; SI/DI
// walk the blocks, DX counts them, R13 is the prefetch pointer. Y0..Y3
// are the rows' accumulators (Acc8), Y4 the activation quants and Y5 its
// scale (all lanes; for Q8_1 X5 = [d, s]), Y6/Y7/Y9 temporaries, Y15
// int16 ones, Y14 bytes 0x0F.

DATA qhshuf<>+0(SB)/8, $0x0000000000000000
DATA qhshuf<>+8(SB)/8, $0x0101010101010101
DATA qhshuf<>+16(SB)/8, $0x0202020202020202
DATA qhshuf<>+24(SB)/8, $0x0303030303030303
GLOBL qhshuf<>(SB), RODATA|NOPTR, $32

DATA nibshift<>+0(SB)/8, $0
DATA nibshift<>+8(SB)/8, $0
DATA nibshift<>+16(SB)/8, $0x0000000400000004
DATA nibshift<>+24(SB)/8, $0x0000000400000004
GLOBL nibshift<>(SB), RODATA|NOPTR, $32

DATA bit16<>+0(SB)/8, $0x1010101010101010
DATA bit16<>+8(SB)/8, $0x1010101010101010
DATA bit16<>+16(SB)/8, $0x1010101010101010
DATA bit16<>+24(SB)/8, $0x1010101010101010
GLOBL bit16<>(SB), RODATA|NOPTR, $32

// ggml's hsum_float_8 of acc into the low lane of accx (its lower half):
// lanes 4..7 onto 0..3, then 2,3 onto 0,1, then 1 onto 0. Clobbers t.
#define HSUM(acc, accx, t) \
	VEXTRACTF128 $1, acc, t \
	VADDPS       t, accx, accx \
	VMOVHLPS     accx, accx, t \
	VADDPS       t, accx, accx \
	VMOVSHDUP    accx, t \
	VADDSS       t, accx, accx

#define LOADARGS \
	MOVQ w+0(FP), R9    \
	MOVQ wrb+8(FP), R8  \
	MOVQ a+16(FP), R10  \
	MOVQ nb+24(FP), R11 \
	MOVQ y+32(FP), BX   \
	MOVQ rows+40(FP), CX \
	LEAQ (R8)(R8*2), R12

#define CONSTS \
	VPCMPEQW     Y15, Y15, Y15 \
	VPSRLW       $15, Y15, Y15 \
	MOVL         $0x0F0F0F0F, AX \
	VMOVD        AX, X14 \
	VPBROADCASTD X14, Y14

// Y11 selects bit i%8 in byte i (for the 5th bits).
#define BITSEL \
	MOVQ         $0x8040201008040201, AX \
	MOVQ         AX, X11 \
	VPBROADCASTQ X11, Y11

// Starts a group of rows / one row: zero accumulators, rewind SI/DI/DX;
// START4 also points R13 PFDIST bytes into the next group (see PREFETCH2).
#define START4 \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3 \
	MOVQ   R9, SI     \
	MOVQ   R10, DI    \
	MOVQ   R11, DX    \
	LEAQ   PFDIST(R9)(R8*4), R13

#define START1 \
	VXORPS Y0, Y0, Y0 \
	MOVQ   R9, SI     \
	MOVQ   R10, DI    \
	MOVQ   R11, DX

// Software prefetch of the weights, one 4-row group ahead. Out of cache the
// four interleaved row streams ran at 4-9 GB/s (the hardware prefetcher
// does not keep ahead of them); sweeping the next group's bytes linearly,
// 4 blocks' worth (step bytes, at most 128 / 192) per block step, brings
// them to L1 in time. R13 advances through the next group, PFDIST bytes
// past its start so its last rows are also early. A prefetch never faults,
// so running past the matrix is harmless.
#define PFDIST 4096

#define PREFETCH2(step) \
	PREFETCHT0 (R13)   \
	PREFETCHT0 64(R13) \
	ADDQ       $step, R13

// Activation block of Q8_1: quants in Y4, [d, s] in X5.
#define ACT81 \
	VMOVD     (DI), X5 \
	VCVTPH2PS X5, X5   \
	VMOVDQU   4(DI), Y4

// Y6 = d_w·d_a in all lanes and sm += m_w·s_a (the weight's f16 d, m at sc).
#define WSCALEMIN(sc, sm) \
	VMOVD        sc, X6 \
	VCVTPH2PS    X6, X6 \
	VMULPS       X5, X6, X6 \
	VMOVSHDUP    X6, X9 \
	VADDSS       X9, sm, sm \
	VBROADCASTSS X6, Y6

// Y7 = the 32 nibbles at qs as bytes: the 16 bytes in both lanes, the
// upper lane shifted right by 4, masked to 4 bits.
#define NIBBLES(qs) \
	VBROADCASTI128 qs, Y7 \
	VPSRLVD        nibshift<>(SB), Y7, Y7 \
	VPAND          Y14, Y7, Y7

// Y9 = 0xFF in byte i where bit i of the u32 at qh is set (needs Y11).
#define BITMASK(qh) \
	VPBROADCASTD qh, Y9 \
	VPSHUFB      qhshuf<>(SB), Y9, Y9 \
	VPAND        Y11, Y9, Y9 \
	VPCMPEQB     Y11, Y9, Y9

// Y7 (int16 pair sums) to int32 4-element sums, to float, acc += Y6·Y7.
#define FINISH(acc) \
	VPMADDWD    Y15, Y7, Y7 \
	VCVTDQ2PS   Y7, Y7      \
	VFMADD231PS Y7, Y6, acc

// One weight row's block against the activation block in Y4/Y5.
// Q4_1: Σ q·y (q unsigned).
#define Q41ROW(sc, qs, acc, sm) \
	WSCALEMIN(sc, sm) \
	NIBBLES(qs) \
	VPMADDUBSW Y4, Y7, Y7 \
	FINISH(acc)

// Q5_1: Σ (nib | 16·bit)·y.
#define Q51ROW(sc, qh, qs, acc, sm) \
	WSCALEMIN(sc, sm) \
	NIBBLES(qs) \
	BITMASK(qh) \
	VPAND      bit16<>(SB), Y9, Y9 \
	VPOR       Y9, Y7, Y7 \
	VPMADDUBSW Y4, Y7, Y7 \
	FINISH(acc)

// The m·s sums of the Q4_1/Q5_1 rows: X8, X10, X12, X13; added after HSUM.
#define ZEROMIN4 \
	VXORPS X8, X8, X8 \
	VXORPS X10, X10, X10 \
	VXORPS X12, X12, X12 \
	VXORPS X13, X13, X13

#define ADDMIN4 \
	VADDSS X8, X0, X0 \
	VADDSS X10, X1, X1 \
	VADDSS X12, X2, X2 \
	VADDSS X13, X3, X3

#define STORE4MIN \
	HSUM(Y0, X0, X6) \
	HSUM(Y1, X1, X6) \
	HSUM(Y2, X2, X6) \
	HSUM(Y3, X3, X6) \
	ADDMIN4 \
	VMOVSS X0, (BX)   \
	VMOVSS X1, 4(BX)  \
	VMOVSS X2, 8(BX)  \
	VMOVSS X3, 12(BX) \
	ADDQ   $16, BX    \
	LEAQ   (R9)(R8*4), R9 \
	SUBQ   $4, CX

#define STORE1MIN \
	HSUM(Y0, X0, X6) \
	VADDSS X8, X0, X0 \
	VMOVSS X0, (BX) \
	ADDQ   $4, BX   \
	ADDQ   R8, R9   \
	DECQ   CX

// func rowsQ4_1AVX2(w *byte, wrb int, a *byte, nb int, y *float32, rows int)
TEXT ·rowsQ4_1AVX2(SB), NOSPLIT, $0-48
	LOADARGS
	CONSTS
	CMPQ CX, $4
	JLT  q41tail
q41row4:
	START4
	ZEROMIN4
q41blk4:
	PREFETCH2(80)
	ACT81
	Q41ROW((SI), 4(SI), Y0, X8)
	Q41ROW((SI)(R8*1), 4(SI)(R8*1), Y1, X10)
	Q41ROW((SI)(R8*2), 4(SI)(R8*2), Y2, X12)
	Q41ROW((SI)(R12*1), 4(SI)(R12*1), Y3, X13)
	ADDQ $20, SI
	ADDQ $36, DI
	DECQ DX
	JNZ  q41blk4
	STORE4MIN
	CMPQ CX, $4
	JGE  q41row4
q41tail:
	TESTQ CX, CX
	JZ    q41done
q41row1:
	START1
	VXORPS X8, X8, X8
q41blk1:
	ACT81
	Q41ROW((SI), 4(SI), Y0, X8)
	ADDQ $20, SI
	ADDQ $36, DI
	DECQ DX
	JNZ  q41blk1
	STORE1MIN
	JNZ  q41row1
q41done:
	VZEROUPPER
	RET

// func rowsQ5_1AVX2(w *byte, wrb int, a *byte, nb int, y *float32, rows int)
TEXT ·rowsQ5_1AVX2(SB), NOSPLIT, $0-48
	LOADARGS
	CONSTS
	BITSEL
	CMPQ CX, $4
	JLT  q51tail
q51row4:
	START4
	ZEROMIN4
q51blk4:
	PREFETCH2(96)
	ACT81
	Q51ROW((SI), 4(SI), 8(SI), Y0, X8)
	Q51ROW((SI)(R8*1), 4(SI)(R8*1), 8(SI)(R8*1), Y1, X10)
	Q51ROW((SI)(R8*2), 4(SI)(R8*2), 8(SI)(R8*2), Y2, X12)
	Q51ROW((SI)(R12*1), 4(SI)(R12*1), 8(SI)(R12*1), Y3, X13)
	ADDQ $24, SI
	ADDQ $36, DI
	DECQ DX
	JNZ  q51blk4
	STORE4MIN
	CMPQ CX, $4
	JGE  q51row4
q51tail:
	TESTQ CX, CX
	JZ    q51done
q51row1:
	START1
	VXORPS X8, X8, X8
q51blk1:
	ACT81
	Q51ROW((SI), 4(SI), 8(SI), Y0, X8)
	ADDQ $24, SI
	ADDQ $36, DI
	DECQ DX
	JNZ  q51blk1
	STORE1MIN
	JNZ  q51row1
q51done:
	VZEROUPPER
	RET

// ---------------------------------------------------------------- stream read
// Bandwidth baselines for stream_bench_test.go: the 64-bit lane sums of n
// bytes at p (n a multiple of 256), four independent accumulators, no
// other work; what a weight sweep could reach on this machine.

// func streamSumAVX2(p *byte, n int) uint64
TEXT ·streamSumAVX2(SB), NOSPLIT, $0-24
	MOVQ   p+0(FP), SI
	MOVQ   n+8(FP), CX
	SHRQ   $8, CX
	VPXOR  Y0, Y0, Y0
	VPXOR  Y1, Y1, Y1
	VPXOR  Y2, Y2, Y2
	VPXOR  Y3, Y3, Y3
	TESTQ  CX, CX
	JZ     ssa2done
ssa2loop:
	VPADDQ (SI), Y0, Y0
	VPADDQ 32(SI), Y1, Y1
	VPADDQ 64(SI), Y2, Y2
	VPADDQ 96(SI), Y3, Y3
	VPADDQ 128(SI), Y0, Y0
	VPADDQ 160(SI), Y1, Y1
	VPADDQ 192(SI), Y2, Y2
	VPADDQ 224(SI), Y3, Y3
	ADDQ   $256, SI
	DECQ   CX
	JNZ    ssa2loop
ssa2done:
	VPADDQ Y1, Y0, Y0
	VPADDQ Y3, Y2, Y2
	VPADDQ Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDQ X1, X0, X0
	VPSHUFD $0x4E, X0, X1
	VPADDQ X1, X0, X0
	VMOVQ  X0, AX
	MOVQ   AX, ret+16(FP)
	VZEROUPPER
	RET

// func streamSumAVX512(p *byte, n int) uint64
TEXT ·streamSumAVX512(SB), NOSPLIT, $0-24
	MOVQ   p+0(FP), SI
	MOVQ   n+8(FP), CX
	SHRQ   $8, CX
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3
	TESTQ  CX, CX
	JZ     ssa5done
ssa5loop:
	VPADDQ (SI), Z0, Z0
	VPADDQ 64(SI), Z1, Z1
	VPADDQ 128(SI), Z2, Z2
	VPADDQ 192(SI), Z3, Z3
	ADDQ   $256, SI
	DECQ   CX
	JNZ    ssa5loop
ssa5done:
	VPADDQ Z1, Z0, Z0
	VPADDQ Z3, Z2, Z2
	VPADDQ Z2, Z0, Z0
	VEXTRACTI64X4 $1, Z0, Y1
	VPADDQ Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDQ X1, X0, X0
	VPSHUFD $0x4E, X0, X1
	VPADDQ X1, X0, X0
	VMOVQ  X0, AX
	MOVQ   AX, ret+16(FP)
	VZEROUPPER
	RET

// func streamSumAVX512PF(p *byte, n int) uint64: streamSumAVX512 with a
// software prefetch PFDIST bytes ahead, as the row kernels do.
TEXT ·streamSumAVX512PF(SB), NOSPLIT, $0-24
	MOVQ   p+0(FP), SI
	MOVQ   n+8(FP), CX
	SHRQ   $8, CX
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3
	TESTQ  CX, CX
	JZ     ssapdone
ssaploop:
	PREFETCHT0 PFDIST(SI)
	PREFETCHT0 PFDIST+64(SI)
	PREFETCHT0 PFDIST+128(SI)
	PREFETCHT0 PFDIST+192(SI)
	VPADDQ (SI), Z0, Z0
	VPADDQ 64(SI), Z1, Z1
	VPADDQ 128(SI), Z2, Z2
	VPADDQ 192(SI), Z3, Z3
	ADDQ   $256, SI
	DECQ   CX
	JNZ    ssaploop
ssapdone:
	VPADDQ Z1, Z0, Z0
	VPADDQ Z3, Z2, Z2
	VPADDQ Z2, Z0, Z0
	VEXTRACTI64X4 $1, Z0, Y1
	VPADDQ Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDQ X1, X0, X0
	VPSHUFD $0x4E, X0, X1
	VPADDQ X1, X0, X0
	VMOVQ  X0, AX
	MOVQ   AX, ret+16(FP)
	VZEROUPPER
	RET
