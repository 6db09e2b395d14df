package quant

import (
	"math"

	"github.com/minfer/minfer/internal/ggmlf32"
)

// Block sizes in bytes of the 32-element formats.
const (
	blockQ4_0 = 18
	blockQ4_1 = 20
	blockQ5_0 = 22
	blockQ5_1 = 24
	blockQ8_0 = 34
	blockQ8_1 = 36
)

// ---------------------------------------------------------------- Q4_0

// QuantizeQ4_0 quantizes len(src) values (a multiple of 32) into dst as
// ggml's quantize_row_q4_0_ref: d = max/-8 where max is the value of largest
// magnitude, q = min(15, trunc(x/d + 8.5)).
func QuantizeQ4_0(src []float32, dst []byte) {
	for i := 0; i < len(src)/QK; i++ {
		x := src[i*QK : i*QK+QK]
		y := dst[i*blockQ4_0 : i*blockQ4_0+blockQ4_0]
		var amax, max float32
		for _, v := range x {
			if a := abs32(v); amax < a {
				amax, max = a, v
			}
		}
		d := max / -8
		var id float32
		if d != 0 {
			id = 1 / d
		}
		put16(y, FP32ToFP16(d))
		for j := 0; j < QK/2; j++ {
			x0 := float32(x[j]*id) + 8.5
			x1 := float32(x[j+QK/2]*id) + 8.5
			y[2+j] = byte(min(15, int32(x0))) | byte(min(15, int32(x1)))<<4
		}
	}
}

// DequantizeQ4_0 expands len(dst) values from Q4_0 blocks: x = (q-8)·d.
func DequantizeQ4_0(src []byte, dst []float32) {
	for i := 0; i < len(dst)/QK; i++ {
		b := src[i*blockQ4_0 : i*blockQ4_0+blockQ4_0]
		y := dst[i*QK : i*QK+QK]
		d := halfAt(b)
		qs := b[2:18]
		for j := 0; j < QK/2; j++ {
			y[j] = float32(int32(qs[j]&0xf)-8) * d
			y[j+QK/2] = float32(int32(qs[j]>>4)-8) * d
		}
	}
}

// DotQ4_0Q8_0 is the dot product of n Q4_0 weights with n Q8_0 activations.
// Like all dots of the 32-element formats it accumulates integer sums of 4
// consecutive products in 8 float32 lanes with FMA, as ggml's x86 AVX2 kernel
// does, which makes it bit-identical to llama.cpp on x86.
func DotQ4_0Q8_0(n int, w, a []byte) float32 {
	var acc ggmlf32.Acc8
	var s [8]int32
	for i := 0; i < n/QK; i++ {
		x := w[i*blockQ4_0 : i*blockQ4_0+blockQ4_0]
		y := a[i*blockQ8_0 : i*blockQ8_0+blockQ8_0]
		qx := x[2:18]
		qy := y[2:34]
		for k := 0; k < 4; k++ {
			var lo, hi int32
			for j := 4 * k; j < 4*k+4; j++ {
				lo += (int32(qx[j]&0xf) - 8) * int32(int8(qy[j]))
				hi += (int32(qx[j]>>4) - 8) * int32(int8(qy[j+QK/2]))
			}
			s[k], s[k+4] = lo, hi
		}
		acc.MulAdd(float32(halfAt(x)*halfAt(y)), &s)
	}
	return acc.Sum()
}

// ---------------------------------------------------------------- Q4_1

// QuantizeQ4_1 quantizes as ggml's quantize_row_q4_1_ref:
// d = (max-min)/15, m = min, q = min(15, trunc((x-min)/d + 0.5)).
func QuantizeQ4_1(src []float32, dst []byte) {
	for i := 0; i < len(src)/QK; i++ {
		x := src[i*QK : i*QK+QK]
		y := dst[i*blockQ4_1 : i*blockQ4_1+blockQ4_1]
		mn, id := minScaleHeader(x, y, 15)
		for j := 0; j < QK/2; j++ {
			x0 := float32((x[j]-mn)*id) + 0.5
			x1 := float32((x[j+QK/2]-mn)*id) + 0.5
			y[4+j] = byte(min(15, int32(int8(x0)))) | byte(min(15, int32(int8(x1))))<<4
		}
	}
}

