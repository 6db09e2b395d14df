//go:build amd64 && !purego

package cpu

import (
	"fmt"

	"github.com/minfer/minfer/quant"
)

// rowsQ5_0x4AVX2 is the AVX2 decode kernel of Q5_0 weights in the
// four-row Q5_0x4 layout (quant.PackQ5_0x4; internal/asmgen/rows_q5_0x4.go):
// groups·4 rows against one Q8_0 activation row of nb blocks, bit for bit
// quant.DotQ5_0Q8_0 of each unpacked row.
//
// No plan holds this layout yet: it is the kernel a pack-weights pass
// would install for Q5_0 on the AVX2 tier (docs/PLAN-FORMAT.md, "Weight
// layout", has the measurements and what the pass needs).
//
//go:noescape
func rowsQ5_0x4AVX2(w *byte, a *byte, nb int, y *float32, groups int)

// RowsQ5_0x4 computes y[i] = the dot of row i (of len(y), a multiple of
// 4) of the Q5_0x4 weights w with the Q8_0 activation row a of K
// elements, on the AVX2 kernel. It checks every bound the kernel relies
// on and needs a CPU with AVX2+FMA+F16C.
func RowsQ5_0x4(K int, w, a []byte, y []float32) error {
	switch {
	case !hasAVX2:
		return fmt.Errorf("cpu: RowsQ5_0x4 needs AVX2+FMA+F16C")
	case K <= 0 || K%32 != 0:
		return fmt.Errorf("cpu: RowsQ5_0x4: K=%d is not a positive multiple of 32", K)
	case len(y)%4 != 0:
		return fmt.Errorf("cpu: RowsQ5_0x4: %d rows are not a multiple of 4", len(y))
	}
	nb := K / 32
	if len(w) < len(y)/4*nb*quant.Q5_0x4Block || len(a) < nb*34 {
		return fmt.Errorf("cpu: RowsQ5_0x4: %d rows of K=%d need %d weight and %d activation bytes, have %d and %d",
			len(y), K, len(y)/4*nb*quant.Q5_0x4Block, nb*34, len(w), len(a))
	}
	if len(y) == 0 {
		return nil
	}
	rowsQ5_0x4AVX2(&w[0], &a[0], nb, &y[0], len(y)/4)
	return nil
}
