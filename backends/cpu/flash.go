package cpu

import (
	"math"

	"github.com/minfer/minfer/internal/ggmlf32"
	"github.com/minfer/minfer/quant"
)

// Flash attention (minferc compile --flash-attn): causal grouped-query
// attention over the cache in fixed blocks of FlashBlock positions with no
// score row longer than a block, each block reduced to a partial result and
// the partials merged. Its float order, for query head h of token t over
// positions 0..n-1 (n = pos[t]+1), with q the query (rounded to f16 for an
// f16 cache) and k_j, v_j the cache rows (f16 converted exactly):
//
//  1. For each block b (positions j in [b·FlashBlock, min(n, (b+1)·FlashBlock))):
//     s_j = ggmlf32.VecDotF32(k_j, q); x_j = s_j·scale (float32);
//     m_b = max_j x_j; p_j = ggmlf32.ExpF(x_j - m_b);
//     S_b = Σ_j p_j, float32 adds in increasing j from 0;
//     o_b[d] = Σ_j p_j·v_j[d], one fused multiply-add per j in increasing j
//     from 0 (float32).
//  2. M = max_b m_b; w_b = ggmlf32.ExpF(m_b - M); in increasing b from 0:
//     S += float32(w_b·S_b) and o[d] += float32(w_b·o_b[d]), each product
//     rounded to float32 before its add.
//  3. y[d] = o[d] / S.
//
// The block boundaries depend only on positions (never on threads or
// timing), so a block computed by any worker gives the same partial and the
// merge in block order gives the same bits: this is the split by KV block a
// long-context decode can use. The pure-Go code below is the oracle; with a
// float32 SIMD tier the scores, the exp and the v sums run the tier's
// kernels (vaccF32/vaccF16, the scores and exp kernels of the non-flash
// path), with the same bits.
//
// This is not llama.cpp's arithmetic (its flash attention keeps one running
// maximum and, for an f16 cache, an f16 accumulator); the fixture tests
// bound the difference.

// FlashBlock is the number of cache positions of one flash-attention block.
const FlashBlock = 256

// flashScratch is the per-worker scratch of the flash path, sized for a
// context of ctx positions: the partials of one token's query heads of one
// KV head; a call over several KV heads or a batch's tiles of flashTile
// tokens grow it once, on first use (the executor's calls keep their
// shapes, so decode allocates nothing after the first steps).
type flashScratch struct {
	nb, group, hd int       // blocks of the context, query heads per KV head, head size
	tile          int       // (KV head, token) rows the partials below hold
	x             []float32 // FlashBlock: one block's scores, then probabilities
	qf            []float32 // tile·group·headDim: queries rounded through f16
	o             []float32 // tile·group·nb·headDim: the partials o_b of each (token, query head)
	m, s          []float32 // tile·group·nb: m_b, S_b
	acc           []float32 // headDim: the merged o
}

// flashTile is how many tokens of a batch share each sweep of a KV block
// (the block's rows are read from memory once for all of them).
const flashTile = 4

func newFlashScratch(ctx, group, headDim int) flashScratch {
	f := flashScratch{nb: (ctx + FlashBlock - 1) / FlashBlock, group: group, hd: headDim,
		x: make([]float32, FlashBlock), acc: make([]float32, headDim)}
	f.grow(1)
	return f
}

// grow sizes the partials for tile (KV head, token) rows.
func (f *flashScratch) grow(tile int) {
	if tile <= f.tile {
		return
	}
	f.tile = tile
	f.qf = make([]float32, tile*f.group*f.hd)
	f.o = make([]float32, tile*f.group*f.nb*f.hd)
	f.m = make([]float32, tile*f.group*f.nb)
	f.s = make([]float32, tile*f.group*f.nb)
}

// faCache is one cache as the flash path reads it: f32 rows (f) or f16
// rows (b), of width values each.
type faCache struct {
	f     []float32
	b     []byte
	width int
}

