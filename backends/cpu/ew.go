package cpu

import "github.com/minfer/minfer/internal/ggmlf32"

// The element-wise kernels below work on columns c0..c1 of every row of
// row-major [rows][cols] matrices. For a split by token rows, pass the
// matrices sliced at the first row (y[r0*cols:], ...) and rows = r1-r0.
// The output may alias an input.

// AddCols computes y = a + b on columns c0..c1. b is broadcast along rows
// when bcols < cols (element (r, c) adds b[c % bcols]; bcols divides cols),
// otherwise it has a's shape (bcols == cols).
func AddCols(y, a, b []float32, rows, cols, bcols, c0, c1 int) {
	colsOp(ewAdd, addGo, y, a, b, rows, cols, bcols, c0, c1)
}

// MulCols computes y = a · b on columns c0..c1, b broadcast as in AddCols.
func MulCols(y, a, b []float32, rows, cols, bcols, c0, c1 int) {
	colsOp(ewMul, mulGo, y, a, b, rows, cols, bcols, c0, c1)
}

// ewAdd and ewMul are y[i] = a[i] op b[i] over len(y) elements (a and b at
// least as long; y may alias either): the Go loops below, or on amd64 the
// AVX2 / AVX-512 forms of ew_amd64.s. One IEEE operation per element, so
// every form gives the same bits.
var ewAdd, ewMul = addGo, mulGo

func addGo(y, a, b []float32) {
	a, b = a[:len(y)], b[:len(y)]
	for i := range y {
		y[i] = a[i] + b[i]
	}
}

func mulGo(y, a, b []float32) {
	a, b = a[:len(y)], b[:len(y)]
	for i := range y {
		y[i] = a[i] * b[i]
	}
}

// colsOp applies op (or, for runs of b shorter than 16 elements, the Go
// loop small) on columns c0..c1 of every row: b's runs are contiguous,
// cut where a broadcast b wraps.
func colsOp(op, small func(y, a, b []float32), y, a, b []float32, rows, cols, bcols, c0, c1 int) {
	if bcols < 16 {
		op = small
	}
	for r := 0; r < rows; r++ {
		o := r * cols
		ya, aa := y[o+c0:o+c1], a[o+c0:o+c1]
		if bcols == cols {
			op(ya, aa, b[o+c0:o+c1])
			continue
		}
		j := c0 % bcols
		for i := 0; i < len(ya); {
			n := min(len(ya)-i, bcols-j)
			op(ya[i:i+n], aa[i:i+n], b[j:j+n])
			i += n
			j = 0
		}
	}
}

// SwiGLUCols computes y = silu(gate) · up on columns c0..c1 (all three of
// shape [rows][cols]). As in ggml, the silu of a column inside the row's
// 16-wide chunks uses ggml_v_expf, of a column in the tail libm expf.
func SwiGLUCols(y, gate, up []float32, rows, cols, c0, c1 int) {
	ve := min(max(ggmlf32.VecEnd(cols), c0), c1)
	for r := 0; r < rows; r++ {
		o := r * cols
		ya, ga, ua := y[o+c0:o+ve], gate[o+c0:o+ve], up[o+c0:o+ve]
		if k := f32k; k != nil {
			k.swigluRow(ya, ga, ua)
		} else {
			for i := range ya {
				ya[i] = ggmlf32.SiLUVec(ga[i]) * ua[i]
			}
		}
		ya, ga, ua = y[o+ve:o+c1], gate[o+ve:o+c1], up[o+ve:o+c1]
		for i := range ya {
			ya[i] = ggmlf32.SiLUScalar(ga[i]) * ua[i]
		}
	}
}

// SiLUCols computes y = silu(x) on columns c0..c1 (chunk and tail columns
// as in SwiGLUCols).
func SiLUCols(y, x []float32, rows, cols, c0, c1 int) {
	ve := min(max(ggmlf32.VecEnd(cols), c0), c1)
	for r := 0; r < rows; r++ {
		o := r * cols
		ya, xa := y[o+c0:o+ve], x[o+c0:o+ve]
		if k := f32k; k != nil {
			k.siluRow(ya, xa)
		} else {
			for i := range ya {
				ya[i] = ggmlf32.SiLUVec(xa[i])
			}
		}
		ya, xa = y[o+ve:o+c1], x[o+ve:o+c1]
		for i := range ya {
			ya[i] = ggmlf32.SiLUScalar(xa[i])
		}
	}
}

// Softmax is the row-wise softmax(x·scale) of rows r0..r1 of x [rows][cols]
// into the same rows of y (y may alias x).
func Softmax(y, x []float32, cols int, scale float32, r0, r1 int) {
	for r := r0; r < r1; r++ {
		if k := f32k; k != nil {
			k.softmaxRow(y[r*cols:(r+1)*cols], x[r*cols:(r+1)*cols], scale)
			continue
		}
		ggmlf32.Softmax(y[r*cols:(r+1)*cols], x[r*cols:(r+1)*cols], scale)
	}
}

// softmaxRow is ggmlf32.Softmax with the SIMD kernels of tier k: the
// scaled row and its max, ggml_v_expf on the 16-wide chunks summed chunk by
// chunk into a float64, libm expf on the tail, then the multiply by 1/sum.
func (k *f32Tier) softmaxRow(y, x []float32, scale float32) {
	y = y[:len(x)]
	maxv := k.scaleMaxRow(y, x, scale)
	ve := ggmlf32.VecEnd(len(y))
	sum := k.expSumRow(y[:ve], ve, maxv)
	for i := ve; i < len(y); i++ {
		y[i] = ggmlf32.ExpFLibm(y[i] - maxv)
		sum += float64(y[i])
	}
	k.mulRow(y, float32(1/sum))
}
