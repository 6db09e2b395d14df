//go:build amd64 && !purego

package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/cpu"

	"github.com/minfer/minfer/quant"
)

// The AVX2 K-quant GEMMs are called directly (every generated tile shape,
// whatever the dispatch installed) and must give, for every output, the
// bits of quant's pure-Go dot, without writing outside their rows and
// columns.

func needAVX2(t testing.TB) {
	if !(cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C) {
		t.Skip("the CPU lacks AVX2/FMA/F16C: the AVX2 GEMM kernels cannot run")
	}
}

func TestGemmKQuantAVX2(t *testing.T) {
	needAVX2(t)
	checkKQGemms(t, kqGemmsAVX2, rand.New(rand.NewPCG(91, 92)))
}

// checkKQGemms runs every GEMM of gemms (by weight type) over several
// shapes, row ranges and raw/quantized weights against the pure-Go dot.
func checkKQGemms(t *testing.T, gemms map[quant.Type][]*kqGemm, r *rand.Rand) {
	for _, wt := range []quant.Type{quant.Q4_K, quant.Q5_K, quant.Q6_K, quant.Q2_K, quant.Q3_K} {
		dot := quant.DotFor(wt)
		for _, g := range gemms[wt] {
			for _, K := range []int{256, 768, 1024, 256 * 19} {
				for _, raw := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/K%d/raw=%v", g.name, K, raw), func(t *testing.T) {
						const N = 23
						wb := gemmWeights(t, r, wt, N, K, raw)
						wrb := len(wb) / N
						for _, M := range []int{1, 2, 3, 5, 7, 12, 13, 31} {
							act, arb := gemmActs(t, r, quant.Q8_K, M, K)
							want := make([]float32, M*N)
							for m := 0; m < M; m++ {
								for n := 0; n < N; n++ {
									want[m*N+n] = dot(K, wb[n*wrb:(n+1)*wrb], act[m*arb:(m+1)*arb])
								}
							}
							for _, rg := range [][2]int{{0, N}, {1, N - 2}, {3, 4}, {5, 5}, {N - 1, N}, {7, 20}, {2, 11}} {
								ldy := N + 3
								y := make([]float32, M*ldy)
								for i := range y {
									y[i] = float32(math.NaN())
								}
								g.gemm(K, wb, wrb, act, arb, M, y, ldy, rg[0], rg[1])
								for m := 0; m < M; m++ {
									for n := 0; n < ldy; n++ {
										got := y[m*ldy+n]
										if n < rg[0] || n >= rg[1] {
											if !math.IsNaN(float64(got)) {
												t.Fatalf("M=%d cols %v wrote y[%d][%d]", M, rg, m, n)
											}
											continue
										}
										if w := want[m*N+n]; math.Float32bits(got) != math.Float32bits(w) {
											t.Fatalf("M=%d cols %v: y[%d][%d] = %v (%#08x), oracle %v (%#08x)", M, rg, m, n,
												got, math.Float32bits(got), w, math.Float32bits(w))
										}
									}
								}
							}
						}
					})
				}
			}
		}
	}
}

// TestGemmKQuantAVX2Blocks runs a whole prompt-sized M with small group and
// activation blocks, so the blocking loops take several turns.
func TestGemmKQuantAVX2Blocks(t *testing.T) {
	needAVX2(t)
	checkKQGemmBlocks(t, kqGemmsAVX2, rand.New(rand.NewPCG(93, 94)))
}

