package quant

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/minfer/minfer/internal/ggmlf32"
)

// TestDotBF16Fused checks DotBF16BF16's fused multiply-add (each lane's
// sum rounded once, as VFMADD231PS does) against an independent one: the
// exact sum in math/big, rounded to float32 once by Float32 (subnormals
// included), on rows whose products fall below float32's normal range —
// where a product rounded before its add gives other bits, which the test
// also requires to happen, so that it can tell the two apart.
func TestDotBF16Fused(t *testing.T) {
	r := rand.New(rand.NewPCG(171, 172))
	bf := func(scale float64) uint16 {
		return FP32ToBF16(float32(r.NormFloat64() * scale))
	}
	const n = 32*40 + 7
	differs := 0
	for trial := 0; trial < 40; trial++ {
		w, a := make([]byte, 2*n), make([]byte, 2*n)
		ws, as := math.Ldexp(1, -60-r.IntN(20)), math.Ldexp(1, -60-r.IntN(20))
		if trial%4 == 0 {
			ws, as = 1, 1e-3 // normal products too
		}
		for i := 0; i < n; i++ {
			put16(w[2*i:], bf(ws))
			put16(a[2*i:], bf(as))
		}
		val := func(b []byte, i int) float32 {
			return math.Float32frombits(uint32(b[2*i])<<16 | uint32(b[2*i+1])<<24)
		}
		var fused, split [4][8]float32
		np := n &^ 31
		for i := 0; i < np; i += 32 {
			for j := 0; j < 4; j++ {
				for l := 0; l < 8; l++ {
					x, y := val(w, i+8*j+l), val(a, i+8*j+l)
					z := new(big.Float).SetPrec(400).SetFloat64(float64(x))
					z.Mul(z, new(big.Float).SetPrec(400).SetFloat64(float64(y)))
					z.Add(z, new(big.Float).SetPrec(400).SetFloat64(float64(fused[j][l])))
					fused[j][l], _ = z.Float32()
					split[j][l] += float32(x * y)
				}
			}
		}
		sum := func(acc *[4][8]float32) float32 {
			var c [8]float32
			for l := range c {
				c[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l])
			}
			s := float64(ggmlf32.HSum8(&c))
			for i := np; i < n; i++ {
				s += float64(val(w, i) * val(a, i))
			}
			return float32(s)
		}
		want, unfused := sum(&fused), sum(&split)
		got := DotBF16BF16(n, w, a)
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("trial %d: DotBF16BF16 = %g (%#08x), fused lanes give %g (%#08x)", trial, got, math.Float32bits(got), want, math.Float32bits(want))
		}
		if math.Float32bits(unfused) != math.Float32bits(want) {
			differs++
		}
	}
	if differs == 0 {
		t.Fatal("no row where rounding each product first changes the result: the test cannot tell fused from unfused adds")
	}
	t.Logf("%d of 40 rows differ between fused and product-rounded adds; DotBF16BF16 matches the fused ones", differs)
}
