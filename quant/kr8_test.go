package quant

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
)

// TestR8PackUnpack checks that every row of a packed Q4_K matrix unpacks
// to its GGUF bytes (random bytes too: every bit pattern of the packed
// scales must survive), and that Pack refuses what is not whole tiles.
func TestR8PackUnpack(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 8))
	for _, plain := range []Type{Q4_K, Q5_K, Q6_K, Q3_K, Q2_K} {
		pt := PackedR8(plain)
		if Unpacked(pt) != plain || GroupRows(pt) != 8 || !pt.PlanOnly() || pt.VecDotType() != Q8_K || pt.TypeSize() != plain.TypeSize() {
			t.Fatalf("%s: type traits wrong", pt)
		}
		for _, k := range []int{256, 1024, 3072} {
			nb := k / QKK
			rs := nb * plain.TypeSize()
			src := r16TestRows(r, plain, 24, k)
			for i := range src[:rs*8] {
				src[i] = byte(r.Uint32())
			}
			dst := make([]byte, len(src))
			if err := Pack(pt, dst, src, k); err != nil {
				t.Fatal(err)
			}
			row := make([]byte, rs)
			for n := 0; n < 24; n++ {
				if err := UnpackRow(pt, row, dst[n/8*8*rs:], nb, n%8); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(row, src[n*rs:(n+1)*rs]) {
					t.Fatalf("%s K=%d row %d: unpacked bytes differ", pt, k, n)
				}
			}
			if err := Pack(pt, dst[:len(dst)-rs], src[:len(src)-rs], k); err == nil {
				t.Errorf("%s: Pack of 23 rows did not fail", pt)
			}
		}
	}
}

// TestDotR8 checks the oracle against the vec_dot order: the same exact
// integer sums, so the two differ only by float rounding.
func TestDotR8(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 8))
	for _, plain := range []Type{Q4_K, Q5_K, Q6_K, Q3_K, Q2_K} {
		pt := PackedR8(plain)
		dot := DotFor(plain)
		for _, k := range []int{256, 1024, 4864 / 256 * 256} {
			nb := k / QKK
			rs := nb * plain.TypeSize()
			src := r16TestRows(r, plain, 8, k)
			tile := make([]byte, len(src))
			if err := Pack(pt, tile, src, k); err != nil {
				t.Fatal(err)
			}
			x := make([]float32, k)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			a := make([]byte, nb*blockQ8K)
			if err := Quantize(Q8_K, x, a); err != nil {
				t.Fatal(err)
			}
			var y [8]float32
			DotR8(pt, tile, a, nb, y[:])
			for n := 0; n < 8; n++ {
				want := dot(k, src[n*rs:(n+1)*rs], a)
				if d := math.Abs(float64(y[n] - want)); d > 1e-5*math.Sqrt(float64(k))*(1+math.Abs(float64(want))) {
					t.Errorf("%s K=%d row %d: %v, vec_dot %v", pt, k, n, y[n], want)
				}
			}
		}
	}
}
