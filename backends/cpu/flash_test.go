package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/minfer/minfer/internal/ggmlf32"
	"github.com/minfer/minfer/quant"
)

// refFlash restates flash attention's documented order (flash.go) with
// ggmlf32 scalars, over f32 k, v, q (the f16 case passes them rounded, and
// f16 set: its scores are flashDot's).
func refFlash(q, kc, vc []float32, pos []int32, H, Hkv, hd int, scale float32, f16 bool) []float32 {
	qw, kvw, G := H*hd, Hkv*hd, H/Hkv
	dot := ggmlf32.VecDotF32
	if f16 {
		dot = flashDot
	}
	return refFlashScores(len(q), vc, pos, H, Hkv, hd, scale, func(t, h, j int) float32 {
		kh := h / G
		return dot(kc[j*kvw+kh*hd:j*kvw+(kh+1)*hd], q[t*qw+h*hd:t*qw+(h+1)*hd])
	})
}

// refFlashQ8 is refFlash over a q8_0 cache (the order in flash.go): q
// quantized per head with the Q8_0 activation quantizer, the keys k8 the
// cache's q8_0 rows, the scores quant.DotQ8_0Q8_0, the v rows dequantized.
func refFlashQ8(q []float32, k8, v8 []byte, pos []int32, H, Hkv, hd int, scale float32) []float32 {
	hb, rb, G := q8Bytes(hd), q8Bytes(Hkv*hd), H/Hkv
	qq := make([]byte, len(q)/hd*hb)
	quant.QuantizeQ8_0Act(q, qq)
	vf := make([]float32, len(v8)/rb*Hkv*hd)
	quant.DequantizeQ8_0(v8, vf)
	return refFlashScores(len(q), vf, pos, H, Hkv, hd, scale, func(t, h, j int) float32 {
		kh := h / G
		return quant.DotQ8_0Q8_0(hd, k8[j*rb+kh*hb:j*rb+(kh+1)*hb], qq[(t*H+h)*hb:(t*H+h+1)*hb])
	})
}

// refFlashScores is refFlash with the score of token t, query head h and
// position j from score (before the scale).
func refFlashScores(nq int, vc []float32, pos []int32, H, Hkv, hd int, scale float32, score func(t, h, j int) float32) []float32 {
	qw, kvw, G := H*hd, Hkv*hd, H/Hkv
	y := make([]float32, nq)
	for t, p := range pos {
		n := int(p) + 1
		for h := 0; h < H; h++ {
			kh := h / G
			var ms, ss []float32
			var os [][]float32
			for j0 := 0; j0 < n; j0 += FlashBlock {
				j1 := min(n, j0+FlashBlock)
				m := float32(math.Inf(-1))
				xs := make([]float32, 0, FlashBlock)
				for j := j0; j < j1; j++ {
					x := score(t, h, j) * scale
					xs = append(xs, x)
					m = max(m, x)
				}
				var sum64 float64
				var chunk [16]float32
				o := make([]float32, hd)
				for i, x := range xs {
					pj := ggmlf32.ExpF(x - m)
					chunk[i%16] = pj
					if i%16 == 15 || i == len(xs)-1 {
						sum64 += float64(ggmlf32.Reduce16(&chunk))
						chunk = [16]float32{}
					}
					for d := range o {
						o[d] = ggmlf32.FMA32(pj, vc[(j0+i)*kvw+kh*hd+d], o[d])
					}
				}
				ms, ss, os = append(ms, m), append(ss, float32(sum64)), append(os, o)
			}
			M := ms[0]
			for _, m := range ms {
				M = max(M, m)
			}
			acc := make([]float32, hd)
			var S float32
			for b := range ms {
				w := ggmlf32.ExpF(ms[b] - M)
				S += float32(w * ss[b])
				for d := range acc {
					acc[d] += float32(w * os[b][d])
				}
			}
			for d := range acc {
				y[t*qw+h*hd+d] = acc[d] / S
			}
		}
	}
	return y
}

