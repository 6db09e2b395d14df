//go:build !purego

package cpu

import (
	"math"
	"math/rand"
	"testing"
)

// TestEWKernels: every form of ew_amd64.s gives the Go loop's bits at
// every length around its steps and tails, writing nothing past n, with y
// aliasing a, and over infinities, NaNs and subnormals.
func TestEWKernels(t *testing.T) {
	kernels := []struct {
		name string
		ok   bool
		k    func(y, a, b *float32, n int)
		ref  func(y, a, b []float32)
	}{
		{"add/avx2", hasAVX2, addF32AVX2, addGo},
		{"mul/avx2", hasAVX2, mulvF32AVX2, mulGo},
		{"add/avx512", hasAVX512, addF32AVX512, addGo},
		{"mul/avx512", hasAVX512, mulvF32AVX512, mulGo},
	}
	rng := rand.New(rand.NewSource(7))
	special := []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e-40, -1e-42, 0, float32(math.Copysign(0, -1)), 3e38}
	val := func() float32 {
		if rng.Intn(8) == 0 {
			return special[rng.Intn(len(special))]
		}
		return float32(rng.NormFloat64()) * float32(math.Exp2(float64(rng.Intn(40)-20)))
	}
	for _, kc := range kernels {
		t.Run(kc.name, func(t *testing.T) {
			if !kc.ok {
				t.Skip("the CPU lacks this tier")
			}
			for n := 0; n <= 200; n++ {
				a, b := make([]float32, n+8), make([]float32, n+8)
				for i := range a {
					a[i], b[i] = val(), val()
				}
				want := make([]float32, n+8)
				copy(want, a)
				kc.ref(want[:n], a, b)
				got := make([]float32, n+8)
				for i := range got {
					got[i] = 12345
				}
				copy(want[n:], got[n:])
				run := func(y []float32) {
					if n > 0 {
						kc.k(&y[0], &a[0], &b[0], n)
					}
				}
				run(got)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("n=%d: element %d: %g, want %g", n, i, got[i], want[i])
					}
				}
				// y aliasing a
				al := append([]float32(nil), a...)
				if n > 0 {
					kc.k(&al[0], &al[0], &b[0], n)
				}
				for i := 0; i < n; i++ {
					if math.Float32bits(al[i]) != math.Float32bits(want[i]) {
						t.Fatalf("n=%d aliased: element %d: %g, want %g", n, i, al[i], want[i])
					}
				}
			}
		})
	}
}