// checkKQGemmBlocks is TestGemmKQuantAVX2Blocks for the GEMMs of gemms.
func checkKQGemmBlocks(t *testing.T, gemms map[quant.Type][]*kqGemm, r *rand.Rand) {
	defer func(g, a int) { gemmKQGroupRows, gemmKQActBlock = g, a }(gemmKQGroupRows, gemmKQActBlock)
	gemmKQGroupRows, gemmKQActBlock = 8, 6000
	for _, wt := range []quant.Type{quant.Q4_K, quant.Q5_K, quant.Q6_K, quant.Q2_K, quant.Q3_K} {
		dot := quant.DotFor(wt)
		const N, K, M = 37, 1024, 71
		wb := gemmWeights(t, r, wt, N, K, false)
		wrb := len(wb) / N
		act, arb := gemmActs(t, r, quant.Q8_K, M, K)
		for _, g := range gemms[wt] {
			y := make([]float32, M*N)
			g.gemm(K, wb, wrb, act, arb, M, y, N, 0, N)
			for m := 0; m < M; m++ {
				for n := 0; n < N; n++ {
					w := dot(K, wb[n*wrb:(n+1)*wrb], act[m*arb:(m+1)*arb])
					if math.Float32bits(y[m*N+n]) != math.Float32bits(w) {
						t.Fatalf("%s: y[%d][%d] = %v, oracle %v", g.name, m, n, y[m*N+n], w)
					}
				}
			}
		}
	}
}

// BenchmarkGemmKQuantAVX2 measures the AVX2 K-quant GEMMs ("gemm RxC")
// against the AVX2 row-kernel loop MatMul.Run uses without a GEMM ("rows")
// at Qwen3-0.6B shapes; GMAC/s counts M·N·K multiply-adds per second.
// "gemm2x4p" is a paired kernel (gemm_kquant_avx2p_amd64.go).
func BenchmarkGemmKQuantAVX2(b *testing.B) {
	needAVX2(b)
	r := rand.New(rand.NewPCG(95, 96))
	shapes := [][2]int{{1024, 1024}, {3072, 1024}, {1024, 3072}, {2048, 1024}}
	for _, wt := range []quant.Type{quant.Q4_K, quant.Q5_K, quant.Q6_K, quant.Q2_K, quant.Q3_K} {
		for _, M := range []int{128, 512} {
			for _, sh := range shapes {
				N, K := sh[0], sh[1]
				wb := gemmWeights(b, r, wt, N, K, false)
				wrb := len(wb) / N
				act, arb := gemmActs(b, r, quant.Q8_K, M, K)
				y := make([]float32, M*N)
				var cpu0 time.Duration
				report := func(b *testing.B) {
					macs := float64(M) * float64(N) * float64(K) * float64(b.N)
					b.ReportMetric(macs/b.Elapsed().Seconds()/1e9, "GMAC/s")
					// per CPU-second of the process: steadier than wall time
					// on a shared machine
					b.ReportMetric(macs/(processCPU()-cpu0).Seconds()/1e9, "GMAC/cpu-s")
				}
				rows := kqRows(map[quant.Type]kqRowsAsm{quant.Q4_K: kqRowsQ4KAVX2, quant.Q5_K: kqRowsQ5KAVX2, quant.Q6_K: kqRowsQ6KAVX2, quant.Q2_K: kqRowsQ2KAVX2, quant.Q3_K: kqRowsQ3KAVX2}[wt],
					map[quant.Type]int{quant.Q4_K: 144, quant.Q5_K: 176, quant.Q6_K: 210, quant.Q2_K: 84, quant.Q3_K: 110}[wt])
				b.Run(fmt.Sprintf("%s/M=%d,N=%d,K=%d/rows", wt, M, N, K), func(b *testing.B) {
					cpu0 = processCPU()
					for b.Loop() {
						for nb := 0; nb < N; nb += matMulTile {
							ne := min(nb+matMulTile, N)
							for m := 0; m < M; m++ {
								rows(K, wb, wrb, act[m*arb:(m+1)*arb], y[m*N:], nb, ne)
							}
						}
					}
					report(b)
				})
				for _, g := range kqGemmsAVX2[wt] {
					b.Run(fmt.Sprintf("%s/M=%d,N=%d,K=%d/gemm%s", wt, M, N, K, g.name[strings.IndexByte(g.name, ' ')+1:]), func(b *testing.B) {
						cpu0 = processCPU()
						for b.Loop() {
							g.gemm(K, wb, wrb, act, arb, M, y, N, 0, N)
						}
						report(b)
					})
				}
			}
		}
	}
}