// DequantizeQ4_1 expands Q4_1 blocks: x = q·d + m.
func DequantizeQ4_1(src []byte, dst []float32) {
	for i := 0; i < len(dst)/QK; i++ {
		b := src[i*blockQ4_1 : i*blockQ4_1+blockQ4_1]
		y := dst[i*QK : i*QK+QK]
		d, m := halfAt(b), halfAt(b[2:])
		qs := b[4:20]
		for j := 0; j < QK/2; j++ {
			y[j] = float32(float32(qs[j]&0xf)*d) + m
			y[j+QK/2] = float32(float32(qs[j]>>4)*d) + m
		}
	}
}

// DotQ4_1Q8_1 is the dot product of n Q4_1 weights with n Q8_1 activations:
// Σ d_w·d_a·Σq_w·q_a + m_w·s_a, s_a being the f16 sum field of the Q8_1 block.
func DotQ4_1Q8_1(n int, w, a []byte) float32 {
	var acc ggmlf32.Acc8
	var s [8]int32
	var summs float32
	for i := 0; i < n/QK; i++ {
		x := w[i*blockQ4_1 : i*blockQ4_1+blockQ4_1]
		y := a[i*blockQ8_1 : i*blockQ8_1+blockQ8_1]
		qx := x[4:20]
		qy := y[4:36]
		for k := 0; k < 4; k++ {
			var lo, hi int32
			for j := 4 * k; j < 4*k+4; j++ {
				lo += int32(qx[j]&0xf) * int32(int8(qy[j]))
				hi += int32(qx[j]>>4) * int32(int8(qy[j+QK/2]))
			}
			s[k], s[k+4] = lo, hi
		}
		summs += float32(halfAt(x[2:]) * halfAt(y[2:]))
		acc.MulAdd(float32(halfAt(x)*halfAt(y)), &s)
	}
	return acc.Sum() + summs
}

// ---------------------------------------------------------------- Q5_0

// QuantizeQ5_0 quantizes as ggml's quantize_row_q5_0_ref: d = max/-16,
// q = min(31, trunc(x/d + 16.5)), the 5th bits packed into a u32.
func QuantizeQ5_0(src []float32, dst []byte) {
	for i := 0; i < len(src)/QK; i++ {
		x := src[i*QK : i*QK+QK]
		y := dst[i*blockQ5_0 : i*blockQ5_0+blockQ5_0]
		var amax, max float32
		for _, v := range x {
			if a := abs32(v); amax < a {
				amax, max = a, v
			}
		}
		d := max / -16
		var id float32
		if d != 0 {
			id = 1 / d
		}
		put16(y, FP32ToFP16(d))
		var qh uint32
		for j := 0; j < QK/2; j++ {
			x0 := float32(x[j]*id) + 16.5
			x1 := float32(x[j+QK/2]*id) + 16.5
			q0 := uint32(min(31, int32(x0)))
			q1 := uint32(min(31, int32(x1)))
			y[6+j] = byte(q0&0xf) | byte(q1&0xf)<<4
			qh |= (q0 >> 4) << j
			qh |= (q1 >> 4) << (j + QK/2)
		}
		putU32(y[2:], qh)
	}
}

// DequantizeQ5_0 expands Q5_0 blocks: x = (q-16)·d.
func DequantizeQ5_0(src []byte, dst []float32) {
	for i := 0; i < len(dst)/QK; i++ {
		b := src[i*blockQ5_0 : i*blockQ5_0+blockQ5_0]
		y := dst[i*QK : i*QK+QK]
		d := halfAt(b)
		qh := u32At(b[2:])
		qs := b[6:22]
		for j := 0; j < QK/2; j++ {
			h0 := int32(qh>>j) << 4 & 0x10
			h1 := int32(qh>>(j+12)) & 0x10
			y[j] = float32(int32(qs[j]&0xf)|h0-16) * d
			y[j+QK/2] = float32(int32(qs[j]>>4)|h1-16) * d
		}
	}
}

