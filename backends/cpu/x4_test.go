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

// packX4Rows packs N rows (a multiple of 4) of plain weights of K elements
// into the four-row layout of their type.
func packX4Rows(tb testing.TB, t quant.Type, w []byte, K int) []byte {
	out := make([]byte, len(w))
	if err := quant.PackX4(t, out, w, K); err != nil {
		tb.Fatal(err)
	}
	return out
}

// x4Plain returns the plain type's pure-Go dot and AVX2 row kernel.
func x4Plain(t quant.Type) (func(n int, w, a []byte) float32, rowsAsm) {
	if t == quant.Q5_0 {
		return quant.DotQ5_0Q8_0, rowsQ5_0AVX2
	}
	return quant.DotQ4_0Q8_0, rowsQ4_0AVX2
}

// x4Weights returns N random rows of type t (Q5_0: every fifth-bit
// pattern) and a Q8_0 activation row, K elements each.
func x4Weights(tb testing.TB, r *rand.Rand, t quant.Type, N, K int) (w, act []byte) {
	w = quantWeights(tb, r, t, N, K)
	if t == quant.Q5_0 {
		for i := 2; i < len(w); i += 22 {
			for j := 0; j < 4; j++ {
				w[i+j] = byte(r.Uint32())
			}
		}
	}
	m, _ := NewMatMul(t)
	act = make([]byte, m.ActRowBytes(K))
	m.QuantizeRows(randVec(r, K, 1), K, 0, 1, act)
	return w, act
}

// TestRowsX4 checks the four-row kernels (Q5_0x4, Q4_0x4) bit for bit
// against the pure-Go dot of each unpacked row and the AVX2 row kernel of
// the plain layout, on Qwen2.5's widths, then any row range through the
// RowsFunc (the groups it cuts computed whole), and K=0.
func TestRowsX4(t *testing.T) {
	if !hasAVX2 {
		t.Skip("the CPU lacks the avx2 tier")
	}
	r := rand.New(rand.NewPCG(31, 32))
	for _, k := range x4Kernels {
		dot, plain := x4Plain(k.plain)
		for _, K := range []int{32, 896, 4864} {
			for _, N := range []int{4, 8, 36} {
				t.Run(fmt.Sprintf("%s/K%d/N%d", k.t, K, N), func(t *testing.T) {
					nb := K / 32
					w, act := x4Weights(t, r, k.plain, N, K)
					pw := packX4Rows(t, k.plain, w, K)
					y := make([]float32, N)
					x4RowsAsm(k.t, &pw[0], &act[0], nb, &y[0], N/4)
					yp := make([]float32, N)
					plain(&w[0], nb*k.bs, &act[0], nb, &yp[0], N)
					for i := range y {
						want := dot(K, w[i*nb*k.bs:(i+1)*nb*k.bs], act)
						if math.Float32bits(y[i]) != math.Float32bits(want) || math.Float32bits(yp[i]) != math.Float32bits(want) {
							t.Fatalf("row %d: %s %v (%#x), plain AVX2 %v, pure Go %v (%#x)", i, k.t, y[i], math.Float32bits(y[i]), yp[i], want, math.Float32bits(want))
						}
					}
				})
			}
		}
		K, N := 896, 24
		nb := K / 32
		w, act := x4Weights(t, r, k.plain, N, K)
		pw := packX4Rows(t, k.plain, w, K)
		rows := x4Rows(k.t, k.bs)
		for _, rg := range [][2]int{{0, 24}, {1, 2}, {3, 5}, {2, 23}, {5, 8}, {4, 7}, {0, 1}, {23, 24}, {6, 6}} {
			y := make([]float32, N)
			for i := range y {
				y[i] = -7
			}
			rows(K, pw, nb*k.bs, act, y, rg[0], rg[1])
			for i := range y {
				want := float32(-7)
				if i >= rg[0] && i < rg[1] {
					want = dot(K, w[i*nb*k.bs:(i+1)*nb*k.bs], act)
				}
				if math.Float32bits(y[i]) != math.Float32bits(want) {
					t.Fatalf("%s rows [%d,%d): row %d = %v, want %v", k.t, rg[0], rg[1], i, y[i], want)
				}
			}
		}
		y0 := []float32{1, 2, 3, 4, 5}
		rows(0, nil, 0, nil, y0, 1, 5) // K=0: zeros, nothing read
		if [5]float32(y0) != [5]float32{1, 0, 0, 0, 0} {
			t.Fatalf("%s K=0 rows [1,5): %v, want 1 then zeros", k.t, y0)
		}
	}
}