// processCPU is the user+system CPU time of the calling thread so far
// (the benchmarks lock their goroutine to its thread).
func processCPU() time.Duration {
	runtime.LockOSThread()
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestGemmKQuantAVX2Allocs checks that a call allocates nothing once the
// pooled scratch exists.
func TestGemmKQuantAVX2Allocs(t *testing.T) {
	needAVX2(t)
	r := rand.New(rand.NewPCG(97, 98))
	const N, K, M = 40, 1024, 64
	for _, wt := range []quant.Type{quant.Q4_K, quant.Q5_K, quant.Q6_K, quant.Q2_K, quant.Q3_K} {
		wb := gemmWeights(t, r, wt, N, K, false)
		wrb := len(wb) / N
		act, arb := gemmActs(t, r, quant.Q8_K, M, K)
		y := make([]float32, M*N)
		g := kqGemmsAVX2[wt][0]
		g.gemm(K, wb, wrb, act, arb, M, y, N, 0, N)
		if a := testing.AllocsPerRun(10, func() { g.gemm(K, wb, wrb, act, arb, M, y, N, 0, N) }); a != 0 {
			t.Errorf("%s: %v allocations per call", g.name, a)
		}
	}
}

// TestGemmKQuantAVX2Extremes runs every AVX2 K-quant GEMM on the largest
// weight values with the largest scales against activations of -128 and
// of 127 only: the paired kernels add four products per chunk in int16
// (Q6_K: 4·63·(-128) = -32256), so this is where an overflow would show.
func TestGemmKQuantAVX2Extremes(t *testing.T) {
	needAVX2(t)
	const N, K, M = 8, 512, 16
	for _, wt := range []quant.Type{quant.Q4_K, quant.Q5_K, quant.Q6_K, quant.Q2_K, quant.Q3_K} {
		dot := quant.DotFor(wt)
		rs, _ := wt.RowSize(K)
		wb := make([]byte, N*rs)
		for i := range wb {
			wb[i] = 0xff // every value and scale at its maximum (Q6_K's int8 scales: -1)
		}
		if wt == quant.Q6_K {
			for o := 0; o < len(wb); o += 210 {
				for i := 192; i < 208; i++ {
					wb[o+i] = 0x80 // scale -128: the largest magnitude
				}
			}
		}
		for o := 0; o < len(wb); o += wt.TypeSize() {
			// f16 fields: 1.0 (0x3c00) instead of NaN
			for _, f := range map[quant.Type][]int{quant.Q4_K: {0, 2}, quant.Q5_K: {0, 2}, quant.Q6_K: {208}, quant.Q2_K: {80, 82}, quant.Q3_K: {108}}[wt] {
				wb[o+f], wb[o+f+1] = 0x00, 0x3c
			}
		}
		arb, _ := quant.Q8_K.RowSize(K)
		act := make([]byte, M*arb)
		for m := 0; m < M; m++ {
			q := int8(-128)
			if m%2 == 1 {
				q = 127
			}
			for b := 0; b < K/256; b++ {
				x := act[m*arb+b*kqBlockQ8K:]
				binary.LittleEndian.PutUint32(x, math.Float32bits(0.5))
				for i := 0; i < 256; i++ {
					x[4+i] = byte(q)
				}
				for i := 0; i < 16; i++ {
					binary.LittleEndian.PutUint16(x[260+2*i:], uint16(int16(16*int(q))))
				}
			}
		}
		for _, g := range kqGemmsAVX2[wt] {
			y := make([]float32, M*N)
			g.gemm(K, wb, rs, act, arb, M, y, N, 0, N)
			for m := 0; m < M; m++ {
				for n := 0; n < N; n++ {
					w := dot(K, wb[n*rs:(n+1)*rs], act[m*arb:(m+1)*arb])
					if math.Float32bits(y[m*N+n]) != math.Float32bits(w) {
						t.Fatalf("%s: y[%d][%d] = %v, oracle %v", g.name, m, n, y[m*N+n], w)
					}
				}
			}
		}
	}
}