var flashCases = []attnCase{
	{4, 2, 64, 1, 0, 256},
	{4, 2, 128, 1, 255, 512},
	{4, 2, 128, 1, 256, 512},
	{4, 2, 128, 1, 700, 768},
	{6, 2, 80, 5, 300, 512},
	{2, 1, 40, 3, 520, 768}, // a head size the SIMD v sums do not take
	{16, 8, 128, 17, 240, 512},
	{14, 2, 64, 6, 508, 768},   // qwen2's G = 7: several passes of the multi-query kernels; a tile across a block edge
	{8, 1, 128, 1, 1000, 1024}, // G = 8 decode over four blocks
	{8, 1, 192, 3, 254, 512},   // three 64-chunks per row; tokens with 255, 256 and 257 rows
	{12, 4, 256, 2, 300, 512},
}

// TestFlashAttention: the flash kernels compute refFlash's bits (f32
// cache; f16 cache over rounded k, v, q), for every float32 SIMD tier and
// the pure-Go path, split by KV heads and by token rows; and they stay
// close to exact attention.
func TestFlashAttention(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	h16 := func(x []float32) []float32 {
		y := make([]float32, len(x))
		for i, v := range x {
			y[i] = quant.FP16ToFP32(quant.FP32ToFP16(v))
		}
		return y
	}
	tiers := append([]*f32Tier{nil}, f32Tiers...)
	for _, c := range flashCases {
		q, k, v, pos := attnSetup(r, c)
		for i := range q {
			q[i] *= 4 // sharp softmaxes: blocks with very different maxima
		}
		ctx, kvw := c.ctx, c.Hkv*c.hd
		scale := float32(1 / math.Sqrt(float64(c.hd)))
		exact := oracleAttention(q, k, v, pos, c.H, c.Hkv, c.hd, scale)
		for _, kt := range []quant.Type{quant.F32, quant.F16, quant.Q8_0} {
			if kt == quant.Q8_0 && c.hd%32 != 0 {
				continue // KV.Check refuses the head size for q8_0
			}
			kv, _ := NewKV(kt)
			kc := fillCache(kv, k, ctx, kvw, c.hd, []int{0, c.Hkv})
			vc := fillCache(kv, v, ctx, kvw, c.hd, []int{0, c.Hkv})
			var want []float32
			switch kt {
			case quant.F32:
				want = refFlash(q, k, v, pos, c.H, c.Hkv, c.hd, scale, false)
			case quant.F16:
				want = refFlash(h16(q), h16(k), h16(v), pos, c.H, c.Hkv, c.hd, scale, true)
			default:
				want = refFlashQ8(q, kc.B, vc.B, pos, c.H, c.Hkv, c.hd, scale)
			}
			for _, tier := range tiers {
				name := "go"
				if tier != nil {
					name = tier.name
				}
				t.Run(fmt.Sprintf("%s/%s/H%d/Hkv%d/hd%d/T%d@%d", kt, name, c.H, c.Hkv, c.hd, c.T, c.start), func(t *testing.T) {
					if tier != nil && !tier.ok {
						t.Skip(tier.name + " float32 kernels unavailable: " + tier.why)
					}
					withF32(tier, func() {
						s := NewAttnScratch(ctx, c.H/c.Hkv, c.hd)
						for _, cut := range cuts(c.Hkv) {
							y := make([]float32, len(q))
							for i := 0; i+1 < len(cut); i++ {
								kv.AttendFlash(y, q, kc, vc, pos, c.H, c.Hkv, c.hd, scale, cut[i], cut[i+1], 0, c.T, s)
							}
							sameBits(t, fmt.Sprintf("kv heads %v", cut), y, want)
						}
						for _, cut := range cuts(c.T) {
							y := make([]float32, len(q))
							for i := 0; i+1 < len(cut); i++ {
								kv.AttendFlash(y, q, kc, vc, pos, c.H, c.Hkv, c.hd, scale, 0, c.Hkv, cut[i], cut[i+1], s)
							}
							sameBits(t, fmt.Sprintf("token rows %v", cut), y, want)
						}
					})
				})
			}
			var maxErr, vmax float64
			for i := range want {
				maxErr = max(maxErr, math.Abs(float64(want[i]-exact[i])))
			}
			for _, x := range v {
				vmax = max(vmax, math.Abs(float64(x)))
			}
			if tol := map[quant.Type]float64{quant.F32: 1e-5, quant.F16: 4e-3, quant.Q8_0: 4e-2}[kt]; maxErr > tol*vmax {
				t.Errorf("%s %+v: flash attention off exact attention by %.3g (bound %.3g)", kt, c, maxErr, tol*vmax)
			}
		}
	}
	for _, kt := range []quant.Type{quant.F32, quant.F16, quant.Q8_0} {
		if kv, _ := NewKV(kt); kv.CheckFlash() != nil {
			t.Errorf("flash attention refused a %s cache: %v", kt, kv.CheckFlash())
		}
	}
}

