//go:build amd64 && !purego

package cpu

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/minfer/minfer/quant"
)

// BenchmarkSmallMDram runs the small-M kernels of smallKernelTable over a
// 256 MiB weight matrix (K=1024), which a model-sized decode step streams
// from DRAM, against M = 2, 4, 8 activation rows, and the installed row
// kernel at M=1 ("rows"): cpu-ns per weight row (all M outputs of it).
// BenchmarkSmallM's weights stay in L2 and show the compute ceiling; this
// shows how much of it survives the stream. (On the Zen 5 VM at a quiet
// moment the AVX2 kernels' figures here were within noise of their L2
// ones, e.g. Q5_0 M=8 196 against 183-200 cpu-ns: compute-bound, not
// waiting on the weights; with other processes streaming memory they
// rise, the row kernels' M=1 as much.)
func BenchmarkSmallMDram(b *testing.B) {
	const K, size = 1024, 256 << 20
	r := rand.New(rand.NewPCG(79, 80))
	buf := make([]byte, size)
	for _, wt := range []quant.Type{quant.Q8_0, quant.Q5_0, quant.Q4_K, quant.Q6_K} {
		mm, err := NewMatMul(wt)
		if err != nil {
			b.Fatal(err)
		}
		tile, wrb := rowTestWeights(b, r, wt, 64, K, 0)
		N := size / wrb
		w := buf[:N*wrb]
		for off := 0; off < len(w); off += len(tile) {
			copy(w[off:], tile)
		}
		arb := mm.ActRowBytes(K)
		for _, M := range []int{1, 2, 4, 8} {
			act := make([]byte, M*arb)
			x := make([]float32, M*K)
			for m := 0; m < M; m++ {
				copy(x[m*K:], kqRandRow(r, K, 0))
			}
			mm.QuantizeRows(x, K, 0, M, act)
			y := make([]float32, M*N)
			for _, sk := range smallKernelTable() {
				// M=1 runs the row kernel, once (under the avx2 entry).
				if sk.typ != wt || !tierOK(sk.tier) || M == 1 && (sk.name != "avx2" || mm.rows == nil) {
					continue
				}
				f := sk.f
				name := sk.name
				run := func() { f(K, w, wrb, act, arb, M, y, N, 0, N) }
				if M == 1 {
					name = "rows"
					run = func() { mm.rows(K, w, wrb, act, y, 0, N) }
				}
				b.Run(fmt.Sprintf("%s/M=%d/%s", wt, M, name), func(b *testing.B) {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					c0 := threadCPU()
					for b.Loop() {
						run()
					}
					b.ReportMetric(float64(threadCPU()-c0)/float64(b.N)/float64(N), "cpu-ns/row")
				})
			}
		}
	}
}
