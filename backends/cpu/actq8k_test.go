package cpu

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/minfer/minfer/quant"
)

// kqQ8KBlock makes one 256-float activation block of a given kind,
// including the corner cases of quantize_row_q8_K_ref.
func kqQ8KBlock(r *rand.Rand, kind int) []float32 {
	x := make([]float32, 256)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	switch kind % 12 {
	case 1: // all zero
		clear(x)
	case 2: // all negative zero
		for i := range x {
			x[i] = float32(math.Copysign(0, -1))
		}
	case 3: // tie of |max| with opposite signs: the first wins
		x[r.IntN(128)] = -7
		x[128+r.IntN(128)] = 7
	case 4: // same, positive first
		x[r.IntN(128)] = 7
		x[128+r.IntN(128)] = -7
	case 5: // iscale = 1: exact halves round to even
		for i := range x {
			x[i] = float32(r.IntN(254)-127) + 0.5
		}
		x[r.IntN(256)] = -127
	case 6: // outliers
		for i := 0; i < 4; i++ {
			x[r.IntN(256)] *= 1000
		}
	case 7: // a NaN and an Inf
		x[r.IntN(256)] = float32(math.NaN())
		if r.IntN(2) == 0 {
			x[r.IntN(256)] = float32(math.Inf(1 - 2*r.IntN(2)))
		}
	case 8: // subnormal and tiny values
		for i := range x {
			x[i] *= 1e-39
		}
	case 9: // one nonzero value
		clear(x)
		x[r.IntN(256)] = float32(r.NormFloat64())
	case 10: // huge values
		for i := range x {
			x[i] *= 1e37
		}
	case 11: // NaN only with zeros
		clear(x)
		x[r.IntN(256)] = float32(math.NaN())
	}
	return x
}

func TestActQ8KBytes(t *testing.T) {
	f := actKernels[quant.Q8_K]
	if f == nil {
		t.Skip("no SIMD Q8_K activation quantizer registered")
	}
	r := rand.New(rand.NewPCG(9, 9))
	for iter := 0; iter < 400; iter++ {
		nb := 1 + r.IntN(19)
		x := make([]float32, 0, nb*256)
		for b := 0; b < nb; b++ {
			x = append(x, kqQ8KBlock(r, iter+b)...)
		}
		want := make([]byte, nb*292)
		got := make([]byte, nb*292+7)
		for i := range got {
			got[i] = 0xa5
		}
		quant.QuantizeQ8KAct(x, want)
		f(x, got[:nb*292])
		if !bytes.Equal(got[:nb*292], want) {
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("iter %d (%d blocks): byte %d (block %d, offset %d) = %#x, want %#x",
						iter, nb, i, i/292, i%292, got[i], want[i])
				}
			}
		}
		for _, v := range got[nb*292:] {
			if v != 0xa5 {
				t.Fatalf("iter %d: wrote past the row", iter)
			}
		}
	}
}

func BenchmarkActQ8K(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, K := range []int{1024, 4864} {
		x := make([]float32, K)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		dst := make([]byte, K/256*292)
		impls := []struct {
			name string
			f    func([]float32, []byte)
		}{{"simd", actKernels[quant.Q8_K]}, {"go", quant.QuantizeQ8KAct}}
		for _, im := range impls {
			if im.f == nil {
				continue
			}
			b.Run(im.name+"/K="+itoaKQ(K), func(b *testing.B) {
				b.SetBytes(int64(4 * K))
				for b.Loop() {
					im.f(x, dst)
				}
			})
		}
	}
}

func itoaKQ(n int) string {
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}