// BenchmarkFlashDepth is BenchmarkAttentionDepth (one Qwen3-0.6B layer of
// decode attention at position 4095) with the flash kernels.
func BenchmarkFlashDepth(b *testing.B) {
	r := rand.New(rand.NewPCG(35, 36))
	c := attnCase{16, 8, 128, 1, 4095, 4352}
	q, k, v, pos := attnSetup(r, c)
	ctx, kvw := c.ctx, c.Hkv*c.hd
	for _, kt := range []quant.Type{quant.F32, quant.F16, quant.Q8_0} {
		kv, _ := NewKV(kt)
		kc := fillCache(kv, k, ctx, kvw, c.hd, []int{0, c.Hkv})
		vc := fillCache(kv, v, ctx, kvw, c.hd, []int{0, c.Hkv})
		s := NewAttnScratch(ctx, c.H/c.Hkv, c.hd)
		y := make([]float32, len(q))
		for _, tier := range f32Tiers {
			b.Run(kt.String()+"/"+tier.name, func(b *testing.B) {
				if !tier.ok {
					b.Skip(tier.why)
				}
				withF32(tier, func() {
					for b.Loop() {
						kv.AttendFlash(y, q, kc, vc, pos, c.H, c.Hkv, c.hd, 0.0884, 0, c.Hkv, 0, 1, s)
					}
				})
			})
		}
	}
}

// BenchmarkPrefillDepth is 16 prompt tokens ending at position 511 or
// 4095 of one Qwen3-0.6B layer with an f16 cache, flash ("fa") and
// non-flash ("nofa"), per tier: the attention work of a prompt chunk at
// that depth.
func BenchmarkPrefillDepth(b *testing.B) {
	for _, end := range []int{512, 4096} {
		r := rand.New(rand.NewPCG(37, 38))
		c := attnCase{16, 8, 128, 16, end - 16, end + 256}
		q, k, v, pos := attnSetup(r, c)
		ctx, kvw := c.ctx, c.Hkv*c.hd
		for _, kt := range []quant.Type{quant.F16, quant.Q8_0} {
			kv, _ := NewKV(kt)
			kc := fillCache(kv, k, ctx, kvw, c.hd, []int{0, c.Hkv})
			vc := fillCache(kv, v, ctx, kvw, c.hd, []int{0, c.Hkv})
			s := NewAttnScratch(ctx, c.H/c.Hkv, c.hd)
			y := make([]float32, len(q))
			for _, tier := range f32Tiers {
				for _, fa := range []bool{false, true} {
					name := fmt.Sprintf("d%d/%s/%s", end, map[bool]string{false: "nofa", true: "fa"}[fa], tier.name)
					if kt != quant.F16 {
						name = fmt.Sprintf("d%d/%s/%s/%s", end, kt, map[bool]string{false: "nofa", true: "fa"}[fa], tier.name)
					}
					b.Run(name, func(b *testing.B) {
						if !tier.ok {
							b.Skip(tier.why)
						}
						attend := kv.Attend
						if fa {
							attend = kv.AttendFlash
						}
						withF32(tier, func() {
							for b.Loop() {
								attend(y, q, kc, vc, pos, c.H, c.Hkv, c.hd, 0.0884, 0, c.Hkv, 0, c.T, s)
							}
						})
					})
				}
			}
		}
	}
}

