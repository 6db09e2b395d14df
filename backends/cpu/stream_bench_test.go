//go:build amd64 && !purego

package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"minfer/quant"
)

// streamBytes is the least size of a streamed weight matrix: twice the
// 32 MiB L3 of the machine this was tuned on, so a sweep reads DRAM.
const streamBytes = 128 << 20

// hotBytes is the size of the in-cache (L2) variant: the kernel's
// compute ceiling, for comparison.
const hotBytes = 512 << 10

// streamMatrix returns a weight matrix of at least size bytes of type wt
// with rows of K elements (a 64-row quantized tile repeated; the kernels'
// speed does not depend on the values) and its row count.
func streamMatrix(b *testing.B, r *rand.Rand, wt quant.Type, K, size int) ([]byte, int) {
	const tileRows = 64
	tile := quantWeights(b, r, wt, tileRows, K)
	N := (size/len(tile) + 1) * tileRows
	w := make([]byte, N/tileRows*len(tile))
	for off := 0; off < len(w); off += len(tile) {
		copy(w[off:], tile)
	}
	return w, N
}

// BenchmarkStreamRows measures decode-shaped (one activation row) mat-muls
// whose weights do not fit in cache, as every weight of a decode step
// streams from memory once per token; MB/s is weight bytes read. The
// "read" cases are the bare streaming-read ceiling over the same size; the
// "hot" cases run the same kernels on a matrix that stays in L2 (their
// compute ceiling).
func BenchmarkStreamRows(b *testing.B) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, wt := range []quant.Type{quant.Q8_0, quant.Q5_0, quant.Q4_0, quant.Q4_K, quant.Q6_K} {
		for _, K := range []int{896, 1024, 4864} {
			if _, err := wt.RowSize(K); err != nil {
				continue
			}
			for _, hot := range []bool{false, true} {
				name := fmt.Sprintf("%s/K%d", wt, K)
				size := streamBytes
				if hot {
					name, size = name+"/hot", hotBytes
				}
				b.Run(name, func(b *testing.B) {
					k, err := NewMatMul(wt)
					if err != nil {
						b.Fatal(err)
					}
					if k.rows == nil {
						b.Skip("no SIMD row kernel")
					}
					w, N := streamMatrix(b, r, wt, K, size)
					act := make([]byte, k.ActRowBytes(K))
					k.QuantizeRows(randVec(r, K, 1), K, 0, 1, act)
					y := make([]float32, N)
					b.SetBytes(int64(len(w)))
					for b.Loop() {
						k.Run(K, w, act, 1, y, N, 0, N)
					}
				})
			}
		}
	}
	buf := make([]byte, streamBytes)
	for i := range buf {
		buf[i] = byte(i)
	}
	for _, c := range []struct {
		name string
		ok   bool
		f    func(*byte, int) uint64
	}{{"read/avx2", hasAVX2, streamSumAVX2}, {"read/avx512", hasAVX512, streamSumAVX512},
		{"read/avx512+prefetch", hasAVX512, streamSumAVX512PF}} {
		b.Run(c.name, func(b *testing.B) {
			if !c.ok {
				b.Skip("not supported here")
			}
			b.SetBytes(int64(len(buf)))
			var s uint64
			for b.Loop() {
				s += c.f(&buf[0], len(buf))
			}
			if s == 1 {
				b.Log(s)
			}
		})
	}
}
