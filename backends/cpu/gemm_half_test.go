//go:build amd64 && !purego

package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/minfer/minfer/quant"
)

// TestHalfGemmTiers runs every f16 / bf16 GEMM form of every tier this CPU
// has (called directly, not through the start-up dispatch) and checks each
// output's bits against quant's pure-Go dot: K with and without a tail,
// row counts with and without whole tiles, column ranges with and without
// whole weight tiles, with and without an ActCache.
func TestHalfGemmTiers(t *testing.T) {
	r := rand.New(rand.NewPCG(161, 162))
	for _, typ := range []quant.Type{quant.F16, quant.BF16} {
		for _, tier := range []string{"avx2", "avx512"} {
			t.Run(typ.String()+"/"+tier, func(t *testing.T) {
				if !tierOK(tier) {
					t.Skipf("the %s tier is unavailable: the CPU lacks it or a MINFER_NO_* switch dropped it", tier)
				}
				g := halfGemms[typ][tier]
				if g == nil {
					t.Fatalf("no %s GEMM form for the %s tier", typ, tier)
				}
				dot := quant.DotFor(typ)
				const N = 23
				for _, K := range []int{64, 100, 1024, 1090} {
					for kind := 0; kind < 4; kind++ {
						// kind 3: weights and activations near 2^-70, so
						// that the products fall below float32's normal
						// range, where a fused add and a rounded product
						// differ (bf16; f16 cannot reach it)
						w, wrb := tinyOr(r, typ, N, K, kind == 3, func() ([]byte, int) { return rowTestWeights(t, r, typ, N, K, kind%3) })
						for _, M := range []int{1, 2, g.C - 1, g.C, g.C + 1, 2*g.C + 1, 2*g.C + 2, 29} {
							arb, _ := typ.RowSize(K)
							act := make([]byte, M*arb)
							for m := 0; m < M; m++ {
								x := kqRandRow(r, K, kind%3+m%2)
								if kind == 3 {
									for i := range x {
										x[i] *= 0x1p-70
									}
								}
								if err := quant.QuantizeAct(typ, x, act[m*arb:(m+1)*arb]); err != nil {
									t.Fatal(err)
								}
							}
							for _, rg := range [][2]int{{0, N}, {1, N - 2}, {3, 4}, {5, 5}, {2, 2 + 2*g.R}, {7, 20}} {
								for _, cached := range []bool{false, true} {
									var c *ActCache
									if cached {
										c = new(ActCache)
									}
									ldy := N + 3
									y := make([]float32, M*ldy)
									for i := range y {
										y[i] = float32(math.NaN())
									}
									g.run(K, w, wrb, act, arb, M, y, ldy, rg[0], rg[1], c)
									for m := 0; m < M; m++ {
										for n := 0; n < ldy; n++ {
											got := y[m*ldy+n]
											if n < rg[0] || n >= rg[1] {
												if !math.IsNaN(float64(got)) {
													t.Fatalf("K=%d M=%d cols %v wrote y[%d][%d]", K, M, rg, m, n)
												}
												continue
											}
											want := dot(K, w[n*wrb:(n+1)*wrb], act[m*arb:(m+1)*arb])
											if math.Float32bits(got) != math.Float32bits(want) {
												t.Fatalf("K=%d weights %d M=%d cols %v: y[%d][%d] = %v (%#08x), oracle %v (%#08x)",
													K, kind, M, rg, m, n, got, math.Float32bits(got), want, math.Float32bits(want))
											}
										}
									}
								}
							}
						}
					}
				}
				t.Logf("%s GEMM of the %s tier (%d×%d tiles): bit-identical to the pure-Go dot", typ, tier, g.R, g.C)
			})
		}
	}
}

// tinyOr returns N rows of K random values near 2^-70 in typ when tiny,
// else what def returns.
func tinyOr(r *rand.Rand, typ quant.Type, N, K int, tiny bool, def func() ([]byte, int)) ([]byte, int) {
	if !tiny {
		return def()
	}
	wrb, _ := typ.RowSize(K)
	x := make([]float32, N*K)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 0x1p-70)
	}
	w := make([]byte, N*wrb)
	if err := quant.Quantize(typ, x, w); err != nil {
		panic(err)
	}
	return w, wrb
}

// BenchmarkHalfGemm measures the f16 / bf16 GEMM forms against the row
// kernels over the same rows (what a prompt ran before them) on
// Qwen3-0.6B's prefill shapes; GMAC/s counts M·N·K multiply-adds per
// second.
func BenchmarkHalfGemm(b *testing.B) {
	r := rand.New(rand.NewPCG(163, 164))
	shapes := [][3]int{{64, 1024, 1024}, {512, 1024, 1024}, {512, 3072, 1024}, {512, 1024, 3072}}
	for _, typ := range []quant.Type{quant.F16, quant.BF16} {
		for _, tier := range []string{"avx2", "avx512"} {
			g := halfGemms[typ][tier]
			for _, sh := range shapes {
				M, N, K := sh[0], sh[1], sh[2]
				for _, mode := range []string{"gemm", "nopf", "rows"} {
					b.Run(fmt.Sprintf("%s/%s/M=%d,N=%d,K=%d/%s", typ, tier, M, N, K, mode), func(b *testing.B) {
						if !tierOK(tier) || g == nil {
							b.Skipf("the %s tier is unavailable", tier)
						}
						w, wrb := rowTestWeights(b, r, typ, N, K, 0)
						arb, _ := typ.RowSize(K)
						act := make([]byte, M*arb)
						for m := 0; m < M; m++ {
							if err := quant.QuantizeAct(typ, kqRandRow(r, K, 0), act[m*arb:(m+1)*arb]); err != nil {
								b.Fatal(err)
							}
						}
						y := make([]float32, M*N)
						var c ActCache
						halfPrefetch = mode != "nopf"
						defer func() { halfPrefetch = true }()
						for b.Loop() {
							c.Reset()
							if mode != "rows" {
								g.run(K, w, wrb, act, arb, M, y, N, 0, N, &c)
							} else {
								rowTiles(g.rows, K, w, wrb, act, arb, M, y, N, 0, N)
							}
						}
						b.ReportMetric(float64(M)*float64(N)*float64(K)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
					})
				}
			}
		}
	}
}

// BenchmarkHalfTile runs one tile of each form over the same rows, in L1
// up to K = 1024 (in L2 at 4096): the kernels' own ceiling without the
// GEMM's memory traffic, and (from K = 256 to 1024) their fixed cost per
// tile, the passes' and the reduction's.
func BenchmarkHalfTile(b *testing.B) {
	r := rand.New(rand.NewPCG(165, 166))
	for _, typ := range []quant.Type{quant.F16, quant.BF16} {
		for _, tier := range []string{"avx2", "avx512"} {
			g := halfGemms[typ][tier]
			for _, K := range []int{256, 1024, 4096} {
				b.Run(fmt.Sprintf("%s/%s/K=%d", typ, tier, K), func(b *testing.B) {
					if !tierOK(tier) || g == nil {
						b.Skipf("the %s tier is unavailable", tier)
					}
					w, wrb := rowTestWeights(b, r, typ, g.R, K, 0)
					a := make([]float32, g.C*K)
					for i := range a {
						a[i] = float32(r.NormFloat64())
					}
					y := make([]float32, g.C*g.R)
					var sc [halfScratch]float32
					for b.Loop() {
						g.tile(&w[0], wrb, &a[0], 4*K, K, &y[0], 4*g.R, &sc[0])
					}
					b.ReportMetric(float64(g.R*g.C*K)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
				})
			}
		}
	}
}