// TestFlashMultiQueryKernels: the multi-query f16 kernels of each tier give
// the bits of the pure-Go twins (scoresF16Q, vaccF16Q, which are the
// one-query flashDot and FMA chains; flashMerge's and roundF16's pure-Go
// loops), for every query count up to past a pass, head sizes, row counts
// across the groups of four keys and the key chunks, and values with zeros
// of both signs, subnormals, huge and tiny magnitudes.
func TestFlashMultiQueryKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	val := func() float32 {
		switch r.IntN(12) {
		case 0:
			return 0
		case 1:
			return float32(math.Copysign(0, -1))
		case 2:
			return float32(r.NormFloat64() * 1e-6) // f16 subnormal range
		case 3:
			return float32(r.NormFloat64() * 3e4)
		}
		return float32(r.NormFloat64())
	}
	f16s := func(n int) []byte {
		b := make([]byte, 2*n)
		for i := 0; i < n; i++ {
			h := quant.FP32ToFP16(val())
			b[2*i], b[2*i+1] = byte(h), byte(h>>8)
		}
		return b
	}
	f32s := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = quant.FP16ToFP32(quant.FP32ToFP16(val()))
		}
		return x
	}
	for _, tier := range f32Tiers {
		t.Run(tier.name, func(t *testing.T) {
			if !tier.ok {
				t.Skip(tier.name + " float32 kernels unavailable: " + tier.why)
			}
			for _, hd := range []int{8, 24, 64, 128, 136, 192, 256} {
				for _, nq := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 17} {
					for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 33, 64, 67, 71, 130} {
						kstride := 3*hd + 16
						k := f16s((n-1)*kstride + hd)
						q := f32s(nq * hd)
						scs := n + 3
						want := make([]float32, nq*scs)
						got := make([]float32, nq*scs)
						scoresF16Q(want, scs, k, kstride, n, q, nq, hd, make([]float32, hd))
						// With the doubled queries' scratch (the wider
						// tiles, where the tier has them) and without.
						for _, qd := range [][]float32{make([]float32, 2*nq*hd), nil} {
							clear(got)
							tier.scoresHT(got, scs, k, kstride, n, q, nq, hd, qd)
							sameBits(t, fmt.Sprintf("scores hd %d nq %d n %d scratch %d", hd, nq, n, len(qd)), got, want)
						}
					}
				}
			}
			for _, hd := range []int{8, 16, 64, 128, 200} {
				for _, nb := range []int{1, 2, 3, 9} {
					o := make([]float32, nb*hd)
					for i := range o {
						o[i] = val()
					}
					m, S := make([]float32, nb), make([]float32, nb)
					for b := range m {
						m[b] = float32(r.NormFloat64() * 10)
						S[b] = float32(1 + r.Float64()*100)
					}
					want := make([]float32, hd)
					got := make([]float32, hd)
					withF32(nil, func() { flashMerge(want, make([]float32, hd), make([]float32, nb), o, m, S) })
					withF32(tier, func() { flashMerge(got, make([]float32, hd), make([]float32, nb), o, m, S) })
					sameBits(t, fmt.Sprintf("merge hd %d nb %d", hd, nb), got, want)
				}
			}
			for _, n := range []int{1, 7, 8, 9, 64, 131} {
				x := make([]float32, n)
				for i := range x {
					x[i] = val() * float32(r.NormFloat64())
					if i == n/2 && n > 8 {
						x[i] = float32(math.Inf(1)) // not a NaN: still the SIMD path
					}
				}
				want := make([]float32, n)
				got := make([]float32, n)
				withF32(nil, func() { roundF16(want, x) })
				tier.roundF16(got, x)
				sameBits(t, fmt.Sprintf("round n %d", n), got, want)
			}
			for _, hd := range []int{16, 32, 48, 64, 80, 128, 208, 256} {
				for _, nq := range []int{1, 2, 3, 4, 5, 7, 8, 14} {
					for _, n := range []int{1, 2, 7, 40} {
						vstride := 2*hd + 32
						v := f16s((n-1)*vstride + hd)
						ps := n + 5
						p := make([]float32, nq*ps)
						for i := range p {
							p[i] = val()
						}
						os := hd + 16
						want := make([]float32, nq*os)
						got := make([]float32, nq*os)
						vaccF16Q(want, os, v, vstride, p, ps, nq, n, hd, make([]float32, hd), false)
						tier.vaccHQ(got, os, v, vstride, p, ps, nq, n, hd, false)
						sameBits(t, fmt.Sprintf("v sums hd %d nq %d n %d", hd, nq, n), got, want)
						// Continued over further rows (the same rows again).
						vaccF16Q(want, os, v, vstride, p, ps, nq, n, hd, make([]float32, hd), true)
						tier.vaccHQ(got, os, v, vstride, p, ps, nq, n, hd, true)
						sameBits(t, fmt.Sprintf("continued v sums hd %d nq %d n %d", hd, nq, n), got, want)
					}
				}
			}
		})
	}
}

