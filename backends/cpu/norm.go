package cpu

import "math"

// rmsGroup normalizes one group: the sum of squares (each square rounded to
// float32) accumulated in float64, the mean rounded to float32, then
// y = x·(1/sqrtf(mean+eps)), followed by ·w[wi % len(w)] when w is not nil
// ((x·scale)·w, two roundings, as rms_norm followed by mul). wi is the
// column of x[0]. y may alias x.
func rmsGroup(x, y []float32, eps float32, w []float32, wi int) {
	var sum float64
	for _, v := range x {
		sum += float64(v * v)
	}
	rmsApply(x, y, sum, eps, w, wi)
}

// rmsRows4 normalizes four whole rows a, b, c, d (each its own group) as
// rmsGroup does each: the four sums of squares, each in its row's order,
// run interleaved in one loop — a float64 sum is a chain of dependent
// adds, so one row alone waits on the add's latency, and four rows keep
// four chains in flight with the same bits. ya … yd may alias a … d.
func rmsRows4(a, b, c, d, ya, yb, yc, yd []float32, eps float32, w []float32) {
	n := len(a)
	b, c, d = b[:n], c[:n], d[:n]
	var s0, s1, s2, s3 float64
	for i := 0; i < n; i++ {
		va, vb, vc, vd := a[i], b[i], c[i], d[i]
		s0 += float64(va * va)
		s1 += float64(vb * vb)
		s2 += float64(vc * vc)
		s3 += float64(vd * vd)
	}
	rmsApply(a, ya, s0, eps, w, 0)
	rmsApply(b, yb, s1, eps, w, 0)
	rmsApply(c, yc, s2, eps, w, 0)
	rmsApply(d, yd, s3, eps, w, 0)
}

// rmsApply finishes rmsGroup from the sum of squares.
func rmsApply(x, y []float32, sum float64, eps float32, w []float32, wi int) {
	y = y[:len(x)]
	mean := float32(sum / float64(len(x)))
	scale := 1 / float32(math.Sqrt(float64(mean+eps)))
	if w == nil {
		for i, v := range x {
			y[i] = v * scale
		}
		return
	}
	nw := len(w)
	if wi%nw == 0 && nw >= len(x) {
		w = w[:len(x)]
		for i, v := range x {
			y[i] = v * scale * w[i]
		}
		return
	}
	j := wi % nw
	for i, v := range x {
		y[i] = v * scale * w[j]
		if j++; j == nw {
			j = 0
		}
	}
}

// RMSNorm is ggml's rms_norm (optionally fused with the mul by a norm
// weight) on rows r0..r1 of x [rows][cols], written to the same rows of y
// (y may alias x). Each run of group consecutive elements of a row is
// normalized on its own (group == cols: the whole row; group must divide
// cols). w is nil or a weight broadcast along the row (len(w) divides
// cols, element c of a row is multiplied by w[c % len(w)]).
func RMSNorm(x, y []float32, cols, group int, eps float32, w []float32, r0, r1 int) {
	if group == cols {
		for ; r0+4 <= r1; r0 += 4 {
			o := r0 * cols
			rmsRows4(x[o:o+cols], x[o+cols:o+2*cols], x[o+2*cols:o+3*cols], x[o+3*cols:o+4*cols],
				y[o:o+cols], y[o+cols:o+2*cols], y[o+2*cols:o+3*cols], y[o+3*cols:o+4*cols], eps, w)
		}
	}
	for r := r0; r < r1; r++ {
		for c := 0; c < cols; c += group {
			o := r*cols + c
			rmsGroup(x[o:o+group], y[o:o+group], eps, w, c)
		}
	}
}

// RMSNormCols is RMSNorm split by columns: the groups inside columns c0..c1
// of every one of rows rows (c0 and c1 on group boundaries, e.g. whole heads
// for a per-head q/k norm). It gives the same bits as RMSNorm on those
// elements.
func RMSNormCols(x, y []float32, rows, cols, group int, eps float32, w []float32, c0, c1 int) {
	for r := 0; r < rows; r++ {
		for c := c0; c < c1; c += group {
			o := r*cols + c
			rmsGroup(x[o:o+group], y[o:o+group], eps, w, c)
		}
	}
}
