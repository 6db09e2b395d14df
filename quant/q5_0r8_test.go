package quant

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
)

// TestQ5_0r8 checks the eight-row Q5_0 layout: every row unpacks to its
// GGUF bytes (raw random bytes too, so every fifth bit must survive), Pack
// refuses what is not whole tiles, and the oracle gives the bits of
// DotR16 (the sixteen-row layout's order, the same per row) for the same
// rows.
func TestQ5_0r8(t *testing.T) {
	for _, plain := range []Type{Q5_0, Q4_0, Q5_1, Q4_1} {
		testR8Legacy(t, plain)
	}
}

func testR8Legacy(t *testing.T, plain Type) {
	r := rand.New(rand.NewPCG(5, 8))
	pt := PackedR8Legacy(plain)
	if Unpacked(pt) != plain || GroupRows(pt) != 8 || !pt.PlanOnly() || pt.VecDotType() != plain.VecDotType() || pt.TypeSize() != plain.TypeSize() {
		t.Fatalf("%s: type traits wrong", pt)
	}
	for _, k := range []int{32, 96, 896, 4864} {
		nb := k / QK
		rs := nb * plain.TypeSize()
		src := r16TestRows(r, plain, 16, k)
		raw := bytes.Clone(src)
		for i := range raw[:rs*8] {
			raw[i] = byte(r.Uint32())
		}
		dst := make([]byte, len(src))
		if err := Pack(pt, dst, raw, k); err != nil {
			t.Fatal(err)
		}
		row := make([]byte, rs)
		for n := 0; n < 16; n++ {
			if err := UnpackRow(pt, row, dst[n/8*8*rs:], nb, n%8); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(row, raw[n*rs:(n+1)*rs]) {
				t.Fatalf("%s K=%d row %d: unpacked bytes differ", pt, k, n)
			}
		}
		if err := Pack(pt, dst[:len(dst)-rs], src[:len(src)-rs], k); err == nil {
			t.Errorf("K=%d: Pack of 15 rows did not fail", k)
		}
		if err := Pack(pt, dst, src, k); err != nil {
			t.Fatal(err)
		}
		x := make([]float32, k)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		a := make([]byte, nb*plain.VecDotType().TypeSize())
		if err := Quantize(plain.VecDotType(), x, a); err != nil {
			t.Fatal(err)
		}
		var y8 [16]float32
		DotR8(pt, dst, a, nb, y8[:8])
		DotR8(pt, dst[8*rs:], a, nb, y8[8:])
		if r16t := PackedR16(plain); r16t != 0 {
			r16 := make([]byte, len(src))
			if err := Pack(r16t, r16, src, k); err != nil {
				t.Fatal(err)
			}
			var y16 [16]float32
			DotR16(r16t, r16, a, nb, y16[:])
			for n := 0; n < 16; n++ {
				if math.Float32bits(y8[n]) != math.Float32bits(y16[n]) {
					t.Errorf("%s K=%d row %d: %v, DotR16 %v", pt, k, n, y8[n], y16[n])
				}
			}
		}
		dot := DotFor(plain)
		for n := 0; n < 16; n++ {
			want := dot(k, src[n*rs:(n+1)*rs], a)
			if d := math.Abs(float64(y8[n] - want)); d > 1e-5*math.Sqrt(float64(k))*(1+math.Abs(float64(want))) {
				t.Errorf("K=%d row %d: %v, vec_dot %v", k, n, y8[n], want)
			}
		}
	}
}