// TestGemmX4 checks the AVX2 GEMM of the four-row layouts
// against the pure-Go dot of each unpacked row and activation row, over
// row ranges that start and end inside groups and activation row counts
// that leave partial tiles.
func TestGemmX4(t *testing.T) {
	if !hasAVX2 {
		t.Skip("the CPU lacks the avx2 tier")
	}
	r := rand.New(rand.NewPCG(51, 52))
	for _, k := range x4Kernels {
		dot, _ := x4Plain(k.plain)
		for _, K := range []int{64, 896} {
			N := 28
			nb := K / 32
			w, _ := x4Weights(t, r, k.plain, N, K)
			pw := packX4Rows(t, k.plain, w, K)
			m, _ := NewMatMul(k.plain)
			rows := x4Rows(k.t, k.bs)
			gemm := x4GemmAVX2(k.t, k.gemm, rows, k.bs)
			for _, M := range []int{1, 2, 3, 5, 8, 17} {
				arb := m.ActRowBytes(K)
				act := make([]byte, M*arb)
				m.QuantizeRows(randVec(r, M*K, 1), K, 0, M, act)
				for _, rg := range [][2]int{{0, N}, {1, N - 1}, {4, 12}, {2, 3}, {5, 9}, {3, 28}} {
					ldy := N + 3
					y := make([]float32, M*ldy)
					for i := range y {
						y[i] = -3
					}
					gemm(K, pw, nb*k.bs, act, arb, M, y, ldy, rg[0], rg[1], nil)
					for mm := 0; mm < M; mm++ {
						for n := 0; n < ldy; n++ {
							want := float32(-3)
							if n >= rg[0] && n < rg[1] {
								want = dot(K, w[n*nb*k.bs:(n+1)*nb*k.bs], act[mm*arb:(mm+1)*arb])
							}
							if got := y[mm*ldy+n]; math.Float32bits(got) != math.Float32bits(want) {
								t.Fatalf("%s K=%d M=%d rows [%d,%d): y[%d][%d] = %v, want %v", k.t, K, M, rg[0], rg[1], mm, n, got, want)
							}
						}
					}
				}
			}
		}
	}
}

// BenchmarkX4 streams Q5_0 and Q4_0 weights through the AVX2 row kernel
// of the plain layout and the four-row one, in L2 (512 KiB) and out of
// cache (64 MiB, huge pages), K=896 and 4864 (Qwen2.5-0.5B's widths):
// weight GB/s of the thread's CPU time.
func BenchmarkX4(b *testing.B) {
	if !hasAVX2 {
		b.Skip("the CPU lacks the avx2 tier")
	}
	r := rand.New(rand.NewPCG(41, 42))
	for _, k := range x4Kernels {
		_, plain := x4Plain(k.plain)
		for _, size := range []int{512 << 10, 64 << 20} {
			for _, K := range []int{896, 4864} {
				nb := K / 32
				N := size / (nb * k.bs) &^ 3
				tile := quantWeights(b, r, k.plain, 64, K)
				w := benchBytes(b, N*nb*k.bs)
				for off := 0; off < len(w); off += len(tile) {
					copy(w[off:], tile)
				}
				pw := benchBytes(b, len(w))
				if err := quant.PackX4(k.plain, pw, w, K); err != nil {
					b.Fatal(err)
				}
				m, _ := NewMatMul(k.plain)
				act := make([]byte, m.ActRowBytes(K))
				m.QuantizeRows(randVec(r, K, 1), K, 0, 1, act)
				y := make([]float32, N)
				for _, v := range []string{"plain", "x4"} {
					b.Run(fmt.Sprintf("%s/%dKiB/K%d/%s", k.plain, size>>10, K, v), func(b *testing.B) {
						runtime.LockOSThread()
						defer runtime.UnlockOSThread()
						var ns int64
						for b.Loop() {
							t0 := threadCPU()
							if v == "x4" {
								x4RowsAsm(k.t, &pw[0], &act[0], nb, &y[0], N/4)
							} else {
								plain(&w[0], nb*k.bs, &act[0], nb, &y[0], N)
							}
							ns += threadCPU() - t0
						}
						b.ReportMetric(float64(len(w))*float64(b.N)/float64(ns), "GB/s")
					})
				}
			}
		}
	}
}

// BenchmarkGemmX4 runs the installed AVX2 GEMM tile (4×2) of Q5_0 and
// Q4_0 on the plain layout and on the four-row one, prompt-sized (M=512)
// on Qwen2.5-0.5B's shapes: GMAC per CPU-second.
func BenchmarkGemmX4(b *testing.B) {
	if !hasAVX2 {
		b.Skip("the CPU lacks the avx2 tier")
	}
	r := rand.New(rand.NewPCG(61, 62))
	for _, k := range x4Kernels {
		for _, sh := range [][3]int{{512, 896, 896}, {512, 4864, 896}, {512, 896, 4864}} {
			M, N, K := sh[0], sh[1], sh[2]
			nb := K / 32
			w := quantWeights(b, r, k.plain, N, K)
			pw := packX4Rows(b, k.plain, w, K)
			act, arb := gemmActs(b, r, quant.Q8_0, M, K)
			y := make([]float32, M*N)
			for _, v := range []string{"plain", "x4"} {
				g := uncached(legacyGemmAVX2(k.plain, legacyAVX2Tiles[k.plain][0]))
				wb := w
				if v == "x4" {
					g, wb = uncached(x4GemmAVX2(k.t, k.gemm, x4Rows(k.t, k.bs), k.bs)), pw
				}
				b.Run(fmt.Sprintf("%s/M=%d,N=%d,K=%d/%s", k.plain, M, N, K, v), func(b *testing.B) {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					c0 := threadCPUSeconds()
					for b.Loop() {
						g(K, wb, nb*k.bs, act, arb, M, y, N, 0, N)
					}
					b.ReportMetric(float64(M)*float64(N)*float64(K)*float64(b.N)/1e9/(threadCPUSeconds()-c0), "GMAC/cpu-s")
				})
			}
		}
	}
}
