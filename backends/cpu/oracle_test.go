package cpu

// Scalar oracles re-derived from the reference executor's documented
// formulas (minfer/reference: rmsNorm, broadcast, rope, attention, softmax,
// silu, matMul). They work on whole tensors in the reference's loop order,
// so a kernel computing any sub-range must reproduce their bits. The
// transcendental exp is shared with elem.go (expf), whose own match with the
// reference is checked in TestExpfMatchesReference.

import (
	"math"

	"minfer/quant"
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
	for i := range y {
		y[i] = expf(y[i] - maxv)
		sum += float64(y[i])
	}
	inv := float32(1 / sum)
	for i := range y {
		y[i] *= inv
	}
}

func oracleSiLU(x float32) float32 { return x / (1 + expf(-x)) }

func oracleRope(x []float32, pos []int32, headDim, ropeDims int, base, scale float32, neox bool) []float32 {
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
				c, s := float32(math.Cos(float64(th))), float32(math.Sin(float64(th)))
				i0, i1 := 2*i, 2*i+1
				if neox {
					i0, i1 = i, i+half
				}
				x0, x1 := v[i0], v[i1]
				v[i0] = x0*c - x1*s
				v[i1] = x0*s + x1*c
				theta *= thetaScale
			}
		}
	}
	return y
}

func oracleAttention(q, kc, vc []float32, pos []int32, H, Hkv, hd int, scale float32) []float32 {
	qw, kvw := H*hd, Hkv*hd
	y := make([]float32, len(q))
	scores := make([]float32, int(pos[len(pos)-1])+1)
	probs := make([]float32, len(scores))
	for t, p := range pos {
		n := int(p) + 1
		for h := 0; h < H; h++ {
			kh := h / (H / Hkv)
			qv := q[t*qw+h*hd : t*qw+(h+1)*hd]
			for j := 0; j < n; j++ {
				k := kc[j*kvw+kh*hd : j*kvw+(kh+1)*hd]
				var s float32
				for i := range qv {
					s += qv[i] * k[i]
				}
				scores[j] = s
			}
			oracleSoftmax(scores[:n], probs[:n], scale)
			out := y[t*qw+h*hd : t*qw+(h+1)*hd]
			for d := 0; d < hd; d++ {
				var s float32
				for j := 0; j < n; j++ {
					s += vc[j*kvw+kh*hd+d] * probs[j]
				}
				out[d] = s
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
