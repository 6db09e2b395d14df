package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/minfer/minfer/internal/ggmlf32"
	"github.com/minfer/minfer/quant"
)

// forF32Tiers runs f as a subtest (named after the tier) for every
// float32 SIMD tier, calling the tier's kernels directly (not through the
// start-up choice); a tier this CPU or build lacks is skipped with the
// reason.
func forF32Tiers(t *testing.T, f func(t *testing.T, k *f32Tier)) {
	for _, k := range f32Tiers {
		t.Run(k.name, func(t *testing.T) {
			if !k.ok {
				t.Skip(k.name + " float32 kernels unavailable: " + k.why)
			}
			f(t, k)
		})
	}
}

// withF32 runs f with tier k (nil: the pure-Go paths) as the float32
// kernel choice of the dispatching code (attention, softmax, silu).
func withF32(k *f32Tier, f func()) {
	old := f32k
	f32k = k
	defer func() { f32k = old }()
	f()
}

func bitsEq(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b)
}

// specials are ExpF arguments around its edges: zeros, the overflow and
// underflow thresholds (|n| = 192 in the blend, the float32 range, the
// subnormal range), infinities and NaNs.
func specials() []float32 {
	xs := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 0.5, -0.5, 1e-30, -1e-30,
		88, 88.3762626647949, 88.38, 88.73, 89, 100, 133, 133.08, 133.1, 134, 1e10,
		-87.33, -87.34, -100, -103.97, -103.98, -104, -110, -126, -132.9, -133, -133.1, -134, -1e10,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		math.Float32frombits(0x7fc12345), math.Float32frombits(0xffc00001), math.Float32frombits(0x7f800001),
		math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32}
	for x := float32(-140); x <= 140; x += 0.0625 {
		xs = append(xs, x, math.Nextafter32(x, 200), math.Nextafter32(x, -200))
	}
	return xs
}

func TestSIMDExpF(t *testing.T) { forF32Tiers(t, testSIMDExpF) }

func testSIMDExpF(t *testing.T, k *f32Tier) {
	xs := specials()
	// A stride through every float32 bit pattern.
	for b := uint64(0); b < 1<<32; b += 9973 {
		xs = append(xs, math.Float32frombits(uint32(b)))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		xs = append(xs, float32(r.NormFloat64()*40))
	}
	for _, n := range []int{len(xs), len(xs) - 1, 15, 1, 17} {
		got := make([]float32, n)
		k.expRow(got, xs[:n])
		bad := 0
		for i, x := range xs[:n] {
			if want := ggmlf32.ExpF(x); !bitsEq(got[i], want) {
				if bad++; bad < 10 {
					t.Errorf("ExpF(%g [%08x]) = %g [%08x], want %g [%08x]", x, math.Float32bits(x),
						got[i], math.Float32bits(got[i]), want, math.Float32bits(want))
				}
			}
		}
		if bad > 0 {
			t.Fatalf("n=%d: %d mismatches", n, bad)
		}
	}
}

// TestSIMDExpFEdges checks every float32 argument where ggml_v_expf's
// scalef rounds to a subnormal or to zero (x in [-104, -87.3]), overflows
// (x in [88.3, 88.8]) or meets the |n| = 192 blend (|x| near 133.08):
// the two-multiply scalef of the AVX2 tier must round exactly as
// VSCALEFPS does.
func TestSIMDExpFEdges(t *testing.T) { forF32Tiers(t, testSIMDExpFEdges) }

