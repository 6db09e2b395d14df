package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/minfer/minfer/quant"
)

// TestActCacheKeepsBits runs prefill-shaped mat-muls the way a worker of
// the executor does: one ActCache, the output columns in several chunks,
// two weight matrices of different types reading the same activation rows,
// then new activation rows in the same buffer after a Reset. Every output
// must have the bits of MatMul.Run without a cache, so a stale or
// mismatched derived block cannot go unnoticed.
func TestActCacheKeepsBits(t *testing.T) {
	r := rand.New(rand.NewPCG(91, 92))
	const K, N = 512, 40
	types := []quant.Type{quant.Q4_K, quant.Q6_K, quant.Q5_K, quant.Q8_0}
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
			// all K-quants share the Q8_K activation layout: one buffer
			act := make([]byte, M*mms[0].ActRowBytes(K))
			for round := 0; round < 3; round++ {
				x := make([]float32, M*K)
				for m := 0; m < M; m++ {
					copy(x[m*K:], kqRandRow(r, K, round))
				}
				c.Reset()
				for i, k := range mms {
					a := act
					if k.VecDot != mms[0].VecDot {
						a = make([]byte, M*k.ActRowBytes(K))
					}
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
