//go:build amd64 && !purego

package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/minfer/minfer/quant"
)

// packQ5_0x4Rows packs N rows (a multiple of 4) of Q5_0 weights, wrb
// bytes each, into the Q5_0x4 layout.
func packQ5_0x4Rows(tb testing.TB, w []byte, N, nb int) []byte {
	wrb := nb * 22
	out := make([]byte, N/4*nb*quant.Q5_0x4Block)
	for g := 0; g < N/4; g++ {
		if err := quant.PackQ5_0x4(out[g*nb*quant.Q5_0x4Block:], w[4*g*wrb:(4*g+4)*wrb], nb); err != nil {
			tb.Fatal(err)
		}
	}
	return out
}

// TestRowsQ5_0x4 checks the Q5_0x4 kernel bit for bit against the pure-Go
// dot of each row (quant.DotQ5_0Q8_0), and against the AVX2 row kernel of
// the plain layout, on Qwen2.5's widths and random weights and activations
// (scales of both signs, every 5th-bit pattern).
func TestRowsQ5_0x4(t *testing.T) {
	if !hasAVX2 {
		t.Skip("the CPU lacks the avx2 tier")
	}
	r := rand.New(rand.NewPCG(31, 32))
	for _, K := range []int{32, 896, 4864} {
		for _, N := range []int{4, 8, 36} {
			t.Run(fmt.Sprintf("K%d/N%d", K, N), func(t *testing.T) {
				nb := K / 32
				w := quantWeights(t, r, quant.Q5_0, N, K)
				for i := 2; i < len(w); i += 22 { // the 5th bits: all patterns
					for j := 0; j < 4; j++ {
						w[i+j] = byte(r.Uint32())
					}
				}
				m, _ := NewMatMul(quant.Q5_0)
				act := make([]byte, m.ActRowBytes(K))
				m.QuantizeRows(randVec(r, K, 1), K, 0, 1, act)
				pw := packQ5_0x4Rows(t, w, N, nb)
				y := make([]float32, N)
				if err := RowsQ5_0x4(K, pw, act, y); err != nil {
					t.Fatal(err)
				}
				yp := make([]float32, N)
				rowsQ5_0AVX2(&w[0], nb*22, &act[0], nb, &yp[0], N)
				for i := range y {
					want := quant.DotQ5_0Q8_0(K, w[i*nb*22:(i+1)*nb*22], act)
					if math.Float32bits(y[i]) != math.Float32bits(want) || math.Float32bits(yp[i]) != math.Float32bits(want) {
						t.Fatalf("row %d: Q5_0x4 %v (%#x), plain AVX2 %v, pure Go %v (%#x)", i, y[i], math.Float32bits(y[i]), yp[i], want, math.Float32bits(want))
					}
				}
			})
		}
	}
	if err := RowsQ5_0x4(64, make([]byte, 10), make([]byte, 68), make([]float32, 4)); err == nil {
		t.Fatal("RowsQ5_0x4 took a short weight slice")
	}
	if err := RowsQ5_0x4(64, make([]byte, 4*88*2), make([]byte, 68), make([]float32, 3)); err == nil {
		t.Fatal("RowsQ5_0x4 took 3 rows")
	}
}

// BenchmarkQ5_0x4 streams Q5_0 weights through the AVX2 row kernel of
// the plain layout and the Q5_0x4 one, in L2 (512 KiB) and out of cache
// (64 MiB, huge pages), K=896 and 4864 (Qwen2.5-0.5B's widths): weight
// GB/s of the thread's CPU time.
func BenchmarkQ5_0x4(b *testing.B) {
	if !hasAVX2 {
		b.Skip("the CPU lacks the avx2 tier")
	}
	r := rand.New(rand.NewPCG(41, 42))
	for _, size := range []int{512 << 10, 64 << 20} {
		for _, K := range []int{896, 4864} {
			nb := K / 32
			N := size / (nb * 22) &^ 3
			tile := quantWeights(b, r, quant.Q5_0, 64, K)
			w := benchBytes(b, N*nb*22)
			for off := 0; off < len(w); off += len(tile) {
				copy(w[off:], tile)
			}
			pw := benchBytes(b, N/4*nb*quant.Q5_0x4Block)
			for g := 0; g < N/4; g++ {
				if err := quant.PackQ5_0x4(pw[g*nb*quant.Q5_0x4Block:], w[4*g*nb*22:], nb); err != nil {
					b.Fatal(err)
				}
			}
			m, _ := NewMatMul(quant.Q5_0)
			act := make([]byte, m.ActRowBytes(K))
			m.QuantizeRows(randVec(r, K, 1), K, 0, 1, act)
			y := make([]float32, N)
			for _, k := range []string{"plain", "x4"} {
				b.Run(fmt.Sprintf("%dKiB/K%d/%s", size>>10, K, k), func(b *testing.B) {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					var ns int64
					for b.Loop() {
						t0 := threadCPU()
						if k == "x4" {
							rowsQ5_0x4AVX2(&pw[0], &act[0], nb, &y[0], N/4)
						} else {
							rowsQ5_0AVX2(&w[0], nb*22, &act[0], nb, &y[0], N)
						}
						ns += threadCPU() - t0
					}
					b.ReportMetric(float64(len(w))*float64(b.N)/float64(ns), "GB/s")
				})
			}
		}
	}
}
