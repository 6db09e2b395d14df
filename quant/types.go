// Package quant holds the GGML tensor element types and their block formats:
// layouts, scalar (pure Go) quantizers, dequantizers and dot products. The
// scalar code here is the reference every SIMD kernel is tested against.
package quant

import (
	"fmt"
	"strings"
)

// Type is a GGML tensor element type, numbered as in ggml.h (and in GGUF files).
type Type uint32

// GGML type ids. Only the ones minfer computes on have block layouts here;
// the others are named so error messages can say what a file holds.
const (
	F32  Type = 0
	F16  Type = 1
	Q4_0 Type = 2
	Q4_1 Type = 3
	Q5_0 Type = 6
	Q5_1 Type = 7
	Q8_0 Type = 8
	Q8_1 Type = 9
	Q2_K Type = 10
	Q3_K Type = 11
	Q4_K Type = 12
	Q5_K Type = 13
	Q6_K Type = 14
	Q8_K Type = 15
	I32  Type = 26 // ggml's GGML_TYPE_I32: token ids and positions
	BF16 Type = 30
)

// QK is the block length of the 32-element formats; QKK of the K-quants.
const (
	QK  = 32
	QKK = 256
)

type traits struct {
	name      string
	blockSize int  // elements per block
	typeSize  int  // bytes per block
	layout    bool // layout only: minfer reads past it but does not compute on it
	planOnly  bool // minfer's own layout, written by minferc into plans, never in a GGUF
}

// GGML types whose block layout is known (so a file holding them can be
// read and shown) but that minfer does not compute on.
const (
	IQ2_XXS Type = 16
	IQ2_XS  Type = 17
	IQ3_XXS Type = 18
	IQ1_S   Type = 19
	IQ4_NL  Type = 20
	IQ3_S   Type = 21
	IQ2_S   Type = 22
	IQ4_XS  Type = 23
	I8      Type = 24
	I16     Type = 25
	I64     Type = 27
	F64     Type = 28
	IQ1_M   Type = 29
	TQ1_0   Type = 34
	TQ2_0   Type = 35
	MXFP4   Type = 39
)

var table = map[Type]traits{
	F32:  {"f32", 1, 4, false, false},
	F16:  {"f16", 1, 2, false, false},
	BF16: {"bf16", 1, 2, false, false},
	I32:  {"i32", 1, 4, false, false},
	Q4_0: {"q4_0", QK, 18, false, false},
	Q4_1: {"q4_1", QK, 20, false, false},
	Q5_0: {"q5_0", QK, 22, false, false},
	Q5_1: {"q5_1", QK, 24, false, false},
	Q8_0: {"q8_0", QK, 34, false, false},
	Q8_1: {"q8_1", QK, 36, false, false},
	Q2_K: {"q2_K", QKK, 84, false, false},
	Q3_K: {"q3_K", QKK, 110, false, false},
	Q4_K: {"q4_K", QKK, 144, false, false},
	Q5_K: {"q5_K", QKK, 176, false, false},
	Q6_K: {"q6_K", QKK, 210, false, false},
	Q8_K: {"q8_K", QKK, 292, false, false},

	// Block sizes from ggml-common.h's static_asserts.
	IQ2_XXS: {"iq2_xxs", QKK, 2 + QKK/8*2, true, false},
	IQ2_XS:  {"iq2_xs", QKK, 2 + QKK/8*2 + QKK/32, true, false},
	IQ3_XXS: {"iq3_xxs", QKK, 2 + 3*(QKK/8), true, false},
	IQ1_S:   {"iq1_s", QKK, 2 + QKK/8 + QKK/16, true, false},
	IQ4_NL:  {"iq4_nl", QK, 2 + QK/2, true, false},
	IQ3_S:   {"iq3_s", QKK, 2 + 13*(QKK/32) + QKK/64, true, false},
	IQ2_S:   {"iq2_s", QKK, 2 + QKK/4 + QKK/16, true, false},
	IQ4_XS:  {"iq4_xs", QKK, 2 + 2 + QKK/64 + QKK/2, true, false},
	I8:      {"i8", 1, 1, true, false},
	I16:     {"i16", 1, 2, true, false},
	I64:     {"i64", 1, 8, true, false},
	F64:     {"f64", 1, 8, true, false},
	IQ1_M:   {"iq1_m", QKK, QKK/8 + QKK/16 + QKK/32, true, false},
	TQ1_0:   {"tq1_0", QKK, 2 + QKK/64 + (QKK-4*QKK/64)/5, true, false},
	TQ2_0:   {"tq2_0", QKK, 2 + QKK/4, true, false},
	MXFP4:   {"mxfp4", QK, 1 + QK/2, true, false},

	Q5_0x4: {"q5_0x4", QK, 22, false, true},
	Q4_0x4: {"q4_0x4", QK, 18, false, true},

	Q8_0r16: {"q8_0r16", QK, 34, false, true},
	Q5_0r16: {"q5_0r16", QK, 22, false, true},
	Q4_0r16: {"q4_0r16", QK, 18, false, true},

	Q4_Kr8: {"q4_Kr8", QKK, 144, false, true},
	Q6_Kr8: {"q6_Kr8", QKK, 210, false, true},
	Q5_Kr8: {"q5_Kr8", QKK, 176, false, true},
	Q3_Kr8: {"q3_Kr8", QKK, 110, false, true},
	Q2_Kr8: {"q2_Kr8", QKK, 84, false, true},
	Q5_0r8: {"q5_0r8", QK, 22, false, true},
	Q4_0r8: {"q4_0r8", QK, 18, false, true},
	Q5_1r8: {"q5_1r8", QK, 24, false, true},
	Q4_1r8: {"q4_1r8", QK, 20, false, true},
}

