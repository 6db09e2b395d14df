//go:build amd64 && !purego

package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/minfer/minfer/quant"
)

// threadCPUSeconds is the CPU time of the calling OS thread: on a shared
// machine a steadier measure of a kernel's speed than the wall clock
// (GMAC/cpu-s in the benchmarks).
func threadCPUSeconds() float64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return float64(ts.Sec) + float64(ts.Nsec)*1e-9
}

// The AVX2 GEMM kernels of the 32-element formats, called directly (not
// through the dispatch, which prefers AVX-512 VNNI where the CPU has it),
// must give every output exactly the bits of quant's pure-Go dot, and
// write nothing outside their rows and columns.

// legacyAdversarialWeights returns N rows of wt whose blocks are extreme:
// zero, largest and subnormal f16 scales; quants all at one end of their
// range (Q8_0: -128, -127, 127) or random.
func legacyAdversarialWeights(t testing.TB, r *rand.Rand, wt quant.Type, N, K int) []byte {
	wb := legacyWeights(t, r, wt, N, K, true)
	ts := wt.TypeSize()
	scales := []uint16{0, 0x7BFF, 0xFBFF, 0x0001, 0x3C00, 0x8000}
	nh := 1 // f16 fields at the start of each block: d, and m for _1
	if wt == quant.Q4_1 || wt == quant.Q5_1 {
		nh = 2
	}
	for o := 0; o < len(wb); o += ts {
		for h := 0; h < nh; h++ {
			v := scales[r.IntN(len(scales))]
			wb[o+2*h], wb[o+2*h+1] = byte(v), byte(v>>8)
		}
		var fill byte
		switch r.IntN(5) {
		case 0:
			fill = 0x80 // Q8_0 -128; nibbles 0 and 8
		case 1:
			fill = 0x81 // Q8_0 -127
		case 2:
			fill = 0x7F // Q8_0 127
		case 3:
			fill = 0xFF // Q8_0 -1; nibbles 15, all 5th bits set
		default:
			continue
		}
		for i := 2 * nh; i < ts; i++ {
			wb[o+i] = fill
		}
	}
	return wb
}

// legacyAdversarialActs returns M activation rows of K elements of vdt
// (Q8_0 or Q8_1) with extreme blocks: zero, largest and subnormal scales
// (and sums); quants ±127 or random, never -128 (which the activation
// quantizer cannot produce; the Q8_0 sign trick needs it) unless allow128.
func legacyAdversarialActs(r *rand.Rand, vdt quant.Type, M, K int, allow128 bool) []byte {
	nb := K / 32
	ats, nh := 34, 1
	if vdt == quant.Q8_1 {
		ats, nh = 36, 2
	}
	act := make([]byte, M*nb*ats)
	scales := []uint16{0, 0x7BFF, 0xFBFF, 0x0001, 0x3C00, 0x2E66}
	for o := 0; o < len(act); o += ats {
		for h := 0; h < nh; h++ {
			v := scales[r.IntN(len(scales))]
			act[o+2*h], act[o+2*h+1] = byte(v), byte(v>>8)
		}
		mode := r.IntN(4)
		for i := 2 * nh; i < ats; i++ {
			var q int
			switch mode {
			case 0:
				q = 127
			case 1:
				q = -127
			case 2:
				q = 127 * (1 - 2*r.IntN(2))
			default:
				q = r.IntN(255) - 127
			}
			if allow128 && r.IntN(8) == 0 {
				q = -128
			}
			act[o+i] = byte(int8(q))
		}
	}
	return act
}

