package quant

import (
	"encoding/binary"
	"math"

	"github.com/minfer/minfer/internal/ggmlf32"
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

// DotF16F16 is the dot product of n f16 weights with n f16 activations in
// the order llama.cpp's ggml_vec_dot_f16 has in an AVX-512 build (its
// fixture dot products are these bits): four float32 accumulators of 16
// lanes over steps of 64 elements, lane l of accumulator j adding the
// product of element 64s+16j+l (exact in float32: f16 significands have 11
// bits); then GGML_F32x16_REDUCE (a0+a2 and a1+a3, then their sum) and
// _mm512_reduce_add_ps (ggmlf32.Reduce16); the result widened to float64 and
// the n mod 64 products of the tail added to it in float64, one at a time.
func DotF16F16(n int, w, a []byte) float32 {
	w, a = w[:2*n], a[:2*n]
	var acc [4][16]float32
	np := n &^ 63
	for i := 0; i < np; i += 64 {
		for j := range acc {
			for l := range acc[j] {
				k := 2 * (i + 16*j + l)
				acc[j][l] += fp16Table[uint16(w[k])|uint16(w[k+1])<<8] * fp16Table[uint16(a[k])|uint16(a[k+1])<<8]
			}
		}
	}
	for l := range acc[0] {
		acc[0][l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l])
	}
	s := float64(ggmlf32.Reduce16(&acc[0]))
	for i := np; i < n; i++ {
		x := fp16Table[uint16(w[2*i])|uint16(w[2*i+1])<<8]
		y := fp16Table[uint16(a[2*i])|uint16(a[2*i+1])<<8]
		s += float64(x * y)
	}
	return float32(s)
}

// DotBF16BF16 is the dot product of n bf16 weights with n bf16 activations
// in the order of llama.cpp's ggml_vec_dot_bf16 in an AVX2 build: four
// float32 accumulators of 8 lanes over steps of 32 elements, lane l of
// accumulator j adding the product of element 32s+8j+l in one fused
// multiply-add (the source writes _mm256_mul_ps then _mm256_add_ps, and
// GCC contracts them: the AVX2 build's object code has VFMADD231PS); then
// c = (c1+c3) + (c2+c4) and ggmlf32.HSum8 of it; widened to float64 and
// the n mod 32 products of the tail, each rounded to float32, added in
// float64 one at a time.
//
// The fused add is computed in float64 and rounded to float32: the product
// of two bf16 values (8-bit significands) is exact in float64, and the
// rounding of the sum to float64 and then to float32 gives the correctly
// rounded float32 sum, because a float32 accumulator's 24 bits and the
// product's 16 are either within float64's 53 bits of each other (the sum
// is exact in float64) or the smaller one lies far below the other's last
// bit, where neither rounding can reach a float32 tie.
// (An AVX-512 BF16 build of llama.cpp uses VDPBF16PS, another order and
// flushes subnormals; the fixture tests bound the difference.)
func DotBF16BF16(n int, w, a []byte) float32 {
	w, a = w[:2*n], a[:2*n]
	var acc [4][8]float32
	np := n &^ 31
	for i := 0; i < np; i += 32 {
		for j := range acc {
			for l := range acc[j] {
				k := 2 * (i + 8*j + l)
				x := math.Float32frombits(uint32(w[k])<<16 | uint32(w[k+1])<<24)
				y := math.Float32frombits(uint32(a[k])<<16 | uint32(a[k+1])<<24)
				acc[j][l] = float32(float64(acc[j][l]) + float64(x)*float64(y)) // fused
			}
		}
	}
	for l := range acc[0] {
		acc[0][l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l])
	}
	s := float64(ggmlf32.HSum8(&acc[0]))
	for i := np; i < n; i++ {
		x := math.Float32frombits(uint32(w[2*i])<<16 | uint32(w[2*i+1])<<24)
		y := math.Float32frombits(uint32(a[2*i])<<16 | uint32(a[2*i+1])<<24)
		s += float64(x * y)
	}
	return float32(s)
}
