package quant

import (
	"fmt"

	"github.com/minfer/minfer/internal/ggmlf32"
)

// Q5_0r8 is Q5_0 in an eight-row layout for the AVX2 tier's row-parallel
// kernels (backends/cpu, internal/asmgen/r8q5.go): eight rows in the eight
// 32-bit lanes of a YMM register, with the float order of the sixteen-row
// layouts (r16.go), so that per (weight row, activation row, block)
//
//	acc = fma(float32(d_w·d_a), float32(Σ_i x_i·y_i), acc)   blocks in order, acc from 0
//
// exactly as DotR16 computes it: a Q5_0r8 plan and a Q5_0r16 plan give
// every output the same bits. ggml's vec_dot order, which the GGUF and
// four-row layouts keep, spends a conversion and an FMA on each of eight
// int32 lanes per (row, activation row, block); here the eight lanes are
// eight rows.
//
// A tile is 8 rows of nb blocks, 8·nb·22 bytes as in the GGUF, rows
// n..n+7 at tile n/8; block b of a tile starts at 176·b:
//
//   - 0: the 8 rows' d (f16, row r at 2r);
//   - 16: 32 bytes of fifth bits: the byte at 16+4r+i holds at bit 2c
//     that of row r's element 4c+i and at bit 2c+1 that of its element
//     16+4c+i (c = 0..3);
//   - 48 + 32c + 4r: row r's GGUF quant bytes 4c..4c+3 (low nibbles:
//     elements 4c.., high: 16+4c..).
//
// So one 32-byte load, a shift and two masks give four quants of each of
// the eight rows for two groups, and per group a shift, a mask and an OR
// of the block's one load of fifth bits complete them.
const Q5_0r8 Type = 1<<18 | Q5_0

// Q4_0r8 is Q4_0 in the eight-row layout: Q5_0r8's without the fifth
// bits, block b of a tile at 144·b: the 8 rows' d at 0, row r's quant
// bytes 4c..4c+3 at 16 + 32c + 4r. Its order (quant values q−8) is
// DotR16's too, and llama.cpp's for its repacked Q4_0
// (ggml_gemv_q4_0_8x8_q8_0), which it runs by default on AVX2 CPUs.
const Q4_0r8 Type = 1<<18 | Q4_0

// Q5_1r8 and Q4_1r8 are Q5_1 and Q4_1 in the eight-row layout: Q5_0r8's
// and Q4_0r8's with the 8 rows' m (f16) at 16 and everything after it 16
// bytes further (blocks of 192 and 160 bytes), the quants unsigned (no
// offset), against Q8_1 activations (d_a, s_a = d_a·Σa). Per (row,
// activation row, block)
//
//	acc  = fma(float32(d_w·d_a), float32(Σ_i x_i·y_i), acc)
//	accm = fma(m_w, s_a, accm)                                result acc + accm
//
// (ggml's vec_dot sums the m·s products apart too and adds them at the
// end; llama.cpp has no repacked Q4_1/Q5_1 kernels).
const (
	Q5_1r8 Type = 1<<18 | Q5_1
	Q4_1r8 Type = 1<<18 | Q4_1
)

// r8Leg is the geometry of an eight-row legacy layout: GGUF block bytes,
// tile block bytes, offsets in the tile block of the quants, fifth bits
// (−1: none) and m (−1: none), offsets in the GGUF block of the quants, qh
// and m, and the quants' offset (subtracted).
type r8Leg struct{ bs, tb, q, h, m, xq, xh, xm, off int }

// r8LegGeom returns the geometry of Q5_0r8, Q4_0r8, Q5_1r8 or Q4_1r8.
func r8LegGeom(t Type) r8Leg {
	switch t {
	case Q4_0r8:
		return r8Leg{blockQ4_0, 144, 16, -1, -1, 2, -1, -1, 8}
	case Q5_1r8:
		return r8Leg{blockQ5_1, 192, 64, 32, 16, 8, 4, 2, 0}
	case Q4_1r8:
		return r8Leg{blockQ4_1, 160, 32, -1, 16, 4, -1, 2, 0}
	}
	return r8Leg{blockQ5_0, 176, 48, 16, -1, 6, 2, -1, 16}
}

// PackedR8Legacy is the eight-row type of a legacy type t (Q5_0r8 of
// Q5_0, …, Q4_1r8 of Q4_1), 0 for any other.
func PackedR8Legacy(t Type) Type {
	switch t {
	case Q5_0, Q4_0, Q5_1, Q4_1:
		return 1<<18 | t
	}
	return 0
}