// TestFlashBlockSplit: a decode token's attention computed block by block
// (FlashBlockPartial, in any order and with any worker's scratch) and
// merged per KV head (FlashMergeHead) has FlashHeads' bits, f32 and f16
// caches, every tier.
func TestFlashBlockSplit(t *testing.T) {
	r := rand.New(rand.NewPCG(71, 72))
	tiers := append([]*f32Tier{nil}, f32Tiers...)
	for _, c := range []attnCase{{16, 8, 128, 1, 1000, 1024}, {14, 2, 64, 1, 767, 768}, {6, 2, 80, 1, 256, 512}, {4, 4, 64, 1, 3, 256}} {
		q, k, v, pos := attnSetup(r, c)
		ctx, kvw := c.ctx, c.Hkv*c.hd
		scale := float32(1 / math.Sqrt(float64(c.hd)))
		for _, kt := range []quant.Type{quant.F32, quant.F16, quant.Q8_0} {
			if kt == quant.Q8_0 && c.hd%32 != 0 {
				continue
			}
			kv, _ := NewKV(kt)
			kc := fillCache(kv, k, ctx, kvw, c.hd, []int{0, c.Hkv})
			vc := fillCache(kv, v, ctx, kvw, c.hd, []int{0, c.Hkv})
			for _, tier := range tiers {
				name := "go"
				if tier != nil {
					name = tier.name
				}
				t.Run(fmt.Sprintf("%s/%s/H%d/Hkv%d/hd%d@%d", kt, name, c.H, c.Hkv, c.hd, c.start), func(t *testing.T) {
					if tier != nil && !tier.ok {
						t.Skip(tier.name + " float32 kernels unavailable: " + tier.why)
					}
					withF32(tier, func() {
						want := make([]float32, len(q))
						kv.AttendFlash(want, q, kc, vc, pos, c.H, c.Hkv, c.hd, scale, 0, c.Hkv, 0, 1, NewAttnScratch(ctx, c.H/c.Hkv, c.hd))
						p := NewFlashPartials(ctx, c.H, c.hd)
						ss := []*AttnScratch{NewAttnScratch(ctx, c.H/c.Hkv, c.hd), NewAttnScratch(ctx, c.H/c.Hkv, c.hd)}
						nb := FlashBlocks(pos[0])
						pieces := r.Perm(c.Hkv * nb)
						for i, pc := range pieces {
							FlashBlockPartial(p, q, kc, vc, pos[0], c.H, c.Hkv, c.hd, scale, pc%c.Hkv, pc/c.Hkv, ss[i%2])
						}
						got := make([]float32, len(q))
						for kh := c.Hkv - 1; kh >= 0; kh-- {
							FlashMergeHead(got, p, pos[0], c.H, c.Hkv, c.hd, kh, ss[kh%2])
						}
						sameBits(t, "block split", got, want)
					})
				})
			}
		}
	}
}

