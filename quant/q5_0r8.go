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

// r8Q5Block is the bytes of one block of a Q5_0r8 tile.
const r8Q5Block = R8Rows * blockQ5_0

// r8LegGeom returns, for Q5_0r8 or Q4_0r8, the GGUF block size, the
// tile's block size and the offset of the quants in it.
func r8LegGeom(t Type) (bs, tb, q int) {
	if t == Q4_0r8 {
		return blockQ4_0, R8Rows * blockQ4_0, 16
	}
	return blockQ5_0, r8Q5Block, 48
}

// PackedR8Legacy is the eight-row type of a legacy type t (Q5_0r8 of
// Q5_0, Q4_0r8 of Q4_0), 0 for any other.
func PackedR8Legacy(t Type) Type {
	switch t {
	case Q5_0:
		return Q5_0r8
	case Q4_0:
		return Q4_0r8
	}
	return 0
}

// packR8Leg writes the rows of k elements in src (GGUF Q5_0 or Q4_0) to
// dst in the eight-row layout t, a tile of eight rows at a time.
func packR8Leg(t Type, dst, src []byte, k int) error {
	bs, tb, _ := r8LegGeom(t)
	nb := k / QK
	tile := R8Rows * nb * bs
	if k%QK != 0 || tile == 0 || len(src)%tile != 0 || len(dst) != len(src) {
		return fmt.Errorf("quant: Pack: %d bytes are not whole tiles of 8 %s rows of %d elements", len(src), Unpacked(t), k)
	}
	for o := 0; o < len(src); o += tile {
		for b := 0; b < nb; b++ {
			sb := dst[o+b*tb : o+(b+1)*tb]
			if t == Q5_0r8 {
				clear(sb[16:48])
			}
			for r := 0; r < R8Rows; r++ {
				x := src[o+(r*nb+b)*bs : o+(r*nb+b+1)*bs]
				if t == Q4_0r8 {
					r8Q4Row(x, sb, r, true)
					continue
				}
				r8Q5Row(x, sb, r, true)
			}
		}
	}
	return nil
}

// r8Q4Row is r8Q5Row for Q4_0r8.
func r8Q4Row(x, sb []byte, r int, pack bool) {
	if pack {
		copy(sb[2*r:2*r+2], x[0:2])
		for c := 0; c < 4; c++ {
			copy(sb[16+32*c+4*r:16+32*c+4*r+4], x[2+4*c:2+4*c+4])
		}
		return
	}
	copy(x[0:2], sb[2*r:2*r+2])
	for c := 0; c < 4; c++ {
		copy(x[2+4*c:2+4*c+4], sb[16+32*c+4*r:16+32*c+4*r+4])
	}
}

// r8Q5Row copies row r's GGUF Q5_0 block x to (pack) or from (!pack) its
// place in block sb of an eight-row tile. Packing ORs the fifth bits into
// the tile, which the caller clears first.
func r8Q5Row(x, sb []byte, r int, pack bool) {
	if !pack {
		clear(x[2:6])
	}
	for c := 0; c < 4; c++ {
		for i := 0; i < 4; i++ {
			p := 16 + 4*r + i
			for h := 0; h < 2; h++ {
				e := 16*h + 4*c + i // the element
				if pack {
					sb[p] |= (x[2+e/8] >> (e % 8) & 1) << (2*c + h)
				} else {
					x[2+e/8] |= (sb[p] >> (2*c + h) & 1) << (e % 8)
				}
			}
		}
	}
	if pack {
		copy(sb[2*r:2*r+2], x[0:2])
		for c := 0; c < 4; c++ {
			copy(sb[48+32*c+4*r:48+32*c+4*r+4], x[6+4*c:6+4*c+4])
		}
		return
	}
	copy(x[0:2], sb[2*r:2*r+2])
	for c := 0; c < 4; c++ {
		copy(x[6+4*c:6+4*c+4], sb[48+32*c+4*r:48+32*c+4*r+4])
	}
}

// dotR8Q5 is DotR8 for Q5_0r8 and Q4_0r8: a is one Q8_0 activation row of
// nb blocks.
func dotR8Q5(t Type, tile, a []byte, nb int, y []float32) {
	_, tb, qo := r8LegGeom(t)
	var acc [R8Rows]float32
	for b := 0; b < nb; b++ {
		sb := tile[b*tb : (b+1)*tb]
		ya := a[b*blockQ8_0 : (b+1)*blockQ8_0]
		da := halfAt(ya)
		qy := ya[2:34]
		for r := 0; r < R8Rows; r++ {
			var s int32
			for c := 0; c < 4; c++ {
				for i := 0; i < 4; i++ {
					q := int32(sb[qo+32*c+4*r+i])
					lo, hi := q&15-8, q>>4-8
					if t == Q5_0r8 {
						hb := int32(sb[16+4*r+i])
						lo = q&15 | (hb>>(2*c)&1)<<4 - 16
						hi = q>>4 | (hb>>(2*c+1)&1)<<4 - 16
					}
					s += lo*int32(int8(qy[4*c+i])) + hi*int32(int8(qy[16+4*c+i]))
				}
			}
			d := float32(halfAt(sb[2*r:]) * da)
			acc[r] = ggmlf32.FMA32(d, float32(s), acc[r])
		}
	}
	copy(y[:R8Rows], acc[:])
}
