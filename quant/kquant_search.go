package quant

import "math"

// This file re-derives the scale searches of ggml's reference K-quant
// quantizers (make_qx_quants, make_q3_quants, make_qkx2_quants). Every float
// operation is float32 and evaluated in C's order; explicit float32(...)
// conversions around products forbid the Go compiler from fusing them into
// FMAs (which ggml's reference build does not use), so results stay bit-exact.

// groupMaxEps is ggml's GROUP_MAX_EPS: groups with a smaller max are zero.
const groupMaxEps = 1e-15

func sqrt32(f float32) float32 { return float32(math.Sqrt(float64(f))) }

// makeQXQuants is make_qx_quants with rmse_type = 1 and no importance
// weights (w = x²). L receives q+nmax; the returned scale may be negative.
func makeQXQuants(nmax int32, x []float32, L []int8) float32 {
	var mx, amax float32
	for _, v := range x {
		if a := abs32(v); a > amax {
			amax, mx = a, v
		}
	}
	if amax < groupMaxEps {
		for i := range L[:len(x)] {
			L[i] = 0
		}
		return 0
	}
	fnmax := float32(nmax)
	iscale := float32(-nmax) / mx
	var sumlx, suml2 float32
	for i, v := range x {
		l := min(nmax-1, max(-nmax, nearestInt(float32(iscale*v))))
		L[i] = int8(l + nmax)
		w := float32(v * v)
		fl := float32(l)
		sumlx += float32(float32(w*v) * fl)
		suml2 += float32(float32(w*fl) * fl)
	}
	var scale float32
	if suml2 != 0 {
		scale = sumlx / suml2
	}
	best := float32(scale * sumlx)
	for is := int32(-9); is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -(fnmax + float32(float32(0.1)*float32(is))) / mx
		sumlx, suml2 = 0, 0
		for _, v := range x {
			l := min(nmax-1, max(-nmax, nearestInt(float32(iscale*v))))
			w := float32(v * v)
			fl := float32(l)
			sumlx += float32(float32(w*v) * fl)
			suml2 += float32(float32(w*fl) * fl)
		}
		if suml2 > 0 && float32(sumlx*sumlx) > float32(best*suml2) {
			for i, v := range x {
				l := min(nmax-1, max(-nmax, nearestInt(float32(iscale*v))))
				L[i] = int8(l + nmax)
			}
			scale = sumlx / suml2
			best = float32(scale * sumlx)
		}
	}
	return scale
}

// makeQ3Quants is make_q3_quants with do_rmse = true: an iterative
// per-element refinement weighted by x². L receives q+nmax.
func makeQ3Quants(nmax int32, x []float32, L []int8) float32 {
	var mx, amax float32
	for _, v := range x {
		if a := abs32(v); a > amax {
			amax, mx = a, v
		}
	}
	if amax < groupMaxEps {
		for i := range L[:len(x)] {
			L[i] = 0
		}
		return 0
	}
	iscale := float32(-nmax) / mx
	var sumlx, suml2 float32
	for i, v := range x {
		l := min(nmax-1, max(-nmax, nearestInt(float32(iscale*v))))
		L[i] = int8(l)
		w := float32(v * v)
		fl := float32(l)
		sumlx += float32(float32(w*v) * fl)
		suml2 += float32(float32(w*fl) * fl)
	}
	for itry := 0; itry < 5; itry++ {
		changed := 0
		for i, v := range x {
			w := float32(v * v)
			li := float32(L[i])
			slx := sumlx - float32(float32(w*v)*li)
			if slx > 0 {
				sl2 := suml2 - float32(float32(w*li)*li)
				nl := min(nmax-1, max(-nmax, nearestInt(float32(v*sl2)/slx)))
				if nl != int32(L[i]) {
					fn := float32(nl)
					slx += float32(float32(w*v) * fn)
					sl2 += float32(float32(w*fn) * fn)
					if sl2 > 0 && float32(float32(slx*slx)*suml2) > float32(float32(sumlx*sumlx)*sl2) {
						L[i] = int8(nl)
						sumlx, suml2 = slx, sl2
						changed++
					}
				}
			}
		}
		if changed == 0 {
			break
		}
	}
	for i := range x {
		L[i] += int8(nmax)
	}
	if suml2 > 0 {
		return sumlx / suml2
	}
	return 0
}

// makeQKX2Quants is make_qkx2_quants: an asymmetric (scale, min) search
// over nstep+1 candidate inverse scales minimizing the weighted error (absolute
// when useMAD, else squared). It returns the scale and -min (≥ 0); L receives
// levels 0..nmax. laux is scratch of len(x).
func makeQKX2Quants(nmax int32, x, weights []float32, L, laux []uint8, rmin, rdelta float32, nstep int, useMAD bool) (scale, negMin float32) {
	n := len(x)
	mn, mx := x[0], x[0]
	sumW := weights[0]
	sumX := float32(sumW * x[0])
	for i := 1; i < n; i++ {
		if x[i] < mn {
			mn = x[i]
		}
		if x[i] > mx {
			mx = x[i]
		}
		w := weights[i]
		sumW += w
		sumX += float32(w * x[i])
	}
	if mn > 0 {
		mn = 0
	}
	if mx == mn {
		for i := range L[:n] {
			L[i] = 0
		}
		return 0, -mn
	}
	fnmax := float32(nmax)
	iscale := fnmax / (mx - mn)
	scale = 1 / iscale
	var bestErr float32
	for i, v := range x {
		l := nearestInt(float32(iscale * (v - mn)))
		L[i] = uint8(max(0, min(nmax, l)))
		diff := float32(float32(scale*float32(L[i]))+mn) - v
		if useMAD {
			diff = abs32(diff)
		} else {
			diff = float32(diff * diff)
		}
		bestErr += float32(weights[i] * diff)
	}
	if nstep < 1 {
		return scale, -mn
	}
	for is := 0; is <= nstep; is++ {
		iscale = (float32(rmin+float32(rdelta*float32(is))) + fnmax) / (mx - mn)
		var sumL, sumL2, sumXL float32
		for i, v := range x {
			l := max(0, min(nmax, nearestInt(float32(iscale*(v-mn)))))
			laux[i] = uint8(l)
			w := weights[i]
			fl := float32(l)
			wl := float32(w * fl)
			sumL += wl
			sumL2 += float32(wl * fl)
			sumXL += float32(wl * v)
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if D > 0 {
			thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
			thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
			if thisMin > 0 {
				thisMin = 0
				thisScale = sumXL / sumL2
			}
			var curErr float32
			for i, v := range x {
				diff := float32(float32(thisScale*float32(laux[i]))+thisMin) - v
				if useMAD {
					diff = abs32(diff)
				} else {
					diff = float32(diff * diff)
				}
				curErr += float32(weights[i] * diff)
			}
			if curErr < bestErr {
				copy(L[:n], laux[:n])
				bestErr = curErr
				scale = thisScale
				mn = thisMin
			}
		}
	}
	return scale, -mn
}
