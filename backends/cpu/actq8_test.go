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
// and mixed signs with equal magnitudes.
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
	// Not here: blocks with amax < 127/MaxFloat32 (≈3.7e-37, e.g.
	// subnormals), where 127/amax overflows to +Inf and x·id to ±Inf; the arm64 quantizers match quant there (FCVTNS
	// saturates like satI8) but the amd64 AVX2 one writes 0x80 for some
	// bytes quant gives 0x7f (VCVTPS2DQ's integer indefinite) — a known
	// difference of the amd64 kernel, outside this test.
	add(func(i int) float32 { return float32(r.NormFloat64()) * 1e-36 })
	add(func(i int) float32 { return float32(r.NormFloat64()) * 1e37 })
	add(func(i int) float32 { return float32(r.NormFloat64()) * 1e7 })
	add(func(i int) float32 { return float32(r.NormFloat64()) * 1e-7 })
	var x []float32
	for _, b := range blocks {
		x = append(x, b...)
	}
	for _, vdt := range []quant.Type{quant.Q8_0, quant.Q8_1} {
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