// BenchmarkFlashScores is one flash block's scores (256 keys of an f16
// cache, head size 128, Qwen3-0.6B's cache row width) for nq queries: the
// decode G = 2, prefill tiles of 2 and 4 tokens × 2 heads, and of 4 tokens
// × 4 heads (Qwen3-4B's and Llama-3.1-8B's G); nq 6 is one full pass of the
// AVX-512 tiles.
func BenchmarkFlashScores(b *testing.B) {
	r := rand.New(rand.NewPCG(81, 82))
	const n, hd, kstride = FlashBlock, 128, 8 * 128
	k := make([]byte, 2*(n*kstride))
	for i := 0; i < len(k); i += 2 {
		h := quant.FP32ToFP16(float32(r.NormFloat64()))
		k[i], k[i+1] = byte(h), byte(h>>8)
	}
	for _, tier := range f32Tiers {
		for _, nq := range []int{2, 4, 6, 8, 16} {
			q := make([]float32, nq*hd)
			for i := range q {
				q[i] = float32(r.NormFloat64())
			}
			sc := make([]float32, nq*n)
			qd := make([]float32, 2*nq*hd)
			b.Run(fmt.Sprintf("%s/nq%d", tier.name, nq), func(b *testing.B) {
				if !tier.ok {
					b.Skip(tier.why)
				}
				for b.Loop() {
					tier.scoresHT(sc, n, k, kstride, n, q, nq, hd, qd)
				}
			})
		}
	}
}

// BenchmarkFlashVacc is one flash block's v sums (256 rows of an f16 cache,
// head size 128, Qwen3-0.6B's cache row width) for nq queries.
func BenchmarkFlashVacc(b *testing.B) {
	r := rand.New(rand.NewPCG(83, 84))
	const n, hd, vstride = FlashBlock, 128, 8 * 128
	v := make([]byte, 2*(n*vstride))
	for i := 0; i < len(v); i += 2 {
		h := quant.FP32ToFP16(float32(r.NormFloat64()))
		v[i], v[i+1] = byte(h), byte(h>>8)
	}
	for _, tier := range f32Tiers {
		for _, nq := range []int{2, 8} {
			p := make([]float32, nq*n)
			for i := range p {
				p[i] = r.Float32()
			}
			o := make([]float32, nq*hd)
			b.Run(fmt.Sprintf("%s/nq%d", tier.name, nq), func(b *testing.B) {
				if !tier.ok {
					b.Skip(tier.why)
				}
				for b.Loop() {
					tier.vaccHQ(o, hd, v, vstride, p, n, nq, n, hd, false)
				}
			})
		}
	}
}

