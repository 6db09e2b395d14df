package cpu

import "minfer/quant"

// AttnScratch is one worker's scratch for the attention kernels.
type AttnScratch struct {
	scores []float32 // group·ctx: the scores, then probabilities, of one KV head's query heads
	qb     []byte    // group·headDim·2: queries converted to the cache's type
	acc    []float64 // group·headDim: f16 probability-weighted sums
	v      []float32 // headDim: one dequantized q8_0 value row
}

// NewAttnScratch allocates scratch for a context of ctx positions, group
// query heads per KV head (nHead/nHeadKV) and heads of headDim values.
func NewAttnScratch(ctx, group, headDim int) *AttnScratch {
	return &AttnScratch{
		scores: make([]float32, group*ctx),
		qb:     make([]byte, 2*group*headDim),
		acc:    make([]float64, group*headDim),
		v:      make([]float32, headDim),
	}
}

// dotF32 is the attention score k·q in float32, summed in order.
func dotF32(a, b []float32) float32 {
	b = b[:len(a)]
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// dot4F32 is dotF32 of q with four k rows at once: four independent
// float32 chains, each summed in order (the same bits as four dotF32
// calls), so their latencies overlap.
func dot4F32(q, k0, k1, k2, k3 []float32) (s0, s1, s2, s3 float32) {
	n := len(q)
	k0, k1, k2, k3 = k0[:n], k1[:n], k2[:n], k3[:n]
	for i, qi := range q {
		s0 += qi * k0[i]
		s1 += qi * k1[i]
		s2 += qi * k2[i]
		s3 += qi * k3[i]
	}
	return
}

// axpy4 adds four probability-weighted v rows to out, element by element
// in row order: out[d] = (((out[d] + v0[d]·p0) + v1[d]·p1) + v2[d]·p2) +
// v3[d]·p3, the same bits as four single-row passes.
func axpy4(out, v0, v1, v2, v3 []float32, p0, p1, p2, p3 float32) {
	n := len(out)
	v0, v1, v2, v3 = v0[:n], v1[:n], v2[:n], v3[:n]
	for d, o := range out {
		o += v0[d] * p0
		o += v1[d] * p1
		o += v2[d] * p2
		o += v3[d] * p3
		out[d] = o
	}
}

// AttentionHeads is causal grouped-query attention with an f32 cache
// (llama.cpp's non-flash path) for the query heads of KV heads kvh0..kvh1.
// q and y are [len(pos)][nHead·headDim], kc and vc [ctx][nHeadKV·headDim];
// query head h uses KV head h/(nHead/nHeadKV). Token t attends to cache rows
// 0..pos[t]: scores k·q (float32, in order), softmax(scores·scale), then
// y = Σ_j probs[j]·v[j] accumulated in float32 over j in order. Exactly the
// reference executor's arithmetic. For a split by token rows, pass q, y
// sliced at the first row and pos[r0:r1].
func AttentionHeads(y, q, kc, vc []float32, pos []int32, nHead, nHeadKV, headDim int, scale float32, kvh0, kvh1 int, s *AttnScratch) {
	hd, G := headDim, nHead/nHeadKV
	qw, kvw := nHead*hd, nHeadKV*hd
	for t, p := range pos {
		n := int(p) + 1
		for kh := kvh0; kh < kvh1; kh++ {
			h0 := kh * G
			qt := q[t*qw+h0*hd : t*qw+(h0+G)*hd]
			yt := y[t*qw+h0*hd : t*qw+(h0+G)*hd]
			j := 0
			for ; j+4 <= n; j += 4 {
				o := j*kvw + kh*hd
				k0, k1 := kc[o:o+hd], kc[o+kvw:o+kvw+hd]
				k2, k3 := kc[o+2*kvw:o+2*kvw+hd], kc[o+3*kvw:o+3*kvw+hd]
				for g := 0; g < G; g++ {
					sc := s.scores[g*n+j : g*n+j+4]
					sc[0], sc[1], sc[2], sc[3] = dot4F32(qt[g*hd:(g+1)*hd], k0, k1, k2, k3)
				}
			}
			for ; j < n; j++ {
				k := kc[j*kvw+kh*hd : j*kvw+(kh+1)*hd]
				for g := 0; g < G; g++ {
					s.scores[g*n+j] = dotF32(qt[g*hd:(g+1)*hd], k)
				}
			}
			for g := 0; g < G; g++ {
				softmaxRow(s.scores[g*n:(g+1)*n], s.scores[g*n:(g+1)*n], scale)
			}
			clear(yt)
			j = 0
			for ; j+4 <= n; j += 4 {
				o := j*kvw + kh*hd
				v0, v1 := vc[o:o+hd], vc[o+kvw:o+kvw+hd]
				v2, v3 := vc[o+2*kvw:o+2*kvw+hd], vc[o+3*kvw:o+3*kvw+hd]
				for g := 0; g < G; g++ {
					p := s.scores[g*n+j : g*n+j+4]
					axpy4(yt[g*hd:(g+1)*hd], v0, v1, v2, v3, p[0], p[1], p[2], p[3])
				}
			}
			for ; j < n; j++ {
				v := vc[j*kvw+kh*hd : j*kvw+(kh+1)*hd]
				for g := 0; g < G; g++ {
					pj := s.scores[g*n+j]
					out := yt[g*hd : (g+1)*hd]
					for d, vd := range v {
						out[d] += vd * pj
					}
				}
			}
		}
	}
}

// AttentionHeadsF16 is AttentionHeads with an f16 cache, computed as
// llama.cpp's non-flash path does with f16 K and V: q is converted to f16
// for the k·q dot (ggml's vec_dot_f16, quant.DotF16F16), the
// probabilities are converted to f16 for the weighted sum of v, whose exact
// float32 products are summed in float64.
func AttentionHeadsF16(y, q []float32, kc, vc []byte, pos []int32, nHead, nHeadKV, headDim int, scale float32, kvh0, kvh1 int, s *AttnScratch) {
	hd, G := headDim, nHead/nHeadKV
	qw, kvw := nHead*hd, nHeadKV*hd
	for t, p := range pos {
		n := int(p) + 1
		for kh := kvh0; kh < kvh1; kh++ {
			h0 := kh * G
			qt := q[t*qw+h0*hd : t*qw+(h0+G)*hd]
			yt := y[t*qw+h0*hd : t*qw+(h0+G)*hd]
			qb := s.qb[:2*G*hd]
			quant.QuantizeF16(qt, qb)
			for j := 0; j < n; j++ {
				o := 2 * (j*kvw + kh*hd)
				k := kc[o : o+2*hd]
				for g := 0; g < G; g++ {
					s.scores[g*n+j] = quant.DotF16F16(hd, k, qb[2*g*hd:2*(g+1)*hd])
				}
			}
			sc := s.scores[:G*n]
			for g := 0; g < G; g++ {
				softmaxRow(sc[g*n:(g+1)*n], sc[g*n:(g+1)*n], scale)
			}
			for i, v := range sc {
				sc[i] = quant.FP16ToFP32(quant.FP32ToFP16(v))
			}
			acc := s.acc[:G*hd]
			clear(acc)
			for j := 0; j < n; j++ {
				o := 2 * (j*kvw + kh*hd)
				v := vc[o : o+2*hd]
				for g := 0; g < G; g++ {
					pj := sc[g*n+j]
					ag := acc[g*hd : (g+1)*hd]
					for d := range ag {
						vd := quant.FP16ToFP32(uint16(v[2*d]) | uint16(v[2*d+1])<<8)
						ag[d] += float64(vd * pj)
					}
				}
			}
			for i, a := range acc {
				yt[i] = float32(a)
			}
		}
	}
}

// AttentionHeadsQ8_0 is AttentionHeads with a q8_0 cache (headDim a
// multiple of 32): q is quantized to Q8_0 with the activation quantizer for
// the k·q dot (quant.DotQ8_0Q8_0), and each v row is dequantized, then
// summed as in AttentionHeads.
func AttentionHeadsQ8_0(y, q []float32, kc, vc []byte, pos []int32, nHead, nHeadKV, headDim int, scale float32, kvh0, kvh1 int, s *AttnScratch) {
	hd, G := headDim, nHead/nHeadKV
	qw := nHead * hd
	hb, rb := q8Bytes(hd), q8Bytes(nHeadKV*hd)
	for t, p := range pos {
		n := int(p) + 1
		for kh := kvh0; kh < kvh1; kh++ {
			h0 := kh * G
			qt := q[t*qw+h0*hd : t*qw+(h0+G)*hd]
			yt := y[t*qw+h0*hd : t*qw+(h0+G)*hd]
			qb := s.qb[:G*hb]
			quant.QuantizeQ8_0Act(qt, qb)
			for j := 0; j < n; j++ {
				o := j*rb + kh*hb
				k := kc[o : o+hb]
				for g := 0; g < G; g++ {
					s.scores[g*n+j] = quant.DotQ8_0Q8_0(hd, k, qb[g*hb:(g+1)*hb])
				}
			}
			for g := 0; g < G; g++ {
				softmaxRow(s.scores[g*n:(g+1)*n], s.scores[g*n:(g+1)*n], scale)
			}
			clear(yt)
			v := s.v[:hd]
			for j := 0; j < n; j++ {
				o := j*rb + kh*hb
				quant.DequantizeQ8_0(vc[o:o+hb], v)
				for g := 0; g < G; g++ {
					pj := s.scores[g*n+j]
					out := yt[g*hd : (g+1)*hd]
					for d, vd := range v {
						out[d] += vd * pj
					}
				}
			}
		}
	}
}