// FlashHeads is flash attention (the order above) for the query heads of
// KV heads kvh0..kvh1 and the batch tokens t0..t1, with the shapes of
// AttentionHeads; kc and vc are f32 or f16 caches (KV.Check refuses q8_0
// for the flash kernels).
func FlashHeads(y, q []float32, kc, vc *KVCache, pos []int32, nHead, nHeadKV, headDim int, scale float32, kvh0, kvh1, t0, t1 int, s *AttnScratch) {
	hd, G := headDim, nHead/nHeadKV
	qw, kvw := nHead*hd, nHeadKV*hd
	k := faCache{kc.F, kc.B, kvw}
	v := faCache{vc.F, vc.B, kvw}
	f16 := kc.F == nil
	fs := &s.flash
	tile := min(flashTile, t1-t0)
	nkv := kvh1 - kvh0
	fs.grow(tile * nkv)
	for ta := t0; ta < t1; ta += tile {
		tb := min(t1, ta+tile)
		nbMax := 0
		for t := ta; t < tb; t++ {
			nbMax = max(nbMax, (int(pos[t])+FlashBlock)/FlashBlock)
		}
		// The tile's queries: qs[((kh-kvh0)*tile + t-ta)*G*hd:], one row of
		// G heads per (KV head, token).
		row := func(kh, t int) int { return (kh-kvh0)*tile + t - ta }
		qs := fs.qf[:nkv*tile*G*hd]
		for kh := kvh0; kh < kvh1; kh++ {
			for t := ta; t < tb; t++ {
				qt := q[t*qw+kh*G*hd : t*qw+(kh+1)*G*hd]
				dst := qs[row(kh, t)*G*hd : (row(kh, t)+1)*G*hd]
				if f16 {
					for i, x := range qt {
						dst[i] = quant.FP16ToFP32(quant.FP32ToFP16(x))
					}
				} else {
					copy(dst, qt)
				}
			}
		}
		// Block after block, every KV head of the range and every (token,
		// query head) of the tile while the block's rows are in cache: the
		// rows are read in order, whole.
		for b := 0; b < nbMax; b++ {
			j0 := b * FlashBlock
			for kh := kvh0; kh < kvh1; kh++ {
				for t := ta; t < tb; t++ {
					n := int(pos[t]) + 1
					if j0 >= n {
						continue
					}
					c := min(FlashBlock, n-j0)
					for g := 0; g < G; g++ {
						r := row(kh, t)*G + g
						i := r*fs.nb + b
						fs.m[i], fs.s[i] = flashBlock(fs.o[i*hd:(i+1)*hd], fs.x[:c], k, v, kh*hd, j0, qs[r*hd:(r+1)*hd], scale, s)
					}
				}
			}
		}
		for kh := kvh0; kh < kvh1; kh++ {
			for t := ta; t < tb; t++ {
				nb := (int(pos[t]) + FlashBlock) / FlashBlock
				for g := 0; g < G; g++ {
					h := kh*G + g
					i := (row(kh, t)*G + g) * fs.nb
					flashMerge(y[t*qw+h*hd:t*qw+(h+1)*hd], fs.acc[:hd], fs.o[i*hd:], fs.m[i:i+nb], fs.s[i:i+nb])
				}
			}
		}
	}
}

// flashBlock computes one block's partial: o = o_b (len hd), returns m_b
// and S_b. x holds the block's c scores; col is the KV head's first
// column.
func flashBlock(o, x []float32, k, v faCache, col, j0 int, q []float32, scale float32, s *AttnScratch) (m, sum float32) {
	c, hd := len(x), len(q)
	tier := f32k
	// Scores.
	switch {
	case tier != nil && k.f != nil:
		tier.scores(x, k.f[j0*k.width+col:], k.width, c, q, hd)
	case tier != nil:
		tier.scoresH(x, k.b[2*(j0*k.width+col):], k.width, c, q, hd)
	case k.f != nil:
		for j := range x {
			o := (j0+j)*k.width + col
			x[j] = ggmlf32.VecDotF32(k.f[o:o+hd], q)
		}
	default:
		scoresF16(x, k.b[2*(j0*k.width+col):], k.width, c, q, s)
	}
	// Scale, max, exp.
	if tier != nil {
		m = tier.scaleMaxRow(x, x, scale)
		c16 := roundUp16(c)
		xs := x[:c16:c16]
		if cap(x) < c16 {
			panic("cpu: flash scratch")
		}
		tier.expSumRow(xs, c, m)
	} else {
		m = float32(math.Inf(-1))
		for j := range x {
			x[j] *= scale
			if x[j] > m {
				m = x[j]
			}
		}
		for j := range x {
			x[j] = ggmlf32.ExpF(x[j] - m)
		}
	}
	for _, p := range x {
		sum += p
	}
	// Probability-weighted v rows.
	switch {
	case tier != nil && hd%lanes == 0 && v.f != nil:
		tier.vacc(o, v.f[j0*v.width+col:], v.width, x, hd)
	case tier != nil && hd%lanes == 0:
		tier.vaccH(o, v.b[2*(j0*v.width+col):], v.width, x, hd)
	default:
		clear(o)
		row := s.row[:hd]
		for j, p := range x {
			vj := row
			if v.f != nil {
				off := (j0+j)*v.width + col
				vj = v.f[off : off+hd]
			} else {
				f16Row(row, v.b[2*((j0+j)*v.width+col):])
			}
			for d, vd := range vj {
				r, ok := ggmlf32.FMA32Fast(p, vd, o[d])
				if !ok {
					r = ggmlf32.FMA32Exact(p, vd, o[d])
				}
				o[d] = r
			}
		}
	}
	return m, sum
}

// flashMerge merges the partials (o_b at o[b*hd:], m[b], S[b]) into
// y = o/S in block order (step 2 and 3 of the order above). acc is
// scratch of hd floats.
func flashMerge(y, acc, o, m, S []float32) {
	hd := len(y)
	M := m[0]
	for _, mb := range m[1:] {
		if mb > M {
			M = mb
		}
	}
	clear(acc)
	var sum float32
	for b, mb := range m {
		w := ggmlf32.ExpF(mb - M)
		sum += float32(w * S[b])
		ob := o[b*hd : (b+1)*hd]
		for d, x := range ob {
			acc[d] += float32(w * x)
		}
	}
	for d, x := range acc {
		y[d] = x / sum
	}
}
