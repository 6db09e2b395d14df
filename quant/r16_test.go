package quant

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
)

// r16TestRows returns n random rows of k elements of plain (Q8_0, Q4_K, ...),
// quantized from random floats.
func r16TestRows(r *rand.Rand, plain Type, n, k int) []byte {
	x := make([]float32, k)
	rs := k / plain.BlockSize() * plain.TypeSize()
	out := make([]byte, n*rs)
	for i := 0; i < n; i++ {
		for j := range x {
			x[j] = float32(r.NormFloat64())
		}
		row := out[i*rs : (i+1)*rs]
		if err := Quantize(plain, x, row); err != nil {
			panic(err)
		}
	}
	return out
}

// TestR16PackUnpack checks that every row of a packed matrix unpacks to
// its GGUF bytes, and that Pack refuses what is not whole tiles.
func TestR16PackUnpack(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 16))
	for _, plain := range []Type{Q8_0, Q5_0, Q4_0} {
		pt := PackedR16(plain)
		if Unpacked(pt) != plain || GroupRows(pt) != 16 || !pt.PlanOnly() || pt.VecDotType() != Q8_0 {
			t.Fatalf("%s: type traits wrong", pt)
		}
		for _, k := range []int{32, 96, 896} {
			nb := k / QK
			rs := nb * plain.TypeSize()
			src := r16TestRows(r, plain, 48, k)
			// raw bytes too: every bit pattern must survive
			for i := range src[:rs*16] {
				src[i] = byte(r.Uint32())
			}
			dst := make([]byte, len(src))
			if err := Pack(pt, dst, src, k); err != nil {
				t.Fatal(err)
			}
			row := make([]byte, rs)
			for n := 0; n < 48; n++ {
				if err := UnpackRow(pt, row, dst[n/16*16*rs:], nb, n%16); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(row, src[n*rs:(n+1)*rs]) {
					t.Fatalf("%s K=%d row %d: unpacked bytes differ", pt, k, n)
				}
			}
			if err := Pack(pt, dst[:len(dst)-rs], src[:len(src)-rs], k); err == nil {
				t.Errorf("%s: Pack of 47 rows did not fail", pt)
			}
		}
	}
}

// TestDotR16 checks the oracle against the vec_dot order: the same exact
// block sums, so the two differ only by float rounding.
func TestDotR16(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 16))
	for _, plain := range []Type{Q8_0, Q5_0, Q4_0} {
		pt := PackedR16(plain)
		dot := DotFor(plain)
		for _, k := range []int{32, 256, 4864} {
			nb := k / QK
			rs := nb * plain.TypeSize()
			src := r16TestRows(r, plain, 16, k)
			tile := make([]byte, len(src))
			if err := Pack(pt, tile, src, k); err != nil {
				t.Fatal(err)
			}
			a := r16TestRows(r, Q8_0, 1, k)
			var y [16]float32
			DotR16(pt, tile, a, nb, y[:])
			for n := 0; n < 16; n++ {
				want := dot(k, src[n*rs:(n+1)*rs], a)
				if d := math.Abs(float64(y[n] - want)); d > 1e-5*math.Sqrt(float64(k))*(1+math.Abs(float64(want))) {
					t.Errorf("%s K=%d row %d: %v, vec_dot %v", pt, k, n, y[n], want)
				}
			}
		}
	}
}
