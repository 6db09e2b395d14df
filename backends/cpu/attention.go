package cpu

import (
	"github.com/minfer/minfer/internal/ggmlf32"
	"github.com/minfer/minfer/quant"
)

// lanes is the AVX-512 float32 vector width of the orders reproduced here.
const lanes = ggmlf32.Lanes

// AttnScratch is one worker's scratch for the attention kernels.
type AttnScratch struct {
	scores []float32 // group·roundUp(ctx,16): scores, then probabilities, of one KV head's query heads
	lanes  []float32 // group·headDim·64: SIMD-lane accumulators of the v sums
	qb     []byte    // group·headDim·2: queries converted to the cache's type
	qf     []float32 // group·headDim: queries rounded through f16
	row    []float32 // headDim: one converted f16 row
	v      []float32 // up to ctx·headDim: dequantized value rows (allocated on first use)
	vSize  int       // ctx·headDim
	flash  flashScratch
}

// vRows returns the scratch for m dequantized value floats.
func (s *AttnScratch) vRows(m int) []float32 {
	if cap(s.v) < m {
		s.v = make([]float32, max(m, s.vSize))
	}
	return s.v[:m]
}

func roundUp16(n int) int { return (n + lanes - 1) &^ (lanes - 1) }

// NewAttnScratch allocates scratch for a context of ctx positions, group
// query heads per KV head (nHead/nHeadKV) and heads of headDim values.
func NewAttnScratch(ctx, group, headDim int) *AttnScratch {
	return &AttnScratch{
		scores: make([]float32, group*roundUp16(ctx)),
		lanes:  make([]float32, group*headDim*4*lanes),
		qb:     make([]byte, 2*group*headDim),
		qf:     make([]float32, group*headDim),
		row:    make([]float32, headDim),
		vSize:  ctx * headDim,
		flash:  newFlashScratch(ctx, group, headDim),
	}
}

// attnLayout holds the quantities every attention variant derives from the
// whole batch (not from the worker's token range), so a split by token rows
// computes the same bits.
type attnLayout struct {
	hd, G, qw, kvw int
	batched        bool // more than one token in the batch: sgemm lane order for v
	np             int  // ggmlf32.VecDotF32's vector part of the padded cache length
}

func newAttnLayout(cacheLen int, pos []int32, nHead, nHeadKV, headDim int) attnLayout {
	l := attnLayout{hd: headDim, G: nHead / nHeadKV, qw: nHead * headDim, kvw: nHeadKV * headDim, batched: len(pos) > 1}
	// llama.cpp attends over the cache padded to a multiple of 256 cells
	// (capped by the cache size); masked cells add exact zeros, only the
	// vector/tail split of ggml_vec_dot_f32 depends on it.
	nkv := min((int(pos[len(pos)-1])+256)/256*256, cacheLen)
	l.np = nkv &^ (4*lanes - 1)
	return l
}

