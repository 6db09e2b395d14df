package quant

import "math"

// fp16Table maps every IEEE binary16 bit pattern to its float32 value, like
// ggml's ggml_table_f32_f16. Lookups keep the f16 inner loops branch-free.
var fp16Table = func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = fp16ToFP32Slow(uint16(i))
	}
	return &t
}()

// fp16ToFP32Slow converts a half by bit manipulation (exact; subnormals,
// infinities and NaN payloads included).
func fp16ToFP32Slow(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f: // inf / NaN
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp != 0: // normal
		return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
	case mant == 0: // signed zero
		return math.Float32frombits(sign)
	}
	// Subnormal half: mant * 2^-24, exactly representable as a normal float32.
	e := uint32(113) // biased exponent of 2^-14
	for mant&0x400 == 0 {
		mant <<= 1
		e--
	}
	return math.Float32frombits(sign | e<<23 | (mant&0x3ff)<<13)
}

// FP16ToFP32 converts an IEEE binary16 bit pattern to float32 (exact).
func FP16ToFP32(h uint16) float32 { return fp16Table[h] }

// FP32ToFP16 converts f to IEEE binary16 with round-to-nearest-even, as
// ggml's GGML_FP32_TO_FP16 (and the F16C instruction) does. Overflow gives
// ±inf, NaN gives a quiet NaN (0x7e00 with the sign).
func FP32ToFP16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	a := b & 0x7fffffff
	switch {
	case a > 0x7f800000: // NaN
		return sign | 0x7e00
	case a >= 0x477ff000: // >= 65520 rounds to infinity
		return sign | 0x7c00
	case a >= 0x38800000: // result is a normal half (|f| >= 2^-14)
		m := a - 112<<23 // rebias the exponent from 127 to 15
		m += 0x0fff + (m>>13)&1
		return sign | uint16(m>>13)
	case a >= 0x33000000: // result is a subnormal half (or rounds to 2^-14)
		e := a >> 23
		mant := a&0x7fffff | 0x800000
		shift := 126 - e // 14..24
		r := mant >> shift
		rem := mant & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || rem == half && r&1 == 1 {
			r++
		}
		return sign | uint16(r)
	}
	return sign
}

// BF16ToFP32 converts a bfloat16 bit pattern to float32 (exact).
func BF16ToFP32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// FP32ToBF16 converts f to bfloat16 with round-to-nearest-even on the top 16
// bits, as ggml's GGML_FP32_TO_BF16: NaNs are made quiet (bit 6 set),
// subnormals are kept (not flushed).
func FP32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 64
	}
	return uint16((u + 0x7fff + (u>>16)&1) >> 16)
}

// nearestInt rounds to the nearest integer, halves to even, the way ggml's
// nearest_int does it (adding 1.5·2^23 in float32). Valid for |f| < 2^22.
func nearestInt(f float32) int32 {
	v := f + 12582912
	return int32(math.Float32bits(v)&0x007fffff) - 0x00400000
}

// roundAway is C's roundf: round to nearest, halves away from zero.
func roundAway(f float32) float32 { return float32(math.Round(float64(f))) }

// roundEven rounds halves to even, like _mm256_round_ps(_MM_ROUND_NEAREST).
func roundEven(f float32) float32 { return float32(math.RoundToEven(float64(f))) }

func le16(b []byte) uint16 { return uint16(b[0]) | uint16(b[1])<<8 }

func put16(b []byte, v uint16) { b[0] = byte(v); b[1] = byte(v >> 8) }

func halfAt(b []byte) float32 { return fp16Table[uint16(b[0])|uint16(b[1])<<8] }