// TestFlashQ8Kernels: each tier's q8_0 v sums (vaccQ8Q, straight from the
// q8_0 bytes) give the bits of the pure-Go twin (each row dequantized by
// quant.DequantizeQ8_0, then the FMA chains), for query counts up to past
// a pass, head sizes with and without a 64-wide remainder, row counts
// across the row chunks, from zero and continued; and the tier's row
// dequantizer gives DequantizeQ8_0's bits. The blocks have zero, tiny
// (f16 subnormal), huge and negative scales and every quant from -128.
func TestFlashQ8Kernels(t *testing.T) {
	r := rand.New(rand.NewPCG(91, 92))
	q8s := func(nb int) []byte {
		b := make([]byte, 34*nb)
		for i := 0; i < nb; i++ {
			var d float32
			switch r.IntN(8) {
			case 0:
			case 1:
				d = float32(r.NormFloat64() * 1e-6)
			case 2:
				d = float32(r.NormFloat64() * 3e4)
			default:
				d = float32(r.NormFloat64() * 0.05)
			}
			h := quant.FP32ToFP16(d)
			b[34*i], b[34*i+1] = byte(h), byte(h>>8)
			for j := 2; j < 34; j++ {
				b[34*i+j] = byte(r.IntN(256))
			}
		}
		return b
	}
	for _, tier := range f32Tiers {
		t.Run(tier.name, func(t *testing.T) {
			if !tier.ok {
				t.Skip(tier.name + " float32 kernels unavailable: " + tier.why)
			}
			for _, hd := range []int{32, 64, 96, 128, 160, 256} {
				for _, nq := range []int{1, 2, 3, 4, 5, 7, 8, 14} {
					for _, n := range []int{1, 2, 7, 9, 17, 40} {
						vstride := q8Bytes(hd) + 34*r.IntN(3) + 5
						v := q8s(((n-1)*vstride + q8Bytes(hd) + 33) / 34)
						ps := n + 5
						p := make([]float32, nq*ps)
						for i := range p {
							p[i] = float32(r.Float64())
							if i%11 == 3 {
								p[i] = float32(r.NormFloat64() * 1e-30)
							}
						}
						os := hd + 16
						want := make([]float32, nq*os)
						got := make([]float32, nq*os)
						vaccQ8Q(want, os, v, vstride, p, ps, nq, n, hd, make([]float32, hd), false)
						tier.vaccQ8Q(got, os, v, vstride, p, ps, nq, n, hd, false)
						sameBits(t, fmt.Sprintf("v sums hd %d nq %d n %d", hd, nq, n), got, want)
						vaccQ8Q(want, os, v, vstride, p, ps, nq, n, hd, make([]float32, hd), true)
						tier.vaccQ8Q(got, os, v, vstride, p, ps, nq, n, hd, true)
						sameBits(t, fmt.Sprintf("continued v sums hd %d nq %d n %d", hd, nq, n), got, want)
					}
				}
			}
			for _, nb := range []int{1, 2, 4, 5, 33} {
				src := q8s(nb)
				want := make([]float32, 32*nb)
				got := make([]float32, 32*nb)
				quant.DequantizeQ8_0(src, want)
				tier.dequantQ8Row(got, src)
				sameBits(t, fmt.Sprintf("dequantize %d blocks", nb), got, want)
			}
		})
	}
}

// BenchmarkFlashVaccQ8 is one flash block's v sums (256 rows of a q8_0
// cache, head size 128, Qwen3-0.6B's row of 8 KV heads) for nq queries —
// decode G = 2, prefill tiles of 2 and 4 tokens × 2 heads — straight from
// the q8_0 bytes ("simd") and through the pure-Go twin ("go").
func BenchmarkFlashVaccQ8(b *testing.B) {
	r := rand.New(rand.NewPCG(93, 94))
	const n, hd = FlashBlock, 128
	rb := q8Bytes(8 * hd)
	x := randVec(r, n*8*hd, 1)
	v := make([]byte, n*rb)
	quant.QuantizeQ8_0Act(x, v)
	for _, nq := range []int{2, 4, 8} {
		p := randVec(r, nq*n, 1)
		o := make([]float32, nq*hd)
		for _, tier := range f32Tiers {
			b.Run(fmt.Sprintf("%s/nq%d", tier.name, nq), func(b *testing.B) {
				if !tier.ok {
					b.Skip(tier.why)
				}
				for b.Loop() {
					tier.vaccQ8Q(o, hd, v, rb, p, n, nq, n, hd, false)
				}
			})
		}
		b.Run(fmt.Sprintf("go/nq%d", nq), func(b *testing.B) {
			row := make([]float32, hd)
			for b.Loop() {
				vaccQ8Q(o, hd, v, rb, p, n, nq, n, hd, row, false)
			}
		})
	}
}