func testSIMDExpFEdges(t *testing.T, k *f32Tier) {
	var xs []float32
	for _, r := range [][2]float32{{-104, -87.3}, {88.3, 88.8}, {-133.2, -132.9}, {132.9, 133.2}} {
		for x := r[0]; x <= r[1]; x = math.Nextafter32(x, 200) {
			xs = append(xs, x)
		}
	}
	got := make([]float32, len(xs))
	k.expRow(got, xs)
	bad := 0
	for i, x := range xs {
		if want := ggmlf32.ExpF(x); !bitsEq(got[i], want) {
			if bad++; bad < 10 {
				t.Errorf("ExpF(%g [%08x]) = %g [%08x], want %g [%08x]", x, math.Float32bits(x),
					got[i], math.Float32bits(got[i]), want, math.Float32bits(want))
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d mismatches in %d arguments", bad, len(xs))
	}
}

func TestSIMDSiLUSwiGLU(t *testing.T) { forF32Tiers(t, testSIMDSiLUSwiGLU) }

func testSIMDSiLUSwiGLU(t *testing.T, k *f32Tier) {
	xs := specials()
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		xs = append(xs, float32(r.NormFloat64()*8))
	}
	us := make([]float32, len(xs))
	for i := range us {
		us[i] = float32(r.NormFloat64())
	}
	us[0], us[1] = float32(math.Inf(1)), float32(math.NaN())
	for _, n := range []int{len(xs), len(xs) - 3, 5, 16, 31} {
		y := make([]float32, n)
		k.siluRow(y, xs[:n])
		for i, x := range xs[:n] {
			if want := ggmlf32.SiLUVec(x); !bitsEq(y[i], want) {
				t.Fatalf("silu(%g) = %g [%08x], want %g [%08x]", x, y[i], math.Float32bits(y[i]), want, math.Float32bits(want))
			}
		}
		k.swigluRow(y, xs[:n], us[:n])
		for i, x := range xs[:n] {
			if want := ggmlf32.SiLUVec(x) * us[i]; !bitsEq(y[i], want) {
				t.Fatalf("swiglu(%g, %g) = %g [%08x], want %g [%08x]", x, us[i], y[i], math.Float32bits(y[i]), want, math.Float32bits(want))
			}
		}
	}
}

// randDotVec draws values of mixed magnitudes (so lanes round differently
// and cancel), with some exact zeros and subnormal products.
func randDotVec(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		switch r.IntN(20) {
		case 0:
			x[i] = 0
		case 1:
			x[i] = float32(r.NormFloat64() * 1e-20)
		case 2:
			x[i] = float32(r.NormFloat64() * 1e6)
		default:
			x[i] = float32(r.NormFloat64())
		}
	}
	return x
}

func TestSIMDVecDot(t *testing.T) { forF32Tiers(t, testSIMDVecDot) }

func testSIMDVecDot(t *testing.T, k *f32Tier) {
	r := rand.New(rand.NewPCG(5, 6))
	for n := 0; n <= 520; n++ {
		for rep := 0; rep < 4; rep++ {
			x, y := randDotVec(r, n), randDotVec(r, n)
			got, want := k.vecDot(x, y), ggmlf32.VecDotF32(x, y)
			if !bitsEq(got, want) {
				t.Fatalf("n=%d: VecDotF32 %g [%08x], want %g [%08x]", n, got, math.Float32bits(got), want, math.Float32bits(want))
			}
		}
	}
	// Strided rows (the attention scores).
	for _, hd := range []int{16, 64, 80, 128, 100} {
		const n, stride = 37, 300
		kc, q := randDotVec(r, n*stride), randDotVec(r, hd)
		sc := make([]float32, n)
		k.scores(sc, kc, stride, n, q, hd)
		for j := range sc {
			if want := ggmlf32.VecDotF32(kc[j*stride:j*stride+hd], q); !bitsEq(sc[j], want) {
				t.Fatalf("hd=%d j=%d: %g, want %g", hd, j, sc[j], want)
			}
		}
	}
}

func TestSIMDVSum(t *testing.T) { forF32Tiers(t, testSIMDVSum) }

func testSIMDVSum(t *testing.T, k *f32Tier) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, hd := range []int{16, 64, 80, 128} {
		for _, n := range []int{0, 1, 2, 15, 16, 17, 63, 64, 65, 100, 128, 200, 512} {
			const extra = 7
			vstride := hd + extra
			v, p := randDotVec(r, n*vstride), randDotVec(r, n)
			for _, L := range []int{16, 64} {
				out := make([]float32, hd)
				acc := make([]float32, L*hd)
				k.vSum(out, acc, v, vstride, p, n, L, hd)
				m := (n + L - 1) / L * L // zero padding adds exact zeros
				col, pp := make([]float32, m), make([]float32, m)
				copy(pp, p)
				for d := 0; d < hd; d++ {
					for j := 0; j < n; j++ {
						col[j] = v[j*vstride+d]
					}
					var want float32
					if L == 16 {
						want = ggmlf32.SgemmDotF32(col, pp)
					} else {
						want = ggmlf32.VecDotF32(col, pp)
					}
					if !bitsEq(out[d], want) {
						t.Fatalf("hd=%d n=%d L=%d d=%d: %g, want %g", hd, n, L, d, out[d], want)
					}
				}
			}
		}
	}
}