// packR8Leg writes the rows of k elements in src (GGUF Unpacked(t)) to
// dst in the eight-row layout t, a tile of eight rows at a time.
func packR8Leg(t Type, dst, src []byte, k int) error {
	g := r8LegGeom(t)
	nb := k / QK
	tile := R8Rows * nb * g.bs
	if k%QK != 0 || tile == 0 || len(src)%tile != 0 || len(dst) != len(src) {
		return fmt.Errorf("quant: Pack: %d bytes are not whole tiles of 8 %s rows of %d elements", len(src), Unpacked(t), k)
	}
	for o := 0; o < len(src); o += tile {
		for b := 0; b < nb; b++ {
			sb := dst[o+b*g.tb : o+(b+1)*g.tb]
			if g.h >= 0 {
				clear(sb[g.h : g.h+32])
			}
			for r := 0; r < R8Rows; r++ {
				r8LegRow(g, src[o+(r*nb+b)*g.bs:o+(r*nb+b+1)*g.bs], sb, r, true)
			}
		}
	}
	return nil
}

// r8LegRow copies row r's GGUF block x to (pack) or from (!pack) its
// place in block sb of an eight-row tile of geometry g. Packing ORs the
// fifth bits into the tile, which the caller clears first.
func r8LegRow(g r8Leg, x, sb []byte, r int, pack bool) {
	cp := func(tile, gguf []byte) {
		if pack {
			copy(tile, gguf)
		} else {
			copy(gguf, tile)
		}
	}
	cp(sb[2*r:2*r+2], x[0:2])
	if g.m >= 0 {
		cp(sb[g.m+2*r:g.m+2*r+2], x[g.xm:g.xm+2])
	}
	for c := 0; c < 4; c++ {
		cp(sb[g.q+32*c+4*r:g.q+32*c+4*r+4], x[g.xq+4*c:g.xq+4*c+4])
	}
	if g.h < 0 {
		return
	}
	qh := x[g.xh : g.xh+4]
	if !pack {
		clear(qh)
	}
	for c := 0; c < 4; c++ {
		for i := 0; i < 4; i++ {
			p := g.h + 4*r + i
			for h := 0; h < 2; h++ {
				e := 16*h + 4*c + i // the element
				if pack {
					sb[p] |= (qh[e/8] >> (e % 8) & 1) << (2*c + h)
				} else {
					qh[e/8] |= (sb[p] >> (2*c + h) & 1) << (e % 8)
				}
			}
		}
	}
}

// dotR8Leg is DotR8 for the eight-row legacy layouts: a is one Q8_0 (Q8_1
// for Q5_1r8, Q4_1r8) activation row of nb blocks.
func dotR8Leg(t Type, tile, a []byte, nb int, y []float32) {
	g := r8LegGeom(t)
	ab := blockQ8_0
	if g.m >= 0 {
		ab = blockQ8_1
	}
	var acc, accm [R8Rows]float32
	for b := 0; b < nb; b++ {
		sb := tile[b*g.tb : (b+1)*g.tb]
		ya := a[b*ab : (b+1)*ab]
		da := halfAt(ya)
		qy := ya[ab-32 : ab]
		for r := 0; r < R8Rows; r++ {
			var s int32
			for c := 0; c < 4; c++ {
				for i := 0; i < 4; i++ {
					q := int32(sb[g.q+32*c+4*r+i])
					lo, hi := q&15, q>>4
					if g.h >= 0 {
						hb := int32(sb[g.h+4*r+i])
						lo |= (hb >> (2 * c) & 1) << 4
						hi |= (hb >> (2*c + 1) & 1) << 4
					}
					s += (lo-int32(g.off))*int32(int8(qy[4*c+i])) + (hi-int32(g.off))*int32(int8(qy[16+4*c+i]))
				}
			}
			d := float32(halfAt(sb[2*r:]) * da)
			acc[r] = ggmlf32.FMA32(d, float32(s), acc[r])
			if g.m >= 0 {
				accm[r] = ggmlf32.FMA32(halfAt(sb[g.m+2*r:]), halfAt(ya[2:]), accm[r])
			}
		}
	}
	for r := range R8Rows {
		y[r] = acc[r]
		if g.m >= 0 {
			y[r] = acc[r] + accm[r]
		}
	}
}
