package quant

import (
	"encoding/binary"
	"fmt"

	"github.com/minfer/minfer/internal/ggmlf32"
)

// The sixteen-row layouts Q8_0r16, Q5_0r16 and Q4_0r16: minfer's own types (plan
// only, like Q5_0x4) for the AVX-512 VNNI tier's row-parallel kernels, and
// with their own float order.
//
// ggml's vec_dot order, which every other minfer kernel keeps bit for bit,
// gives each 32-element block eight int32 lanes (four products each), each
// converted and multiply-added into its own float accumulator, and sums the
// eight at the end of the row. That costs a conversion and an FMA per lane,
// eight per (weight row, activation row, block), and it is what bounds
// minfer's batched decode and prefill on the legacy types (docs/PERFORMANCE.md).
// These layouts put sixteen weight rows in the sixteen 32-bit lanes of a
// register, four bytes each, so that eight VPDPBUSD leave each row's whole
// block sum in one int32 lane, exactly; then per (weight row, activation
// row, block) one conversion and one FMA:
//
//	acc = fma(float32(d_w·d_a), float32(Σ_i x_i·y_i), acc)   blocks in order, acc from 0
//
// — the order of llama.cpp's own repacked x86 kernels (ggml-cpu
// repack.cpp, ggml_gemv_q4_0_8x8_q8_0: _mm256_fmadd_ps of the converted
// int sums by the product of the scales). The result differs from the
// vec_dot order in the last bits, as llama.cpp's repacked results differ
// from its unpacked ones; DotR16 (pure Go) is its oracle, and every tier
// and thread count gives its bits.
//
// A tile is 16 rows of nb blocks, 16·nb·(bytes per block) bytes as in the
// GGUF, rows n..n+15 of the matrix at tile n/16:
//
//   - nb·32 bytes of scales: block b's 16 f16 d at 32b (row r at 32b+2r);
//   - then per block (Q8_0r16: 512 bytes) group k = 0..7 at 64k: row r's
//     elements 4k..4k+3 at 64k+4r, as x+128 (x XOR 0x80, unsigned);
//   - or per block (Q5_0r16: 320 bytes) at 8k (k = 0..7) a 64-bit mask whose
//     bit 4r+i is the fifth bit of row r's element 4k+i, then at 64+64c
//     (c = 0..3) row r's quant bytes 4c..4c+3 at 64+64c+4r (the low
//     nibbles elements 4c.., group c; the high ones elements 16+4c..,
//     group c+4);
//   - or per block (Q4_0r16: 256 bytes) at 64c (c = 0..3) row r's quant
//     bytes 4c..4c+3 at 64c+4r, as Q5_0r16's without the fifth bits.
const (
	// Q8_0r16 is Q8_0 in the sixteen-row layout.
	Q8_0r16 Type = 1<<17 | Q8_0
	// Q5_0r16 is Q5_0 in the sixteen-row layout.
	Q5_0r16 Type = 1<<17 | Q5_0
	// Q4_0r16 is Q4_0 in the sixteen-row layout.
	Q4_0r16 Type = 1<<17 | Q4_0
)

// R16Rows is the number of rows of a tile of the sixteen-row layouts.
const R16Rows = 16

// r16Block is the bytes of a tile's block b after the scales: the quants of
// the 16 rows.
func r16Block(plain Type) int {
	switch plain {
	case Q8_0:
		return 512
	case Q4_0:
		return 256
	}
	return 320
}

// PackedR16 is the sixteen-row type of t (Q8_0r16 of Q8_0, Q5_0r16 of
// Q5_0, Q4_0r16 of Q4_0), 0 for any other type.
func PackedR16(t Type) Type {
	switch t {
	case Q8_0:
		return Q8_0r16
	case Q5_0:
		return Q5_0r16
	case Q4_0:
		return Q4_0r16
	}
	return 0
}

