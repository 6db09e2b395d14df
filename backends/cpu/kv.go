package cpu

import (
	"fmt"

	"github.com/minfer/minfer/quant"
)

// KV caches are row-major [ctx][width]: row p holds the keys (or values) of
// position p for all KV heads side by side (head h at columns
// h*headDim..(h+1)*headDim). An f32 cache is a []float32 of ctx*width
// values; an f16 cache a []byte of ctx*width little-endian halves; a q8_0
// cache a []byte of ctx rows of width/32 Q8_0 blocks (34 bytes each), so a
// head's width must be a multiple of 32.
//
// The stores write the tokens of a batch, x [len(pos)][width], to the cache
// rows pos[t], on columns c0..c1 (whole q8_0 blocks for q8_0). For a split
// by token rows, pass x[r0*width:] and pos[r0:r1].

// KVStoreF32 stores cache[pos[t]*width + c] = x[t*width + c].
func KVStoreF32(cache []float32, width int, x []float32, pos []int32, c0, c1 int) {
	for t, p := range pos {
		o := int(p) * width
		copy(cache[o+c0:o+c1], x[t*width+c0:t*width+c1])
	}
}

// KVStoreF16 stores x converted to f16 (round to nearest even, as ggml's
// GGML_FP32_TO_FP16: quant.QuantizeF16's bits).
func KVStoreF16(cache []byte, width int, x []float32, pos []int32, c0, c1 int) {
	for t, p := range pos {
		o := int(p) * width
		toF16Row(cache[2*(o+c0):2*(o+c1)], x[t*width+c0:t*width+c1])
	}
}

// toF16Row is quant.QuantizeF16(src, dst): with a float32 SIMD tier the
// chunks without a NaN go through VCVTPS2PH (round to nearest even gives
// the IEEE conversion, which is FP32ToFP16's for infinities, overflow,
// subnormal results and zeros alike), and the NaN chunks and the tail through
// Go (FP32ToFP16 makes every NaN the quiet 0x7e00 with its sign, where
// VCVTPS2PH would keep part of the payload).
func toF16Row(dst []byte, src []float32) {
	dst = dst[:2*len(src)]
	t := f32k
	if t == nil || t.toF16 == nil {
		quant.QuantizeF16(src, dst)
		return
	}
	for i := 0; i < len(src); {
		if len(src)-i >= lanes {
			i += t.toF16(&dst[2*i], &src[i], len(src)-i)
		}
		e := min(len(src), i+lanes)
		quant.QuantizeF16(src[i:e], dst[2*i:2*e])
		i = e
	}
}

// q8Bytes is the size of the Q8_0 encoding of n values (n a multiple of 32).
func q8Bytes(n int) int { return n / quant.QK * 34 }

// KVStoreQ8_0 stores x quantized to Q8_0 with the CPU backend's activation
// quantizer (ggml's from_float for q8_0, what llama.cpp uses to write a
// q8_0 cache; quant.QuantizeQ8_0Act's bits, through the SIMD quantizer when
// there is one). c0 and c1 must be multiples of 32.
func KVStoreQ8_0(cache []byte, width int, x []float32, pos []int32, c0, c1 int) {
	rb := q8Bytes(width)
	for t, p := range pos {
		o := int(p) * rb
		quantizeQ8Act(x[t*width+c0:t*width+c1], cache[o+q8Bytes(c0):o+q8Bytes(c1)])
	}
}

// KVCache is one K or V cache of Rows positions of Width values: F holds an
// f32 cache, B an f16 or q8_0 one (layouts above); Type says which of the
// two a B holds (quant.Q8_0 for q8_0, anything else is f16).
type KVCache struct {
	Rows, Width int
	Type        quant.Type
	F           []float32
	B           []byte
}

// KV is the store and attention kernel pair of one cache type, chosen once
// by NewKV (the compiler's --kv-type).
type KV struct {
	Type quant.Type

	store  func(c *KVCache, x []float32, pos []int32, c0, c1 int)
	attend func(y, q []float32, kc, vc *KVCache, pos []int32, nHead, nHeadKV, headDim int, scale float32, kvh0, kvh1, t0, t1 int, s *AttnScratch)
}

