package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/minfer/minfer/quant"
)

// Every registered GEMM kernel must give, for every output, exactly the
// bits of quant's pure-Go dot of its weight row and activation row, and
// must not write outside its rows and columns.

var gemmTypes = []quant.Type{quant.Q8_0, quant.Q5_0, quant.Q4_0, quant.Q4_1, quant.Q5_1,
	quant.Q4_K, quant.Q5_K, quant.Q6_K, quant.Q2_K, quant.Q3_K}

// gemmWeights returns N random weight rows of type wt: the legacy test
// generator for the 32-element formats; for the K-quants quantized random
// rows (with zero and large blocks) or (raw) random bytes with finite
// random f16 super-block scales, which reach every scale and quant pattern.
func gemmWeights(t testing.TB, r *rand.Rand, wt quant.Type, N, K int, raw bool) []byte {
	if wt.BlockSize() == 32 {
		return legacyWeights(t, r, wt, N, K, raw)
	}
	rs, err := wt.RowSize(K)
	if err != nil {
		t.Fatal(err)
	}
	wb := make([]byte, N*rs)
	if raw {
		var f16 []int // offsets of the f16 fields in a super-block
		switch wt {
		case quant.Q4_K, quant.Q5_K:
			f16 = []int{0, 2}
		case quant.Q6_K:
			f16 = []int{208}
		case quant.Q2_K:
			f16 = []int{80, 82}
		case quant.Q3_K:
			f16 = []int{108}
		}
		for i := range wb {
			wb[i] = byte(r.Uint32())
		}
		ts := wt.TypeSize()
		for o := 0; o < len(wb); o += ts {
			for _, h := range f16 {
				v := quant.FP32ToFP16(float32(math.Pow(10, -6+r.Float64()*6) * r.NormFloat64()))
				if r.IntN(10) == 0 {
					v = 0
				}
				wb[o+h], wb[o+h+1] = byte(v), byte(v>>8)
			}
		}
		return wb
	}
	for n := 0; n < N; n++ {
		if err := quant.Quantize(wt, legacyFloats(r, K, 1e4), wb[n*rs:(n+1)*rs]); err != nil {
			t.Fatal(err)
		}
	}
	return wb
}

func gemmActs(t testing.TB, r *rand.Rand, vdt quant.Type, M, K int) ([]byte, int) {
	arb, err := vdt.RowSize(K)
	if err != nil {
		t.Fatal(err)
	}
	act := make([]byte, M*arb)
	for m := 0; m < M; m++ {
		if err := quant.QuantizeAct(vdt, legacyFloats(r, K, 1e3), act[m*arb:(m+1)*arb]); err != nil {
			t.Fatal(err)
		}
	}
	return act, arb
}

func TestGemm(t *testing.T) {
	r := rand.New(rand.NewPCG(81, 82))
	t.Logf("kernels: %s", Features())
	for _, wt := range gemmTypes {
		gemm := gemmKernels[wt]
		if gemm == nil {
			t.Logf("%s: no GEMM kernel registered", wt)
			continue
		}
		vdt := wt.VecDotType()
		dot := quant.DotFor(wt)
		for _, K := range []int{896, 4864, 1024} {
			if K%wt.BlockSize() != 0 {
				continue
			}
			for _, raw := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/K%d/raw=%v", wt, K, raw), func(t *testing.T) {
					const N = 23
					wb := gemmWeights(t, r, wt, N, K, raw)
					wrb := len(wb) / N
					for _, M := range []int{2, 3, 4, 5, 7, 16, 33} {
						act, arb := gemmActs(t, r, vdt, M, K)
						want := make([]float32, M*N)
						for m := 0; m < M; m++ {
							for n := 0; n < N; n++ {
								want[m*N+n] = dot(K, wb[n*wrb:(n+1)*wrb], act[m*arb:(m+1)*arb])
							}
						}
						for _, rg := range [][2]int{{0, N}, {1, N - 2}, {3, 4}, {5, 5}, {N - 1, N}, {7, 20}, {2, 10}} {
							ldy := N + 3
							y := make([]float32, M*ldy)
							for i := range y {
								y[i] = float32(math.NaN())
							}
							gemm(K, wb, wrb, act, arb, M, y, ldy, rg[0], rg[1])
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

// TestGemmMatMul checks MatMul.Run end to end with the GEMM kernel against
// the same MatMul without it (the row kernels or the pure-Go dots), over a
// whole prompt-sized M.
func TestGemmMatMul(t *testing.T) {
	r := rand.New(rand.NewPCG(83, 84))
	for _, wt := range gemmTypes {
		if gemmKernels[wt] == nil {
			continue
		}
		const N, K, M = 70, 896 * 2, 133
		if K%wt.BlockSize() != 0 {
			continue
		}
		k, err := NewMatMul(wt)
		if err != nil {
			t.Fatal(err)
		}
		ref := *k
		ref.gemm, ref.gemmC = nil, nil
		wb := gemmWeights(t, r, wt, N, K, false)
		act, _ := gemmActs(t, r, wt.VecDotType(), M, K)
		got, want := make([]float32, M*N), make([]float32, M*N)
		k.Run(K, wb, act, M, got, N, 0, N)
		ref.Run(K, wb, act, M, want, N, 0, N)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s: y[%d][%d] = %v, rows %v", wt, i/N, i%N, got[i], want[i])
			}
		}
	}
}

// BenchmarkGemm measures prefill-shaped mat-muls (M activation rows) with
// the GEMM kernel ("gemm") against the row kernels ("rows"); GMAC/s counts
// M·N·K multiply-adds per second.
func BenchmarkGemm(b *testing.B) {
	r := rand.New(rand.NewPCG(85, 86))
	shapes := [][3]int{{64, 896, 896}, {64, 4864, 896}, {64, 896, 4864}, {256, 896, 896}}
	for _, wt := range gemmTypes {
		if gemmKernels[wt] == nil {
			continue
		}
		for _, sh := range shapes {
			M, N, K := sh[0], sh[1], sh[2]
			if K%wt.BlockSize() != 0 {
				continue
			}
			k, err := NewMatMul(wt)
			if err != nil {
				b.Fatal(err)
			}
			wb := gemmWeights(b, r, wt, N, K, false)
			act, _ := gemmActs(b, r, wt.VecDotType(), M, K)
			y := make([]float32, M*N)
			for _, mode := range []string{"gemm", "rows"} {
				kk := *k
				if mode == "rows" {
					kk.gemm, kk.gemmC = nil, nil
				}
				b.Run(fmt.Sprintf("%s/M=%d,N=%d,K=%d/%s", wt, M, N, K, mode), func(b *testing.B) {
					for b.Loop() {
						kk.Run(K, wb, act, M, y, N, 0, N)
					}
					b.ReportMetric(float64(M)*float64(N)*float64(K)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
				})
			}
		}
	}
}
