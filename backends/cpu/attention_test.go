package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/minfer/minfer/quant"
)

type attnCase struct {
	H, Hkv, hd, T, start int // start: positions of the batch are start..start+T-1
	ctx                  int // cache rows (a multiple of 16, as llama.cpp pads it)
}

var attnCases = []attnCase{
	{14, 2, 64, 9, 0, 512},   // qwen2-0.5b heads, a prefill
	{14, 2, 64, 1, 40, 512},  // a decode step
	{14, 2, 64, 1, 70, 80},   // decode with ggml_vec_dot_f32's scalar tail (80 = 64+16)
	{4, 4, 32, 5, 3, 16},     // no grouping
	{8, 2, 128, 3, 20, 48},   // cache shorter than 256
	{2, 1, 80, 20, 270, 304}, // head size with a dot tail; padded length 304 < 512
}

// attnSetup returns q [T][H·hd], the k and v rows of every position
// 0..start+T-1 ([ctx][Hkv·hd]) and the batch positions.
func attnSetup(r *rand.Rand, c attnCase) (q, k, v []float32, pos []int32) {
	ctx := c.ctx
	q = randVec(r, c.T*c.H*c.hd, 1)
	k = randVec(r, ctx*c.Hkv*c.hd, 1)
	v = randVec(r, ctx*c.Hkv*c.hd, 1)
	for i := range c.T {
		pos = append(pos, int32(c.start+i))
	}
	return
}

// fillCache stores all ctx rows of x into a cache of kv's type, split by KV
// heads in the given cut.
func fillCache(kv *KV, x []float32, ctx, width, hd int, cut []int) *KVCache {
	cache := kv.NewCache(ctx, width)
	all := make([]int32, ctx)
	for i := range all {
		all[i] = int32(i)
	}
	for i := 0; i+1 < len(cut); i++ {
		kv.Store(cache, x, all, cut[i]*hd, cut[i+1]*hd)
	}
	return cache
}

func TestKVStore(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	const ctx, hkv, hd = 12, 2, 64
	width := hkv * hd
	x := randVec(r, ctx*width, 2)
	for _, kt := range []quant.Type{quant.F32, quant.F16, quant.Q8_0} {
		kv, err := NewKV(kt)
		if err != nil {
			t.Fatal(err)
		}
		for _, cut := range cuts(hkv) {
			// Rows written out of order, in two batches.
			c := kv.NewCache(ctx, width)
			perm := []int32{5, 0, 11, 3, 1, 2, 4, 6, 7, 8, 9, 10}
			xs := make([]float32, len(x))
			for i, p := range perm {
				copy(xs[i*width:(i+1)*width], x[int(p)*width:(int(p)+1)*width])
			}
			for i := 0; i+1 < len(cut); i++ {
				kv.Store(c, xs[:4*width], perm[:4], cut[i]*hd, cut[i+1]*hd)
				kv.Store(c, xs[4*width:], perm[4:], cut[i]*hd, cut[i+1]*hd)
			}
			var ok bool
			switch kt {
			case quant.F32:
				sameBits(t, "f32 cache", c.F, x)
				ok = true
			case quant.F16:
				want := make([]byte, 2*len(x))
				quant.QuantizeF16(x, want)
				ok = string(want) == string(c.B)
			case quant.Q8_0:
				want := make([]byte, len(c.B))
				if err := quant.QuantizeAct(quant.Q8_0, x, want); err != nil {
					t.Fatal(err)
				}
				ok = string(want) == string(c.B)
			}
			if !ok {
				t.Errorf("%s cache with cut %v differs from the row conversion", kt, cut)
			}
		}
	}
	if _, err := NewKV(quant.Q4_0); err == nil {
		t.Error("NewKV(q4_0) succeeded")
	}
	kv, _ := NewKV(quant.Q8_0)
	if kv.Check(80) == nil || kv.Check(64) != nil {
		t.Error("q8_0 Check(head size) wrong")
	}
}

