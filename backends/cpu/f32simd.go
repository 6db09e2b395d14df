package cpu

import "github.com/minfer/minfer/quant"

// f32Tier is one instruction-set tier of the float32 SIMD kernels (the
// attention scores, v sums and softmax, silu and swiglu). Every tier gives
// the same bits as the internal/ggmlf32 scalar functions for every input
// that is not NaN (NaN inputs give NaN at the same places; their payloads,
// and which NaN wins a max, are not part of the contract). The methods
// below check bounds and call the tier's assembly kernels.
type f32Tier struct {
	name string
	ok   bool   // this build and CPU can run it
	why  string // why not, when !ok

	dots     func(sc, k *float32, kstride, n int, q *float32, hd int)
	vsum     func(acc, v *float32, vstride int, p *float32, n, L, hd int)
	reduce   func(out, acc *float32, hd, L int)
	dotsH    func(sc *float32, k *byte, kstride, n int, q *float32, hd int)
	vsumH    func(acc *float32, v *byte, vstride int, p *float32, n, L, hd int)
	vaccF    func(o, v *float32, vstride int, p *float32, n, hd int)
	vaccB    func(o *float32, v *byte, vstride int, p *float32, n, hd int)
	scaleMax func(dst, src *float32, n int, scale float32) float32
	mul      func(x *float32, n int, s float32)
	expSum   func(x *float32, n, nvalid int, maxv float32) float64
	silu     func(y, x *float32, n int)
	swiglu   func(y, gate, u *float32, n int)
	exp      func(y, x *float32, n int)

	// The multi-query f16 v sums of flash attention (flashq_amd64.s),
	// indexed by the number of queries per pass minus one, and the f32→f16
	// conversion of the KV store.
	vaccBQ []func(o *float32, os int, v *byte, vstride int, p *float32, ps int, n, hd, cont int)
	toF16  func(dst *byte, src *float32, n int) int

	// The score tiles of flash attention over an f16 cache (flashDot's
	// order), indexed by queries per pass minus one (nil: none for that
	// count, a pass takes fewer); the merge of its block
	// partials; the rounding of its queries through f16.
	dotsHT []func(sc *float32, scs int, k *byte, kstride, n int, q *float32, hd int)
	// dotsHZ are the wider score tiles (AVX-512: two keys per ZMM, keys
	// in groups of eight, n a multiple of 8), indexed by queries per pass
	// minus one, reading the queries doubled by dupQ (each 8-float piece
	// twice); nil on a tier without them. scoresHT gives them the groups of
	// eight of each chunk and dotsHT the rest.
	dotsHZ []func(sc *float32, scs int, k *byte, kstride, n int, qd *float32, hd int)
	dupQ   func(dst, src *float32, n int)
	mergeB func(y, o, w *float32, nb, hd int, sum float32)
	// vrows is how many value rows vaccHQ sweeps for every pass of queries
	// and every column block before moving on, the sums stored and
	// reloaded between chunks: a few rows of 128 halves at the cache's
	// stride of 2 KiB (8 KV heads) map to 8 of the L1's 64 sets and stay
	// there while the passes read them (measured best: 8 for AVX2, 16 for
	// AVX-512, BenchmarkFlashVacc).
	vrows  int
	roundH func(dst, src *float32, n int) int

	// The v sums of flash attention over a q8_0 cache (flashq8_amd64.s),
	// indexed by queries per pass minus one, and the q8_0 row dequantizer
	// of the non-flash path.
	vaccQ8    []func(o *float32, os int, v *byte, vstride int, p *float32, ps int, n, hd, cont int)
	dequantQ8 func(dst *float32, src *byte, nb int)
}

// f32k is the float32 kernel tier in use, the best one f32Tiers has
// (picked once at start-up); nil means the pure-Go paths (internal/ggmlf32).
var f32k = bestF32Tier()

func bestF32Tier() *f32Tier {
	for _, k := range f32Tiers {
		if k.ok {
			return k
		}
	}
	return nil
}

func init() {
	if f32k != nil {
		tiers = append(tiers, "f32:"+f32k.name)
	}
}

// scores sets sc[j] = ggmlf32.VecDotF32(k[j*kstride:][:hd], q[:hd]) for
// j < n.
func (t *f32Tier) scores(sc, k []float32, kstride, n int, q []float32, hd int) {
	if n <= 0 {
		return
	}
	_ = sc[n-1]
	_ = q[:hd]
	_ = k[:(n-1)*kstride+hd]
	if hd == 0 {
		clear(sc[:n])
		return
	}
	t.dots(&sc[0], &k[0], kstride, n, &q[0], hd)
}

