//go:build amd64 && !purego

package cpu

import (
	"fmt"
	"unsafe"

	"github.com/minfer/minfer/quant"
)

// The AVX2 kernels of the four-row layouts Q5_0x4 and Q4_0x4
// (quant/q5_0x4.go, quant/q4_0x4.go; internal/asmgen/rows_q5_0x4.go and
// gemm_legacy_avx2.go), which minferc's pack-weights pass writes into
// plans for the AVX2 tier: groups·4 rows against one Q8_0 activation row
// of nb blocks, bit for bit quant.DotQ5_0Q8_0 / DotQ4_0Q8_0 of each
// unpacked row.

type x4RowsAsm func(w *byte, a *byte, nb int, y *float32, groups int)

//go:noescape
func rowsQ5_0x4AVX2(w *byte, a *byte, nb int, y *float32, groups int)

//go:noescape
func rowsQ4_0x4AVX2(w *byte, a *byte, nb int, y *float32, groups int)

// x4Rows is the RowsFunc of a four-row layout of bs bytes per row and
// block (rows of wrb = K/32·bs bytes, so group g starts at row 4g's
// offset): any row range, a group the range cuts computed whole into a
// scratch and only its rows in range stored — a row's bits do not depend
// on its group's other rows.
func x4Rows(kern x4RowsAsm, bs int) RowsFunc {
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
		part := func(g int) {
			kern(&w[g*4*wrb], &a[0], nb, &tmp[0], 1)
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
			kern(&w[g0*4*wrb], &a[0], nb, &y[4*g0], g1-g0)
		}
	}
}

// The AVX2 legacy GEMM for the four-row layouts: its 4-row tiles are the
// groups.
//
//go:noescape
func gemmQ5_0x4AVX2x4x2(w *byte, wrb int, a *byte, arb int, as *float32, nb int, y *float32, ldy int, mt int, scr *byte)

//go:noescape
func gemmQ5_0x4AVX2x4x3(w *byte, wrb int, a *byte, arb int, as *float32, nb int, y *float32, ldy int, mt int, scr *byte)

//go:noescape
func gemmQ4_0x4AVX2x4x2(w *byte, wrb int, a *byte, arb int, as *float32, nb int, y *float32, ldy int, mt int, scr *byte)

//go:noescape
func gemmQ4_0x4AVX2x4x3(w *byte, wrb int, a *byte, arb int, as *float32, nb int, y *float32, ldy int, mt int, scr *byte)

// x4GemmAVX2 is the GemmCachedFunc of a four-row layout (bs bytes per row
// and block) on the AVX2 GEMM kernel kern (tiles of 4 weight rows × ra
// activation rows): as legacyGemmAVX2 for Q5_0 and Q4_0 (the same biased
// activation block, so a group's plain and packed mat-muls share it), with
// the tiles on whole groups and the rows a range cuts off them, and the
// activation rows after the last full tile, on rows (x4Rows).
func x4GemmAVX2(kern gemmLegacyAVX2Asm, ra int, rows RowsFunc, bs int) GemmCachedFunc {
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
				rows(K, w, wrb, act[m*arb:], y[m*ldy:], c0, c1)
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
		if nb*bs != wrb || nb*ats > arb {
			panic("cpu: four-row gemm: bad row sizes")
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

// x4Kernels are the kernels of each four-row layout: its row kernel, its
// GEMM tiles (4×2 installed, 4×3 tested), bytes per row and block, the
// plain type it packs.
var x4Kernels = []struct {
	t, plain  quant.Type
	rows      x4RowsAsm
	gemm, g43 gemmLegacyAVX2Asm
	bs        int
}{
	{quant.Q5_0x4, quant.Q5_0, rowsQ5_0x4AVX2, gemmQ5_0x4AVX2x4x2, gemmQ5_0x4AVX2x4x3, 22},
	{quant.Q4_0x4, quant.Q4_0, rowsQ4_0x4AVX2, gemmQ4_0x4AVX2x4x2, gemmQ4_0x4AVX2x4x3, 18},
}

func init() {
	if !hasAVX2 {
		return
	}
	// On every CPU with AVX2, AVX-512 ones included: the layouts' only
	// kernels (a plan holds them when minferc packed it for this tier).
	for _, k := range x4Kernels {
		rows := x4Rows(k.rows, k.bs)
		registerRows(k.t, "avx2", rows)
		registerGemmCached(k.t, "avx2", 2, x4GemmAVX2(k.gemm, 2, rows, k.bs))
	}
}
