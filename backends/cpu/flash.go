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
	x             []float32 // tile·group·FlashBlock: one block's scores, then probabilities, per query
	cnt           []int     // tile: rows of the block per token of a run
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
		acc: make([]float32, headDim)}
	f.grow(1)
	return f
}

// grow sizes the partials for tile (KV head, token) rows.
func (f *flashScratch) grow(tile int) {
	if tile <= f.tile {
		return
	}
	f.tile = tile
	f.x = make([]float32, tile*f.group*FlashBlock)
	f.cnt = make([]int, tile)
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
				if f16 {
					// Runs of consecutive tokens with rows in the block:
					// their G·tokens queries are contiguous in qs and share
					// each converted row.
					for t := ta; t < tb; {
						if int(pos[t])+1 <= j0 {
							t++
							continue
						}
						u := t + 1
						for u < tb && int(pos[u])+1 > j0 {
							u++
						}
						cnt := fs.cnt[:u-t]
						for i := range cnt {
							cnt[i] = min(FlashBlock, int(pos[t+i])+1-j0)
						}
						r0 := row(kh, t) * G
						flashBlocksF16(fs, k, v, kh*hd, j0, b, qs[r0*hd:(r0+(u-t)*G)*hd], r0, cnt, G, scale, s)
						t = u
					}
					continue
				}
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
	m, sum = flashSoftmax(x, scale)
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

// flashSoftmax sets x[j] = ggmlf32.ExpF(x[j]·scale - m) for the block's
// scores x (cap(x) ≥ roundUp16(len(x))) and returns m = max x[j]·scale and
// S = Σ x[j] (float32 adds in increasing j).
func flashSoftmax(x []float32, scale float32) (m, sum float32) {
	c := len(x)
	if tier := f32k; tier != nil {
		m = tier.scaleMaxRow(x, x, scale)
		c16 := roundUp16(c)
		if cap(x) < c16 {
			panic("cpu: flash scratch")
		}
		tier.expSumRow(x[:c16:c16], c, m)
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
	return m, sum
}

// flashBlocksF16 computes block b's partials (at j0, the KV head's
// columns from col) of the queries q of a run of tokens of one KV head
// over an f16 cache: G queries per token, token i attending to the
// block's first cnt[i] rows; the queries are the (token, head) rows r0..
// of the scratch partials. Each converted K row gives the scores of every
// query of the run (rows past a token's count are scored but unused), and
// each converted V row feeds the v sums of every token with the same
// count: every query's float order is flashBlock's.
func flashBlocksF16(fs *flashScratch, k, v faCache, col, j0, b int, q []float32, r0 int, cnt []int, G int, scale float32, s *AttnScratch) {
	hd, nb := fs.hd, fs.nb
	nq := len(cnt) * G
	cmax := 0
	for _, c := range cnt {
		cmax = max(cmax, c)
	}
	const FB = FlashBlock
	x := fs.x[:nq*FB]
	kb := k.b[2*(j0*k.width+col):]
	tier := f32k
	switch {
	case tier != nil && hd%64 == 0:
		tier.scoresHQ(x, FB, kb, k.width, cmax, q, nq, hd)
	case tier != nil:
		for r := 0; r < nq; r++ {
			tier.scoresH(x[r*FB:], kb, k.width, cnt[r/G], q[r*hd:(r+1)*hd], hd)
		}
	default:
		scoresF16Q(x, FB, kb, k.width, cmax, q, nq, hd, s.row[:hd])
	}
	for r := 0; r < nq; r++ {
		i := (r0+r)*nb + b
		fs.m[i], fs.s[i] = flashSoftmax(x[r*FB:r*FB+cnt[r/G]], scale)
	}
	vb := v.b[2*(j0*v.width+col):]
	for t := 0; t < len(cnt); {
		u := t + 1
		for u < len(cnt) && cnt[u] == cnt[t] {
			u++
		}
		o := fs.o[((r0+t*G)*nb+b)*hd:]
		p := x[t*G*FB:]
		if tier != nil && hd%lanes == 0 {
			tier.vaccHQ(o, nb*hd, vb, v.width, p, FB, (u-t)*G, cnt[t], hd)
		} else {
			vaccF16Q(o, nb*hd, vb, v.width, p, FB, (u-t)*G, cnt[t], hd, s.row[:hd])
		}
		t = u
	}
}

// scoresF16Q is the pure-Go scoresHQ (any hd): sc[r*scs+j] =
// ggmlf32.VecDotF32(float32(k_j), q[r*hd:][:hd]) for r < nq, j < n, each
// row converted once into row (hd floats).
func scoresF16Q(sc []float32, scs int, k []byte, kstride, n int, q []float32, nq, hd int, row []float32) {
	for j := 0; j < n; j++ {
		f16Row(row, k[2*j*kstride:])
		for r := 0; r < nq; r++ {
			sc[r*scs+j] = ggmlf32.VecDotF32(row, q[r*hd:(r+1)*hd])
		}
	}
}

// vaccF16Q is the pure-Go vaccHQ (any hd): o[r*os+d] = the fused
// multiply-add chain of p[r*ps+j]·float32(v_j[d]) over j < n in increasing
// j from 0, each row converted once into row (hd floats).
func vaccF16Q(o []float32, os int, v []byte, vstride int, p []float32, ps, nq, n, hd int, row []float32) {
	for r := 0; r < nq; r++ {
		clear(o[r*os : r*os+hd])
	}
	for j := 0; j < n; j++ {
		f16Row(row, v[2*j*vstride:])
		for r := 0; r < nq; r++ {
			pj, or := p[r*ps+j], o[r*os:r*os+hd]
			for d, vd := range row {
				x, ok := ggmlf32.FMA32Fast(pj, vd, or[d])
				if !ok {
					x = ggmlf32.FMA32Exact(pj, vd, or[d])
				}
				or[d] = x
			}
		}
	}
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

// FlashPartials holds the block partials (o_b, m_b, S_b of the order
// above) of one decode token's query heads, shared by the workers of a
// decode split by KV block: any worker computes a block's partial of a KV
// head (FlashBlockPartial), and the merge of a head (FlashMergeHead) reads
// them in block order, so the output has the bits of FlashHeads whoever
// computed what.
type FlashPartials struct {
	nb, hd  int
	o, m, s []float32
}

// NewFlashPartials allocates the partials of nHead query heads of headDim
// values over a context of ctx positions.
func NewFlashPartials(ctx, nHead, headDim int) *FlashPartials {
	nb := (ctx + FlashBlock - 1) / FlashBlock
	return &FlashPartials{nb: nb, hd: headDim, o: make([]float32, nHead*nb*headDim),
		m: make([]float32, nHead*nb), s: make([]float32, nHead*nb)}
}

// FlashBlocks is the number of flash blocks a token at position pos reads.
func FlashBlocks(pos int32) int { return (int(pos) + FlashBlock) / FlashBlock }

// FlashBlockPartial computes block b (< FlashBlocks(pos)) of the query
// heads of KV head kh for one token at position pos (q its nHead·headDim
// query row), into p: the arithmetic of FlashHeads for that block.
func FlashBlockPartial(p *FlashPartials, q []float32, kc, vc *KVCache, pos int32, nHead, nHeadKV, headDim int, scale float32, kh, b int, s *AttnScratch) {
	hd, G := headDim, nHead/nHeadKV
	kvw := nHeadKV * hd
	k := faCache{kc.F, kc.B, kvw}
	v := faCache{vc.F, vc.B, kvw}
	if p.hd != hd || nHead*p.nb*hd > len(p.o) {
		panic("cpu: flash partials shape")
	}
	n := int(pos) + 1
	j0 := b * FlashBlock
	c := min(FlashBlock, n-j0)
	if c <= 0 {
		panic("cpu: flash block past the token's position")
	}
	fs := &s.flash
	qs := fs.qf[:G*hd]
	qt := q[kh*G*hd : (kh+1)*G*hd]
	if kc.F == nil {
		for i, x := range qt {
			qs[i] = quant.FP16ToFP32(quant.FP32ToFP16(x))
		}
		// A view of the shared partials as the scratch flashBlocksF16
		// writes: query heads kh·G.. at rows 0.. of p.
		view := flashScratch{nb: p.nb, group: G, hd: hd, x: fs.x, cnt: fs.cnt,
			o: p.o[kh*G*p.nb*hd:], m: p.m[kh*G*p.nb:], s: p.s[kh*G*p.nb:]}
		view.cnt[0] = c
		flashBlocksF16(&view, k, v, kh*hd, j0, b, qs, 0, view.cnt[:1], G, scale, s)
		return
	}
	copy(qs, qt)
	for g := 0; g < G; g++ {
		i := (kh*G+g)*p.nb + b
		p.m[i], p.s[i] = flashBlock(p.o[i*hd:(i+1)*hd], fs.x[:c], k, v, kh*hd, j0, qs[g*hd:(g+1)*hd], scale, s)
	}
}

// FlashMergeHead merges the FlashBlocks(pos) partials of the query heads of
// KV head kh into y (the token's nHead·headDim output row), in block order.
func FlashMergeHead(y []float32, p *FlashPartials, pos int32, nHead, nHeadKV, headDim int, kh int, s *AttnScratch) {
	hd, G := headDim, nHead/nHeadKV
	nb := FlashBlocks(pos)
	for g := 0; g < G; g++ {
		h := kh*G + g
		i := h * p.nb
		flashMerge(y[h*hd:(h+1)*hd], s.flash.acc[:hd], p.o[i*hd:], p.m[i:i+nb], p.s[i:i+nb])
	}
}
