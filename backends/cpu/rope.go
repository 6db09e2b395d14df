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
	RopeColsCached(x, rows, cols, pos, headDim, ropeDims, base, scale, freqs, neox, c0, c1, nil, 0)
}

// RopeTable caches the cosines and sines of the rope angles of a run of
// token rows, so the RopeCols calls that rotate other columns of the same
// rows (the chunks of a prefill split across workers, Q and K of one
// layer) compute each angle's cos/sin once. A table belongs to one
// goroutine; it is keyed by the positions' address, the row count, the
// rope parameters and a generation number the caller bumps whenever the
// positions may have changed. The zero value is ready to use.
type RopeTable struct {
	key    ropeKey
	cs, sn []float32
}

type ropeKey struct {
	gen            int64
	pos            *int32
	freqs          *float32
	rows, ropeDims int
	base, scale    float32
}

// RopeColsCached is RopeCols taking the angles' cosines and sines from tab
// (nil: none) when it holds them for these rows, positions, parameters and
// generation gen, and filling it otherwise. The result is the same bits.
func RopeColsCached(x []float32, rows, cols int, pos []int32, headDim, ropeDims int, base, scale float32, freqs []float32, neox bool, c0, c1 int, tab *RopeTable, gen int64) {
	if rows <= 0 {
		return
	}
	thetaScale := float32(math.Pow(float64(base), float64(-2/float32(ropeDims))))
	if scale == 0 {
		scale = 1
	}
	half := ropeDims / 2
	if freqs != nil {
		freqs = freqs[:half]
	}
	// cs/sn rows of half values: token t's pair i at t*half+i
	var cs, sn []float32
	key := ropeKey{gen: gen, pos: &pos[0], rows: rows, ropeDims: ropeDims, base: base, scale: scale}
	if freqs != nil {
		key.freqs = &freqs[0]
	}
	if tab != nil && tab.key == key {
		cs, sn = tab.cs, tab.sn
	} else {
		n := rows * half
		if tab != nil {
			if cap(tab.cs) < n {
				tab.cs, tab.sn = make([]float32, n), make([]float32, n)
			}
			cs, sn = tab.cs[:n], tab.sn[:n]
		} else if half <= ropeMaxHalf && rows == 1 {
			var c1a, s1a [ropeMaxHalf]float32
			cs, sn = c1a[:half], s1a[:half]
		} else {
			cs, sn = make([]float32, n), make([]float32, n)
		}
		for t := 0; t < rows; t++ {
			theta := float32(pos[t])
			c, s := cs[t*half:(t+1)*half], sn[t*half:(t+1)*half]
			if freqs != nil {
				for i := 0; i < half; i++ {
					s[i], c[i] = ggmlf32.SinCosF(scale * (theta / freqs[i]))
					theta *= thetaScale
				}
			} else {
				for i := 0; i < half; i++ {
					s[i], c[i] = ggmlf32.SinCosF(scale * theta)
					theta *= thetaScale
				}
			}
		}
		if tab != nil {
			tab.cs, tab.sn, tab.key = tab.cs[:cap(tab.cs)], tab.sn[:cap(tab.sn)], key
		}
	}
	for t := 0; t < rows; t++ {
		row := x[t*cols : (t+1)*cols]
		c, s := cs[t*half:(t+1)*half], sn[t*half:(t+1)*half]
		switch {
		case neox && half <= ropeMaxHalf:
			// every head's rotation as vectors (ropeNeox)
			for h := c0; h < c1; h += headDim {
				ropeNeox(row[h:h+2*half], c, s, half)
			}
		case neox:
			for h := c0; h < c1; h += headDim {
				for i := 0; i < half; i++ {
					row[h+i], row[h+i+half] = ggmlf32.RopePair(row[h+i], row[h+i+half], c[i], s[i])
				}
			}
		default:
			for h := c0; h < c1; h += headDim {
				ropeNormal(row[h:h+2*half], c, s, half)
			}
		}
	}
}

// ropeMaxHalf bounds the NEOX pairs per head that take the vector path
// (every real model's: head widths up to 512), and the pairs whose angles
// a one-row rotation keeps on the stack.
const ropeMaxHalf = 256

// ropeNeoxGo is ropeNeox (rope_amd64.go, rope_generic.go) for the pairs
// i0..half-1, in Go.
func ropeNeoxGo(x, c, s []float32, i0, half int) {
	for i := i0; i < half; i++ {
		x[i], x[i+half] = ggmlf32.RopePair(x[i], x[i+half], c[i], s[i])
	}
}

// ropeNormalGo is ropeNormal (rope_amd64.go, rope_generic.go) for the
// pairs i0..half-1, in Go: ggml's NORMAL loop rotates most pairs with FMA
// contractions and its scalar remainder without (ggmlf32.RopeNormalFused).
func ropeNormalGo(x, c, s []float32, i0, half int) {
	for i := i0; i < half; i++ {
		if ggmlf32.RopeNormalFused(i, half) {
			x[2*i], x[2*i+1] = ggmlf32.RopePair(x[2*i], x[2*i+1], c[i], s[i])
		} else {
			x[2*i], x[2*i+1] = ggmlf32.RopePairUnfused(x[2*i], x[2*i+1], c[i], s[i])
		}
	}
}