// NewKV returns the kernels of a cache of type t (f32, f16 or q8_0).
func NewKV(t quant.Type) (*KV, error) {
	k := &KV{Type: t}
	switch t {
	case quant.F32:
		k.store = func(c *KVCache, x []float32, pos []int32, c0, c1 int) { KVStoreF32(c.F, c.Width, x, pos, c0, c1) }
		k.attend = func(y, q []float32, kc, vc *KVCache, pos []int32, nHead, nHeadKV, headDim int, scale float32, kvh0, kvh1, t0, t1 int, s *AttnScratch) {
			AttentionHeads(y, q, kc.F, vc.F, pos, nHead, nHeadKV, headDim, scale, kvh0, kvh1, t0, t1, s)
		}
	case quant.F16:
		k.store = func(c *KVCache, x []float32, pos []int32, c0, c1 int) { KVStoreF16(c.B, c.Width, x, pos, c0, c1) }
		k.attend = func(y, q []float32, kc, vc *KVCache, pos []int32, nHead, nHeadKV, headDim int, scale float32, kvh0, kvh1, t0, t1 int, s *AttnScratch) {
			AttentionHeadsF16(y, q, kc.B, vc.B, pos, nHead, nHeadKV, headDim, scale, kvh0, kvh1, t0, t1, s)
		}
	case quant.Q8_0:
		k.store = func(c *KVCache, x []float32, pos []int32, c0, c1 int) { KVStoreQ8_0(c.B, c.Width, x, pos, c0, c1) }
		k.attend = func(y, q []float32, kc, vc *KVCache, pos []int32, nHead, nHeadKV, headDim int, scale float32, kvh0, kvh1, t0, t1 int, s *AttnScratch) {
			AttentionHeadsQ8_0(y, q, kc.B, vc.B, pos, nHead, nHeadKV, headDim, scale, kvh0, kvh1, t0, t1, s)
		}
	default:
		return nil, fmt.Errorf("cpu kv cache: unsupported type %s (want f32, f16 or q8_0)", t)
	}
	return k, nil
}

// AttendFlash runs flash attention (FlashHeads) for the query heads of KV
// heads kvh0..kvh1 and the batch tokens t0..t1.
func (k *KV) AttendFlash(y, q []float32, kc, vc *KVCache, pos []int32, nHead, nHeadKV, headDim int, scale float32, kvh0, kvh1, t0, t1 int, s *AttnScratch) {
	FlashHeads(y, q, kc, vc, pos, nHead, nHeadKV, headDim, scale, kvh0, kvh1, t0, t1, s)
}

// CheckFlash reports whether the flash attention kernels read this cache
// type (f32, f16 and q8_0: every type NewKV accepts).
func (k *KV) CheckFlash() error {
	if k.Type != quant.F32 && k.Type != quant.F16 && k.Type != quant.Q8_0 {
		return fmt.Errorf("cpu kv cache: flash attention reads f32, f16 and q8_0 caches, not %s", k.Type)
	}
	return nil
}

// Check reports whether heads of headDim values fit the cache type.
func (k *KV) Check(headDim int) error {
	if k.Type == quant.Q8_0 && headDim%quant.QK != 0 {
		return fmt.Errorf("cpu kv cache: q8_0 needs a head size that is a multiple of %d, got %d", quant.QK, headDim)
	}
	return nil
}

// NewCache allocates an empty cache of rows positions of width values (for
// setup, not for the decode loop).
func (k *KV) NewCache(rows, width int) *KVCache {
	c := &KVCache{Rows: rows, Width: width, Type: k.Type}
	switch k.Type {
	case quant.F32:
		c.F = make([]float32, rows*width)
	case quant.F16:
		c.B = make([]byte, 2*rows*width)
	default:
		c.B = make([]byte, rows*q8Bytes(width))
	}
	return c
}

// Store writes the batch x to the cache (see KVStoreF32).
func (k *KV) Store(c *KVCache, x []float32, pos []int32, c0, c1 int) {
	k.store(c, x, pos, c0, c1)
}

// Attend runs attention for the query heads of KV heads kvh0..kvh1 and the
// batch tokens t0..t1 (see AttentionHeads).
func (k *KV) Attend(y, q []float32, kc, vc *KVCache, pos []int32, nHead, nHeadKV, headDim int, scale float32, kvh0, kvh1, t0, t1 int, s *AttnScratch) {
	k.attend(y, q, kc, vc, pos, nHead, nHeadKV, headDim, scale, kvh0, kvh1, t0, t1, s)
}