// vSumF32 writes yt[g*hd+d] = Σ_j v_j[d]·p_g[j] over j < n for the G query
// heads of one KV head, in the lane order of the reference (llama.cpp's
// kqv mat-mul): llamafile sgemm's 16 FMA lanes reduced by Reduce16 for a
// batch of several tokens, ggml_vec_dot_f32's 4×16 lanes plus an in-order
// float32 tail from np on for a single token. v_j is v[j*vstride:][:hd];
// p_g is sc[g*stride:].
//
// The SIMD path keeps the same per-lane order with the loops turned
// inside out: for each lane l, a vector over d accumulates the positions
// j ≡ l in increasing j, and the lane reduction is done vector-wise over d.
func (l *attnLayout) vSumF32(yt, sc []float32, stride, n int, acc, v []float32, vstride int) {
	hd, G := l.hd, l.G
	if k := f32k; k != nil && hd%lanes == 0 {
		if l.batched {
			for g := 0; g < G; g++ {
				k.vSum(yt[g*hd:(g+1)*hd], acc, v, vstride, sc[g*stride:], n, lanes, hd)
			}
			return
		}
		jv := min(n, l.np)
		for g := 0; g < G; g++ {
			k.vSum(yt[g*hd:(g+1)*hd], acc, v, vstride, sc[g*stride:], jv, 4*lanes, hd)
		}
		l.vSumTail(yt, sc, stride, jv, n, v, vstride)
		return
	}
	if l.batched {
		acc = acc[:G*hd*lanes]
		clear(acc)
		for j := 0; j < n; j++ {
			vj := v[j*vstride : j*vstride+hd]
			lane := j & (lanes - 1)
			for g := 0; g < G; g++ {
				p := sc[g*stride+j]
				a := acc[g*hd*lanes : (g+1)*hd*lanes]
				for d, vd := range vj {
					r, ok := ggmlf32.FMA32Fast(vd, p, a[d*lanes+lane])
					if !ok {
						r = ggmlf32.FMA32Exact(vd, p, a[d*lanes+lane])
					}
					a[d*lanes+lane] = r
				}
			}
		}
		for i := range yt[:G*hd] {
			yt[i] = ggmlf32.Reduce16((*[lanes]float32)(acc[i*lanes : (i+1)*lanes]))
		}
		return
	}
	const L = 4 * lanes
	acc = acc[:G*hd*L]
	clear(acc)
	jv := min(n, l.np)
	for j := 0; j < jv; j++ {
		vj := v[j*vstride : j*vstride+hd]
		lane := j & (L - 1)
		for g := 0; g < G; g++ {
			p := sc[g*stride+j]
			a := acc[g*hd*L : (g+1)*hd*L]
			for d, vd := range vj {
				r, ok := ggmlf32.FMA32Fast(vd, p, a[d*L+lane])
				if !ok {
					r = ggmlf32.FMA32Exact(vd, p, a[d*L+lane])
				}
				a[d*L+lane] = r
			}
		}
	}
	for i := range yt[:G*hd] {
		yt[i] = ggmlf32.VecDotCombine((*[L]float32)(acc[i*L : (i+1)*L]))
	}
	l.vSumTail(yt, sc, stride, jv, n, v, vstride)
}

// vSumTail adds ggml_vec_dot_f32's leftover products of positions
// j0..n-1 to yt, in order, each rounded to float32 before the add.
func (l *attnLayout) vSumTail(yt, sc []float32, stride, j0, n int, v []float32, vstride int) {
	hd := l.hd
	for j := j0; j < n; j++ {
		vj := v[j*vstride : j*vstride+hd]
		for g := 0; g < l.G; g++ {
			p := sc[g*stride+j]
			out := yt[g*hd : (g+1)*hd]
			for d, vd := range vj {
				out[d] += float32(vd * p)
			}
		}
	}
}

// softmaxMasked is ggmlf32.SoftmaxMasked (x·scale, masked from n on, in
// place), with the float32 SIMD kernels when there are.
func softmaxMasked(x []float32, n int, scale float32) {
	x = x[:len(x)&^(lanes-1)]
	k := f32k
	if k == nil || n <= 0 {
		ggmlf32.SoftmaxMasked(x, n, scale)
		return
	}
	maxv := k.scaleMaxRow(x[:n], x[:n], scale)
	n16 := roundUp16(n)
	clear(x[n16:])
	sum := k.expSumRow(x[:n16], n, maxv)
	k.mulRow(x, float32(1/sum))
}

// scoresF32 sets sc[j] = ggmlf32.VecDotF32(k_j, q) for j < n, k_j =
// k[j*kstride:][:len(q)].
func scoresF32(sc, k []float32, kstride, n int, q []float32) {
	if t := f32k; t != nil {
		t.scores(sc, k, kstride, n, q, len(q))
		return
	}
	hd := len(q)
	for j := 0; j < n; j++ {
		sc[j] = ggmlf32.VecDotF32(k[j*kstride:j*kstride+hd], q)
	}
}

