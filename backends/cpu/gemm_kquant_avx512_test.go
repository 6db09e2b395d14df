//go:build amd64 && !purego

package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/minfer/minfer/quant"
)

// The AVX-512 K-quant GEMMs are called directly (every generated tile
// shape, whatever the dispatch installed) and checked as the AVX2 ones.

func needVNNIGemm(t testing.TB) {
	if !hasVNNI {
		t.Skip("the CPU lacks AVX-512 F/BW/VL/DQ + VNNI: the AVX-512 K-quant GEMM kernels cannot run")
	}
}

func TestGemmKQuantAVX512(t *testing.T) {
	needVNNIGemm(t)
	checkKQGemms(t, kqGemmsAVX512, rand.New(rand.NewPCG(191, 192)))
}

func TestGemmKQuantAVX512Blocks(t *testing.T) {
	needVNNIGemm(t)
	checkKQGemmBlocks(t, kqGemmsAVX512, rand.New(rand.NewPCG(193, 194)))
}

// BenchmarkGemmKQuantAVX512 measures the AVX-512 K-quant GEMMs ("z RxC")
// beside the AVX2 one registered on that tier ("avx2 RxC") at Qwen3-0.6B
// shapes; GMAC/s counts M·N·K multiply-adds per second.
func BenchmarkGemmKQuantAVX512(b *testing.B) {
	needVNNIGemm(b)
	r := rand.New(rand.NewPCG(195, 196))
	shapes := [][2]int{{1024, 1024}, {3072, 1024}, {1024, 3072}}
	for _, wt := range []quant.Type{quant.Q4_K, quant.Q5_K, quant.Q6_K} {
		for _, M := range []int{512} {
			for _, sh := range shapes {
				N, K := sh[0], sh[1]
				wb := gemmWeights(b, r, wt, N, K, false)
				wrb := len(wb) / N
				act, arb := gemmActs(b, r, quant.Q8_K, M, K)
				y := make([]float32, M*N)
				run := func(name string, f GemmFunc) {
					b.Run(fmt.Sprintf("%s/M=%d,N=%d,K=%d/%s", wt, M, N, K, name), func(b *testing.B) {
						cpu0 := processCPU()
						for b.Loop() {
							f(K, wb, wrb, act, arb, M, y, N, 0, N)
						}
						macs := float64(M) * float64(N) * float64(K) * float64(b.N)
						b.ReportMetric(macs/b.Elapsed().Seconds()/1e9, "GMAC/s")
						b.ReportMetric(macs/(processCPU()-cpu0).Seconds()/1e9, "GMAC/cpu-s")
					})
				}
				g2 := kqGemmsAVX2[wt][0]
				run(fmt.Sprintf("avx2%dx%d", g2.R, g2.C), g2.gemm)
				for _, g := range kqGemmsAVX512[wt] {
					run(fmt.Sprintf("z%dx%d", g.R, g.C), g.gemm)
				}
			}
		}
	}
}
