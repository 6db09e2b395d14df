//go:build amd64 && !purego

package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestRopeNeoxAVX2 calls the AVX2 rotation directly (whatever the dispatch
// chose) against ropeNeoxGo, bit for bit, for every head half-width up to
// 40 (vector part and scalar remainder) and values of every magnitude.
func TestRopeNeoxAVX2(t *testing.T) {
	if !hasAVX2 {
		t.Skip("the CPU lacks AVX2/FMA/F16C (or MINFER_NO_AVX2 is set): ropeNeoxAVX2 cannot run")
	}
	r := rand.New(rand.NewPCG(11, 12))
	for half := 1; half <= 40; half++ {
		t.Run(fmt.Sprintf("half%d", half), func(t *testing.T) {
			for rep := 0; rep < 20; rep++ {
				x, c, s := ropeInputs(r, half)
				want := append([]float32(nil), x...)
				ropeNeoxGo(want, c, s, 0, half)
				n := half &^ 7
				got := append([]float32(nil), x...)
				if n > 0 {
					ropeNeoxAVX2(&got[0], &c[0], &s[0], n, half)
				}
				ropeNeoxGo(got, c, s, n, half)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("x[%d] = %v, oracle %v (input %v)", i, got[i], want[i], x[i])
					}
				}
			}
		})
	}
}

// TestRopeNormalAVX2 calls the AVX2 NORMAL rotation directly (whatever the
// dispatch chose) against ropeNormalGo, bit for bit, for every head
// half-width up to 72 (the fused pairs eight at a time, the fused pairs
// left over, the unfused remainder, and the narrow heads ggml never
// vectorizes) and values of every magnitude.
func TestRopeNormalAVX2(t *testing.T) {
	if !hasAVX2 {
		t.Skip("the CPU lacks AVX2/FMA/F16C (or MINFER_NO_AVX2 is set): ropeNormalAVX2 cannot run")
	}
	r := rand.New(rand.NewPCG(13, 14))
	for half := 1; half <= 72; half++ {
		t.Run(fmt.Sprintf("half%d", half), func(t *testing.T) {
			for rep := 0; rep < 20; rep++ {
				x, c, s := ropeInputs(r, half)
				want := append([]float32(nil), x...)
				ropeNormalGo(want, c, s, 0, half)
				got := append([]float32(nil), x...)
				ropeNormal(got, c, s, half)
				n := 0
				if half > 6 {
					n = (half - half%4) &^ 7
				}
				direct := append([]float32(nil), x...)
				if n > 0 {
					ropeNormalAVX2(&direct[0], &c[0], &s[0], n)
				}
				ropeNormalGo(direct, c, s, n, half)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) || math.Float32bits(direct[i]) != math.Float32bits(want[i]) {
						t.Fatalf("x[%d] = %v (direct %v), oracle %v (input %v)", i, got[i], direct[i], want[i], x[i])
					}
				}
			}
		})
	}
}

// ropeInputs returns one head's 2·half values of every magnitude (some of
// them zeros, subnormals, huge or ±1) and half cosines and sines.
func ropeInputs(r *rand.Rand, half int) (x, c, s []float32) {
	special := []float32{0, float32(math.Copysign(0, -1)), 1e-40, -3e38, 3e38, 1, -1, 1e-20}
	x, c, s = make([]float32, 2*half), make([]float32, half), make([]float32, half)
	for i := range x {
		x[i] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(12)-6)))
		if r.IntN(8) == 0 {
			x[i] = special[r.IntN(len(special))]
		}
	}
	for i := range c {
		a := r.Float64() * 100
		c[i], s[i] = float32(math.Cos(a)), float32(math.Sin(a))
	}
	return x, c, s
}
