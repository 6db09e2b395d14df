package quant

import "fmt"

// DotFunc computes the dot product of n weights (bytes of the weight type)
// with n activations (bytes of the weight type's VecDotType).
type DotFunc func(n int, w, a []byte) float32

// kernels is the per-type function table, indexed by Type (ids ≤ BF16).
type kernels struct {
	dequant  func(src []byte, dst []float32)
	quant    func(src []float32, dst []byte) // weights: quantize_row_<t>_ref
	actQuant func(src []float32, dst []byte) // the CPU backend's from_float
	dot      DotFunc
}

var kernelTable = func() (k [BF16 + 1]kernels) {
	k[F32] = kernels{DequantizeF32, QuantizeF32, QuantizeF32, DotF32F32}
	k[F16] = kernels{DequantizeF16, QuantizeF16, QuantizeF16, DotF16F16}
	k[BF16] = kernels{DequantizeBF16, QuantizeBF16, QuantizeBF16, DotBF16BF16}
	k[Q4_0] = kernels{DequantizeQ4_0, QuantizeQ4_0, QuantizeQ4_0, DotQ4_0Q8_0}
	k[Q4_1] = kernels{DequantizeQ4_1, QuantizeQ4_1, QuantizeQ4_1, DotQ4_1Q8_1}
	k[Q5_0] = kernels{DequantizeQ5_0, QuantizeQ5_0, QuantizeQ5_0, DotQ5_0Q8_0}
	k[Q5_1] = kernels{DequantizeQ5_1, QuantizeQ5_1, QuantizeQ5_1, DotQ5_1Q8_1}
	k[Q8_0] = kernels{DequantizeQ8_0, QuantizeQ8_0, QuantizeQ8_0Act, DotQ8_0Q8_0}
	k[Q8_1] = kernels{DequantizeQ8_1, QuantizeQ8_1, QuantizeQ8_1Act, nil}
	k[Q2_K] = kernels{DequantizeQ2K, QuantizeQ2K, QuantizeQ2K, DotQ2KQ8K}
	k[Q3_K] = kernels{DequantizeQ3K, QuantizeQ3K, QuantizeQ3K, DotQ3KQ8K}
	k[Q4_K] = kernels{DequantizeQ4K, QuantizeQ4K, QuantizeQ4K, DotQ4KQ8K}
	k[Q5_K] = kernels{DequantizeQ5K, QuantizeQ5K, QuantizeQ5K, DotQ5KQ8K}
	k[Q6_K] = kernels{DequantizeQ6K, QuantizeQ6K, QuantizeQ6K, DotQ6KQ8K}
	k[Q8_K] = kernels{DequantizeQ8K, QuantizeQ8K, QuantizeQ8KAct, nil}
	return k
}()

func kernelsFor(t Type) *kernels {
	if int(t) >= len(kernelTable) {
		return nil
	}
	k := &kernelTable[t]
	if k.dequant == nil {
		return nil
	}
	return k
}

// DequantFor returns the dequantizer of type t (len(dst) elements from
// src), or nil if t is not supported. It does not check sizes.
func DequantFor(t Type) func(src []byte, dst []float32) {
	if k := kernelsFor(t); k != nil {
		return k.dequant
	}
	return nil
}

// QuantFor returns the reference (model-file) quantizer of type t, or nil.
func QuantFor(t Type) func(src []float32, dst []byte) {
	if k := kernelsFor(t); k != nil {
		return k.quant
	}
	return nil
}

// ActQuantFor returns the activation quantizer for type t, i.e. what the x86
// CPU backend's from_float produces (for the vec-dot types Q8_0, Q8_1, Q8_K,
// F16, BF16 and F32; for weight types it equals the reference quantizer), or nil.
func ActQuantFor(t Type) func(src []float32, dst []byte) {
	if k := kernelsFor(t); k != nil {
		return k.actQuant
	}
	return nil
}

// DotFor returns the scalar dot kernel of weight type t against activations
// of t.VecDotType(), or nil if there is none (Q8_1 and Q8_K are
// activation-only types).
func DotFor(t Type) DotFunc {
	if k := kernelsFor(t); k != nil {
		return k.dot
	}
	return nil
}

func checkSizes(t Type, n, nbytes int) error {
	rs, err := t.RowSize(n)
	if err != nil {
		return err
	}
	if rs != nbytes {
		return fmt.Errorf("%s: %d elements need %d bytes, got %d", t, n, rs, nbytes)
	}
	return nil
}

// Dequantize decodes len(dst) elements of type t from src, which must hold
// exactly that many elements.
func Dequantize(t Type, src []byte, dst []float32) error {
	k := kernelsFor(t)
	if k == nil {
		return fmt.Errorf("dequantize: unsupported type %s", t)
	}
	if err := checkSizes(t, len(dst), len(src)); err != nil {
		return fmt.Errorf("dequantize: %w", err)
	}
	k.dequant(src, dst)
	return nil
}

// Quantize encodes src as type t into dst (exactly the row size of
// len(src) elements) with llama.cpp's reference quantizer
// (quantize_row_<t>_ref, no importance matrix): the bytes llama.cpp writes
// into model files.
func Quantize(t Type, src []float32, dst []byte) error {
	k := kernelsFor(t)
	if k == nil {
		return fmt.Errorf("quantize: unsupported type %s", t)
	}
	if err := checkSizes(t, len(src), len(dst)); err != nil {
		return fmt.Errorf("quantize: %w", err)
	}
	k.quant(src, dst)
	return nil
}

// QuantizeAct encodes activations src as type t the way llama.cpp's x86 CPU
// backend converts a matmul's activations (its from_float). For Q8_0 and Q8_1
// this is the SIMD quantizer (round-half-even of x·127/amax), which differs
// from Quantize in rare elements; for the other types it equals Quantize.
func QuantizeAct(t Type, src []float32, dst []byte) error {
	k := kernelsFor(t)
	if k == nil {
		return fmt.Errorf("quantize activations: unsupported type %s", t)
	}
	if err := checkSizes(t, len(src), len(dst)); err != nil {
		return fmt.Errorf("quantize activations: %w", err)
	}
	k.actQuant(src, dst)
	return nil
}

// VecDot returns the dot product of n elements of weight type t (w) with n
// elements of t.VecDotType() (a), as ggml's vec_dot for t computes it. It
// panics if t has no dot kernel or the slices are too short.
func VecDot(t Type, n int, w, a []byte) float32 {
	k := kernelsFor(t)
	if k == nil || k.dot == nil {
		panic(fmt.Sprintf("quant.VecDot: no dot kernel for %s", t))
	}
	ws, err := t.RowSize(n)
	if err != nil {
		panic("quant.VecDot: " + err.Error())
	}
	as, err := t.VecDotType().RowSize(n)
	if err != nil {
		panic("quant.VecDot: " + err.Error())
	}
	if len(w) < ws || len(a) < as {
		panic(fmt.Sprintf("quant.VecDot: %s×%s of %d elements needs %d and %d bytes, got %d and %d",
			t, t.VecDotType(), n, ws, as, len(w), len(a)))
	}
	return k.dot(n, w, a)
}
