package ggmlf32

import (
	"math"
	"testing"
)

// sincosfVectors are {x, sinf(x), cosf(x)} as float32 bits from glibc 2.36
// (Debian 12, x86-64 with FMA, the __sincosf_fma variant). The first eight
// are RoPE angles (position·10000^(-2i/128) stepped in float32) where glibc
// differs from the correctly rounded result; the last three once failed an
// exhaustive comparison (the |x| < 120 boundary). SinCosF was compared with
// glibc on all 2^32 inputs with no mismatch.
var sincosfVectors = [][3]uint32{
	{0x3e5247f1, 0x3e50ce65, 0x3f7a9f09},
	{0x3e36188b, 0x3e35233e, 0x3f7bf683},
	{0x3f836cf9, 0x3f5b0a71, 0x3f0480da},
	{0x3e605cf4, 0x3e5e927f, 0x3f79e132},
	{0x3e959350, 0x3e9374f8, 0x3f75273b},
	{0x40cfcd59, 0x3e56186c, 0x3f7a5798},
	{0x3ef953dd, 0x3eef96f0, 0x3f623dd1},
	{0x3c7c4d50, 0x3c7c4ac3, 0x3f7ff83b},
	{0x00000000, 0x00000000, 0x3f800000},
	{0x80000000, 0x80000000, 0x3f800000},
	{0x3727c5ac, 0x3727c5ac, 0x3f800000},
	{0xbf000000, 0xbef57744, 0x3f60a940},
	{0x3f49096c, 0x3f350067, 0x3f35097f},
	{0x3f490ff9, 0x3f350509, 0x3f3504de},
	{0x3f800000, 0x3f576aa4, 0x3f0a5140},
	{0xc0400000, 0xbe1081c3, 0xbf7d7026},
	{0x42c80000, 0xbf01a12e, 0x3f5cc0ee},
	{0x42effae1, 0x3f128b58, 0x3f51e814},
	{0x42f00000, 0x3f14a2ef, 0x3f506e2a},
	{0xc2f00000, 0xbf14a2ef, 0x3f506e2a},
	{0x42e87a55, 0xb5d2257c, 0xbf800000},
	{0x447a0000, 0x3f53ae61, 0x3f0ff813},
	{0xc640e6b6, 0x3f344b08, 0x3f35be20},
	{0x49742400, 0xbeb33259, 0x3f6fcefd},
	{0x7f7fc99e, 0xbe79f163, 0x3f7841ca},
	{0xe0ad78ec, 0xbf281569, 0x3f411723},
	{0x42e87a55, 0xb5d2257c, 0xbf800000},
	{0x42eb9c26, 0xbf7fff43, 0xbb9b8d59},
	{0xc2e87a55, 0x35d2257c, 0xbf800000},
}

func TestSinCosFMatchesGlibc(t *testing.T) {
	for _, v := range sincosfVectors {
		x := math.Float32frombits(v[0])
		s, c := SinCosF(x)
		if math.Float32bits(s) != v[1] || math.Float32bits(c) != v[2] {
			t.Errorf("SinCosF(%v [%#08x]) = %v, %v [%#08x %#08x], glibc %v, %v",
				x, v[0], s, c, math.Float32bits(s), math.Float32bits(c),
				math.Float32frombits(v[1]), math.Float32frombits(v[2]))
		}
	}
}

// TestSinCosFNotCorrectlyRounded documents why SinCosF exists: glibc's cosf
// of these angles is not float32(math.Cos(x)).
func TestSinCosFNotCorrectlyRounded(t *testing.T) {
	n := 0
	for _, v := range sincosfVectors[:8] {
		x := float64(math.Float32frombits(v[0]))
		if math.Float32bits(float32(math.Sin(x))) != v[1] || math.Float32bits(float32(math.Cos(x))) != v[2] {
			n++
		}
	}
	if n != 8 {
		t.Errorf("%d of 8 vectors differ from the correctly rounded sin/cos, want 8", n)
	}
}

func TestSinCosFNaN(t *testing.T) {
	for _, x := range []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())} {
		if s, c := SinCosF(x); s == s || c == c {
			t.Errorf("SinCosF(%v) = %v, %v, want NaN", x, s, c)
		}
	}
}

func TestRopePair(t *testing.T) {
	// One FMA per output with the other product rounded: choose values
	// where the fused and unfused results differ.
	x0, x1 := float32(1.0000001), float32(0.99999994)
	c, s := float32(0.70710677), float32(0.7071068)
	a0, a1 := RopePair(x0, x1, c, s)
	w0 := float32(math.FMA(float64(x0), float64(c), -float64(float32(x1*s))))
	w1 := float32(math.FMA(float64(x0), float64(s), float64(float32(x1*c))))
	if a0 != w0 || a1 != w1 {
		t.Errorf("RopePair = %v %v, want %v %v", a0, a1, w0, w1)
	}
	if !RopeNormalFused(0, 32) || !RopeNormalFused(31, 32) || RopeNormalFused(33, 34) || RopeNormalFused(0, 6) {
		t.Error("RopeNormalFused")
	}
}
