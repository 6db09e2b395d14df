package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/minfer/minfer/internal/ggmlf32"
)

// refAttention restates the reference executor's attention (reference.go,
// attention) with the same ggmlf32 primitives: every head scored over the
// cache padded to a multiple of 256 rows, the masked softmax over that
// length, and v·probs as one tinyBLAS dot per output for a batch of
// several tokens, ggml_vec_dot_f32 for one.
func refAttention(q, kc, vc []float32, pos []int32, H, Hkv, hd int, scale float32) []float32 {
	return refAttentionP(q, kc, vc, pos, H, Hkv, hd, scale, nil)
}

// refAttentionP is refAttention with the probabilities passed through
// round (when not nil) before the v sums.
func refAttentionP(q, kc, vc []float32, pos []int32, H, Hkv, hd int, scale float32, round func(float32) float32) []float32 {
	qw, kvw := H*hd, Hkv*hd
	y := make([]float32, len(q))
	nkv := min((int(pos[len(pos)-1])+256)/256*256, len(kc)/kvw)
	probs := make([]float32, nkv)
	vcol := make([]float32, nkv)
	for t, p := range pos {
		n := int(p) + 1
		for h := 0; h < H; h++ {
			kh := h / (H / Hkv)
			qv := q[t*qw+h*hd : t*qw+(h+1)*hd]
			for j := range probs {
				probs[j] = 0
				if j < n {
					probs[j] = ggmlf32.VecDotF32(kc[j*kvw+kh*hd:j*kvw+(kh+1)*hd], qv)
				}
			}
			ggmlf32.SoftmaxMasked(probs, n, scale)
			if round != nil {
				for j, p := range probs {
					probs[j] = round(p)
				}
			}
			for d := 0; d < hd; d++ {
				for j := range vcol {
					vcol[j] = 0
					if j < n {
						vcol[j] = vc[j*kvw+kh*hd+d]
					}
				}
				if len(pos) > 1 {
					y[t*qw+h*hd+d] = ggmlf32.SgemmDotF32(vcol, probs)
				} else {
					y[t*qw+h*hd+d] = ggmlf32.VecDotF32(vcol, probs)
				}
			}
		}
	}
	return y
}

// TestAttentionMatchesReferenceOrder: the f32 attention kernel computes the
// reference's bits for batches of 1..40 tokens (past the 16 lanes of the
// batched v sum and the 64 of the single-token one), several head sizes,
// seeds and starting positions, split by KV heads and by tokens.
func TestAttentionMatchesReferenceOrder(t *testing.T) {
	seeds := uint64(2)
	if testing.Short() {
		seeds = 1
	}
	for _, hd := range []int{16, 64, 80, 128} {
		for seed := uint64(1); seed <= seeds; seed++ {
			r := rand.New(rand.NewPCG(seed, uint64(hd)))
			const H, Hkv = 4, 2
			for T := 1; T <= 40; T++ {
				start := []int{0, 5, 60, 250}[r.IntN(4)]
				ctx := (start + T + 15) &^ 15
				if r.IntN(2) == 0 {
					ctx = 512
				}
				c := attnCase{H, Hkv, hd, T, start, ctx}
				q, k, v, pos := attnSetup(r, c)
				// Sharper softmaxes than N(0,1) scores give.
				amp := float32(1 + r.IntN(4))
				for i := range q {
					q[i] *= amp
				}
				scale := float32(1 / math.Sqrt(float64(hd)))
				want := refAttention(q, k, v, pos, H, Hkv, hd, scale)
				for _, split := range [][2]int{{Hkv, T}, {1, T}, {Hkv, (T + 1) / 2}} {
					got := make([]float32, len(q))
					s := NewAttnScratch(ctx, H/Hkv, hd)
					for h0 := 0; h0 < Hkv; h0 += split[0] {
						for t0 := 0; t0 < T; t0 += split[1] {
							AttentionHeads(got, q, k, v, pos, H, Hkv, hd, scale, h0, h0+split[0], t0, min(T, t0+split[1]), s)
						}
					}
					what := fmt.Sprintf("hd %d seed %d T %d @%d ctx %d split %v", hd, seed, T, start, ctx, split)
					sameBits(t, what, got, want)
				}
			}
		}
	}
}
