package quant

import (
	"encoding/binary"
	"fmt"
)

// Q5_0x4 is a same-size layout of Q5_0 weights for four rows at a time,
// made for the AVX2 decode kernel (backends/cpu rowsQ5_0x4AVX2): the four
// rows' blocks b sit together in 88 bytes (4 × 22), and a block's 5th bits
// are stored spread so that one 64-bit broadcast, one variable shift and
// one AND place them where two rows' quants need them, instead of a byte
// shuffle, an AND and a sign per row. The quants themselves, and so every
// integer of the dot product and ggml's float order, are unchanged.
//
// Block b of the group of rows r0..r3 (each row nb blocks of 22 bytes):
//
//	0..7    the four rows' f16 d, r0 first
//	8..15   P01, the 5th bits of rows r0 (a) and r1 (b), 64 bits
//	16..23  P23, the same for rows r2 (a) and r3 (b)
//	24..55  r0's 16 quant bytes, then r1's
//	56..87  r2's, then r3's
//
// For j in 0..7, with h(e) bit e of a row's qh: P bit 8j+4 = h_a(j), 8j+5 =
// h_a(8+j), 8j+6 = h_b(j), 8j+7 = h_b(8+j), 8j+0 = h_a(16+j), 8j+1 =
// h_a(24+j), 8j+2 = h_b(16+j), 8j+3 = h_b(24+j). Shifting P right by 0, 1,
// 2, 3 in the four qwords of a register and masking bit 4 of each byte gives
// the 5th bits of elements 0..15 of a and then of b, the quant bytes' low
// nibbles; shifting left by 4, 3, 2, 1 those of elements 16..31, the high
// nibbles.
const Q5_0x4Block = 4 * blockQ5_0

// packQ5_0x4 writes four Q5_0 rows of nb blocks each (src: the rows one
// after the other, 4·nb·22 bytes) to dst (nb·88 bytes) in the Q5_0x4
// layout.
func packQ5_0x4(dst, src []byte, nb int) error {
	if len(src) < 4*nb*blockQ5_0 || len(dst) < nb*Q5_0x4Block {
		return fmt.Errorf("quant: packQ5_0x4: %d blocks need %d source and %d destination bytes, have %d and %d",
			nb, 4*nb*blockQ5_0, nb*Q5_0x4Block, len(src), len(dst))
	}
	for b := 0; b < nb; b++ {
		o := dst[b*Q5_0x4Block : (b+1)*Q5_0x4Block]
		blk := func(r int) []byte { return src[(r*nb+b)*blockQ5_0 : (r*nb+b+1)*blockQ5_0] }
		for r := 0; r < 4; r++ {
			copy(o[2*r:2*r+2], blk(r)[:2])
		}
		for p := 0; p < 2; p++ {
			ha := binary.LittleEndian.Uint32(blk(2 * p)[2:])
			hb := binary.LittleEndian.Uint32(blk(2*p + 1)[2:])
			binary.LittleEndian.PutUint64(o[8+8*p:], spreadQ5_0x4(ha, hb))
			copy(o[24+32*p:], blk(2 * p)[6:])
			copy(o[24+32*p+16:], blk(2*p + 1)[6:])
		}
	}
	return nil
}

// q5x4Bit lists, for bit k (0..7) of each byte j of P, which row (0: a,
// 1: b) and which element (e0 + j) it holds.
var q5x4Bit = [8]struct{ row, e0 int }{
	{0, 16}, {0, 24}, {1, 16}, {1, 24}, {0, 0}, {0, 8}, {1, 0}, {1, 8},
}

func spreadQ5_0x4(ha, hb uint32) uint64 {
	h := [2]uint32{ha, hb}
	var p uint64
	for j := 0; j < 8; j++ {
		for k, s := range q5x4Bit {
			p |= uint64(h[s.row]>>(s.e0+j)&1) << (8*j + k)
		}
	}
	return p
}

func gatherQ5_0x4(p uint64) (ha, hb uint32) {
	var h [2]uint32
	for j := 0; j < 8; j++ {
		for k, s := range q5x4Bit {
			h[s.row] |= uint32(p>>(8*j+k)&1) << (s.e0 + j)
		}
	}
	return h[0], h[1]
}
