package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/minfer/minfer/quant"
)

// BenchmarkMatMul measures decode-shaped (M=1) mat-muls of qwen2-0.5b:
// 896x896 (attention output) and 4864x896 (feed-forward up/gate), one
// worker computing every output column.
func BenchmarkMatMul(b *testing.B) {
	r := rand.New(rand.NewPCG(31, 32))
	for _, wt := range []quant.Type{quant.F32, quant.F16, quant.Q4_0, quant.Q8_0, quant.Q4_K, quant.Q6_K} {
		for _, N := range []int{896, 4864} {
			const K = 896
			if _, err := wt.RowSize(K); err != nil {
				continue
			}
			b.Run(fmt.Sprintf("%s/%dx%d", wt, N, K), func(b *testing.B) {
				k, err := NewMatMul(wt)
				if err != nil {
					b.Fatal(err)
				}
				wb := quantWeights(b, r, wt, N, K)
				x := randVec(r, K, 1)
				act := make([]byte, k.ActRowBytes(K))
				y := make([]float32, N)
				b.SetBytes(int64(len(wb)))
				for b.Loop() {
					k.QuantizeRows(x, K, 0, 1, act)
					k.Run(K, wb, act, 1, y, N, 0, N)
				}
			})
		}
	}
}

// BenchmarkAttention measures one decode step of qwen2-0.5b attention
// (14 query heads, 2 KV heads of 64) at position 511 (512 cached rows).
func BenchmarkAttention(b *testing.B) {
	r := rand.New(rand.NewPCG(33, 34))
	c := attnCase{14, 2, 64, 1, 511, 512}
	q, k, v, pos := attnSetup(r, c)
	ctx, kvw := c.start+c.T, c.Hkv*c.hd
	scale := float32(1 / math.Sqrt(float64(c.hd)))
	for _, kt := range []quant.Type{quant.F32, quant.F16, quant.Q8_0} {
		b.Run(kt.String(), func(b *testing.B) {
			kv, _ := NewKV(kt)
			kc := fillCache(kv, k, ctx, kvw, c.hd, []int{0, c.Hkv})
			vc := fillCache(kv, v, ctx, kvw, c.hd, []int{0, c.Hkv})
			s := NewAttnScratch(ctx, c.H/c.Hkv, c.hd)
			y := make([]float32, len(q))
			for b.Loop() {
				kv.Attend(y, q, kc, vc, pos, c.H, c.Hkv, c.hd, scale, 0, c.Hkv, 0, 1, s)
			}
		})
	}
}

// BenchmarkElementWise measures the row kernels on a decode row of 4864
// (swiglu) and 896 (rms_norm with weight, rope of 14 heads).
func BenchmarkElementWise(b *testing.B) {
	r := rand.New(rand.NewPCG(35, 36))
	g, u, y := randVec(r, 4864, 1), randVec(r, 4864, 1), make([]float32, 4864)
	b.Run("swiglu/4864", func(b *testing.B) {
		for b.Loop() {
			SwiGLUCols(y, g, u, 1, 4864, 0, 4864)
		}
	})
	x, w := randVec(r, 896, 1), randVec(r, 896, 1)
	b.Run("rms_norm_mul/896", func(b *testing.B) {
		for b.Loop() {
			RMSNorm(x, y, 896, 896, 1e-6, w, 0, 1)
		}
	})
	// the residual add of an 8-sequence step (AddCols), the dispatched
	// form and the Go loop
	ra, rb, ry := randVec(r, 8*896, 1), randVec(r, 8*896, 1), make([]float32, 8*896)
	for _, form := range []string{"", "/go"} {
		b.Run("add/8x896"+form, func(b *testing.B) {
			if form != "" {
				old := ewAdd
				ewAdd = addGo
				defer func() { ewAdd = old }()
			}
			for b.Loop() {
				AddCols(ry, ra, rb, 8, 896, 896, 0, 896)
			}
		})
	}
	// the RMS norms of an 8-sequence step
	b.Run("rms_norm_mul/8x896", func(b *testing.B) {
		for b.Loop() {
			RMSNorm(ra, ry, 896, 896, 1e-6, w, 0, 8)
		}
	})
	pos := []int32{300}
	b.Run("rope/14x64", func(b *testing.B) {
		for b.Loop() {
			RopeCols(x, 1, 896, pos, 64, 64, 1e6, 1, nil, true, 0, 896)
		}
	})
	// Llama's NORMAL pairs over a prefill's rows (the angles cached)
	xs := make([]float32, 64*896)
	ps := make([]int32, 64)
	for i := range ps {
		ps[i] = int32(i)
	}
	var tab RopeTable
	b.Run("rope-normal/64x14x64", func(b *testing.B) {
		for b.Loop() {
			RopeColsCached(xs, 64, 896, ps, 64, 64, 5e5, 1, nil, false, 0, 896, &tab, 1)
		}
	})
}