// f16Bytes rounds x to f16 and returns the halves (little-endian) and
// their float32 values.
func f16Bytes(x []float32) ([]byte, []float32) {
	b := make([]byte, 2*len(x))
	quant.QuantizeF16(x, b)
	f := make([]float32, len(x))
	for i := range f {
		f[i] = quant.FP16ToFP32(uint16(b[2*i]) | uint16(b[2*i+1])<<8)
	}
	return b, f
}

// TestSIMDF16Rows: the f16-row kernels (scores and v sums reading halves)
// give the bits of ggmlf32 over the halves' float32 values, for every tier,
// head sizes with and without tails, strided rows, subnormal and large
// halves.
func TestSIMDF16Rows(t *testing.T) { forF32Tiers(t, testSIMDF16Rows) }

func testSIMDF16Rows(t *testing.T, k *f32Tier) {
	r := rand.New(rand.NewPCG(15, 16))
	mixed := func(n int) []float32 {
		x := randDotVec(r, n)
		for i := range x {
			switch r.IntN(30) {
			case 0:
				x[i] = float32(r.NormFloat64() * 1e-6) // f16 subnormals
			case 1:
				x[i] = float32(r.NormFloat64() * 3e4)
			}
		}
		return x
	}
	for _, hd := range []int{1, 15, 16, 64, 80, 100, 128, 200, 256} {
		for _, n := range []int{1, 2, 37} {
			stride := hd + r.IntN(3)*16
			kb, kf := f16Bytes(mixed(n * stride))
			q := mixed(hd)
			sc := make([]float32, n)
			k.scoresH(sc, kb, stride, n, q, hd)
			for j := range sc {
				if want := ggmlf32.VecDotF32(kf[j*stride:j*stride+hd], q); !bitsEq(sc[j], want) {
					t.Fatalf("scores hd=%d n=%d j=%d: %g, want %g", hd, n, j, sc[j], want)
				}
			}
		}
	}
	for _, hd := range []int{16, 64, 80, 128} {
		for _, n := range []int{0, 1, 2, 15, 16, 17, 63, 64, 65, 100, 128, 200, 512} {
			vstride := hd + 16
			vb, vf := f16Bytes(mixed(max(n, 1) * vstride))
			p := randDotVec(r, n)
			for _, L := range []int{16, 64} {
				got, want := make([]float32, hd), make([]float32, hd)
				acc := make([]float32, L*hd)
				k.vSumH(got, acc, vb, vstride, p, n, 1, n, L, hd)
				k.vSum(want, acc, vf, vstride, p, n, L, hd)
				for d := range got {
					if !bitsEq(got[d], want[d]) {
						t.Fatalf("vsum hd=%d n=%d L=%d d=%d: %g, want %g", hd, n, L, d, got[d], want[d])
					}
				}
			}
		}
	}
	// Several query heads, rows in chunks of attnChunk.
	for _, G := range []int{2, 3} {
		for _, n := range []int{attnChunk - 1, attnChunk, attnChunk + 1, 3*attnChunk + 70} {
			const hd = 128
			vstride := 2 * hd
			vb, vf := f16Bytes(mixed(n * vstride))
			pstride := n + 5
			p := randDotVec(r, G*pstride)
			for _, L := range []int{16, 64} {
				got, want := make([]float32, G*hd), make([]float32, hd)
				acc := make([]float32, G*L*hd)
				k.vSumH(got, acc, vb, vstride, p, pstride, G, n, L, hd)
				for g := 0; g < G; g++ {
					k.vSum(want, acc, vf, vstride, p[g*pstride:], n, L, hd)
					for d := range want {
						if !bitsEq(got[g*hd+d], want[d]) {
							t.Fatalf("vsum G=%d n=%d L=%d g=%d d=%d: %g, want %g", G, n, L, g, d, got[g*hd+d], want[d])
						}
					}
				}
			}
		}
	}
}

