//go:build (amd64 || arm64) && !purego

package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/minfer/minfer/quant"
)

// tierOK reports whether the CPU has a row kernel tier (rowKernelTable).
func tierOK(tier string) bool {
	switch tier {
	case "avx2":
		return hasAVX2
	case "avx512":
		return hasAVX512
	case "avx512vnni":
		return hasVNNI
	case "avxvnni":
		return hasAVXVNNI
	case "neon":
		return hasNEON
	case "dotprod":
		return hasDotProd
	}
	return false
}

// TestRowKernelTiers calls every row kernel of every SIMD tier directly
// (not through the start-up dispatch) and checks each output's bits against the pure-Go
// dot (on amd64 the AVX2 kernels are tested on an AVX-512 machine too, on
// arm64 the base NEON kernels on a dotprod machine): K of one block up to qwen-sized rows, row ranges of every remainder
// of the kernels' 2- and 4-row steps, random, raw-byte and extreme weight
// blocks against random and extreme (±127/-128-heavy) activations.
func TestRowKernelTiers(t *testing.T) {
	r := rand.New(rand.NewPCG(91, 92))
	t.Logf("start-up dispatch: %s", Features())
	for _, k := range rowKernelTable() {
		t.Run(k.typ.String()+"/"+k.tier, func(t *testing.T) {
			if !tierOK(k.tier) {
				t.Skipf("the %s tier is unavailable: the CPU lacks it or a MINFER_NO_* switch dropped it", k.tier)
			}
			dot := quant.DotFor(k.typ)
			vdt := k.typ.VecDotType()
			bsz := k.typ.BlockSize()
			const N = 13
			nbs := []int{1, 2, 3, 4, 12, 19}
			if bsz == 1 { // f16, bf16: steps of 32 / 64 elements and a tail
				nbs = []int{1, 31, 32, 63, 64, 65, 128, 200, 1024, 1090}
			}
			for _, nb := range nbs {
				K := nb * bsz
				arb, _ := vdt.RowSize(K)
				for kind := 0; kind < 3; kind++ {
					w, wrb := rowTestWeights(t, r, k.typ, N, K, kind)
					for ak := 0; ak < 2; ak++ {
						x := kqRandRow(r, K, kind+ak)
						if ak == 1 {
							for i := range x {
								if i%3 == 0 {
									x[i] = 1000 * float32(1-2*(i%2))
								}
							}
						}
						act := make([]byte, arb)
						if err := quant.QuantizeAct(vdt, x, act); err != nil {
							t.Fatal(err)
						}
						want := make([]float32, N)
						for n := range want {
							want[n] = dot(K, w[n*wrb:(n+1)*wrb], act)
						}
						for _, rg := range [][2]int{{0, N}, {0, 1}, {0, 2}, {0, 3}, {1, 6}, {2, 9}, {3, 10}, {5, 5}, {N - 1, N}} {
							y := make([]float32, N)
							for i := range y {
								y[i] = float32(math.NaN())
							}
							k.f(K, w[:rg[1]*wrb], wrb, act, y, rg[0], rg[1])
							for n := range y {
								if n < rg[0] || n >= rg[1] {
									if !math.IsNaN(float64(y[n])) {
										t.Fatalf("K=%d rows %v: wrote y[%d]", K, rg, n)
									}
									continue
								}
								if math.Float32bits(y[n]) != math.Float32bits(want[n]) {
									t.Fatalf("K=%d weights %d act %d rows %v: y[%d] = %v (%#08x), oracle %v (%#08x)",
										K, kind, ak, rg, n, y[n], math.Float32bits(y[n]), want[n], math.Float32bits(want[n]))
								}
							}
						}
					}
				}
			}
			t.Logf("%s kernel of the %s tier: bit-identical to the pure-Go dot", k.typ, k.tier)
		})
	}
}

// BenchmarkRowKernelTiers measures every row kernel of every tier this CPU
// has (rowKernelTable, called directly) and the pure-Go dot of the same
// type ("go") on a decode-shaped mat-mul: 512 weight rows of K = 1024
// (2 MiB or less of weights: in L2/L3) against one activation row. MB/s is
// weight bytes read.
func BenchmarkRowKernelTiers(b *testing.B) {
	const N, K = 512, 1024
	r := rand.New(rand.NewPCG(5, 6))
	type impl struct {
		typ  quant.Type
		tier string
		f    RowsFunc
	}
	var impls []impl
	done := map[quant.Type]bool{}
	for _, k := range rowKernelTable() {
		if !done[k.typ] {
			done[k.typ] = true
			dot := quant.DotFor(k.typ)
			impls = append(impls, impl{k.typ, "go", func(K int, w []byte, wrb int, a []byte, y []float32, n0, n1 int) {
				for n := n0; n < n1; n++ {
					y[n] = dot(K, w[n*wrb:(n+1)*wrb], a)
				}
			}})
		}
		impls = append(impls, impl{k.typ, k.tier, k.f})
	}
	for _, im := range impls {
		b.Run(im.typ.String()+"/"+im.tier, func(b *testing.B) {
			if im.tier != "go" && !tierOK(im.tier) {
				b.Skipf("the %s tier is unavailable", im.tier)
			}
			w, wrb := rowTestWeights(b, r, im.typ, N, K, 0)
			vdt := im.typ.VecDotType()
			arb, _ := vdt.RowSize(K)
			act := make([]byte, arb)
			if err := quant.QuantizeAct(vdt, kqRandRow(r, K, 0), act); err != nil {
				b.Fatal(err)
			}
			y := make([]float32, N)
			b.SetBytes(int64(N * wrb))
			for b.Loop() {
				im.f(K, w, wrb, act, y, 0, N)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/N, "ns/row")
		})
	}
}

// TestRowKernelDispatch checks that the start-up dispatch installed, for
// every weight type with a row kernel, the best tier of rowKernelTable the
// CPU has (AVX-512 VNNI over AVX2), as Features reports it.
func TestRowKernelDispatch(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no SIMD row kernels without AVX2")
	}
	// AVX-512 (VNNI) over AVX-VNNI over the rest.
	rank := map[string]int{"avx512vnni": 2, "avx512": 2, "avxvnni": 1}
	best := map[quant.Type]string{}
	for _, k := range rowKernelTable() {
		if tierOK(k.tier) && (best[k.typ] == "" || rank[k.tier] > rank[best[k.typ]]) {
			best[k.typ] = k.tier
		}
	}
	installed := map[string]bool{}
	for _, s := range tiers {
		installed[s] = true
	}
	for typ, tier := range best {
		if c, ok := rowTierChosen[typ]; ok {
			tier = c // a lower tier chosen on purpose (the f16 YMM form on Zen 4)
		}
		name := "mat_mul/" + typ.String() + ":" + tier
		if !installed[name] {
			t.Errorf("%s not installed (installed: %v)", name, tiers)
		}
		if rowKernels[typ] == nil {
			t.Errorf("%s: no row kernel registered", typ)
		}
	}
}