// Q5_0x4 is minfer's own type id (outside ggml's numbering) for Q5_0
// weights in the four-row Q5_0x4 layout (q5_0x4.go): the same bytes per
// row as Q5_0, rearranged within each group of four rows. minferc's
// pack-weights pass writes it into plans; a GGUF never holds it.
const Q5_0x4 Type = 1<<16 | Q5_0

// PlanOnly reports whether t is one of minfer's own layouts, which only a
// plan may hold (a GGUF reader refuses them).
func (t Type) PlanOnly() bool { return table[t].planOnly }

// Known reports whether t is a type minfer computes on (has its block
// layout and at least a dequantizer or conversion).
func (t Type) Known() bool { tr, ok := table[t]; return ok && !tr.layout }

// HasLayout reports whether minfer knows t's block size and bytes per block
// (every Known type, and the IQ, TQ, MXFP4 and wide integer/float types it
// can read past and name but not compute on).
func (t Type) HasLayout() bool { _, ok := table[t]; return ok }

// Unsupported returns an error naming t when minfer cannot compute on it,
// and nil when it can.
func (t Type) Unsupported() error {
	tr, ok := table[t]
	switch {
	case !ok:
		return fmt.Errorf("ggml type %d is unknown", uint32(t))
	case tr.layout:
		return fmt.Errorf("%s is not supported yet", strings.ToUpper(tr.name))
	}
	return nil
}

// String is ggml's type name ("q4_K", "f16", ...) or "type(N)" when unknown.
func (t Type) String() string {
	if tr, ok := table[t]; ok {
		return tr.name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// BlockSize is the number of elements per block (1 for float types); 0 if unknown.
func (t Type) BlockSize() int { return table[t].blockSize }

// TypeSize is the number of bytes per block; 0 if unknown.
func (t Type) TypeSize() int { return table[t].typeSize }

// RowSize returns the bytes of a row of n elements, or an error when n is not
// a multiple of the block size or the type is unknown.
func (t Type) RowSize(n int) (int, error) {
	tr, ok := table[t]
	if !ok {
		return 0, fmt.Errorf("unknown ggml type %d", uint32(t))
	}
	if n < 0 || n%tr.blockSize != 0 {
		return 0, fmt.Errorf("%s: row of %d elements is not a multiple of the block size %d", tr.name, n, tr.blockSize)
	}
	return n / tr.blockSize * tr.typeSize, nil
}

// ParseType maps a ggml type name (case-insensitive: "q4_k", "Q4_K", "f16") to a Type.
func ParseType(s string) (Type, bool) {
	for t, tr := range table {
		if !tr.layout && equalFold(tr.name, s) {
			return t, true
		}
	}
	return 0, false
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// VecDotType is the type llama.cpp's CPU backend converts activations to
// before a dot product with weights of type t (ggml's vec_dot_type).
func (t Type) VecDotType() Type {
	switch t {
	case Q4_0, Q5_0, Q8_0, Q5_0x4, Q4_0x4, Q8_0r16, Q5_0r16, Q4_0r16, Q5_0r8, Q4_0r8:
		return Q8_0
	case Q4_1, Q5_1, Q4_1r8, Q5_1r8:
		return Q8_1
	case Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q2_Kr8, Q3_Kr8, Q4_Kr8, Q5_Kr8, Q6_Kr8:
		return Q8_K
	case F16:
		return F16
	case BF16:
		return BF16
	}
	return F32
}
