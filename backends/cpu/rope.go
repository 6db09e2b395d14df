package cpu

import "math"

// RopeCols applies rotary position embeddings in place to the heads within
// columns c0..c1 (whole heads of headDim) of every token row of x
// [rows][cols], as ggml_rope_ext without YaRN: token t's angle for pair i is
// theta_i·scale where theta_0 = pos[t] and theta_{i+1} = theta_i·base^(-2/ropeDims)
// stepped in float32. Only the first ropeDims elements of a head rotate;
// neox selects the pairs (i, i+ropeDims/2) instead of (2i, 2i+1). A scale
// of 0 means 1.
func RopeCols(x []float32, rows, cols int, pos []int32, headDim, ropeDims int, base, scale float32, neox bool, c0, c1 int) {
	thetaScale := float32(math.Pow(float64(base), float64(-2/float32(ropeDims))))
	if scale == 0 {
		scale = 1
	}
	half := ropeDims / 2
	for t := 0; t < rows; t++ {
		row := x[t*cols : (t+1)*cols]
		theta := float32(pos[t])
		// The angle sequence is the same for every head of the token, so
		// each cos/sin is computed once and applied to all heads.
		for i := 0; i < half; i++ {
			th := scale * theta
			c, s := float32(math.Cos(float64(th))), float32(math.Sin(float64(th)))
			i0, i1 := 2*i, 2*i+1
			if neox {
				i0, i1 = i, i+half
			}
			for h := c0; h < c1; h += headDim {
				x0, x1 := row[h+i0], row[h+i1]
				row[h+i0] = x0*c - x1*s
				row[h+i1] = x0*s + x1*c
			}
			theta *= thetaScale
		}
	}
}
