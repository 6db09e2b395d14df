package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/minfer/minfer/quant"
)

// TestActCacheKeepsBits runs prefill-shaped mat-muls the way a worker of
// the executor does: one ActCache, the output columns in several chunks,
// weight matrices of different types reading the same activation rows
// (the K-quants one Q8_K buffer; Q5_0, Q8_0 and Q4_0 one Q8_0 buffer, whose
// AVX2 GEMMs derive a biased and an unbiased block from it; Q4_1 and Q5_1
// one Q8_1 buffer),
// then new activation rows in the same buffer after a Reset. Every output
// must have the bits of MatMul.Run without a cache, so a stale or
// mismatched derived block cannot go unnoticed.
func TestActCacheKeepsBits(t *testing.T) {
	r := rand.New(rand.NewPCG(91, 92))
	const K, N = 512, 40
	types := []quant.Type{quant.Q4_K, quant.Q6_K, quant.Q5_0, quant.Q5_K, quant.Q8_0, quant.Q4_1, quant.Q4_0, quant.Q5_1}
	for _, M := range []int{2, 9, 33} {
		t.Run(fmt.Sprintf("M=%d", M), func(t *testing.T) {
			var c ActCache
			mms := make([]*MatMul, len(types))
			ws := make([][]byte, len(types))
			for i, wt := range types {
				k, err := NewMatMul(wt)
				if err != nil {
					t.Fatal(err)
				}
				mms[i] = k
				ws[i], _ = rowTestWeights(t, r, wt, N, K, 0)
			}
			// one activation buffer per vec-dot type, shared by its weight types
			acts := map[quant.Type][]byte{}
			for _, k := range mms {
				acts[k.VecDot] = make([]byte, M*k.ActRowBytes(K))
			}
			for round := 0; round < 3; round++ {
				x := make([]float32, M*K)
				for m := 0; m < M; m++ {
					copy(x[m*K:], kqRandRow(r, K, round))
				}
				c.Reset()
				for i, k := range mms {
					a := acts[k.VecDot]
					k.QuantizeRows(x, K, 0, M, a)
					want := make([]float32, M*N)
					k.Run(K, ws[i], a, M, want, N, 0, N)
					got := make([]float32, M*N)
					for _, cut := range [][2]int{{0, 8}, {8, 24}, {24, 40}} {
						k.RunCached(K, ws[i], a, M, got, N, cut[0], cut[1], &c)
					}
					sameBits(t, fmt.Sprintf("round %d %s", round, types[i]), got, want)
				}
			}
		})
	}
}