// AttentionHeads is causal grouped-query attention with an f32 cache
// (llama.cpp's non-flash path, the reference executor's arithmetic) for
// the query heads of KV heads kvh0..kvh1 and the tokens t0..t1 of the
// batch. q and y are [len(pos)][nHead·headDim]; kc and vc are the whole
// caches [ctx][nHeadKV·headDim] (their length enters the arithmetic, as
// the padded attention length); pos is the whole batch's positions. Query
// head h uses KV head h/(nHead/nHeadKV); token t attends to cache rows
// 0..pos[t]: scores k·q in ggml_vec_dot_f32's order, the masked softmax of
// scores·scale, then the probability-weighted sum of v rows in the
// mat-mul's lane order (see vSumF32).
func AttentionHeads(y, q, kc, vc []float32, pos []int32, nHead, nHeadKV, headDim int, scale float32, kvh0, kvh1, t0, t1 int, s *AttnScratch) {
	l := newAttnLayout(len(kc)/(nHeadKV*headDim), pos, nHead, nHeadKV, headDim)
	hd, G, qw, kvw := l.hd, l.G, l.qw, l.kvw
	for t := t0; t < t1; t++ {
		n := int(pos[t]) + 1
		n16 := roundUp16(n)
		for kh := kvh0; kh < kvh1; kh++ {
			h0 := kh * G
			qt := q[t*qw+h0*hd : t*qw+(h0+G)*hd]
			yt := y[t*qw+h0*hd : t*qw+(h0+G)*hd]
			sc := s.scores[:G*n16]
			for g := 0; g < G; g++ {
				scoresF32(sc[g*n16:(g+1)*n16], kc[kh*hd:], kvw, n, qt[g*hd:(g+1)*hd])
			}
			for g := 0; g < G; g++ {
				softmaxMasked(sc[g*n16:(g+1)*n16], n, scale)
			}
			l.vSumF32(yt, sc, n16, n, s.lanes, vc[kh*hd:], kvw)
		}
	}
}

// AttentionHeadsF16 is AttentionHeads with an f16 cache (kc and vc hold
// f16 rows): the f32 arithmetic of AttentionHeads applied to the values the
// f16 path has, which llama.cpp's CPU backend also computes with f16 K and V
// on AVX-512 (its ggml_vec_dot_f16 and tinyBLAS f16 kernels convert halves
// to float32 exactly and use the float32 lane orders). q is rounded to f16
// (the k·q dot's vec-dot type), the scores are ggml_vec_dot_f32's order over
// the exact float32 values of k and q, the masked softmax as in
// AttentionHeads, the probabilities rounded to f16 (the kqv mat-mul's
// vec-dot type), and the weighted sum of v in vSumF32's lane order over v's
// exact float32 values.
//
// With a float32 SIMD tier the kernels read the f16 rows directly
// (VCVTPH2PS, then the FMAs of the f32 kernels); without one each row is
// converted to float32 and the pure-Go f32 code runs: the same bits.
func AttentionHeadsF16(y, q []float32, kc, vc []byte, pos []int32, nHead, nHeadKV, headDim int, scale float32, kvh0, kvh1, t0, t1 int, s *AttnScratch) {
	l := newAttnLayout(len(kc)/(2*nHeadKV*headDim), pos, nHead, nHeadKV, headDim)
	hd, G, qw, kvw := l.hd, l.G, l.qw, l.kvw
	for t := t0; t < t1; t++ {
		n := int(pos[t]) + 1
		n16 := roundUp16(n)
		for kh := kvh0; kh < kvh1; kh++ {
			h0 := kh * G
			qt := q[t*qw+h0*hd : t*qw+(h0+G)*hd]
			yt := y[t*qw+h0*hd : t*qw+(h0+G)*hd]
			qf := s.qf[:G*hd]
			for i, x := range qt {
				qf[i] = quant.FP16ToFP32(quant.FP32ToFP16(x))
			}
			sc := s.scores[:G*n16]
			kh2 := kc[2*kh*hd:]
			if k := f32k; k != nil {
				// Chunks of rows swept for every query head while in cache.
				for j0 := 0; j0 < n; j0 += attnChunk {
					c := min(attnChunk, n-j0)
					for g := 0; g < G; g++ {
						k.scoresH(sc[g*n16+j0:(g+1)*n16], kh2[2*j0*kvw:], kvw, c, qf[g*hd:(g+1)*hd], hd)
					}
				}
			} else {
				for g := 0; g < G; g++ {
					scoresF16(sc[g*n16:(g+1)*n16], kh2, kvw, n, qf[g*hd:(g+1)*hd], s)
				}
			}
			for g := 0; g < G; g++ {
				softmaxMasked(sc[g*n16:(g+1)*n16], n, scale)
			}
			for i, v := range sc {
				sc[i] = quant.FP16ToFP32(quant.FP32ToFP16(v))
			}
			l.vSumF16(yt, sc, n16, n, s, vc[2*kh*hd:], kvw)
		}
	}
}

// f16Row converts the first len(dst) halves of src (little-endian) to
// float32, exactly.
func f16Row(dst []float32, src []byte) {
	src = src[:2*len(dst)]
	for i := range dst {
		dst[i] = quant.FP16ToFP32(uint16(src[2*i]) | uint16(src[2*i+1])<<8)
	}
}