// DotQ5_0Q8_0 is the dot product of n Q5_0 weights with n Q8_0 activations.
func DotQ5_0Q8_0(n int, w, a []byte) float32 {
	var acc ggmlf32.Acc8
	var s [8]int32
	for i := 0; i < n/QK; i++ {
		x := w[i*blockQ5_0 : i*blockQ5_0+blockQ5_0]
		y := a[i*blockQ8_0 : i*blockQ8_0+blockQ8_0]
		qh := u32At(x[2:])
		qx := x[6:22]
		qy := y[2:34]
		for k := 0; k < 4; k++ {
			var lo, hi int32
			for j := 4 * k; j < 4*k+4; j++ {
				h0 := int32(qh>>j) << 4 & 0x10
				h1 := int32(qh>>(j+12)) & 0x10
				lo += (int32(qx[j]&0xf) | h0 - 16) * int32(int8(qy[j]))
				hi += (int32(qx[j]>>4) | h1 - 16) * int32(int8(qy[j+QK/2]))
			}
			s[k], s[k+4] = lo, hi
		}
		acc.MulAdd(float32(halfAt(x)*halfAt(y)), &s)
	}
	return acc.Sum()
}

// ---------------------------------------------------------------- Q5_1

// QuantizeQ5_1 quantizes as ggml's quantize_row_q5_1_ref:
// d = (max-min)/31, m = min, q = trunc((x-min)/d + 0.5).
func QuantizeQ5_1(src []float32, dst []byte) {
	for i := 0; i < len(src)/QK; i++ {
		x := src[i*QK : i*QK+QK]
		y := dst[i*blockQ5_1 : i*blockQ5_1+blockQ5_1]
		mn, id := minScaleHeader(x, y, 31)
		var qh uint32
		for j := 0; j < QK/2; j++ {
			x0 := float32((x[j]-mn)*id) + 0.5
			x1 := float32((x[j+QK/2]-mn)*id) + 0.5
			q0 := uint32(uint8(x0))
			q1 := uint32(uint8(x1))
			y[8+j] = byte(q0&0xf) | byte(q1&0xf)<<4
			qh |= (q0 & 0x10 >> 4) << j
			qh |= (q1 & 0x10 >> 4) << (j + QK/2)
		}
		putU32(y[4:], qh)
	}
}

// DequantizeQ5_1 expands Q5_1 blocks: x = q·d + m.
func DequantizeQ5_1(src []byte, dst []float32) {
	for i := 0; i < len(dst)/QK; i++ {
		b := src[i*blockQ5_1 : i*blockQ5_1+blockQ5_1]
		y := dst[i*QK : i*QK+QK]
		d, m := halfAt(b), halfAt(b[2:])
		qh := u32At(b[4:])
		qs := b[8:24]
		for j := 0; j < QK/2; j++ {
			h0 := int32(qh>>j) << 4 & 0x10
			h1 := int32(qh>>(j+12)) & 0x10
			y[j] = float32(float32(int32(qs[j]&0xf)|h0)*d) + m
			y[j+QK/2] = float32(float32(int32(qs[j]>>4)|h1)*d) + m
		}
	}
}