// scoresH is scores over f16 key rows: sc[j] =
// ggmlf32.VecDotF32(float32(k_j), q[:hd]) for j < n, k_j the hd
// little-endian halves at k[2*j*kstride:].
func (t *f32Tier) scoresH(sc []float32, k []byte, kstride, n int, q []float32, hd int) {
	if n <= 0 {
		return
	}
	_ = sc[n-1]
	_ = q[:hd]
	_ = k[:2*((n-1)*kstride+hd)]
	if hd == 0 {
		clear(sc[:n])
		return
	}
	t.dotsH(&sc[0], &k[0], kstride, n, &q[0], hd)
}

// vSumH is vSum over f16 value rows (v_j the hd halves at
// v[2*j*vstride:], converted to float32 exactly) for the G probability rows
// p_g = p[g*pstride:], out_g = out[g*hd:]: the rows are taken in chunks of
// attnChunk (a multiple of L) and each chunk is swept for every g while it
// is in cache, each lane's FMAs still in increasing j, so the bits are
// those of G separate vSum calls. acc is scratch of G·L·hd floats.
func (t *f32Tier) vSumH(out, acc []float32, v []byte, vstride int, p []float32, pstride, G, n, L, hd int) {
	if hd%lanes != 0 || (L != 16 && L != 64) {
		panic("cpu: vSumH shape")
	}
	if hd == 0 || G == 0 {
		return
	}
	_ = out[:G*hd]
	acc = acc[:G*L*hd]
	clear(acc)
	if n > 0 {
		_ = p[:(G-1)*pstride+n]
		_ = v[:2*((n-1)*vstride+hd)]
		for j0 := 0; j0 < n; j0 += attnChunk {
			c := min(attnChunk, n-j0)
			for g := 0; g < G; g++ {
				t.vsumH(&acc[g*L*hd], &v[2*j0*vstride], vstride, &p[g*pstride+j0], c, L, hd)
			}
		}
	}
	for g := 0; g < G; g++ {
		t.reduce(&out[g*hd], &acc[g*L*hd], hd, L)
	}
}

// attnChunk is how many cache rows the f16 attention kernels sweep for
// every query head of a KV head before moving on (a multiple of 64, the
// lanes of the decode v sums): 256 rows of 128 halves are 64 KiB, which stay
// in L2 while each query head reads them.
const attnChunk = 256

// vacc sets o[d] (d < hd, hd a multiple of 16) to the fused multiply-add
// chain Σ p[j]·v[j*vstride+d] over j < len(p) in increasing j from 0: the
// flash attention block's v sum.
func (t *f32Tier) vacc(o, v []float32, vstride int, p []float32, hd int) {
	n := len(p)
	if hd%lanes != 0 {
		panic("cpu: vacc shape")
	}
	if n == 0 || hd == 0 {
		clear(o[:hd])
		return
	}
	_ = o[:hd]
	_ = v[:(n-1)*vstride+hd]
	t.vaccF(&o[0], &v[0], vstride, &p[0], n, hd)
}

// vaccH is vacc over f16 rows (v_j the hd halves at v[2*j*vstride:]).
func (t *f32Tier) vaccH(o []float32, v []byte, vstride int, p []float32, hd int) {
	n := len(p)
	if hd%lanes != 0 {
		panic("cpu: vaccH shape")
	}
	if n == 0 || hd == 0 {
		clear(o[:hd])
		return
	}
	_ = o[:hd]
	_ = v[:2*((n-1)*vstride+hd)]
	t.vaccB(&o[0], &v[0], vstride, &p[0], n, hd)
}

// scoresHT sets sc[r*scs+j] = flashDot(float32(k_j), q[r*hd:][:hd]) for
// r < nq, j < n (k_j the hd halves at k[2*j*kstride:]), hd a positive
// multiple of 8: the rows in chunks of flashKeyChunk (in L1 while every
// pass of queries reads them), each converted piece of a key feeding the
// queries of a pass. qd is scratch of 2·nq·hd floats for the doubled
// queries of the tier's wider tiles (with less, only dotsHT run).
func (t *f32Tier) scoresHT(sc []float32, scs int, k []byte, kstride, n int, q []float32, nq, hd int, qd []float32) {
	if n <= 0 || nq <= 0 {
		return
	}
	if hd <= 0 || hd%8 != 0 {
		panic("cpu: scoresHT shape")
	}
	_ = sc[(nq-1)*scs+n-1]
	_ = q[:nq*hd]
	_ = k[:2*((n-1)*kstride+hd)]
	wide := len(t.dotsHZ) > 0 && len(qd) >= 2*nq*hd && n >= 8
	if wide {
		t.dupQ(&qd[0], &q[0], nq*hd)
	}
	for j0 := 0; j0 < n; j0 += flashKeyChunk {
		c := min(flashKeyChunk, n-j0)
		c8 := 0
		if wide {
			// Passes of as even a size as the kernels allow.
			c8 = c &^ 7
			np := (nq + len(t.dotsHZ) - 1) / len(t.dotsHZ)
			for r, p := 0, 0; c8 > 0 && r < nq; p++ {
				m := (nq - r + np - p - 1) / (np - p)
				t.dotsHZ[m-1](&sc[r*scs+j0], scs, &k[2*j0*kstride], kstride, c8, &qd[2*r*hd], hd)
				r += m
			}
		}
		for r := 0; c8 < c && r < nq; {
			m := min(len(t.dotsHT), nq-r)
			for t.dotsHT[m-1] == nil {
				m--
			}
			t.dotsHT[m-1](&sc[r*scs+j0+c8], scs, &k[2*(j0+c8)*kstride], kstride, c-c8, &q[r*hd], hd)
			r += m
		}
	}
}

