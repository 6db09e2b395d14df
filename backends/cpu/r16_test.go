//go:build amd64 && !purego

package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/minfer/minfer/quant"
)

// TestR16Kernels checks the sixteen-row layouts' kernels, through
// MatMul.Run (M = 1 the row kernel, 2..8 the small-M kernel, more in
// chunks), bit for bit against quant.DotR16: random, raw-byte and extreme
// weights, K from one block up, row ranges that cut tiles at either end.
func TestR16Kernels(t *testing.T) {
	if !hasVNNI {
		t.Skip("the AVX-512 VNNI tier is unavailable: the CPU lacks it or a MINFER_NO_* switch dropped it")
	}
	r := rand.New(rand.NewPCG(16, 17))
	const N = 160 // ten tiles: M = 1 runs four runs of two, and the rest
	for _, plain := range []quant.Type{quant.Q8_0, quant.Q5_0, quant.Q4_0} {
		pt := quant.PackedR16(plain)
		k, err := NewMatMul(pt)
		if err != nil {
			t.Fatal(err)
		}
		for _, K := range []int{32, 96, 896, 4864} {
			for kind := 0; kind < 3; kind++ {
				src, wrb := rowTestWeights(t, r, plain, N, K, kind)
				w := make([]byte, len(src))
				if err := quant.Pack(pt, w, src, K); err != nil {
					t.Fatal(err)
				}
				nb := K / quant.QK
				arb := k.ActRowBytes(K)
				for _, M := range []int{1, 2, 3, 4, 5, 6, 7, 8, 11, 20} {
					x := make([]float32, M*K)
					for i := range x {
						x[i] = float32(r.NormFloat64())
					}
					if M > 2 {
						clear(x[K : 2*K]) // a zero row
					}
					act := make([]byte, M*arb)
					k.QuantizeRows(x, K, 0, M, act)
					want := make([]float32, M*N)
					for m := 0; m < M; m++ {
						for g := 0; g < N/16; g++ {
							quant.DotR16(pt, w[g*16*wrb:], act[m*arb:], nb, want[m*N+16*g:])
						}
					}
					checkRunRanges(t, k, fmt.Sprintf("%s K=%d kind %d", pt, K, kind), K, w, act, M, N, want, [][2]int{{0, N}, {5, 155}, {16, 48}, {3, 13}, {20, 21}, {0, 112}})
				}
			}
		}
	}
}

// BenchmarkR16 times the sixteen-row kernels against the GGUF-layout
// kernels of the same type (the path MatMul.Run takes for each), per
// weight row, for the small-M counts of a batched decode step.
func BenchmarkR16(b *testing.B) {
	const N = 896
	r := rand.New(rand.NewPCG(18, 19))
	for _, plain := range []quant.Type{quant.Q8_0, quant.Q5_0, quant.Q4_0} {
		for _, K := range []int{896, 4864} {
			src, _ := rowTestWeights(b, r, plain, N, K, 0)
			packed := make([]byte, len(src))
			pt := quant.PackedR16(plain)
			if err := quant.Pack(pt, packed, src, K); err != nil {
				b.Fatal(err)
			}
			for _, wt := range []quant.Type{plain, pt} {
				k, err := NewMatMul(wt)
				if err != nil {
					b.Skip(err)
				}
				w := src
				if wt == pt {
					w = packed
				}
				arb := k.ActRowBytes(K)
				for _, M := range []int{1, 2, 4, 8} {
					x := make([]float32, M*K)
					for i := range x {
						x[i] = float32(r.NormFloat64())
					}
					act := make([]byte, M*arb)
					k.QuantizeRows(x, K, 0, M, act)
					y := make([]float32, M*N)
					b.Run(fmt.Sprintf("%s/K=%d/M=%d", wt, K, M), func(b *testing.B) {
						for b.Loop() {
							k.Run(K, w, act, M, y, N, 0, N)
						}
						b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/N, "ns/row")
					})
				}
			}
		}
	}
}

// BenchmarkR16Decode is BenchmarkDecode's dram case for the sixteen-row
// layouts beside their GGUF-layout kernels: one activation row against a
// 1 GiB matrix out of cache (MatMul.Run, as a decode step), weight GB/s of
// the thread's CPU time, next to a plain streaming read of the same bytes
// (readGB/s) and their ratio.
func BenchmarkR16Decode(b *testing.B) {
	r := rand.New(rand.NewPCG(20, 21))
	var dram []byte
	for _, plain := range []quant.Type{quant.Q8_0, quant.Q5_0, quant.Q4_0} {
		for _, K := range []int{896, 4864} {
			for _, wt := range []quant.Type{plain, quant.PackedR16(plain)} {
				packedDecodeVsRead(b, r, &dram, plain, wt, K)
			}
		}
	}
}

// checkRunRanges runs k.Run for M activation rows over each row range of
// an N-row weight matrix and fails t unless every output in the range has
// the bits of want [M][N] and none outside it is written.
func checkRunRanges(t *testing.T, k *MatMul, what string, K int, w, act []byte, M, N int, want []float32, ranges [][2]int) {
	t.Helper()
	for _, rg := range ranges {
		n0, n1 := rg[0], rg[1]
		y := make([]float32, M*N)
		for i := range y {
			y[i] = float32(math.NaN())
		}
		k.Run(K, w, act, M, y, N, n0, n1)
		for m := 0; m < M; m++ {
			for n := 0; n < N; n++ {
				got, exp := y[m*N+n], want[m*N+n]
				in := n >= n0 && n < n1
				if in && math.Float32bits(got) != math.Float32bits(exp) {
					t.Fatalf("%s M=%d rows %d..%d: y[%d][%d] = %v, want %v", what, M, n0, n1, m, n, got, exp)
				}
				if !in && !math.IsNaN(float64(got)) {
					t.Fatalf("%s M=%d rows %d..%d: y[%d][%d] written outside the range", what, M, n0, n1, m, n)
				}
			}
		}
	}
}

// packedDecodeVsRead runs the decode benchmark of weight type wt (plain,
// or plain packed in a plan-only layout), K columns: one activation row
// against a matrix of *dram's bytes (1 GiB, allocated on first use) out of
// cache, weight GB/s of the thread's CPU time next to a plain streaming
// read of the same bytes (streamVsRead).
func packedDecodeVsRead(b *testing.B, r *rand.Rand, dram *[]byte, plain, wt quant.Type, K int) {
	parent := b
	b.Run(fmt.Sprintf("%s/K%d", wt, K), func(b *testing.B) {
		mm, err := NewMatMul(wt)
		if err != nil {
			b.Skip(err)
		}
		if *dram == nil {
			*dram = benchBytes(parent, dramBytes)
		}
		wrb := mm.WeightRowBytes(K)
		tile := quantWeights(b, r, plain, 64, K)
		if wt != plain {
			p := make([]byte, len(tile))
			if err := quant.Pack(wt, p, tile, K); err != nil {
				b.Fatal(err)
			}
			tile = p
		}
		N := len(*dram) / len(tile) * 64
		w := (*dram)[:N*wrb]
		for off := 0; off < len(w); off += len(tile) {
			copy(w[off:], tile)
		}
		act := make([]byte, mm.ActRowBytes(K))
		mm.QuantizeRows(randVec(r, K, 1), K, 0, 1, act)
		y := make([]float32, N)
		read := streamSumAVX2 // the AVX-512 read on a CPU without it would fault
		if hasAVX512 {
			read = streamSumAVX512
		}
		streamVsRead(b, w, read, func() { mm.Run(K, w, act, 1, y, N, 0, N) })
	})
}