// DotQ5_1Q8_1 is the dot product of n Q5_1 weights with n Q8_1 activations
// (Σ d_w·d_a·Σq_w·q_a + m_w·s_a).
func DotQ5_1Q8_1(n int, w, a []byte) float32 {
	var acc ggmlf32.Acc8
	var s [8]int32
	var summs float32
	for i := 0; i < n/QK; i++ {
		x := w[i*blockQ5_1 : i*blockQ5_1+blockQ5_1]
		y := a[i*blockQ8_1 : i*blockQ8_1+blockQ8_1]
		qh := u32At(x[4:])
		qx := x[8:24]
		qy := y[4:36]
		for k := 0; k < 4; k++ {
			var lo, hi int32
			for j := 4 * k; j < 4*k+4; j++ {
				h0 := int32(qh>>j) << 4 & 0x10
				h1 := int32(qh>>(j+12)) & 0x10
				lo += (int32(qx[j]&0xf) | h0) * int32(int8(qy[j]))
				hi += (int32(qx[j]>>4) | h1) * int32(int8(qy[j+QK/2]))
			}
			s[k], s[k+4] = lo, hi
		}
		summs += float32(halfAt(x[2:]) * halfAt(y[2:]))
		acc.MulAdd(float32(halfAt(x)*halfAt(y)), &s)
	}
	return acc.Sum() + summs
}

// ---------------------------------------------------------------- Q8_0

// QuantizeQ8_0 quantizes as ggml's quantize_row_q8_0_ref (weights):
// d = amax/127, q = roundf(x·(1/d)) with halves away from zero.
func QuantizeQ8_0(src []float32, dst []byte) {
	for i := 0; i < len(src)/QK; i++ {
		x := src[i*QK : i*QK+QK]
		y := dst[i*blockQ8_0 : i*blockQ8_0+blockQ8_0]
		var amax float32
		for _, v := range x {
			amax = max(amax, abs32(v))
		}
		d := amax / 127
		var id float32
		if d != 0 {
			id = 1 / d
		}
		put16(y, FP32ToFP16(d))
		for j, v := range x {
			y[2+j] = byte(int8(roundAway(v * id)))
		}
	}
}

// QuantizeQ8_0Act quantizes activations to Q8_0 the way the x86 (AVX2) CPU
// backend's quantize_row_q8_0 does: d = amax/127, q = round-half-even(x·(127/amax)).
// This differs from QuantizeQ8_0 in rare elements.
func QuantizeQ8_0Act(src []float32, dst []byte) {
	for i := 0; i < len(src)/QK; i++ {
		x := src[i*QK : i*QK+QK]
		y := dst[i*blockQ8_0 : i*blockQ8_0+blockQ8_0]
		var amax float32
		for _, v := range x {
			amax = max(amax, abs32(v))
		}
		put16(y, FP32ToFP16(amax/127))
		var id float32
		if amax != 0 {
			id = 127 / amax
		}
		for j, v := range x {
			y[2+j] = byte(satI8(roundEven(v * id)))
		}
	}
}

// DequantizeQ8_0 expands Q8_0 blocks: x = q·d.
func DequantizeQ8_0(src []byte, dst []float32) {
	for i := 0; i < len(dst)/QK; i++ {
		b := src[i*blockQ8_0 : i*blockQ8_0+blockQ8_0]
		y := dst[i*QK : i*QK+QK]
		d := halfAt(b)
		qs := b[2:34]
		for j := range y {
			y[j] = float32(int8(qs[j])) * d
		}
	}
}

// DotQ8_0Q8_0 is the dot product of n Q8_0 weights with n Q8_0 activations.
func DotQ8_0Q8_0(n int, w, a []byte) float32 {
	var acc ggmlf32.Acc8
	var s [8]int32
	for i := 0; i < n/QK; i++ {
		x := w[i*blockQ8_0 : i*blockQ8_0+blockQ8_0]
		y := a[i*blockQ8_0 : i*blockQ8_0+blockQ8_0]
		qx := x[2:34]
		qy := y[2:34]
		for k := range s {
			j := 4 * k
			s[k] = int32(int8(qx[j]))*int32(int8(qy[j])) + int32(int8(qx[j+1]))*int32(int8(qy[j+1])) +
				int32(int8(qx[j+2]))*int32(int8(qy[j+2])) + int32(int8(qx[j+3]))*int32(int8(qy[j+3]))
		}
		acc.MulAdd(float32(halfAt(x)*halfAt(y)), &s)
	}
	return acc.Sum()
}

// ---------------------------------------------------------------- Q8_1