// flashKeyChunk is how many key rows the score tiles sweep for every pass
// of queries before moving on: 64 rows of 128 halves are 16 KiB.
const flashKeyChunk = 64

// merge is flashMerge's weighted sum for hd a positive multiple of 8: y[d]
// = (Σ_b float32(w[b]·o[b*hd+d]), added in increasing b from +0) / sum.
func (t *f32Tier) merge(y, o, w []float32, hd int, sum float32) {
	nb := len(w)
	if hd <= 0 || hd%8 != 0 || nb == 0 {
		panic("cpu: merge shape")
	}
	_ = y[:hd]
	_ = o[:nb*hd]
	t.mergeB(&y[0], &o[0], &w[0], nb, hd, sum)
}

// roundF16 sets dst[i] = quant.FP16ToFP32(quant.FP32ToFP16(src[i])).
func (t *f32Tier) roundF16(dst, src []float32) {
	n := len(src)
	if n == 0 {
		return
	}
	_ = dst[:n]
	i := t.roundH(&dst[0], &src[0], n)
	for ; i < n; i++ {
		dst[i] = quant.FP16ToFP32(quant.FP32ToFP16(src[i]))
	}
}

// vaccHQ is vaccH for nq queries at once: o[r*os+d] (d < hd, hd a multiple
// of 16) is the fused multiply-add chain Σ p[r*ps+j]·float32(v_j[d]) over
// j < n in increasing j from 0, v_j the hd halves at v[2*j*vstride:],
// starting from +0 or, with cont, from o's values (the chain of earlier
// rows continued). Each
// value row is converted once for a pass of as many queries as the tier's
// registers hold; the rows are taken in chunks of t.vrows, every pass over
// a chunk before the next chunk.
func (t *f32Tier) vaccHQ(o []float32, os int, v []byte, vstride int, p []float32, ps, nq, n, hd int, cont bool) {
	if hd%lanes != 0 {
		panic("cpu: vaccHQ shape")
	}
	if nq <= 0 || hd == 0 {
		return
	}
	_ = o[(nq-1)*os+hd-1]
	if n == 0 {
		for r := 0; !cont && r < nq; r++ {
			clear(o[r*os : r*os+hd])
		}
		return
	}
	_ = p[(nq-1)*ps+n-1]
	_ = v[:2*((n-1)*vstride+hd)]
	rows := t.vrows
	if rows <= 0 {
		rows = n
	}
	for j0 := 0; j0 < n; j0 += rows {
		c, more := min(rows, n-j0), min(j0, 1)
		if cont {
			more = 1
		}
		for r := 0; r < nq; {
			m := min(len(t.vaccBQ), nq-r)
			t.vaccBQ[m-1](&o[r*os], os, &v[2*j0*vstride], vstride, &p[r*ps+j0], ps, c, hd, more)
			r += m
		}
	}
}

// vaccQ8Q is vaccHQ over q8_0 rows: o[r*os+d] (d < hd, hd a multiple of
// 32) is the fused multiply-add chain Σ p[r*ps+j]·v_j[d] over j < n in
// increasing j from 0, v_j[d] = d_j·q_j[d] the dequantized value (exact in
// float32) of row j, the hd/32 q8_0 blocks at v[j*vstride:] (vstride in
// bytes), starting from +0 or, with cont, from o's values. Each row piece
// is formed once for a pass of as many queries as the tier's registers
// hold; the rows are taken in chunks of t.vrows, every pass over a chunk
// before the next chunk.
func (t *f32Tier) vaccQ8Q(o []float32, os int, v []byte, vstride int, p []float32, ps, nq, n, hd int, cont bool) {
	if hd%32 != 0 {
		panic("cpu: vaccQ8Q shape")
	}
	if nq <= 0 || hd == 0 {
		return
	}
	_ = o[(nq-1)*os+hd-1]
	if n == 0 {
		for r := 0; !cont && r < nq; r++ {
			clear(o[r*os : r*os+hd])
		}
		return
	}
	_ = p[(nq-1)*ps+n-1]
	_ = v[:(n-1)*vstride+q8Bytes(hd)]
	rows := t.vrows
	if rows <= 0 {
		rows = n
	}
	for j0 := 0; j0 < n; j0 += rows {
		c, more := min(rows, n-j0), min(j0, 1)
		if cont {
			more = 1
		}
		for r := 0; r < nq; {
			m := min(len(t.vaccQ8), nq-r)
			t.vaccQ8[m-1](&o[r*os], os, &v[j0*vstride], vstride, &p[r*ps+j0], ps, c, hd, more)
			r += m
		}
	}
}

