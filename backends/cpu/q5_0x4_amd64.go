//go:build amd64 && !purego

package cpu

import (
	"fmt"
	"unsafe"

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

// q5x4RowsFunc is the RowsFunc of Q5_0x4 weights (rows of wrb = K/32·22
// bytes, so group g starts at row 4g's offset): any row range, a group
// the range cuts computed whole into a scratch and only its rows in range
// stored — a row's bits do not depend on its group's other rows.
func q5x4RowsFunc(K int, w []byte, wrb int, a []byte, y []float32, n0, n1 int) {
	if n1 <= n0 {
		return
	}
	nb := K / 32
	if K%32 != 0 || n0 < 0 || wrb != nb*22 {
		panic(fmt.Sprintf("cpu: Q5_0x4 rows: bad shape K=%d wrb=%d n0=%d", K, wrb, n0))
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
	part := func(g int) {
		rowsQ5_0x4AVX2(&w[g*4*wrb], &a[0], nb, &tmp[0], 1)
		for r := max(n0, 4*g); r < min(n1, 4*g+4); r++ {
			y[r] = tmp[r-4*g]
		}
	}
	if n0%4 != 0 {
		part(g0)
		g0++
	}
	if g1 > g0 && n1%4 != 0 {
		g1--
		defer part(g1)
	}
	if g1 > g0 {
		rowsQ5_0x4AVX2(&w[g0*4*wrb], &a[0], nb, &y[4*g0], g1-g0)
	}
}

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

// The AVX2 legacy GEMM (internal/asmgen/gemm_legacy_avx2.go) for Q5_0x4
// weights: its 4-row tiles are the layout's groups.
//
//go:noescape
func gemmQ5_0x4AVX2x4x2(w *byte, wrb int, a *byte, arb int, as *float32, nb int, y *float32, ldy int, mt int, scr *byte)

//go:noescape
func gemmQ5_0x4AVX2x4x3(w *byte, wrb int, a *byte, arb int, as *float32, nb int, y *float32, ldy int, mt int, scr *byte)

// q5x4GemmAVX2 is the GemmCachedFunc of Q5_0x4 weights on the AVX2 GEMM
// kernel kern (tiles of 4 weight rows × ra activation rows): as
// legacyGemmAVX2 for Q5_0 (the same activation block, so a group's Q5_0
// and Q5_0x4 mat-muls share it), with the tiles on whole groups and the
// rows a range cuts off them, and the activation rows after the last full
// tile, on q5x4RowsFunc.
func q5x4GemmAVX2(kern gemmLegacyAVX2Asm, ra int) GemmCachedFunc {
	const rw, ats, qo, nsc, bias, minRows = 4, 34, 2, 1, 0x80, 2
	kind := legacyActKind + 1
	return func(K int, w []byte, wrb int, act []byte, arb, M int, y []float32, ldy, n0, n1 int, c *ActCache) {
		if n1 <= n0 || M <= 0 {
			return
		}
		if M > 1 && ldy < n1 {
			panic("cpu: gemm output stride shorter than the rows")
		}
		rowsTo := func(m0, m1, c0, c1 int) {
			for m := m0; m < m1; m++ {
				q5x4RowsFunc(K, w, wrb, act[m*arb:], y[m*ldy:], c0, c1)
			}
		}
		nb := K / 32
		n0a := min((n0+3)&^3, n1)
		NT := n0a + (n1-n0a)&^3
		MT := M - M%ra
		if nb == 0 || NT == n0a || M < minRows || MT == 0 {
			rowsTo(0, M, n0, n1)
			return
		}
		if nb*22 != wrb || nb*ats > arb {
			panic("cpu: Q5_0x4 gemm: bad row sizes")
		}
		_ = w[NT*wrb-1]
		_ = act[(M-1)*arb+nb*ats-1]
		_ = y[(M-1)*ldy+n1-1]
		tb := nsc * rw * ra
		buf := gemmAVX2Bufs.Get().(*gemmAVX2Buf)
		n := MT*nb*32 + MT/ra*nb*tb*4
		var blk []byte
		key := actKey{act: &act[0], arb: arb, nb: nb, M: MT, C: ra, R: rw, kind: kind}
		if c != nil && c.sharer != nil {
			blk = c.sharer.Share(key, n, MT/ra, func(dst []byte, t0, t1 int) {
				legacyActBlock(dst, act, arb, nb, MT, ra, rw, ats, qo, nsc, bias, t0, t1)
			})
		}
		switch {
		case blk != nil:
		case c != nil:
			blk = c.derived(key, n, func(dst []byte) {
				legacyActBlock(dst, act, arb, nb, MT, ra, rw, ats, qo, nsc, bias, 0, MT/ra)
			})
		default:
			blk = aligned32(&buf.act, n)
			legacyActBlock(blk, act, arb, nb, MT, ra, rw, ats, qo, nsc, bias, 0, MT/ra)
		}
		qa := blk[:MT*nb*32]
		sc := unsafe.Slice((*float32)(unsafe.Pointer(&blk[MT*nb*32])), MT/ra*nb*tb)
		scr := aligned32(&buf.scr, 64+nb*(64*rw+(nsc+1)*4*rw*ra))
		rb := max(ra, gemmAVX2RowBlock/ra*ra)
		qrb := nb * 32
		for m0 := 0; m0 < MT; m0 += rb {
			mt := (min(m0+rb, MT) - m0) / ra
			for g := n0a; g < NT; g += rw {
				kern(&w[g*wrb], wrb, &qa[m0*qrb], qrb, &sc[m0/ra*nb*tb], nb, &y[m0*ldy+g], ldy, mt, &scr[0])
			}
		}
		gemmAVX2Bufs.Put(buf)
		rowsTo(0, MT, n0, n0a)
		rowsTo(0, MT, NT, n1)
		rowsTo(MT, M, n0, n1)
	}
}

func init() {
	if !hasAVX2 {
		return
	}
	// On every CPU with AVX2, AVX-512 ones included: the layout's only
	// kernels (a plan holds it when minferc packed it for this tier).
	registerRows(quant.Q5_0x4, "avx2", q5x4RowsFunc)
	registerGemmCached(quant.Q5_0x4, "avx2", 2, q5x4GemmAVX2(gemmQ5_0x4AVX2x4x2, 2))
}
