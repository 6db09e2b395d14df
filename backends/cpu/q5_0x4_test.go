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
	// Any row range through the RowsFunc: the groups it cuts computed whole.
	K, N := 896, 24
	nb := K / 32
	w := quantWeights(t, r, quant.Q5_0, N, K)
	m, _ := NewMatMul(quant.Q5_0)
	act := make([]byte, m.ActRowBytes(K))
	m.QuantizeRows(randVec(r, K, 1), K, 0, 1, act)
	pw := packQ5_0x4Rows(t, w, N, nb)
	for _, rg := range [][2]int{{0, 24}, {1, 2}, {3, 5}, {2, 23}, {5, 8}, {4, 7}, {0, 1}, {23, 24}, {6, 6}} {
		y := make([]float32, N)
		for i := range y {
			y[i] = -7
		}
		q5x4RowsFunc(K, pw, nb*22, act, y, rg[0], rg[1])
		for i := range y {
			want := float32(-7)
			if i >= rg[0] && i < rg[1] {
				want = quant.DotQ5_0Q8_0(K, w[i*nb*22:(i+1)*nb*22], act)
			}
			if math.Float32bits(y[i]) != math.Float32bits(want) {
				t.Fatalf("rows [%d,%d): row %d = %v, want %v", rg[0], rg[1], i, y[i], want)
			}
		}
	}
	y0 := []float32{1, 2, 3, 4, 5}
	q5x4RowsFunc(0, nil, 0, nil, y0, 1, 5) // K=0: zeros, nothing read
	if [5]float32(y0) != [5]float32{1, 0, 0, 0, 0} {
		t.Fatalf("K=0 rows [1,5): %v, want 1 then zeros", y0)
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

// TestGemmQ5_0x4 checks the AVX2 GEMM of Q5_0x4 weights (both tiles)
// against the pure-Go dot of each unpacked row and activation row, over
// row ranges that start and end inside groups and activation row counts
// that leave partial tiles.
func TestGemmQ5_0x4(t *testing.T) {
	if !hasAVX2 {
		t.Skip("the CPU lacks the avx2 tier")
	}
	r := rand.New(rand.NewPCG(51, 52))
	for _, K := range []int{64, 896} {
		N := 28
		nb := K / 32
		w := quantWeights(t, r, quant.Q5_0, N, K)
		for i := 2; i < len(w); i += 22 {
			for j := 0; j < 4; j++ {
				w[i+j] = byte(r.Uint32())
			}
		}
		pw := packQ5_0x4Rows(t, w, N, nb)
		m, _ := NewMatMul(quant.Q5_0)
		for _, M := range []int{1, 2, 3, 5, 8, 17} {
			arb := m.ActRowBytes(K)
			act := make([]byte, M*arb)
			m.QuantizeRows(randVec(r, M*K, 1), K, 0, M, act)
			for ti, g := range []struct {
				f  gemmLegacyAVX2Asm
				ra int
			}{{gemmQ5_0x4AVX2x4x2, 2}, {gemmQ5_0x4AVX2x4x3, 3}} {
				gemm := q5x4GemmAVX2(g.f, g.ra)
				for _, rg := range [][2]int{{0, N}, {1, N - 1}, {4, 12}, {2, 3}, {5, 9}, {3, 28}} {
					ldy := N + 3
					y := make([]float32, M*ldy)
					for i := range y {
						y[i] = -3
					}
					gemm(K, pw, nb*22, act, arb, M, y, ldy, rg[0], rg[1], nil)
					for mm := 0; mm < M; mm++ {
						for n := 0; n < ldy; n++ {
							want := float32(-3)
							if n >= rg[0] && n < rg[1] {
								want = quant.DotQ5_0Q8_0(K, w[n*nb*22:(n+1)*nb*22], act[mm*arb:(mm+1)*arb])
							}
							if got := y[mm*ldy+n]; math.Float32bits(got) != math.Float32bits(want) {
								t.Fatalf("K=%d M=%d tile %d rows [%d,%d): y[%d][%d] = %v, want %v", K, M, ti, rg[0], rg[1], mm, n, got, want)
							}
						}
					}
				}
			}
		}
	}
}

// BenchmarkGemmQ5_0x4 runs the installed AVX2 Q5_0 GEMM tile (4×2) on the
// plain layout and on Q5_0x4, prompt-sized (M=512) on Qwen2.5-0.5B's
// shapes: GMAC per CPU-second.
func BenchmarkGemmQ5_0x4(b *testing.B) {
	if !hasAVX2 {
		b.Skip("the CPU lacks the avx2 tier")
	}
	r := rand.New(rand.NewPCG(61, 62))
	for _, sh := range [][3]int{{512, 896, 896}, {512, 4864, 896}, {512, 896, 4864}} {
		M, N, K := sh[0], sh[1], sh[2]
		nb := K / 32
		w := quantWeights(b, r, quant.Q5_0, N, K)
		pw := packQ5_0x4Rows(b, w, N, nb)
		act, arb := gemmActs(b, r, quant.Q8_0, M, K)
		y := make([]float32, M*N)
		for _, k := range []string{"plain", "x4"} {
			g := uncached(legacyGemmAVX2(quant.Q5_0, legacyAVX2Tiles[quant.Q5_0][0]))
			wb := w
			if k == "x4" {
				g, wb = uncached(q5x4GemmAVX2(gemmQ5_0x4AVX2x4x2, 2)), pw
			}
			b.Run(fmt.Sprintf("M=%d,N=%d,K=%d/%s", M, N, K, k), func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				c0 := threadCPUSeconds()
				for b.Loop() {
					g(K, wb, nb*22, act, arb, M, y, N, 0, N)
				}
				b.ReportMetric(float64(M)*float64(N)*float64(K)*float64(b.N)/1e9/(threadCPUSeconds()-c0), "GMAC/cpu-s")
			})
		}
	}
}