// Unpacked is the GGUF type a plan-only layout (four-row or sixteen-row)
// packs, 0 for any other type.
func Unpacked(t Type) Type {
	switch t {
	case Q5_0x4:
		return Q5_0
	case Q4_0x4:
		return Q4_0
	case Q8_0r16:
		return Q8_0
	case Q5_0r16:
		return Q5_0
	case Q4_0r16:
		return Q4_0
	case Q4_Kr8:
		return Q4_K
	case Q6_Kr8:
		return Q6_K
	case Q5_Kr8:
		return Q5_K
	case Q3_Kr8:
		return Q3_K
	case Q2_Kr8:
		return Q2_K
	case Q5_0r8:
		return Q5_0
	case Q4_0r8:
		return Q4_0
	case Q5_1r8:
		return Q5_1
	case Q4_1r8:
		return Q4_1
	}
	return 0
}

// GroupRows is the number of rows a plan-only layout packs together (4, 8
// or 16), 0 for any other type.
func GroupRows(t Type) int {
	switch t {
	case Q5_0x4, Q4_0x4:
		return 4
	case Q8_0r16, Q5_0r16, Q4_0r16:
		return R16Rows
	case Q2_Kr8, Q3_Kr8, Q4_Kr8, Q5_Kr8, Q6_Kr8, Q5_0r8, Q4_0r8, Q5_1r8, Q4_1r8:
		return R8Rows
	}
	return 0
}

// Pack writes the rows (each k elements, in the GGUF layout of
// Unpacked(t)) of a matrix of a multiple of GroupRows(t) rows in the
// plan-only layout t, one group after another.
func Pack(t Type, dst, src []byte, k int) error {
	switch t {
	case Q5_0x4, Q4_0x4:
		return PackX4(Unpacked(t), dst, src, k)
	case Q2_Kr8, Q3_Kr8, Q4_Kr8, Q5_Kr8, Q6_Kr8:
		return packR8(t, dst, src, k)
	case Q5_0r8, Q4_0r8, Q5_1r8, Q4_1r8:
		return packR8Leg(t, dst, src, k)
	case Q8_0r16, Q5_0r16, Q4_0r16:
	default:
		return fmt.Errorf("quant: Pack: %s is not a packed layout", t)
	}
	plain := Unpacked(t)
	bs := plain.TypeSize()
	nb := k / QK
	tile := R16Rows * nb * bs
	if k%QK != 0 || tile == 0 || len(src)%tile != 0 || len(dst) != len(src) {
		return fmt.Errorf("quant: Pack: %d bytes are not whole tiles of 16 %s rows of %d elements", len(src), plain, k)
	}
	for o := 0; o < len(src); o += tile {
		packR16(plain, dst[o:o+tile], src[o:o+tile], nb)
	}
	return nil
}

// packR16 packs one tile: 16 rows of nb blocks of plain (src: the rows one
// after the other).
func packR16(plain Type, dst, src []byte, nb int) {
	bs := plain.TypeSize()
	q := dst[nb*32:]
	qb := r16Block(plain)
	for b := 0; b < nb; b++ {
		o := q[b*qb : (b+1)*qb]
		for r := 0; r < R16Rows; r++ {
			x := src[(r*nb+b)*bs : (r*nb+b+1)*bs]
			copy(dst[32*b+2*r:], x[:2])
			if plain == Q8_0 {
				for k := 0; k < 8; k++ {
					for i := 0; i < 4; i++ {
						o[64*k+4*r+i] = x[2+4*k+i] ^ 0x80
					}
				}
				continue
			}
			if plain == Q4_0 {
				for c := 0; c < 4; c++ {
					copy(o[64*c+4*r:64*c+4*r+4], x[2+4*c:2+4*c+4])
				}
				continue
			}
			qh := binary.LittleEndian.Uint32(x[2:])
			for k := 0; k < 8; k++ {
				m := binary.LittleEndian.Uint64(o[8*k:])
				m |= uint64(qh>>(4*k)&0xF) << (4 * r)
				binary.LittleEndian.PutUint64(o[8*k:], m)
			}
			for c := 0; c < 4; c++ {
				copy(o[64+64*c+4*r:64+64*c+4*r+4], x[6+4*c:6+4*c+4])
			}
		}
	}
}

