//go:build !purego

package cpu

// simdF32 selects the AVX-512 float32 kernels of f32simd_amd64.s (the
// attention scores, v sums and softmax, silu and swiglu). They give the
// same bits as the internal/ggmlf32 scalar functions for every input that
// is not NaN (NaN inputs give NaN at the same places; their payloads, and
// which NaN wins a max, are not part of the contract).
var simdF32 = hasAVX512

// The assembly kernels; the Go wrappers below check bounds.

//go:noescape
func dotsF32(sc, k *float32, kstride, n int, q *float32, hd int)

//go:noescape
func vsumLanes(acc, v *float32, vstride int, p *float32, n, L, hd int)

//go:noescape
func reduceLanes(out, acc *float32, hd, L int)

//go:noescape
func scaleMaxF32(dst, src *float32, n int, scale float32) float32

//go:noescape
func mulF32(x *float32, n int, s float32)

//go:noescape
func expSumF32(x *float32, n, nvalid int, maxv float32) float64

//go:noescape
func siluF32(y, x *float32, n int)

//go:noescape
func swigluF32(y, gate, u *float32, n int)

//go:noescape
func expF32(y, x *float32, n int)

// simdScores sets sc[j] = ggmlf32.VecDotF32(k[j*kstride:][:hd], q[:hd])
// for j < n.
func simdScores(sc, k []float32, kstride, n int, q []float32, hd int) {
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
	dotsF32(&sc[0], &k[0], kstride, n, &q[0], hd)
}

// simdVecDot is ggmlf32.VecDotF32.
func simdVecDot(x, y []float32) float32 {
	if len(x) == 0 {
		return 0
	}
	var s [1]float32
	simdScores(s[:], x, 0, 1, y, len(x))
	return s[0]
}

// simdVSum sets out[d] (d < hd, hd a multiple of 16) to the L-lane FMA
// accumulation of v[j*vstride+d]·p[j] over j < n — lane l taking the j ≡ l
// (mod L) in increasing j — reduced as ggmlf32.Reduce16 (L == 16, tinyBLAS)
// or ggmlf32.VecDotCombine (L == 64, ggml_vec_dot_f32's vector part). acc
// is scratch of L·hd floats.
func simdVSum(out, acc, v []float32, vstride int, p []float32, n, L, hd int) {
	if hd%lanes != 0 || (L != 16 && L != 64) {
		panic("cpu: simdVSum shape")
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
		reduceLanes(&out[0], &acc[0], hd, L)
		return
	}
	vsumLanes(&acc[0], &v[0], vstride, &p[0], n, L, hd)
	reduceLanes(&out[0], &acc[0], hd, L)
}

// simdScaleMax sets dst[i] = src[i]·scale and returns the max of dst
// (-Inf for an empty row).
func simdScaleMax(dst, src []float32, scale float32) float32 {
	if len(src) == 0 {
		return scaleMaxF32(nil, nil, 0, scale)
	}
	_ = dst[:len(src)]
	return scaleMaxF32(&dst[0], &src[0], len(src), scale)
}

// simdMul sets x[i] *= s.
func simdMul(x []float32, s float32) {
	if len(x) > 0 {
		mulF32(&x[0], len(x), s)
	}
}

// simdExpSum sets x[i] = ggmlf32.ExpF(x[i]-maxv) for i < nvalid and 0
// from there on (len(x) a multiple of 16) and returns the float64 sum of
// the 16-wide chunks' Reduce16.
func simdExpSum(x []float32, nvalid int, maxv float32) float64 {
	if len(x)%lanes != 0 {
		panic("cpu: simdExpSum length")
	}
	if len(x) == 0 {
		return 0
	}
	return expSumF32(&x[0], len(x), nvalid, maxv)
}

// simdSiLU sets y[i] = ggmlf32.SiLUVec(x[i]).
func simdSiLU(y, x []float32) {
	if len(x) > 0 {
		_ = y[:len(x)]
		siluF32(&y[0], &x[0], len(x))
	}
}

// simdSwiGLU sets y[i] = ggmlf32.SiLUVec(g[i])·u[i].
func simdSwiGLU(y, g, u []float32) {
	if len(g) > 0 {
		_ = y[:len(g)]
		_ = u[:len(g)]
		swigluF32(&y[0], &g[0], &u[0], len(g))
	}
}

// simdExp sets y[i] = ggmlf32.ExpF(x[i]).
func simdExp(y, x []float32) {
	if len(x) > 0 {
		_ = y[:len(x)]
		expF32(&y[0], &x[0], len(x))
	}
}