func TestSIMDSoftmax(t *testing.T) { forF32Tiers(t, testSIMDSoftmax) }

func testSIMDSoftmax(t *testing.T, k *f32Tier) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, cols := range []int{1, 5, 16, 17, 31, 32, 100, 512, 513, 4864} {
		for _, amp := range []float32{1, 10, 100} {
			x := randVec(r, cols, amp)
			x[r.IntN(cols)] = float32(math.Inf(-1))
			want, got := make([]float32, cols), make([]float32, cols)
			ggmlf32.Softmax(want, x, 0.7)
			k.softmaxRow(got, x, 0.7)
			sameBits(t, fmt.Sprintf("softmax/%d", cols), got, want)
			for _, n := range []int{1, 2, cols / 3, cols - 1, cols} {
				if n < 1 {
					continue
				}
				x16 := make([]float32, roundUp16(cols))
				copy(x16, x)
				for i := n; i < len(x16); i++ {
					x16[i] = float32(r.NormFloat64()) // garbage past the mask
				}
				w, g := append([]float32(nil), x16...), append([]float32(nil), x16...)
				ggmlf32.SoftmaxMasked(w, n, 0.125)
				withF32(k, func() { softmaxMasked(g, n, 0.125) })
				sameBits(t, fmt.Sprintf("masked/%d/%d", cols, n), g, w)
			}
		}
	}
}

// TestSIMDAttentionPaths: every attention kernel gives the same bits with
// the SIMD float32 kernels as without, for decode and batches, f32, f16
// and q8_0 caches.
func TestSIMDAttentionPaths(t *testing.T) { forF32Tiers(t, testSIMDAttentionPaths) }

func testSIMDAttentionPaths(t *testing.T, tier *f32Tier) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, hd := range []int{32, 64, 128} {
		for _, T := range []int{1, 3, 17} {
			for _, start := range []int{0, 70, 300} {
				c := attnCase{6, 2, hd, T, start, 512}
				q, k, v, pos := attnSetup(r, c)
				ctx, kvw := c.start+c.T, c.Hkv*c.hd
				for _, kt := range []quant.Type{quant.F32, quant.F16, quant.Q8_0} {
					kv, _ := NewKV(kt)
					kc := fillCache(kv, k, ctx, kvw, c.hd, []int{0, c.Hkv})
					vc := fillCache(kv, v, ctx, kvw, c.hd, []int{0, c.Hkv})
					var ys [2][]float32
					for i, k := range []*f32Tier{nil, tier} {
						withF32(k, func() {
							s := NewAttnScratch(ctx, c.H/c.Hkv, c.hd)
							ys[i] = make([]float32, len(q))
							kv.Attend(ys[i], q, kc, vc, pos, c.H, c.Hkv, c.hd, 0.125, 0, c.Hkv, 0, T, s)
						})
					}
					sameBits(t, fmt.Sprintf("%v hd=%d T=%d start=%d", kt, hd, T, start), ys[1], ys[0])
				}
			}
		}
	}
}

