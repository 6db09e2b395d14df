//go:build amd64 && !purego

#include "textflag.h"

// func touchRows(p *byte, stride, rows, n int)
//
// One byte load from every 64-byte line of rows runs of n bytes, stride
// bytes apart, from p, in order; the loaded values are dropped.
TEXT ·touchRows(SB), NOSPLIT, $0-32
	MOVQ p+0(FP), SI
	MOVQ stride+8(FP), BX
	MOVQ rows+16(FP), CX
	MOVQ n+24(FP), DX
	TESTQ CX, CX
	JLE done
	TESTQ DX, DX
	JLE done
	// From the line of the first byte to the line of the last.
	MOVQ SI, AX
	ANDQ $63, AX
	SUBQ AX, SI
	ADDQ AX, DX
row:
	XORQ AX, AX
line:
	MOVBLZX (SI)(AX*1), R8
	ADDQ $64, AX
	CMPQ AX, DX
	JLT line
	ADDQ BX, SI
	DECQ CX
	JNZ row
done:
	RET
