package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/minfer/minfer/quant"
)

// The K-quant weight types that have SIMD row kernels on some platform.
var kqTypes = []quant.Type{quant.Q4_K, quant.Q6_K, quant.Q5_K, quant.Q2_K, quant.Q3_K}

// kqRandRow fills a row of K floats for quantization: normal values with
// some outliers, and (by kind) whole zero super-blocks, tiny blocks and
// blocks of one sign.
func kqRandRow(r *rand.Rand, K int, kind int) []float32 {
	x := make([]float32, K)
	for i := range x {
		x[i] = float32(r.NormFloat64())
		if r.IntN(97) == 0 {
			x[i] *= 30
		}
	}
	for b := 0; b < K/256; b++ {
		blk := x[256*b : 256*b+256]
		switch (kind + b) % 7 {
		case 1:
			clear(blk)
		case 2:
			for i := range blk {
				blk[i] *= 1e-4
			}
		case 3:
			for i := range blk {
				blk[i] = float32(math.Abs(float64(blk[i])))
			}
		case 4:
			for i := range blk {
				blk[i] = -float32(math.Abs(float64(blk[i]))) - 0.5
			}
		}
	}
	return x
}

// kqWeights returns N random rows of K elements quantized to typ, and the
// row size.
func kqWeights(t testing.TB, r *rand.Rand, typ quant.Type, N, K int) ([]byte, int) {
	wrb, err := typ.RowSize(K)
	if err != nil {
		t.Fatal(err)
	}
	w := make([]byte, N*wrb)
	for n := 0; n < N; n++ {
		if err := quant.Quantize(typ, kqRandRow(r, K, n), w[n*wrb:(n+1)*wrb]); err != nil {
			t.Fatal(err)
		}
	}
	return w, wrb
}

func kqAct(r *rand.Rand, K, kind int) []byte {
	a := make([]byte, K/256*292)
	quant.QuantizeQ8KAct(kqRandRow(r, K, kind), a)
	return a
}

func TestKQuantRowsBitExact(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for _, typ := range kqTypes {
		t.Run(typ.String(), func(t *testing.T) {
			testKQuantRows(t, r, typ)
		})
	}
}

func testKQuantRows(t *testing.T, r *rand.Rand, typ quant.Type) {
	const N = 23
	{
		f := rowKernels[typ]
		if f == nil {
			t.Skipf("%s: no SIMD row kernel on this CPU / build", typ)
		}
		dot := quant.DotFor(typ)
		for _, K := range []int{256, 768, 1024, 3072, 4864} {
			w, wrb := kqWeights(t, r, typ, N, K)
			for kind := 0; kind < 3; kind++ {
				a := kqAct(r, K, kind+5)
				want := make([]float32, N)
				for n := range want {
					want[n] = dot(K, w[n*wrb:(n+1)*wrb], a)
				}
				for _, rg := range [][2]int{{0, N}, {1, N}, {3, 20}, {5, 6}, {7, 7}, {0, 1}, {N - 1, N}} {
					y := make([]float32, N)
					for i := range y {
						y[i] = float32(math.NaN())
					}
					// the kernel may only see the rows it needs
					f(K, w[:rg[1]*wrb], wrb, a, y[:max(rg[1], 1)], rg[0], rg[1])
					for n := range y {
						got := math.Float32bits(y[n])
						if n < rg[0] || n >= rg[1] {
							if !math.IsNaN(float64(y[n])) {
								t.Fatalf("%s K=%d rows %v: wrote row %d", typ, K, rg, n)
							}
							continue
						}
						if got != math.Float32bits(want[n]) {
							t.Fatalf("%s K=%d act %d rows %v: row %d = %v (%#x), want %v (%#x)",
								typ, K, kind, rg, n, y[n], got, want[n], math.Float32bits(want[n]))
						}
					}
				}
			}
		}
	}
}

// TestKQuantRowsExtremes uses weight blocks with extreme packed bytes
// (all 0x00 / 0xff quants and scales) against extreme activations.
func TestKQuantRowsExtremes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for _, typ := range kqTypes {
		t.Run(typ.String(), func(t *testing.T) {
			testKQuantExtremes(t, r, typ)
		})
	}
}

func testKQuantExtremes(t *testing.T, r *rand.Rand, typ quant.Type) {
	const K, N = 1024, 9
	{
		f := rowKernels[typ]
		if f == nil {
			t.Skipf("%s: no SIMD row kernel on this CPU / build", typ)
		}
		dot := quant.DotFor(typ)
		wrb, _ := typ.RowSize(K)
		bs := typ.TypeSize()
		w := make([]byte, N*wrb)
		for i := range w {
			switch (i / 64) % 3 {
			case 0:
				w[i] = byte(r.Uint32())
			case 1:
				w[i] = 0xff
			default:
				w[i] = 0
			}
		}
		// keep the fp16 scales finite and small
		for b := 0; b < len(w)/bs; b++ {
			blk := w[b*bs : (b+1)*bs]
			var offs []int
			switch typ {
			case quant.Q4_K, quant.Q5_K:
				offs = []int{0, 2}
			case quant.Q6_K:
				offs = []int{208}
			case quant.Q2_K:
				offs = []int{80, 82}
			case quant.Q3_K:
				offs = []int{108}
			}
			for _, o := range offs {
				h := quant.FP32ToFP16(float32(r.NormFloat64() * 0.01))
				blk[o], blk[o+1] = byte(h), byte(h>>8)
			}
		}
		x := make([]float32, K)
		for i := range x {
			x[i] = float32(r.NormFloat64())
			if i%5 == 0 {
				x[i] = 1000 * float32(1-2*(i%2))
			}
		}
		a := make([]byte, K/256*292)
		quant.QuantizeQ8KAct(x, a)
		y := make([]float32, N)
		f(K, w, wrb, a, y, 0, N)
		for n := range y {
			want := dot(K, w[n*wrb:(n+1)*wrb], a)
			if math.Float32bits(y[n]) != math.Float32bits(want) {
				t.Fatalf("%s row %d = %v, want %v", typ, n, y[n], want)
			}
		}
	}
}