func TestAttention(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	// Error bounds against exact-f32 attention, relative to max|v|.
	tol := map[quant.Type]float64{quant.F32: 0, quant.F16: 4e-3, quant.Q8_0: 4e-2}
	for _, c := range attnCases {
		q, k, v, pos := attnSetup(r, c)
		ctx, kvw := c.ctx, c.Hkv*c.hd
		scale := float32(1 / math.Sqrt(float64(c.hd)))
		want := oracleAttention(q, k, v, pos, c.H, c.Hkv, c.hd, scale)
		for _, kt := range []quant.Type{quant.F32, quant.F16, quant.Q8_0} {
			t.Run(fmt.Sprintf("%s/H%d/Hkv%d/hd%d/T%d@%d", kt, c.H, c.Hkv, c.hd, c.T, c.start), func(t *testing.T) {
				kv, err := NewKV(kt)
				if err != nil {
					t.Fatal(err)
				}
				if kv.Check(c.hd) != nil {
					t.Skipf("%s cache cannot hold heads of %d", kt, c.hd)
				}
				kc := fillCache(kv, k, ctx, kvw, c.hd, []int{0, c.Hkv})
				vc := fillCache(kv, v, ctx, kvw, c.hd, []int{0, c.Hkv})
				s := NewAttnScratch(ctx, c.H/c.Hkv, c.hd)
				full := make([]float32, len(q))
				kv.Attend(full, q, kc, vc, pos, c.H, c.Hkv, c.hd, scale, 0, c.Hkv, 0, c.T, s)
				if kt == quant.F32 {
					sameBits(t, "f32 vs oracle", full, want)
				} else {
					var maxErr float64
					for i := range full {
						maxErr = max(maxErr, math.Abs(float64(full[i]-want[i])))
					}
					var vmax float64
					for _, x := range v {
						vmax = max(vmax, math.Abs(float64(x)))
					}
					if maxErr > tol[kt]*vmax {
						t.Errorf("max error %.3g vs f32 attention, bound %.3g", maxErr, tol[kt]*vmax)
					}
					t.Logf("max error %.3g (max|v| %.3g)", maxErr, vmax)
				}
				// Splits by KV heads and by token rows give the same bits.
				for _, cut := range cuts(c.Hkv) {
					y := make([]float32, len(q))
					for i := 0; i+1 < len(cut); i++ {
						kv.Attend(y, q, kc, vc, pos, c.H, c.Hkv, c.hd, scale, cut[i], cut[i+1], 0, c.T, s)
					}
					sameBits(t, fmt.Sprintf("kv heads %v", cut), y, full)
				}
				for _, cut := range cuts(c.T) {
					y := make([]float32, len(q))
					for i := 0; i+1 < len(cut); i++ {
						kv.Attend(y, q, kc, vc, pos, c.H, c.Hkv, c.hd, scale, 0, c.Hkv, cut[i], cut[i+1], s)
					}
					sameBits(t, fmt.Sprintf("token rows %v", cut), y, full)
				}
			})
		}
	}
}

// TestAttentionF16Formula checks the f16 path against its documented
// arithmetic: the reference's f32 attention (refAttention) over k, v and q
// rounded to f16, with the probabilities rounded to f16 before the v sums;
// decode and batches, head sizes with and without a dot tail, caches
// shorter than the 256-row padding, every split.
func TestAttentionF16Formula(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	h16 := func(x float32) float32 { return quant.FP16ToFP32(quant.FP32ToFP16(x)) }
	round := func(x []float32) []float32 {
		y := make([]float32, len(x))
		for i, v := range x {
			y[i] = h16(v)
		}
		return y
	}
	for _, c := range append(attnCases, attnCase{6, 2, 64, 4, 7, 16}, attnCase{4, 2, 128, 1, 700, 1024}, attnCase{4, 2, 128, 17, 100, 512}) {
		q, k, v, pos := attnSetup(r, c)
		for i := range q {
			q[i] *= 3 // sharper softmaxes
		}
		ctx, kvw := c.ctx, c.Hkv*c.hd
		scale := float32(1 / math.Sqrt(float64(c.hd)))
		want := refAttentionP(round(q), round(k), round(v), pos, c.H, c.Hkv, c.hd, scale, h16)
		kv, _ := NewKV(quant.F16)
		kc := fillCache(kv, k, ctx, kvw, c.hd, []int{0, c.Hkv})
		vc := fillCache(kv, v, ctx, kvw, c.hd, []int{0, c.Hkv})
		s := NewAttnScratch(ctx, c.H/c.Hkv, c.hd)
		for _, cut := range cuts(c.Hkv) {
			y := make([]float32, len(q))
			for i := 0; i+1 < len(cut); i++ {
				kv.Attend(y, q, kc, vc, pos, c.H, c.Hkv, c.hd, scale, cut[i], cut[i+1], 0, c.T, s)
			}
			sameBits(t, fmt.Sprintf("f16 attention %+v heads %v", c, cut), y, want)
		}
	}
}