// dequantQ8Row sets dst (a multiple of 32 values) to the dequantized
// values of the q8_0 blocks at src: quant.DequantizeQ8_0's bits.
func (t *f32Tier) dequantQ8Row(dst []float32, src []byte) {
	nb := len(dst) / 32
	if nb == 0 {
		return
	}
	_ = dst[:32*nb]
	_ = src[:34*nb]
	t.dequantQ8(&dst[0], &src[0], nb)
}

// vecDot is ggmlf32.VecDotF32.
func (t *f32Tier) vecDot(x, y []float32) float32 {
	if len(x) == 0 {
		return 0
	}
	var s [1]float32
	t.scores(s[:], x, 0, 1, y, len(x))
	return s[0]
}

// vSum sets out[d] (d < hd, hd a multiple of 16) to the L-lane FMA
// accumulation of v[j*vstride+d]·p[j] over j < n — lane l taking the j ≡ l
// (mod L) in increasing j — reduced as ggmlf32.Reduce16 (L == 16, tinyBLAS)
// or ggmlf32.VecDotCombine (L == 64, ggml_vec_dot_f32's vector part). acc
// is scratch of L·hd floats.
func (t *f32Tier) vSum(out, acc, v []float32, vstride int, p []float32, n, L, hd int) {
	if hd%lanes != 0 || (L != 16 && L != 64) {
		panic("cpu: vSum shape")
	}
	if hd == 0 {
		return
	}
	_ = out[:hd]
	_ = acc[:L*hd]
	if n > 0 {
		_ = p[:n]
		_ = v[:(n-1)*vstride+hd]
	} else {
		clear(acc[:L*hd])
		t.reduce(&out[0], &acc[0], hd, L)
		return
	}
	t.vsum(&acc[0], &v[0], vstride, &p[0], n, L, hd)
	t.reduce(&out[0], &acc[0], hd, L)
}

// scaleMaxRow sets dst[i] = src[i]·scale and returns the max of dst
// (-Inf for an empty row).
func (t *f32Tier) scaleMaxRow(dst, src []float32, scale float32) float32 {
	if len(src) == 0 {
		return t.scaleMax(nil, nil, 0, scale)
	}
	_ = dst[:len(src)]
	return t.scaleMax(&dst[0], &src[0], len(src), scale)
}

// mulRow sets x[i] *= s.
func (t *f32Tier) mulRow(x []float32, s float32) {
	if len(x) > 0 {
		t.mul(&x[0], len(x), s)
	}
}

// expSumRow sets x[i] = ggmlf32.ExpF(x[i]-maxv) for i < nvalid and 0
// from there on (len(x) a multiple of 16) and returns the float64 sum of
// the 16-wide chunks' Reduce16.
func (t *f32Tier) expSumRow(x []float32, nvalid int, maxv float32) float64 {
	if len(x)%lanes != 0 {
		panic("cpu: expSumRow length")
	}
	if len(x) == 0 {
		return 0
	}
	return t.expSum(&x[0], len(x), nvalid, maxv)
}

// siluRow sets y[i] = ggmlf32.SiLUVec(x[i]).
func (t *f32Tier) siluRow(y, x []float32) {
	if len(x) > 0 {
		_ = y[:len(x)]
		t.silu(&y[0], &x[0], len(x))
	}
}

// swigluRow sets y[i] = ggmlf32.SiLUVec(g[i])·u[i].
func (t *f32Tier) swigluRow(y, g, u []float32) {
	if len(g) > 0 {
		_ = y[:len(g)]
		_ = u[:len(g)]
		t.swiglu(&y[0], &g[0], &u[0], len(g))
	}
}

// expRow sets y[i] = ggmlf32.ExpF(x[i]).
func (t *f32Tier) expRow(y, x []float32) {
	if len(x) > 0 {
		_ = y[:len(x)]
		t.exp(&y[0], &x[0], len(x))
	}
}