// QuantizeQ8_1 quantizes as ggml's quantize_row_q8_1_ref: like Q8_0 plus
// s = Σq·d (f16).
func QuantizeQ8_1(src []float32, dst []byte) {
	for i := 0; i < len(src)/QK; i++ {
		x := src[i*QK : i*QK+QK]
		y := dst[i*blockQ8_1 : i*blockQ8_1+blockQ8_1]
		var amax float32
		for _, v := range x {
			amax = max(amax, abs32(v))
		}
		d := amax / 127
		var id float32
		if d != 0 {
			id = 1 / d
		}
		put16(y, FP32ToFP16(d))
		var sum int32
		for j, v := range x {
			q := int8(roundAway(v * id))
			y[4+j] = byte(q)
			sum += int32(q)
		}
		put16(y[2:], FP32ToFP16(float32(sum)*d))
	}
}

// QuantizeQ8_1Act quantizes activations to Q8_1 the way the x86 (AVX2) CPU
// backend's quantize_row_q8_1 does: round-half-even(x·(127/amax)), d = amax/127,
// s = d·Σq rounded to f16 (d not rounded to f16 first).
//
// Known platform dependence: in a block holding ±Inf or NaN, or with an
// amax below 127/MaxFloat32, some x·id is NaN or ±Inf and Σq adds Go's
// int32 conversion of it, which the spec leaves to the implementation
// (amd64 gives -2^31, as the x86 kernel's integer indefinite; arm64
// saturates and gives 0 for NaN), so s may differ between amd64 and arm64
// there. The quants themselves (satI8) and every finite block agree.
func QuantizeQ8_1Act(src []float32, dst []byte) {
	for i := 0; i < len(src)/QK; i++ {
		x := src[i*QK : i*QK+QK]
		y := dst[i*blockQ8_1 : i*blockQ8_1+blockQ8_1]
		var amax float32
		for _, v := range x {
			amax = max(amax, abs32(v))
		}
		d := amax / 127
		put16(y, FP32ToFP16(d))
		var id float32
		if amax != 0 {
			id = 127 / amax
		}
		var sum int32
		for j, v := range x {
			q := roundEven(v * id)
			y[4+j] = byte(satI8(q))
			sum += int32(q)
		}
		put16(y[2:], FP32ToFP16(d*float32(sum)))
	}
}

// DequantizeQ8_1 expands Q8_1 blocks: x = q·d (the s field is not needed).
func DequantizeQ8_1(src []byte, dst []float32) {
	for i := 0; i < len(dst)/QK; i++ {
		b := src[i*blockQ8_1 : i*blockQ8_1+blockQ8_1]
		y := dst[i*QK : i*QK+QK]
		d := halfAt(b)
		qs := b[4:36]
		for j := range y {
			y[j] = float32(int8(qs[j])) * d
		}
	}
}

// ---------------------------------------------------------------- helpers

func abs32(f float32) float32 { return math.Float32frombits(math.Float32bits(f) &^ (1 << 31)) }

// satI8 converts a rounded float to int8 with saturation (like packs_epi16).
func satI8(f float32) int8 {
	switch {
	case f >= 127:
		return 127
	case f <= -128:
		return -128
	}
	return int8(f)
}

func u32At(b []byte) uint32 {
	_ = b[3]
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func putU32(b []byte, v uint32) {
	_ = b[3]
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

// minScaleHeader is the common start of the Q4_1 and Q5_1 reference
// quantizers: the block's min and max, d = (max-min)/levels written with
// the min as the f16 header, and the inverse scale (0 for a constant block).
func minScaleHeader(x []float32, y []byte, levels float32) (mn, id float32) {
	mn, mx := float32(math.MaxFloat32), float32(-math.MaxFloat32)
	for _, v := range x {
		if v < mn {
			mn = v
		}
		if v > mx {
			mx = v
		}
	}
	d := (mx - mn) / levels
	if d != 0 {
		id = 1 / d
	}
	put16(y, FP32ToFP16(d))
	put16(y[2:], FP32ToFP16(mn))
	return mn, id
}
