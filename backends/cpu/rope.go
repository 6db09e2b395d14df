package cpu

import (
	"math"

	"github.com/minfer/minfer/internal/ggmlf32"
)

// RopeCols applies rotary position embeddings in place to the heads within
// columns c0..c1 (whole heads of headDim) of every token row of x
// [rows][cols], as ggml_rope_ext without YaRN: token t's angle for pair i is
// theta_i·scale where theta_0 = pos[t] and theta_{i+1} = theta_i·base^(-2/ropeDims)
// stepped in float32; cos and sin are glibc's cosf/sinf of the float32
// angle (ggmlf32.SinCosF), and each pair rotates with ggml's FMA
// contractions (ggmlf32.RopePair). Only the first ropeDims elements of a
// head rotate; neox selects the pairs (i, i+ropeDims/2) instead of
// (2i, 2i+1). A scale of 0 means 1. freqs, when not nil, holds one
// frequency factor per pair (ropeDims/2, GGUF rope_freqs.weight): pair i's
// angle is then scale·(theta_i/freqs[i]), divided before the scale as in
// ggml_rope_cache_init (rope_yarn(theta/ff, freq_scale, ...)); the same for
// NEOX and normal pairs.
func RopeCols(x []float32, rows, cols int, pos []int32, headDim, ropeDims int, base, scale float32, freqs []float32, neox bool, c0, c1 int) {
	thetaScale := float32(math.Pow(float64(base), float64(-2/float32(ropeDims))))
	if scale == 0 {
		scale = 1
	}
	half := ropeDims / 2
	if freqs != nil {
		freqs = freqs[:half]
	}
	if neox && half <= ropeMaxHalf {
		// the angles' cosines and sines once per token, then every head's
		// rotation as vectors (ropeNeox)
		var cs, sn [ropeMaxHalf]float32
		for t := 0; t < rows; t++ {
			row := x[t*cols : (t+1)*cols]
			theta := float32(pos[t])
			if freqs != nil {
				for i := 0; i < half; i++ {
					sn[i], cs[i] = ggmlf32.SinCosF(scale * (theta / freqs[i]))
					theta *= thetaScale
				}
			} else {
				for i := 0; i < half; i++ {
					sn[i], cs[i] = ggmlf32.SinCosF(scale * theta)
					theta *= thetaScale
				}
			}
			for h := c0; h < c1; h += headDim {
				ropeNeox(row[h:h+2*half], cs[:half], sn[:half], half)
			}
		}
		return
	}
	for t := 0; t < rows; t++ {
		row := x[t*cols : (t+1)*cols]
		theta := float32(pos[t])
		// The angle sequence is the same for every head of the token, so
		// each cos/sin is computed once and applied to all heads.
		for i := 0; i < half; i++ {
			th := scale * theta
			if freqs != nil {
				th = scale * (theta / freqs[i])
			}
			s, c := ggmlf32.SinCosF(th)
			switch {
			case neox:
				for h := c0; h < c1; h += headDim {
					row[h+i], row[h+i+half] = ggmlf32.RopePair(row[h+i], row[h+i+half], c, s)
				}
			case ggmlf32.RopeNormalFused(i, half):
				for h := c0; h < c1; h += headDim {
					row[h+2*i], row[h+2*i+1] = ggmlf32.RopePair(row[h+2*i], row[h+2*i+1], c, s)
				}
			default:
				for h := c0; h < c1; h += headDim {
					row[h+2*i], row[h+2*i+1] = ggmlf32.RopePairUnfused(row[h+2*i], row[h+2*i+1], c, s)
				}
			}
			theta *= thetaScale
		}
	}
}

// ropeMaxHalf bounds the NEOX pairs per head that take the vector path
// (every real model's: head widths up to 512).
const ropeMaxHalf = 256

// ropeNeoxGo is ropeNeox (rope_amd64.go, rope_generic.go) for the pairs
// i0..half-1, in Go.
func ropeNeoxGo(x, c, s []float32, i0, half int) {
	for i := i0; i < half; i++ {
		x[i], x[i+half] = ggmlf32.RopePair(x[i], x[i+half], c[i], s[i])
	}
}
