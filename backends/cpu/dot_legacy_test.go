package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/minfer/minfer/quant"
)

// The SIMD row kernels and activation quantizers of the 32-element formats
// must give exactly the bits of quant's pure-Go dots and quantizers. These
// tests run on every architecture and skip the types nothing registered.

var legacyTypes = []quant.Type{quant.Q8_0, quant.Q5_0, quant.Q4_0, quant.Q4_1, quant.Q5_1}

// legacyFloats fills a row of K values block by block with a mix of
// shapes: normal values at a random magnitude (tiny ones give subnormal
// f16 scales, large ones scales near the f16 maximum), all-zero blocks,
// constant blocks, one-outlier blocks and blocks of small integers (ties
// for the activation quantizer when the outlier is 127).
func legacyFloats(r *rand.Rand, K int, maxAmp float64) []float32 {
	x := make([]float32, K)
	for b := 0; b < K; b += 32 {
		blk := x[b : b+32]
		amp := math.Pow(10, -7+r.Float64()*(math.Log10(maxAmp)+7))
		switch r.IntN(8) {
		case 0: // zeros
		case 1:
			c := float32(amp * r.NormFloat64())
			for i := range blk {
				blk[i] = c
			}
		case 2:
			blk[r.IntN(32)] = float32(amp)
			for i := range blk {
				if blk[i] == 0 {
					blk[i] = float32(amp * 1e-3 * r.NormFloat64())
				}
			}
		case 3: // halves: x·127/amax = x exactly, so k+0.5 ties
			for i := range blk {
				blk[i] = float32(r.IntN(255)-127) + 0.5*float32(r.IntN(2))
			}
			blk[r.IntN(32)] = 127 * float32(1-2*r.IntN(2))
		default:
			for i := range blk {
				blk[i] = float32(amp * r.NormFloat64())
			}
		}
	}
	return x
}

// legacyWeights returns N weight rows of type wt: quantized from
// legacyFloats, or (raw) random bytes with finite random f16 scales, which
// reach every quant bit pattern.
func legacyWeights(t testing.TB, r *rand.Rand, wt quant.Type, N, K int, raw bool) []byte {
	rs, err := wt.RowSize(K)
	if err != nil {
		t.Fatal(err)
	}
	wb := make([]byte, N*rs)
	if raw {
		for i := range wb {
			wb[i] = byte(r.Uint32())
		}
		ts := wt.TypeSize()
		nh := 1 // f16 fields at the start of each block: d, and m for _1
		if wt == quant.Q4_1 || wt == quant.Q5_1 {
			nh = 2
		}
		for o := 0; o < len(wb); o += ts {
			for h := 0; h < nh; h++ {
				v := quant.FP32ToFP16(float32(math.Pow(10, -6+r.Float64()*8) * r.NormFloat64()))
				if r.IntN(10) == 0 {
					v = 0
				}
				wb[o+2*h], wb[o+2*h+1] = byte(v), byte(v>>8)
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

func TestLegacyRows(t *testing.T) {
	r := rand.New(rand.NewPCG(71, 72))
	t.Logf("kernels: %s", Features())
	for _, wt := range legacyTypes {
		rows := rowKernels[wt]
		if rows == nil {
			t.Run(wt.String(), func(t *testing.T) {
				t.Skipf("%s: no SIMD row kernel on this CPU / build", wt)
			})
			continue
		}
		vdt := wt.VecDotType()
		dot := quant.DotFor(wt)
		for _, K := range []int{32, 64, 896, 4864, 4096} {
			for _, raw := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/K%d/raw=%v", wt, K, raw), func(t *testing.T) {
					N := 37
					wb := legacyWeights(t, r, wt, N, K, raw)
					wrb := len(wb) / N
					arb, _ := vdt.RowSize(K)
					for trial := 0; trial < 4; trial++ {
						act := make([]byte, arb)
						if err := quant.QuantizeAct(vdt, legacyFloats(r, K, 1e3), act); err != nil {
							t.Fatal(err)
						}
						want := make([]float32, N)
						for n := range want {
							want[n] = dot(K, wb[n*wrb:(n+1)*wrb], act)
						}
						for _, rg := range [][2]int{{0, N}, {1, N - 2}, {3, 4}, {5, 5}, {N - 1, N}, {7, 30}} {
							y := make([]float32, N)
							for i := range y {
								y[i] = float32(math.NaN())
							}
							rows(K, wb, wrb, act, y, rg[0], rg[1])
							for n := range y {
								if n < rg[0] || n >= rg[1] {
									if !math.IsNaN(float64(y[n])) {
										t.Fatalf("rows %v wrote y[%d]", rg, n)
									}
									continue
								}
								if math.Float32bits(y[n]) != math.Float32bits(want[n]) {
									t.Fatalf("rows %v: y[%d] = %v (%#08x), oracle %v (%#08x)", rg, n,
										y[n], math.Float32bits(y[n]), want[n], math.Float32bits(want[n]))
								}
							}
						}
					}
				})
			}
		}
	}
}

// TestLegacyRowsStride checks a weight row stride larger than the row
// (a view into a wider tensor).
func TestLegacyRowsStride(t *testing.T) {
	r := rand.New(rand.NewPCG(73, 74))
	for _, wt := range legacyTypes {
		t.Run(wt.String(), func(t *testing.T) {
			testLegacyRowsStride(t, r, wt)
		})
	}
}

func testLegacyRowsStride(t *testing.T, r *rand.Rand, wt quant.Type) {
	{
		rows := rowKernels[wt]
		if rows == nil {
			t.Skipf("%s: no SIMD row kernel on this CPU / build", wt)
		}
		const N, K, KW = 11, 256, 320
		wb := legacyWeights(t, r, wt, N, KW, true)
		wrb := len(wb) / N
		rs, _ := wt.RowSize(K)
		arb, _ := wt.VecDotType().RowSize(K)
		act := make([]byte, arb)
		quant.QuantizeAct(wt.VecDotType(), legacyFloats(r, K, 10), act)
		y := make([]float32, N)
		rows(K, wb, wrb, act, y, 1, N)
		for n := 1; n < N; n++ {
			want := quant.DotFor(wt)(K, wb[n*wrb:n*wrb+rs], act)
			if math.Float32bits(y[n]) != math.Float32bits(want) {
				t.Fatalf("%s: y[%d] = %v, oracle %v", wt, n, y[n], want)
			}
		}
	}
}

func TestLegacyActQuant(t *testing.T) {
	r := rand.New(rand.NewPCG(75, 76))
	for _, vdt := range []quant.Type{quant.Q8_0, quant.Q8_1} {
		f := actKernels[vdt]
		if f == nil {
			t.Run(vdt.String(), func(t *testing.T) {
				t.Skipf("%s: no SIMD activation quantizer on this CPU / build", vdt)
			})
			continue
		}
		oracle := quant.ActQuantFor(vdt)
		for _, K := range []int{32, 64, 896, 4864, 4096} {
			for trial := 0; trial < 20; trial++ {
				x := legacyFloats(r, K, 1e5)
				rs, _ := vdt.RowSize(K)
				want, got := make([]byte, rs), make([]byte, rs)
				oracle(x, want)
				f(x, got)
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("%s K=%d: byte %d (block %d) = %#02x, want %#02x", vdt, K, i, i/vdt.TypeSize(), got[i], want[i])
					}
				}
			}
		}
	}
}

