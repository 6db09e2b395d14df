//go:build amd64 && !purego

package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/minfer/minfer/quant"
)

// TestKR8Kernels checks the eight-row layouts' kernels, through
// MatMul.Run (M = 1 the row kernel, 2..4 one kernel call, more in chunks
// over spans of tiles), bit for bit against quant.DotR8: random, raw-byte
// and extreme weights, K from one super-block up, row ranges that cut
// tiles at either end.
func TestKR8Kernels(t *testing.T) {
	if !hasAVX2 {
		t.Skip("the AVX2 tier is unavailable: the CPU lacks AVX2+FMA+F16C or MINFER_NO_AVX2 dropped it")
	}
	form := "AVX2"
	if hasVNNI {
		form = "AVX-512 VNNI"
	}
	if len(kr8ZMM) > 0 {
		form += " forms, with the ZMM two-tile"
	}
	pf := "L2"
	if prefetchL1() {
		pf = "L1"
	}
	t.Logf("checking the %s forms of the eight-row kernels, the one-row ones prefetching into %s (MINFER_NO_AVX512=1 checks the AVX2 ones, MINFER_KQGEMM=avx2 the YMM VNNI ones, MINFER_PREFETCH=l1|l2 the other prefetch)", form, pf)
	r := rand.New(rand.NewPCG(8, 9))
	const N = 80
	for _, plain := range []quant.Type{quant.Q4_K, quant.Q5_K, quant.Q6_K, quant.Q3_K, quant.Q2_K} {
		checkR8Layout(t, r, quant.PackedR8(plain), []int{256, 768, 3072}, N)
	}
}

// checkR8Layout checks eight-row layout pt's kernels through MatMul.Run,
// bit for bit against quant.DotR8, for N weight rows of each K: random,
// raw-byte and extreme weights; 1..13 activation rows, among them a zero
// row and one of ±127 quants; row ranges that cut tiles at either end.
func checkR8Layout(t *testing.T, r *rand.Rand, pt quant.Type, Ks []int, N int) {
	plain := quant.Unpacked(pt)
	k, err := NewMatMul(pt)
	if err != nil {
		t.Fatal(err)
	}
	for _, K := range Ks {
		for kind := 0; kind < 3; kind++ {
			src, wrb := rowTestWeights(t, r, plain, N, K, kind)
			w := make([]byte, len(src))
			if err := quant.Pack(pt, w, src, K); err != nil {
				t.Fatal(err)
			}
			nb := K / plain.BlockSize()
			arb := k.ActRowBytes(K)
			for _, M := range []int{1, 2, 3, 4, 5, 7, 9, 13} {
				x := make([]float32, M*K)
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
				if M > 2 {
					clear(x[K : 2*K]) // a zero row
				}
				if M > 3 {
					for i := 2 * K; i < 3*K; i++ {
						x[i] = float32(100 * (2*float64(i%2) - 1)) // ±127 quants
					}
				}
				act := make([]byte, M*arb)
				k.QuantizeRows(x, K, 0, M, act)
				want := make([]float32, M*N)
				for m := 0; m < M; m++ {
					for g := 0; g < N/8; g++ {
						quant.DotR8(pt, w[g*8*wrb:], act[m*arb:], nb, want[m*N+8*g:])
					}
				}
				checkRunRanges(t, k, fmt.Sprintf("%s K=%d kind %d", pt, K, kind), K, w, act, M, N, want, [][2]int{{0, N}, {5, 75}, {8, 24}, {3, 6}, {20, 21}, {0, 56}})
			}
		}
	}
}

// BenchmarkKR8 times the eight-row kernels against the GGUF-layout
// kernels (the path MatMul.Run takes for each), per weight row, in L2.
func BenchmarkKR8(b *testing.B) {
	const N = 1024
	r := rand.New(rand.NewPCG(18, 19))
	for _, plain := range []quant.Type{quant.Q4_K, quant.Q5_K, quant.Q6_K, quant.Q3_K, quant.Q2_K} {
		for _, K := range []int{1024, 3072} {
			benchLayouts(b, r, N, K, []quant.Type{plain, quant.PackedR8(plain)}, []int{1, 2, 4, 8, 64})
		}
	}
}

