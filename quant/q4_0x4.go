package quant

import (
	"encoding/binary"
	"fmt"
)

// Q4_0x4 is the four-row layout of Q4_0 weights for the AVX2 kernels, as
// Q5_0x4 is of Q5_0 (without fifth bits): block b of the group of rows
// r0..r3 (each row nb blocks of 18 bytes) takes 72 bytes:
//
//	0..7    the four rows' f16 d, r0 first
//	8..39   r0's 16 quant bytes, then r1's
//	40..71  r2's, then r3's
//
// The quants, and so every integer of the dot product and ggml's float
// order, are unchanged.
const Q4_0x4Block = 4 * blockQ4_0

// Q4_0x4 is minfer's own type id for Q4_0 weights in the Q4_0x4 layout
// (see Q5_0x4).
const Q4_0x4 Type = 1<<16 | Q4_0

// packQ4_0x4 writes four Q4_0 rows of nb blocks each (src: the rows one
// after the other) to dst (nb·72 bytes) in the Q4_0x4 layout.
func packQ4_0x4(dst, src []byte, nb int) error {
	if len(src) < 4*nb*blockQ4_0 || len(dst) < nb*Q4_0x4Block {
		return fmt.Errorf("quant: packQ4_0x4: %d blocks need %d source and %d destination bytes, have %d and %d",
			nb, 4*nb*blockQ4_0, nb*Q4_0x4Block, len(src), len(dst))
	}
	for b := 0; b < nb; b++ {
		o := dst[b*Q4_0x4Block : (b+1)*Q4_0x4Block]
		for r := 0; r < 4; r++ {
			blk := src[(r*nb+b)*blockQ4_0 : (r*nb+b+1)*blockQ4_0]
			copy(o[2*r:2*r+2], blk[:2])
			copy(o[8+16*r:8+16*r+16], blk[2:])
		}
	}
	return nil
}

// PackX4 writes the rows (each k elements) of a Q5_0 or Q4_0 matrix of a
// multiple of 4 rows in the four-row layout of PackedX4(t), one group
// after another.
func PackX4(t Type, dst, src []byte, k int) error {
	pack, bs := packQ5_0x4, blockQ5_0
	switch t {
	case Q5_0:
	case Q4_0:
		pack, bs = packQ4_0x4, blockQ4_0
	default:
		return fmt.Errorf("quant: PackX4: no four-row layout for %s", t)
	}
	nb := k / QK
	group := 4 * nb * bs
	if k%QK != 0 || group == 0 || len(src)%group != 0 || len(dst) != len(src) {
		return fmt.Errorf("quant: PackX4: %d bytes are not whole groups of four %s rows of %d elements", len(src), t, k)
	}
	for o := 0; o < len(src); o += group {
		if err := pack(dst[o:o+group], src[o:o+group], nb); err != nil {
			return err
		}
	}
	return nil
}

// PackedX4 is the four-row type of t (Q5_0x4 of Q5_0, Q4_0x4 of Q4_0),
// and Unpacked its inverse; both return 0 for any other type. Since the
// twenty-first session the pack-weights pass writes the eight-row layouts
// (PackedR8Legacy) instead; plans holding the four-row ones still run.
func PackedX4(t Type) Type {
	switch t {
	case Q5_0:
		return Q5_0x4
	case Q4_0:
		return Q4_0x4
	}
	return 0
}

// UnpackedX4 is the GGUF type a four-row type packs (0 for any other).
func UnpackedX4(t Type) Type {
	switch t {
	case Q5_0x4:
		return Q5_0
	case Q4_0x4:
		return Q4_0
	}
	return 0
}

// UnpackRowX4 writes row r (0..3) of a group of four rows of nb blocks in
// the four-row layout of t (Q5_0x4 or Q4_0x4) to dst as nb blocks of the
// plain type — what a row lookup (get_rows) of a packed table reads.
func UnpackRowX4(t Type, dst, group []byte, nb, r int) error {
	plain := UnpackedX4(t)
	bs := plain.TypeSize()
	if plain == 0 || r < 0 || r > 3 || len(dst) < nb*bs || len(group) < 4*nb*bs {
		return fmt.Errorf("quant: UnpackRowX4: %s row %d of %d blocks from %d into %d bytes", t, r, nb, len(group), len(dst))
	}
	for b := 0; b < nb; b++ {
		o := group[4*b*bs : 4*(b+1)*bs]
		d := dst[b*bs : (b+1)*bs]
		copy(d[:2], o[2*r:2*r+2])
		if plain == Q4_0 {
			copy(d[2:], o[8+16*r:8+16*r+16])
			continue
		}
		p := r / 2
		ha, hb := gatherQ5_0x4(binary.LittleEndian.Uint64(o[8+8*p:]))
		h := ha
		if r%2 == 1 {
			h = hb
		}
		binary.LittleEndian.PutUint32(d[2:], h)
		copy(d[6:], o[24+16*r:24+16*r+16])
	}
	return nil
}
