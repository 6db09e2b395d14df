package cpu

// Scalar oracles re-derived from the reference executor's documented
// formulas (minfer/reference: rmsNorm, broadcast, rope, attention, softmax,
// silu, matMul). They work on whole tensors in the reference's loop order,
// so a kernel computing any sub-range must reproduce their bits. The
// transcendental exp is shared with elem.go (expf), whose own match with the
// reference is checked in TestExpfMatchesReference.

import (
	"math"

	"github.com/minfer/minfer/internal/ggmlf32"
	"github.com/minfer/minfer/quant"
)

func oracleRMSNorm(x []float32, n int, eps float32) []float32 {
	y := make([]float32, len(x))
	for g := 0; g < len(x); g += n {
		var sum float64
		for _, v := range x[g : g+n] {
			sum += float64(v * v)
		}
		mean := float32(sum / float64(n))
		scale := 1 / float32(math.Sqrt(float64(mean+eps)))
		for i, v := range x[g : g+n] {
			y[g+i] = v * scale
		}
	}
	return y
}

func oracleBroadcast(x, w []float32, f func(a, b float32) float32) []float32 {
	y := make([]float32, len(x))
	for i := range x {
		y[i] = f(x[i], w[i%len(w)])
	}
	return y
}

func oracleMul(x, w []float32) []float32 {
	return oracleBroadcast(x, w, func(a, b float32) float32 { return a * b })
}

func oracleAdd(x, w []float32) []float32 {
	return oracleBroadcast(x, w, func(a, b float32) float32 { return a + b })
}

func oracleSoftmax(x, y []float32, scale float32) {
	maxv := float32(math.Inf(-1))
	for i, v := range x {
		y[i] = v * scale
		if y[i] > maxv {
			maxv = y[i]
		}
	}
	var sum float64
	var chunk [lanes]float32
	i := 0
	for ; i+lanes <= len(y); i += lanes {
		for l := range chunk {
			y[i+l] = ggmlf32.ExpF(y[i+l] - maxv)
			chunk[l] = y[i+l]
		}
		sum += float64(ggmlf32.Reduce16(&chunk))
	}
	for ; i < len(y); i++ {
		y[i] = float32(math.Exp(float64(y[i] - maxv)))
		sum += float64(y[i])
	}
	inv := float32(1 / sum)
	for i := range y {
		y[i] *= inv
	}
}

// oracleSiLUAt is the reference's siluAt: column i of a row of n.
func oracleSiLUAt(i, n int, x float32) float32 {
	if i < n-n%lanes {
		return x / (1 + ggmlf32.ExpF(0-x))
	}
	return x / (1 + float32(math.Exp(float64(-x))))
}

func oracleSoftmaxMasked(x []float32, n int, y []float32, scale float32) {
	maxv := float32(math.Inf(-1))
	for i := range x {
		y[i] = float32(math.Inf(-1))
		if i < n {
			y[i] = x[i] * scale
		}
		maxv = max(maxv, y[i])
	}
	var sum float64
	var chunk [lanes]float32
	for i := 0; i < len(y); i += lanes {
		for l := range chunk {
			y[i+l] = ggmlf32.ExpF(y[i+l] - maxv)
			chunk[l] = y[i+l]
		}
		sum += float64(ggmlf32.Reduce16(&chunk))
	}
	inv := float32(1 / sum)
	for i := range y {
		y[i] *= inv
	}
}

func oracleSgemmDot(a, b []float32) float32 {
	var acc [lanes]float32
	for i := 0; i < len(a); i += lanes {
		for l := 0; l < lanes; l++ {
			acc[l] = ggmlf32.FMA32(a[i+l], b[i+l], acc[l])
		}
	}
	return ggmlf32.Reduce16(&acc)
}

func oracleRope(x []float32, pos []int32, headDim, ropeDims int, base, scale float32, freqs []float32, neox bool) []float32 {
	y := append([]float32(nil), x...)
	width := len(x) / len(pos)
	thetaScale := float32(math.Pow(float64(base), float64(-2/float32(ropeDims))))
	if scale == 0 {
		scale = 1
	}
	half := ropeDims / 2
	for t, p := range pos {
		for h := 0; h < width/headDim; h++ {
			v := y[t*width+h*headDim : t*width+(h+1)*headDim]
			theta := float32(p)
			for i := 0; i < half; i++ {
				th := scale * theta
				if freqs != nil {
					th = scale * (theta / freqs[i]) // ggml: rope_yarn(theta/ff, freq_scale, ...)
				}
				s, c := ggmlf32.SinCosF(th)
				if neox {
					v[i], v[i+half] = ggmlf32.RopePair(v[i], v[i+half], c, s)
				} else if ggmlf32.RopeNormalFused(i, half) {
					v[2*i], v[2*i+1] = ggmlf32.RopePair(v[2*i], v[2*i+1], c, s)
				} else {
					v[2*i], v[2*i+1] = ggmlf32.RopePairUnfused(v[2*i], v[2*i+1], c, s)
				}
				theta *= thetaScale
			}
		}
	}
	return y
}

func oracleAttention(q, kc, vc []float32, pos []int32, H, Hkv, hd int, scale float32) []float32 {
	qw, kvw := H*hd, Hkv*hd
	y := make([]float32, len(q))
	nkv := (int(pos[len(pos)-1]) + 256) / 256 * 256
	nkv = min(nkv, len(kc)/kvw)
	scores := make([]float32, nkv)
	probs := make([]float32, nkv)
	vcol := make([]float32, nkv)
	for t, p := range pos {
		n := int(p) + 1
		for h := 0; h < H; h++ {
			kh := h / (H / Hkv)
			qv := q[t*qw+h*hd : t*qw+(h+1)*hd]
			for j := 0; j < n; j++ {
				scores[j] = ggmlf32.VecDotF32(kc[j*kvw+kh*hd:j*kvw+(kh+1)*hd], qv)
			}
			oracleSoftmaxMasked(scores[:nkv], n, probs, scale)
			out := y[t*qw+h*hd : t*qw+(h+1)*hd]
			for d := 0; d < hd; d++ {
				for j := range vcol {
					vcol[j] = 0
					if j < n {
						vcol[j] = vc[j*kvw+kh*hd+d]
					}
				}
				if len(pos) > 1 {
					out[d] = oracleSgemmDot(vcol, probs)
				} else {
					out[d] = ggmlf32.VecDotF32(vcol, probs)
				}
			}
		}
	}
	return y
}

func oracleMatMul(x []float32, wt quant.Type, wb []byte, N, K int) []float32 {
	M := len(x) / K
	vdt := wt.VecDotType()
	actRow, _ := vdt.RowSize(K)
	wRow, _ := wt.RowSize(K)
	act := make([]byte, actRow)
	quantize := quant.ActQuantFor(vdt)
	dot := quant.DotFor(wt)
	y := make([]float32, M*N)
	for m := 0; m < M; m++ {
		quantize(x[m*K:(m+1)*K], act)
		for n := 0; n < N; n++ {
			y[m*N+n] = dot(K, wb[n*wRow:(n+1)*wRow], act)
		}
	}
	return y
}