// BenchmarkRows measures the row kernels on qwen2-0.5b decode shapes
// (one activation row), SIMD ("asm") against the pure-Go dot ("go"); the
// throughput is of weight bytes read.
func BenchmarkRows(b *testing.B) {
	r := rand.New(rand.NewPCG(77, 78))
	for _, wt := range legacyTypes {
		for _, N := range []int{896, 4864} {
			const K = 896
			wb := legacyWeights(b, r, wt, N, K, false)
			wrb := len(wb) / N
			arb, _ := wt.VecDotType().RowSize(K)
			act := make([]byte, arb)
			quant.QuantizeAct(wt.VecDotType(), randVec(r, K, 1), act)
			y := make([]float32, N)
			dot := quant.DotFor(wt)
			impls := []struct {
				name string
				f    RowsFunc
			}{{"go", func(K int, w []byte, wrb int, a []byte, y []float32, n0, n1 int) {
				for n := n0; n < n1; n++ {
					y[n] = dot(K, w[n*wrb:(n+1)*wrb], a)
				}
			}}}
			if f := rowKernels[wt]; f != nil {
				impls = append(impls, struct {
					name string
					f    RowsFunc
				}{"asm", f})
			}
			for _, im := range impls {
				b.Run(fmt.Sprintf("%s/%dx%d/%s", wt, N, K, im.name), func(b *testing.B) {
					b.SetBytes(int64(len(wb)))
					for b.Loop() {
						im.f(K, wb, wrb, act, y, 0, N)
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(N), "ns/row")
				})
			}
		}
	}
}

// BenchmarkActQuant measures the activation quantizers on a row of 896.
func BenchmarkActQuant(b *testing.B) {
	r := rand.New(rand.NewPCG(79, 80))
	x := randVec(r, 4864, 1)
	for _, vdt := range []quant.Type{quant.Q8_0, quant.Q8_1} {
		rs, _ := vdt.RowSize(len(x))
		dst := make([]byte, rs)
		impls := map[string]func([]float32, []byte){"go": quant.ActQuantFor(vdt)}
		if f := actKernels[vdt]; f != nil {
			impls["asm"] = f
		}
		for _, name := range []string{"go", "asm"} {
			f := impls[name]
			if f == nil {
				continue
			}
			b.Run(fmt.Sprintf("%s/%d/%s", vdt, len(x), name), func(b *testing.B) {
				b.SetBytes(int64(4 * len(x)))
				for b.Loop() {
					f(x, dst)
				}
			})
		}
	}
}
