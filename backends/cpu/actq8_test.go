package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/minfer/minfer/quant"
)

// TestActQuantEdges checks the registered Q8_0 / Q8_1 activation
// quantizers against quant's on blocks the random tests rarely make: all
// zeros (and -0), a single nonzero element, exact rounding ties (x·127/amax
// = k + 0.5), amax near the normal minimum and near overflow, f16 overflow of d,
// mixed signs with equal magnitudes, and the blocks where x·127/amax is
// ±Inf or NaN: amax below 127/MaxFloat32 (subnormal or tiny), infinite
// inputs and NaNs, each followed by ordinary blocks in the same row.
func TestActQuantEdges(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 17))
	var blocks [][]float32
	add := func(f func(i int) float32) {
		b := make([]float32, 32)
		for i := range b {
			b[i] = f(i)
		}
		blocks = append(blocks, b)
	}
	add(func(int) float32 { return 0 })
	add(func(i int) float32 { return float32(math.Copysign(0, -1)) })
	add(func(i int) float32 {
		if i == 7 {
			return -3
		}
		return 0
	})
	add(func(i int) float32 { // 127 sets id = 1: every k+0.5 is a tie
		if i == 0 {
			return 127
		}
		return float32(i%20) - 10.5
	})
	add(func(i int) float32 { return float32(1-2*(i%2)) * float32(i) })
	// amax < 127/MaxFloat32 (≈3.7e-37: subnormals, and small normals),
	// where 127/amax overflows to +Inf and x·id is ±Inf (NaN for zeros):
	// quant saturates to 127/-128 and gives 0 for the zeros, where
	// VCVTPS2DQ alone gives 0x80000000 (the AVX2 kernel falls back to Go).
	add(func(i int) float32 {
		switch i % 5 {
		case 0:
			return 0
		case 1:
			return float32(math.Copysign(0, -1))
		}
		return float32(r.NormFloat64()) * 1e-40
	})
	add(func(i int) float32 { return math.Float32frombits(uint32(i)) }) // 0 and the 31 least subnormals
	add(func(i int) float32 { return float32(r.NormFloat64()) * 1e-37 })
	// amax at the edge: the least amax whose 127/amax is finite, and the
	// float below it
	edge := float32(127 / math.MaxFloat32)
	for 127/edge > math.MaxFloat32 {
		edge = math.Nextafter32(edge, 1)
	}
	for _, a := range []float32{edge, math.Nextafter32(edge, 0)} {
		add(func(i int) float32 {
			if i == 3 {
				return -a
			}
			return a * float32(i%7) / 7
		})
	}
	// infinities (amax +Inf: id 0, Inf·0 NaN) and NaNs
	inf := float32(math.Inf(1))
	add(func(i int) float32 {
		if i == 9 {
			return inf
		}
		return float32(i) - 16
	})
	add(func(i int) float32 {
		if i == 30 {
			return -inf
		}
		return float32(r.NormFloat64())
	})
	add(func(i int) float32 { return float32(1-2*(i%2)) * inf })
	add(func(i int) float32 {
		if i == 5 {
			return float32(math.NaN())
		}
		return float32(r.NormFloat64())
	})
	add(func(i int) float32 {
		if i == 0 {
			return float32(math.NaN())
		}
		return float32(i)
	})
	add(func(i int) float32 { return float32(r.NormFloat64()) }) // a plain block after them
	add(func(i int) float32 { return float32(r.NormFloat64()) * 1e-36 })
	add(func(i int) float32 { return float32(r.NormFloat64()) * 1e37 })
	add(func(i int) float32 { return float32(r.NormFloat64()) * 1e7 })
	add(func(i int) float32 { return float32(r.NormFloat64()) * 1e-7 })
	var x []float32
	for _, b := range blocks {
		x = append(x, b...)
	}
	for _, vdt := range []quant.Type{quant.Q8_0, quant.Q8_1, quant.F16} {
		t.Run(vdt.String(), func(t *testing.T) {
			f := actKernels[vdt]
			if f == nil {
				t.Skipf("%s: no SIMD activation quantizer on this CPU / build", vdt)
			}
			rs, _ := vdt.RowSize(len(x))
			want, got := make([]byte, rs), make([]byte, rs)
			quant.ActQuantFor(vdt)(x, want)
			f(x, got)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("byte %d (block %d) = %#02x, want %#02x", i, i/vdt.TypeSize(), got[i], want[i])
				}
			}
			t.Logf("%s: %s", vdt, Features())
		})
	}
}