// UnpackRow writes row r (0..GroupRows(t)-1) of a group of rows of nb
// blocks in the plan-only layout t to dst as nb blocks of Unpacked(t) —
// what a row lookup (get_rows) of a packed table reads.
func UnpackRow(t Type, dst, group []byte, nb, r int) error {
	switch t {
	case Q5_0x4, Q4_0x4:
		return UnpackRowX4(t, dst, group, nb, r)
	case Q2_Kr8, Q3_Kr8, Q4_Kr8, Q5_Kr8, Q6_Kr8, Q5_0r8, Q4_0r8, Q5_1r8, Q4_1r8:
		return unpackRowR8(t, dst, group, nb, r)
	case Q8_0r16, Q5_0r16, Q4_0r16:
	default:
		return fmt.Errorf("quant: UnpackRow: %s is not a packed layout", t)
	}
	plain := Unpacked(t)
	bs := plain.TypeSize()
	qb := r16Block(plain)
	if r < 0 || r >= R16Rows || len(dst) < nb*bs || len(group) < R16Rows*nb*bs {
		return fmt.Errorf("quant: UnpackRow: %s row %d of %d blocks from %d into %d bytes", t, r, nb, len(group), len(dst))
	}
	q := group[nb*32:]
	for b := 0; b < nb; b++ {
		o := q[b*qb : (b+1)*qb]
		d := dst[b*bs : (b+1)*bs]
		copy(d[:2], group[32*b+2*r:32*b+2*r+2])
		if plain == Q8_0 {
			for k := 0; k < 8; k++ {
				for i := 0; i < 4; i++ {
					d[2+4*k+i] = o[64*k+4*r+i] ^ 0x80
				}
			}
			continue
		}
		if plain == Q4_0 {
			for c := 0; c < 4; c++ {
				copy(d[2+4*c:2+4*c+4], o[64*c+4*r:64*c+4*r+4])
			}
			continue
		}
		var qh uint32
		for k := 0; k < 8; k++ {
			qh |= uint32(binary.LittleEndian.Uint64(o[8*k:])>>(4*r)&0xF) << (4 * k)
		}
		binary.LittleEndian.PutUint32(d[2:], qh)
		for c := 0; c < 4; c++ {
			copy(d[6+4*c:6+4*c+4], o[64+64*c+4*r:64+64*c+4*r+4])
		}
	}
	return nil
}

// DotR16 is the oracle of the sixteen-row layouts: the 16 dot products of
// a tile's rows (nb blocks, layout t) with one Q8_0 activation row a, in
// the order the package comment gives, into y[0..15].
func DotR16(t Type, tile, a []byte, nb int, y []float32) {
	plain := Unpacked(t)
	qb := r16Block(plain)
	q := tile[nb*32:]
	var acc [R16Rows]float32
	for b := 0; b < nb; b++ {
		o := q[b*qb : (b+1)*qb]
		ya := a[b*blockQ8_0 : (b+1)*blockQ8_0]
		da := halfAt(ya)
		qy := ya[2:34]
		for r := 0; r < R16Rows; r++ {
			var s int32
			for k := 0; k < 8; k++ {
				for i := 0; i < 4; i++ {
					var x int32
					switch plain {
					case Q8_0:
						x = int32(o[64*k+4*r+i]) - 128
					case Q4_0:
						nib := int32(o[64*(k%4)+4*r+i])
						if k >= 4 {
							nib >>= 4
						}
						x = nib&0xF - 8
					default:
						bit := int32(binary.LittleEndian.Uint64(o[8*k:])>>(4*r+i)) & 1
						nib := int32(o[64+64*(k%4)+4*r+i])
						if k >= 4 {
							nib >>= 4
						}
						x = nib&0xF | bit<<4 - 16
					}
					s += x * int32(int8(qy[4*k+i]))
				}
			}
			d := float32(halfAt(tile[32*b+2*r:]) * da)
			acc[r] = ggmlf32.FMA32(d, float32(s), acc[r])
		}
	}
	copy(y[:R16Rows], acc[:])
}