// BenchmarkSIMDF32 compares the pure-Go path ("go") and each SIMD tier
// the CPU has ("avx512", "avx2") of the float32 kernels on qwen2-0.5b
// decode shapes (take the ratios). Measured on the 2-core EPYC (loaded,
// medians of -count 5): f32 decode attention go 6.8 ms, avx512 0.11 ms,
// avx2 0.12 ms; the 16-token prefill chunk go 136 ms, avx512 2.4 ms, avx2
// 2.2 ms; softmax/512 go 37 µs, avx512 0.70 µs, avx2 0.95 µs; swiglu/4864
// go 368 µs, avx512 2.8 µs, avx2 5.6 µs. The f16 cache's decode attention
// reading halves directly (f16attn_amd64.s): go 16 ms, avx512 0.13–0.23 ms,
// avx2 0.16–0.23 ms (load average ≈10, -count 3); q8_0 with the Q8_0 row
// kernel for the scores: 0.22–0.35 ms (was 1.7–3.2 ms).
func BenchmarkSIMDF32(b *testing.B) {
	modes := []*f32Tier{nil}
	for _, k := range f32Tiers {
		if k.ok {
			modes = append(modes, k)
		}
	}
	name := func(k *f32Tier) string {
		if k == nil {
			return "go"
		}
		return k.name
	}
	r := rand.New(rand.NewPCG(33, 34))
	c := attnCase{14, 2, 64, 1, 511, 512}
	q, k, v, pos := attnSetup(r, c)
	ctx, kvw := c.start+c.T, c.Hkv*c.hd
	for _, kt := range []quant.Type{quant.F32, quant.F16, quant.Q8_0} {
		kv, _ := NewKV(kt)
		kc := fillCache(kv, k, ctx, kvw, c.hd, []int{0, c.Hkv})
		vc := fillCache(kv, v, ctx, kvw, c.hd, []int{0, c.Hkv})
		s := NewAttnScratch(ctx, c.H/c.Hkv, c.hd)
		y := make([]float32, len(q))
		for _, on := range modes {
			b.Run("Attention/"+kt.String()+"/"+name(on), func(b *testing.B) {
				withF32(on, func() {
					for b.Loop() {
						kv.Attend(y, q, kc, vc, pos, c.H, c.Hkv, c.hd, 0.125, 0, c.Hkv, 0, 1, s)
					}
				})
			})
		}
	}
	// A prefill chunk: 16 tokens at positions 496..511 (sgemm lane order).
	{
		c := attnCase{14, 2, 64, 16, 496, 512}
		q, k, v, pos := attnSetup(r, c)
		ctx, kvw := c.start+c.T, c.Hkv*c.hd
		kv, _ := NewKV(quant.F32)
		kc := fillCache(kv, k, ctx, kvw, c.hd, []int{0, c.Hkv})
		vc := fillCache(kv, v, ctx, kvw, c.hd, []int{0, c.Hkv})
		s := NewAttnScratch(ctx, c.H/c.Hkv, c.hd)
		y := make([]float32, len(q))
		for _, on := range modes {
			b.Run("AttentionPrefill16/f32/"+name(on), func(b *testing.B) {
				withF32(on, func() {
					for b.Loop() {
						kv.Attend(y, q, kc, vc, pos, c.H, c.Hkv, c.hd, 0.125, 0, c.Hkv, 0, c.T, s)
					}
				})
			})
		}
	}
	g, u, y := randVec(r, 4864, 1), randVec(r, 4864, 1), make([]float32, 4864)
	for _, on := range modes {
		b.Run("SwiGLU/4864/"+name(on), func(b *testing.B) {
			withF32(on, func() {
				for b.Loop() {
					SwiGLUCols(y, g, u, 1, 4864, 0, 4864)
				}
			})
		})
	}
	x := randVec(r, 512, 4)
	for _, on := range modes {
		b.Run("Softmax/512/"+name(on), func(b *testing.B) {
			withF32(on, func() {
				for b.Loop() {
					Softmax(y, x, 512, 0.125, 0, 1)
				}
			})
		})
		b.Run("SoftmaxMasked/512/"+name(on), func(b *testing.B) {
			withF32(on, func() {
				for b.Loop() {
					copy(y, x)
					softmaxMasked(y[:512], 500, 0.125)
				}
			})
		})
	}
}

// BenchmarkAttentionDepth is one layer of Qwen3-0.6B decode attention (16
// query heads on 8 KV heads of 128) at position 4095, per cache type and
// SIMD tier: the attention work of tg at depth 4096 (take the ratios).
func BenchmarkAttentionDepth(b *testing.B) {
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
						kv.Attend(y, q, kc, vc, pos, c.H, c.Hkv, c.hd, 0.0884, 0, c.Hkv, 0, 1, s)
					}
				})
			})
		}
	}
}