// benchLayouts times MatMul.Run for the weight types wts (the first the
// GGUF type, the others its packed layouts, 0 skipped) on the same N rows
// of K random weights, per weight row and activation row, for each of Ms
// activation rows.
func benchLayouts(b *testing.B, r *rand.Rand, N, K int, wts []quant.Type, Ms []int) {
	src, _ := rowTestWeights(b, r, wts[0], N, K, 0)
	for _, wt := range wts {
		if wt == 0 {
			continue
		}
		k, err := NewMatMul(wt)
		if err != nil {
			b.Logf("%s: %v", wt, err)
			continue
		}
		w := src
		if wt != wts[0] {
			w = make([]byte, len(src))
			if err := quant.Pack(wt, w, src, K); err != nil {
				b.Fatal(err)
			}
		}
		arb := k.ActRowBytes(K)
		for _, M := range Ms {
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
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(N)/float64(M), "ns/row/tok")
			})
		}
	}
}

// BenchmarkKR8Decode is BenchmarkR16Decode for the eight-row layouts
// beside the GGUF layout's kernels: one activation row against a 1 GiB
// matrix out of cache, weight GB/s next to a plain read of the same bytes.
func BenchmarkKR8Decode(b *testing.B) {
	r := rand.New(rand.NewPCG(20, 21))
	var dram []byte
	for _, plain := range []quant.Type{quant.Q4_K, quant.Q5_K, quant.Q6_K, quant.Q3_K, quant.Q2_K} {
		for _, K := range []int{1024, 3072} {
			for _, wt := range []quant.Type{plain, quant.PackedR8(plain)} {
				packedDecodeVsRead(b, r, &dram, plain, wt, K)
			}
		}
	}
}

// BenchmarkHalfDecode is BenchmarkKR8Decode for the f16 and bf16 row
// kernels: one activation row over a 1 GiB matrix on one thread, against a
// plain read of the same bytes in the same run.
func BenchmarkHalfDecode(b *testing.B) {
	r := rand.New(rand.NewPCG(22, 23))
	var dram []byte
	for _, t := range []quant.Type{quant.F16, quant.BF16} {
		for _, K := range []int{1024, 3072} {
			packedDecodeVsRead(b, r, &dram, t, t, K)
		}
	}
}

// TestR8Q5Kernels is TestKR8Kernels for Q5_0r8 and Q4_0r8: every kernel, through
// MatMul.Run, bit for bit against quant.DotR8 (DotR16's order).
func TestR8Q5Kernels(t *testing.T) {
	if !hasAVX2 {
		t.Skip("the AVX2 tier is unavailable: the CPU lacks AVX2+FMA+F16C or MINFER_NO_AVX2 dropped it")
	}
	form := "AVX2"
	if hasVNNI {
		form = "AVX-512 VNNI"
	}
	t.Logf("checking the %s forms of the eight-row legacy kernels (MINFER_NO_AVX512=1 checks the AVX2 ones)", form)
	r := rand.New(rand.NewPCG(8, 5))
	const N = 80
	for _, plain := range []quant.Type{quant.Q5_0, quant.Q4_0, quant.Q5_1, quant.Q4_1} {
		checkR8Layout(t, r, quant.PackedR8Legacy(plain), []int{32, 96, 896, 4864}, N)
	}
}

// BenchmarkR8Q5 times the eight-row legacy kernels beside the GGUF and
// four-row layouts' (the paths MatMul.Run takes for each on this tier),
// per weight row and activation row, N = 1024 rows in L2.
func BenchmarkR8Q5(b *testing.B) {
	const N = 1024
	r := rand.New(rand.NewPCG(18, 5))
	for _, tc := range []struct{ plain, x4, r8 quant.Type }{{quant.Q5_0, quant.Q5_0x4, quant.Q5_0r8}, {quant.Q4_0, quant.Q4_0x4, quant.Q4_0r8}, {quant.Q5_1, 0, quant.Q5_1r8}, {quant.Q4_1, 0, quant.Q4_1r8}} {
		for _, K := range []int{896, 4864} {
			benchLayouts(b, r, N, K, []quant.Type{tc.plain, tc.x4, tc.r8}, []int{1, 4, 64})
		}
	}
}

// BenchmarkR8Q5Decode is BenchmarkKR8Decode for Q5_0 and Q4_0 in their
// three layouts.
func BenchmarkR8Q5Decode(b *testing.B) {
	r := rand.New(rand.NewPCG(20, 5))
	var dram []byte
	for _, plain := range []quant.Type{quant.Q5_0, quant.Q4_0} {
		for _, K := range []int{896, 4864} {
			for _, wt := range []quant.Type{plain, quant.PackedX4(plain), quant.PackedR8Legacy(plain)} {
				packedDecodeVsRead(b, r, &dram, plain, wt, K)
			}
		}
	}
}