func TestGemmLegacyAVX2(t *testing.T) {
	if !hasAVX2 {
		t.Skip("the CPU has no AVX2+FMA+F16C (or MINFER_NO_AVX2 is set): no AVX2 GEMM to test")
	}
	r := rand.New(rand.NewPCG(91, 92))
	defer func(rb int) { gemmAVX2RowBlock = rb }(gemmAVX2RowBlock)
	for _, wt := range []quant.Type{quant.Q8_0, quant.Q5_0, quant.Q4_0, quant.Q4_1, quant.Q5_1} {
		dot := quant.DotFor(wt)
		for _, tile := range legacyAVX2Tiles[wt] {
			gemmC := legacyGemmAVX2(wt, tile)
			gemm := uncached(gemmC)
			for _, K := range []int{32, 96, 896, 4864} {
				for _, mode := range []string{"quantized", "raw", "adversarial"} {
					name := fmt.Sprintf("%s/%dx%d/K%d/%s", wt, tile.rw, tile.ra, K, mode)
					t.Run(name, func(t *testing.T) {
						const N = 23
						var wb []byte
						switch mode {
						case "quantized":
							wb = legacyWeights(t, r, wt, N, K, false)
						case "raw":
							wb = legacyWeights(t, r, wt, N, K, true)
						default:
							wb = legacyAdversarialWeights(t, r, wt, N, K)
						}
						wrb := len(wb) / N
						Ms := []int{1, 2, 3, 5, 7, 13, 25}
						if K <= 96 {
							Ms = append(Ms, 61)
						}
						for _, M := range Ms {
							var act []byte
							vdt := wt.VecDotType()
							arb := K / 32 * vdt.TypeSize()
							if mode == "quantized" {
								act, arb = gemmActs(t, r, vdt, M, K)
							} else {
								act = legacyAdversarialActs(r, vdt, M, K, wt != quant.Q8_0)
							}
							want := make([]float32, M*N)
							for m := 0; m < M; m++ {
								for n := 0; n < N; n++ {
									want[m*N+n] = dot(K, wb[n*wrb:(n+1)*wrb], act[m*arb:(m+1)*arb])
								}
							}
							for _, rb := range []int{120, 12} {
								gemmAVX2RowBlock = rb
								// one ActCache for every column range:
								// the activation block derived by the
								// first call serves the others
								var c ActCache
								cached := func(K int, w []byte, wrb int, act []byte, arb, M int, y []float32, ldy, n0, n1 int) {
									gemmC(K, w, wrb, act, arb, M, y, ldy, n0, n1, &c)
								}
								for _, rg := range [][2]int{{0, N}, {1, N - 2}, {3, 4}, {5, 5}, {N - 1, N}, {7, 20}, {2, 11}} {
									checkGemmOut(t, gemm, K, wb, wrb, act, arb, M, N, rg, want)
									checkGemmOut(t, cached, K, wb, wrb, act, arb, M, N, rg, want)
								}
							}
						}
					})
				}
			}
		}
	}
}