// BenchmarkKRows measures the registered row kernel of each K-quant type
// ("simd") against the pure-Go dot ("go") on one activation row.
func BenchmarkKRows(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, typ := range kqTypes {
		for _, sh := range [][2]int{{1024, 1024}, {3072, 1024}} {
			N, K := sh[0], sh[1]
			w, wrb := kqWeights(b, r, typ, N, K)
			a := kqAct(r, K, 0)
			y := make([]float32, N)
			dot := quant.DotFor(typ)
			goRows := func(K int, w []byte, wrb int, a []byte, y []float32, n0, n1 int) {
				for n := n0; n < n1; n++ {
					y[n] = dot(K, w[n*wrb:(n+1)*wrb], a)
				}
			}
			impls := []struct {
				name string
				f    RowsFunc
			}{{"simd", rowKernels[typ]}, {"go", goRows}}
			for _, im := range impls {
				if im.f == nil {
					continue
				}
				b.Run(fmt.Sprintf("%s/%dx%d/%s", typ, N, K, im.name), func(b *testing.B) {
					b.SetBytes(int64(N * wrb))
					for b.Loop() {
						im.f(K, w, wrb, a, y, 0, N)
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(N), "ns/row")
				})
			}
		}
	}
}

// BenchmarkKQuantStream measures the Q4_K / Q6_K row kernels on decode-
// shaped mat-muls at the K of a Qwen3-0.6B-sized model (1024, 3072), out
// of cache (128 MiB of weights: a 64-row tile repeated) and in L2 ("hot",
// 512 KiB); MB/s is weight bytes read.
func BenchmarkKQuantStream(b *testing.B) {
	r := rand.New(rand.NewPCG(41, 43))
	for _, typ := range []quant.Type{quant.Q4_K, quant.Q6_K} {
		f := rowKernels[typ]
		for _, K := range []int{1024, 3072} {
			for _, hot := range []bool{false, true} {
				name, size := fmt.Sprintf("%s/K%d", typ, K), 128<<20
				if hot {
					name, size = name+"/hot", 512<<10
				}
				b.Run(name, func(b *testing.B) {
					if f == nil {
						b.Skip("no SIMD row kernel")
					}
					const tileRows = 64
					tile, wrb := kqWeights(b, r, typ, tileRows, K)
					N := (size/len(tile) + 1) * tileRows
					w := make([]byte, N*wrb)
					for off := 0; off < len(w); off += len(tile) {
						copy(w[off:], tile)
					}
					a := kqAct(r, K, 0)
					y := make([]float32, N)
					b.SetBytes(int64(len(w)))
					for b.Loop() {
						f(K, w, wrb, a, y, 0, N)
					}
				})
			}
		}
	}
}

// rowTestWeights returns N weight rows of K elements of type wt in three
// flavours: quantized from random rows (kind 0), raw random bytes with
// small finite f16 scales (kind 1: every quant bit pattern), and blocks of
// extreme bytes, all 0x00 or all 0xff apart from the scales (kind 2).
func rowTestWeights(t testing.TB, r *rand.Rand, wt quant.Type, N, K, kind int) ([]byte, int) {
	wrb, err := wt.RowSize(K)
	if err != nil {
		t.Fatal(err)
	}
	if kind == 0 {
		if wt.BlockSize() == 1 { // f16, bf16: normal weights with a few large ones
			x := kqRandRow(r, N*K, 0)
			for i := range x {
				x[i] *= 0.05
			}
			w := make([]byte, N*wrb)
			if err := quant.Quantize(wt, x, w); err != nil {
				t.Fatal(err)
			}
			return w, wrb
		}
		if wt.BlockSize() == 256 {
			return kqWeights(t, r, wt, N, K)
		}
		return legacyWeights(t, r, wt, N, K, false), wrb
	}
	w := make([]byte, N*wrb)
	bs := wt.TypeSize()
	for b := 0; b < len(w)/bs; b++ {
		blk := w[b*bs : (b+1)*bs]
		for i := range blk {
			switch {
			case kind == 1:
				blk[i] = byte(r.Uint32())
			case b%2 == 0:
				blk[i] = 0xff
			}
		}
		var offs []int
		switch wt {
		case quant.Q4_K, quant.Q5_K:
			offs = []int{0, 2}
		case quant.Q6_K:
			offs = []int{208}
		case quant.Q2_K:
			offs = []int{80, 82}
		case quant.Q3_K:
			offs = []int{108}
		case quant.Q4_1, quant.Q5_1:
			offs = []int{0, 2}
		default:
			offs = []int{0}
		}
		for _, o := range offs {
			h := quant.FP32ToFP16(float32(r.NormFloat64() * 0.01))
			blk[o], blk[o+1] = byte(h), byte(h>>8)
		}
	}
	return w, wrb
}
