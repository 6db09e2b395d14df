package quant

import (
	"encoding/binary"
	"math"
)

// DequantizeF32 decodes len(dst) little-endian float32 values from src.
func DequantizeF32(src []byte, dst []float32) {
	src = src[:4*len(dst)]
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i : 4*i+4]))
	}
}

// QuantizeF32 encodes src as little-endian float32 bytes.
func QuantizeF32(src []float32, dst []byte) {
	dst = dst[:4*len(src)]
	for i, v := range src {
		putU32(dst[4*i:], math.Float32bits(v))
	}
}

// DequantizeF16 decodes len(dst) IEEE halves from src.
func DequantizeF16(src []byte, dst []float32) {
	src = src[:2*len(dst)]
	for i := range dst {
		dst[i] = fp16Table[uint16(src[2*i])|uint16(src[2*i+1])<<8]
	}
}

// QuantizeF16 encodes src as IEEE halves (round-to-nearest-even).
func QuantizeF16(src []float32, dst []byte) {
	dst = dst[:2*len(src)]
	for i, v := range src {
		put16(dst[2*i:], FP32ToFP16(v))
	}
}

// DequantizeBF16 decodes len(dst) bfloat16 values from src.
func DequantizeBF16(src []byte, dst []float32) {
	src = src[:2*len(dst)]
	for i := range dst {
		dst[i] = math.Float32frombits(uint32(src[2*i])<<16 | uint32(src[2*i+1])<<24)
	}
}

// QuantizeBF16 encodes src as bfloat16 (ggml's rounding, see FP32ToBF16).
func QuantizeBF16(src []float32, dst []byte) {
	dst = dst[:2*len(src)]
	for i, v := range src {
		put16(dst[2*i:], FP32ToBF16(v))
	}
}

// DotF32F32 is the dot product of n float32 values stored as bytes, summed
// in float64 like ggml's scalar ggml_vec_dot_f32.
func DotF32F32(n int, w, a []byte) float32 {
	w, a = w[:4*n], a[:4*n]
	var s float64
	for i := 0; i+4 <= len(w); i += 4 {
		x := math.Float32frombits(binary.LittleEndian.Uint32(w[i : i+4]))
		y := math.Float32frombits(binary.LittleEndian.Uint32(a[i : i+4]))
		s += float64(x * y)
	}
	return float32(s)
}

// DotF16F16 is the dot product of n f16 weights with n f16 activations. The
// products are exact in float32 and summed in float64 (ggml_vec_dot_f16's
// scalar path accumulates in double).
func DotF16F16(n int, w, a []byte) float32 {
	w, a = w[:2*n], a[:2*n]
	var s float64
	for i := 0; i < n; i++ {
		x := fp16Table[uint16(w[2*i])|uint16(w[2*i+1])<<8]
		y := fp16Table[uint16(a[2*i])|uint16(a[2*i+1])<<8]
		s += float64(x * y)
	}
	return float32(s)
}

// DotBF16BF16 is the dot product of n bf16 weights with n bf16 activations
// (exact float32 products, float64 sum).
func DotBF16BF16(n int, w, a []byte) float32 {
	w, a = w[:2*n], a[:2*n]
	var s float64
	for i := 0; i < n; i++ {
		x := math.Float32frombits(uint32(w[2*i])<<16 | uint32(w[2*i+1])<<24)
		y := math.Float32frombits(uint32(a[2*i])<<16 | uint32(a[2*i+1])<<24)
		s += float64(x * y)
	}
	return float32(s)
}
