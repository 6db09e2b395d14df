//go:build amd64 && !purego

package cpu

import (
	"fmt"

	"github.com/minfer/minfer/quant"
)

// The AVX2 kernels of the four-row layouts Q5_0x4 and Q4_0x4
// (quant/q5_0x4.go, quant/q4_0x4.go; internal/asmgen/rows_x4.go and
// gemm_legacy_avx2.go), which minferc's pack-weights pass writes into
// plans for the AVX2 tier: groups·4 rows against one Q8_0 activation row
// of nb blocks, bit for bit quant.DotQ5_0Q8_0 / DotQ4_0Q8_0 of each
// unpacked row.

//go:noescape
func rowsQ5_0x4AVX2(w *byte, a *byte, nb int, y *float32, groups int)

//go:noescape
func rowsQ4_0x4AVX2(w *byte, a *byte, nb int, y *float32, groups int)

// x4RowsAsm calls the row kernel of layout t (a direct call, so that a
// caller's stack scratch stays on the stack).
func x4RowsAsm(t quant.Type, w *byte, a *byte, nb int, y *float32, groups int) {
	if t == quant.Q5_0x4 {
		rowsQ5_0x4AVX2(w, a, nb, y, groups)
	} else {
		rowsQ4_0x4AVX2(w, a, nb, y, groups)
	}
}

// x4Rows is the RowsFunc of four-row layout t, bs bytes per row and block
// (rows of wrb = K/32·bs bytes, so group g starts at row 4g's offset): any
// row range, a group the range cuts computed whole into a scratch and only
// its rows in range stored — a row's bits do not depend on its group's
// other rows.
func x4Rows(t quant.Type, bs int) RowsFunc {
	return func(K int, w []byte, wrb int, a []byte, y []float32, n0, n1 int) {
		if n1 <= n0 {
			return
		}
		nb := K / 32
		if K%32 != 0 || n0 < 0 || wrb != nb*bs {
			panic(fmt.Sprintf("cpu: four-row rows: bad shape K=%d wrb=%d n0=%d", K, wrb, n0))
		}
		if nb == 0 {
			clear(y[n0:n1])
			return
		}
		g0, g1 := n0/4, (n1+3)/4
		_ = w[g1*4*wrb-1]
		_ = a[nb*34-1]
		_ = y[n1-1]
		var tmp [4]float32
		if n0%4 != 0 { // the group the range starts inside
			x4RowsAsm(t, &w[g0*4*wrb], &a[0], nb, &tmp[0], 1)
			copy(y[n0:min(n1, 4*g0+4)], tmp[n0-4*g0:])
			g0++
		}
		if g1 > g0 && n1%4 != 0 { // the group it ends inside
			g1--
			x4RowsAsm(t, &w[g1*4*wrb], &a[0], nb, &tmp[0], 1)
			copy(y[4*g1:n1], tmp[:])
		}
		if g1 > g0 {
			x4RowsAsm(t, &w[g0*4*wrb], &a[0], nb, &y[4*g0], g1-g0)
		}
	}
}

// The AVX2 legacy GEMM for the four-row layouts: its 4-row tiles are the
// groups.
//
//go:noescape
func gemmQ5_0x4AVX2x4x2(w *byte, wrb int, a *byte, arb int, as *float32, nb int, y *float32, ldy int, mt int, scr *byte)

//go:noescape
func gemmQ4_0x4AVX2x4x2(w *byte, wrb int, a *byte, arb int, as *float32, nb int, y *float32, ldy int, mt int, scr *byte)

// x4GemmAVX2 is the GemmCachedFunc of four-row layout t (bs bytes per row
// and block) on its AVX2 GEMM kernel kern (tiles of 4 weight rows × 2
// activation rows): legacyTiles, as legacyGemmAVX2 runs for the plain type
// (the same activation block, so a group's plain and packed mat-muls share
// it), on the whole groups of the range; the rows the range cuts off them,
// and the activation row after the last full tile, on rows (x4Rows).
func x4GemmAVX2(t quant.Type, kern gemmLegacyAVX2Asm, rows RowsFunc, bs int) GemmCachedFunc {
	const rw, ra, minRows = 4, 2, 2
	spec := legacyActSpecOf(t)
	return func(K int, w []byte, wrb int, act []byte, arb, M int, y []float32, ldy, n0, n1 int, c *ActCache) {
		if n1 <= n0 || M <= 0 {
			return
		}
		if M > 1 && ldy < n1 {
			panic("cpu: gemm output stride shorter than the rows")
		}
		rowsTo := func(m0, m1, c0, c1 int) {
			for m := m0; m < m1; m++ {
				rows(K, w, wrb, act[m*arb:], y[m*ldy:], c0, c1)
			}
		}
		nb := K / 32
		n0a := min((n0+3)&^3, n1)
		NT := n0a + (n1-n0a)&^3
		MT := M - M%ra
		if nb == 0 || NT == n0a || M < minRows {
			rowsTo(0, M, n0, n1)
			return
		}
		if nb*bs != wrb || nb*spec.ats > arb {
			panic("cpu: four-row gemm: bad row sizes")
		}
		_ = w[NT*wrb-1]
		_ = act[(M-1)*arb+nb*spec.ats-1]
		_ = y[(M-1)*ldy+n1-1]
		legacyTiles(kern, rw, ra, spec, w, wrb, act, arb, nb, MT, y, ldy, n0a, NT, c)
		rowsTo(0, MT, n0, n0a)
		rowsTo(0, MT, NT, n1)
		rowsTo(MT, M, n0, n1)
	}
}

// x4Kernels are the kernels of each four-row layout: its type, the plain
// type it packs, its GEMM (4×2 tiles), bytes per row and block.
var x4Kernels = []struct {
	t, plain quant.Type
	gemm     gemmLegacyAVX2Asm
	bs       int
}{
	{quant.Q5_0x4, quant.Q5_0, gemmQ5_0x4AVX2x4x2, 22},
	{quant.Q4_0x4, quant.Q4_0, gemmQ4_0x4AVX2x4x2, 18},
}

func init() {
	if !hasAVX2 {
		return
	}
	// On every CPU with AVX2, AVX-512 ones included: the layouts' only
	// kernels (a plan holds them when minferc packed it for this tier).
	for _, k := range x4Kernels {
		rows := x4Rows(k.t, k.bs)
		registerRows(k.t, "avx2", rows)
		registerGemmCached(k.t, "avx2", 2, x4GemmAVX2(k.t, k.gemm, rows, k.bs))
	}
}
