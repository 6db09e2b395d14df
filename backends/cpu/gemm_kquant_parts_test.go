//go:build amd64 && !purego

package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/minfer/minfer/quant"
)

// BenchmarkGemmKQuantAVX2Parts times the parts of one paired AVX2 K-quant
// GEMM call at Qwen3-0.6B shapes (M=512): packing all N weight rows into
// tiles ("pack"), rearranging the activations ("acts"), and the kernel
// alone over one weight tile and a block of activation tiles ("kern",
// reported per output and super-block).
func BenchmarkGemmKQuantAVX2Parts(b *testing.B) {
	needAVX2(b)
	r := rand.New(rand.NewPCG(95, 96))
	for _, wt := range []quant.Type{quant.Q4_K, quant.Q6_K} {
		for _, sh := range [][2]int{{3072, 1024}, {1024, 3072}} {
			const M = 512
			N, K := sh[0], sh[1]
			g := kqGemmsAVX2[wt][0]
			wb := gemmWeights(b, r, wt, N, K, false)
			wrb := len(wb) / N
			act, arb := gemmActs(b, r, quant.Q8_K, M, K)
			nb := K / 256
			R, C := g.R, g.C
			tb := nb * g.tileBytes * R
			tiles := make([]byte, N/R*tb+31)
			buf := align32(tiles, N/R*tb)
			pb := kqPairActBytes(C)
			pp := make([]byte, M/C*nb*pb+31)
			pairs := align32(pp, M/C*nb*pb)
			name := fmt.Sprintf("%s/N=%d,K=%d/%s", wt, N, K, g.name[len(g.name)-4:])
			b.Run(name+"/pack", func(b *testing.B) {
				cpu0 := processCPU()
				defer func() { b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op") }()
				for b.Loop() {
					// into one group of tiles, reused, as the GEMM does
					for n := 0; n < N; n += R {
						o := n % gemmKQGroupRows / R * tb
						g.pack(buf[o:o+tb], wb[n*wrb:], wrb, nb, R)
					}
				}
			})
			b.Run(name+"/acts", func(b *testing.B) {
				cpu0 := processCPU()
				defer func() { b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op") }()
				for b.Loop() {
					kqPairActs(pairs, act, arb, nb, M, C, R, g.sums)
				}
			})
			y := make([]float32, M*N)
			fs := make([]float32, g.fsFloats())
			for _, mt := range []int{4, 32} {
				b.Run(fmt.Sprintf("%s/kern/mt=%d", name, mt), func(b *testing.B) {
					cpu0 := processCPU()
					for b.Loop() {
						for n := 0; n < 32; n += R {
							g.kern(&buf[n/R*tb], nb, &act[0], arb, &pairs[0], &y[n], N, mt, &fs[0])
						}
					}
					b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N)/float64(32/R*mt*R*C*nb), "cpu-ns/out-sb")
				})
			}
		}
	}
}