// scoresF16 is scoresF32 over f16 key rows in pure Go: sc[j] =
// ggmlf32.VecDotF32(float32(k_j), q) for j < n, k_j the len(q) halves at
// k[2*j*kstride:].
func scoresF16(sc []float32, k []byte, kstride, n int, q []float32, s *AttnScratch) {
	row := s.row[:len(q)]
	for j := 0; j < n; j++ {
		f16Row(row, k[2*j*kstride:])
		sc[j] = ggmlf32.VecDotF32(row, q)
	}
}

// vSumF16 is vSumF32 over f16 value rows (v_j the hd halves at
// v[2*j*vstride:]), the same lane orders over their exact float32 values.
func (l *attnLayout) vSumF16(yt, sc []float32, stride, n int, s *AttnScratch, v []byte, vstride int) {
	hd, G := l.hd, l.G
	if k := f32k; k != nil && hd%lanes == 0 {
		if l.batched {
			k.vSumH(yt, s.lanes, v, vstride, sc, stride, G, n, lanes, hd)
			return
		}
		jv := min(n, l.np)
		k.vSumH(yt, s.lanes, v, vstride, sc, stride, G, jv, 4*lanes, hd)
		row := s.row[:hd]
		for j := jv; j < n; j++ {
			f16Row(row, v[2*j*vstride:])
			l.vSumTail(yt, sc[j:], stride, 0, 1, row, hd)
		}
		return
	}
	vf := s.vRows(n * hd)
	for j := 0; j < n; j++ {
		f16Row(vf[j*hd:(j+1)*hd], v[2*j*vstride:])
	}
	l.vSumF32(yt, sc, stride, n, s.lanes, vf, hd)
}

// AttentionHeadsQ8_0 is AttentionHeads with a q8_0 cache (headDim a
// multiple of 32): q is quantized to Q8_0 with the activation quantizer for
// the k·q dot (quant.DotQ8_0Q8_0, through the Q8_0 mat-mul row kernel when
// there is a SIMD one), each v row is dequantized (exactly: d·q in float32,
// by the tier's dequantizer when there is one) and the probability-weighted
// sum taken as in AttentionHeads.
func AttentionHeadsQ8_0(y, q []float32, kc, vc []byte, pos []int32, nHead, nHeadKV, headDim int, scale float32, kvh0, kvh1, t0, t1 int, s *AttnScratch) {
	hb, rb := q8Bytes(headDim), q8Bytes(nHeadKV*headDim)
	l := newAttnLayout(len(kc)/rb, pos, nHead, nHeadKV, headDim)
	hd, G, qw := l.hd, l.G, l.qw
	for t := t0; t < t1; t++ {
		n := int(pos[t]) + 1
		n16 := roundUp16(n)
		for kh := kvh0; kh < kvh1; kh++ {
			h0 := kh * G
			qt := q[t*qw+h0*hd : t*qw+(h0+G)*hd]
			yt := y[t*qw+h0*hd : t*qw+(h0+G)*hd]
			qb := s.qb[:G*hb]
			quantizeQ8Act(qt, qb)
			sc := s.scores[:G*n16]
			if rows := rowKernels[quant.Q8_0]; rows != nil {
				// The SIMD mat-mul row kernel (same bits as DotQ8_0Q8_0)
				// over the key rows as a weight of stride rb.
				for g := 0; g < G; g++ {
					rows(hd, kc[kh*hb:], rb, qb[g*hb:(g+1)*hb], sc[g*n16:], 0, n)
				}
			} else {
				for j := 0; j < n; j++ {
					o := j*rb + kh*hb
					k := kc[o : o+hb]
					for g := 0; g < G; g++ {
						sc[g*n16+j] = quant.DotQ8_0Q8_0(hd, k, qb[g*hb:(g+1)*hb])
					}
				}
			}
			for g := 0; g < G; g++ {
				softmaxMasked(sc[g*n16:(g+1)*n16], n, scale)
			}
			off := kh * hb
			v := s.vRows(n * hd)
			if k := f32k; k != nil && k.dequantQ8 != nil {
				for j := 0; j < n; j++ {
					k.dequantQ8Row(v[j*hd:(j+1)*hd], vc[j*rb+off:j*rb+off+hb])
				}
			} else {
				for j := 0; j < n; j++ {
					quant.DequantizeQ8_0(vc[j*rb+off:j*rb+off+hb], v[j*hd:(j+1)*hd])
				}
			}
			l.vSumF32(yt, sc, n16, n, s.lanes, v, hd)
		}
	}
}