// checkGemmOut runs gemm on columns rg of an M×N product into a NaN-filled
// output with a wider stride and compares it with want bit for bit.
func checkGemmOut(t *testing.T, gemm GemmFunc, K int, wb []byte, wrb int, act []byte, arb, M, N int, rg [2]int, want []float32) {
	t.Helper()
	ldy := N + 3
	yb := make([]float32, M*ldy+8)
	for i := range yb {
		yb[i] = float32(math.NaN())
	}
	y := yb[:M*ldy]
	gemm(K, wb, wrb, act, arb, M, y, ldy, rg[0], rg[1])
	for i := M * ldy; i < len(yb); i++ {
		if !math.IsNaN(float64(yb[i])) {
			t.Fatalf("M=%d cols %v wrote past the output", M, rg)
		}
	}
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

// TestGemmLegacyAVX2Stride checks activation rows with a stride wider than
// K (the wrapper repacks them), that a call allocates nothing once its
// pooled buffers exist, and the registration: without AVX-512 VNNI the
// AVX2 GEMM is the installed one.
func TestGemmLegacyAVX2Stride(t *testing.T) {
	if !hasAVX2 {
		t.Skip("the CPU has no AVX2+FMA+F16C (or MINFER_NO_AVX2 is set): no AVX2 GEMM to test")
	}
	r := rand.New(rand.NewPCG(93, 94))
	for _, wt := range []quant.Type{quant.Q8_0, quant.Q5_0, quant.Q4_0, quant.Q4_1, quant.Q5_1} {
		if !hasVNNI && gemmKernels[wt] == nil {
			t.Errorf("%s: no GEMM installed on an AVX2 CPU without AVX-512 VNNI", wt)
		}
		const N, K, M = 9, 128, 7
		dot := quant.DotFor(wt)
		wb := legacyWeights(t, r, wt, N, K, false)
		wrb := len(wb) / N
		packed, parb := gemmActs(t, r, wt.VecDotType(), M, K)
		arb := parb + 6
		act := make([]byte, M*arb)
		for m := 0; m < M; m++ {
			copy(act[m*arb:], packed[m*parb:(m+1)*parb])
		}
		want := make([]float32, M*N)
		for m := 0; m < M; m++ {
			for n := 0; n < N; n++ {
				want[m*N+n] = dot(K, wb[n*wrb:(n+1)*wrb], act[m*arb:(m+1)*arb])
			}
		}
		gemmC := legacyGemmAVX2(wt, legacyAVX2Tiles[wt][0])
		gemm := uncached(gemmC)
		checkGemmOut(t, gemm, K, wb, wrb, act, arb, M, N, [2]int{0, N}, want)
		y := make([]float32, M*N)
		if n := testing.AllocsPerRun(20, func() { gemm(K, wb, wrb, act, arb, M, y, N, 0, N) }); n != 0 {
			t.Errorf("%s: %v allocations per call", wt, n)
		}
		var c ActCache
		if n := testing.AllocsPerRun(20, func() { c.Reset(); gemmC(K, wb, wrb, act, arb, M, y, N, 0, N, &c) }); n != 0 {
			t.Errorf("%s: %v allocations per call with an ActCache", wt, n)
		}
	}
}

// BenchmarkGemmLegacyAVX2 measures the AVX2 GEMM kernels (each tile shape)
// against the AVX2 row kernel swept over the activation rows as MatMul.Run
// does without a GEMM, at qwen2-0.5b's prefill shapes; GMAC/s counts
// M·N·K multiply-adds per second.
func BenchmarkGemmLegacyAVX2(b *testing.B) {
	if !hasAVX2 {
		b.Skip("the CPU has no AVX2+FMA+F16C")
	}
	r := rand.New(rand.NewPCG(95, 96))
	shapes := [][3]int{{128, 896, 896}, {128, 4864, 896}, {128, 896, 4864}, {512, 896, 896}, {512, 4864, 896}, {512, 896, 4864},
		{2, 896, 896}, {4, 896, 896}, {8, 896, 896}, {16, 896, 896}}
	for _, wt := range []quant.Type{quant.Q8_0, quant.Q5_0, quant.Q4_0, quant.Q4_1, quant.Q5_1} {
		for _, sh := range shapes {
			M, N, K := sh[0], sh[1], sh[2]
			wb := legacyWeights(b, r, wt, N, K, false)
			wrb := len(wb) / N
			act, arb := gemmActs(b, r, wt.VecDotType(), M, K)
			y := make([]float32, M*N)
			run := func(name string, f func()) {
				b.Run(fmt.Sprintf("%s/M=%d,N=%d,K=%d/%s", wt, M, N, K, name), func(b *testing.B) {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					c0 := threadCPUSeconds()
					for b.Loop() {
						f()
					}
					macs := float64(M) * float64(N) * float64(K) * float64(b.N) / 1e9
					b.ReportMetric(macs/b.Elapsed().Seconds(), "GMAC/s")
					b.ReportMetric(macs/(threadCPUSeconds()-c0), "GMAC/cpu-s")
				})
			}
			for _, tile := range legacyAVX2Tiles[wt] {
				g := uncached(legacyGemmAVX2(wt, tile))
				run(fmt.Sprintf("gemm%dx%d", tile.rw, tile.ra), func() { g(K, wb, wrb, act, arb, M, y, N, 0, N) })
			}
			rows := legacyRows(legacyAVX2Rows[wt].rows, legacyAVX2Rows[wt].wts, wt.VecDotType().TypeSize())
			run("rows", func() {
				for nb := 0; nb < N; nb += matMulTile {
					ne := min(nb+matMulTile, N)
					for m := 0; m < M; m++ {
						rows(K, wb, wrb, act[m*arb:(m+1)*arb], y[m*N:], nb, ne)
					}
				}
			})
		}
	}
}

// BenchmarkGemmLegacyAVX2RowBlock measures the installed tile of Q5_0 (the
// commonest prefill type of qwen2-0.5b) at K=4864 with several activation
// row blocks (gemmAVX2RowBlock), to tune how many rows stay in L2.
func BenchmarkGemmLegacyAVX2RowBlock(b *testing.B) {
	if !hasAVX2 {
		b.Skip("the CPU has no AVX2+FMA+F16C")
	}
	defer func(rb int) { gemmAVX2RowBlock = rb }(gemmAVX2RowBlock)
	r := rand.New(rand.NewPCG(97, 98))
	const M, N, K = 512, 896, 4864
	wt := quant.Q5_0
	wb := legacyWeights(b, r, wt, N, K, false)
	wrb := len(wb) / N
	act, arb := gemmActs(b, r, quant.Q8_0, M, K)
	y := make([]float32, M*N)
	g := uncached(legacyGemmAVX2(wt, legacyAVX2Tiles[wt][0]))
	for _, rb := range []int{24, 48, 72, 120, 240, 512} {
		b.Run(fmt.Sprintf("rows=%d", rb), func(b *testing.B) {
			gemmAVX2RowBlock = rb
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			c0 := threadCPUSeconds()
			for b.Loop() {
				g(K, wb, wrb, act, arb, M, y, N, 0, N)
			}
			macs := float64(M) * float64(N) * float64(K) * float64(b.N) / 1e9
			b.ReportMetric(macs/b.Elapsed().Seconds(), "GMAC/s")
			b.ReportMetric(macs/(threadCPUSeconds()-c0), "GMAC/cpu-s")
		})
	}
}

// BenchmarkGemmLegacyAVX2Chunks measures one worker's share of a Q5_0
// prefill mat-mul at -t 2 as the executor runs it (4 chunks of an eighth
// of the columns each) with the activation block derived per call and
// kept in an ActCache (derived once for the worker's chunks).
func BenchmarkGemmLegacyAVX2Chunks(b *testing.B) {
	if !hasAVX2 {
		b.Skip("the CPU has no AVX2+FMA+F16C")
	}
	r := rand.New(rand.NewPCG(99, 100))
	const M = 512
	wt := quant.Q5_0
	g := legacyGemmAVX2(wt, legacyAVX2Tiles[wt][0])
	for _, sh := range [][2]int{{896, 896}, {4864, 896}, {896, 4864}} {
		N, K := sh[0], sh[1]
		wb := legacyWeights(b, r, wt, N, K, false)
		wrb := len(wb) / N
		act, arb := gemmActs(b, r, quant.Q8_0, M, K)
		y := make([]float32, M*N)
		for _, cache := range []bool{false, true} {
			b.Run(fmt.Sprintf("N=%d,K=%d/cache=%v", N, K, cache), func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				var c ActCache
				cp := (*ActCache)(nil)
				if cache {
					cp = &c
				}
				c0 := threadCPUSeconds()
				for b.Loop() {
					c.Reset()
					for ch := 0; ch < 4; ch++ {
						n0, n1 := ch*N/8, (ch+1)*N/8
						g(K, wb, wrb, act, arb, M, y, N, n0, n1, cp)
					}
				}
				macs := float64(M) * float64(N/2) * float64(K) * float64(b.N) / 1e9
				b.ReportMetric(macs/(threadCPUSeconds()-c0), "GMAC/cpu-s")
			})
		}
	}
}
