package quant

import (
	"fmt"
	"math"

	"github.com/minfer/minfer/internal/ggmlf32"
)

// The eight-row K-quant layout Q4_Kr8: minfer's own type (plan only) for the
// row-parallel AVX2 kernels (backends/cpu, internal/asmgen/kr8.go), which
// every x86-64 tier from AVX2+FMA+F16C up runs, with llama.cpp's repacked
// float order.
//
// ggml's vec_dot kernel for Q4_K (the order of DotQ4KQ8K, which the GGUF
// layout's kernels keep bit for bit) spends, per weight row and 256-element
// super-block, ≈15 instructions decoding the twelve packed bytes of 6-bit
// scales and mins, eight VPMADDWD by the scales and eight float lanes —
// 20–25 cycles on a Zen 4 core, which is why one thread's decode could not
// stream the weights at the memory's rate. Here eight rows sit in the eight
// 32-bit lanes of a YMM register: each group of four quants of eight rows
// is one 32-byte load whose low and high nibbles, against four activation
// bytes broadcast, give two VPMADDUBSW; the eight groups of a 32-element
// sub-block are summed in 16 bits (exact: at most 16·15·128 < 2¹⁵) and one
// VPMADDWD by the eight rows' scales makes each row's exact sub-block sum.
// Per super-block and row then
//
//	isum = Σ_j sc_j·Σ_i q_i·a_i            (exact int32)
//	imin = Σ_j m_j·(bsums_2j + bsums_2j+1) (exact int32)
//	acc  = fma(float32(isum), float32(d_w·d_a), acc)
//	accm = fma(float32(imin), float32(dmin_w·d_a), accm)
//
// super-blocks in order from 0, and the result is acc − accm: the order of
// llama.cpp's repacked Q4_K kernels (ggml-cpu repack.cpp,
// ggml_gemv_q4_K_8x8_q8_K, which llama.cpp itself runs by default for Q4_K
// on AVX2 CPUs), not that of its vec_dot. DotR8 is the oracle.
//
// A tile is 8 rows of nb super-blocks, 8·nb·144 bytes as in the GGUF, rows
// n..n+7 at tile n/8; each super-block is 1152 bytes:
//
//   - 0: the 8 rows' d (f16, row r at 2r); 16: their dmin;
//   - 32: 64 bytes L, the low four bits of scale and min (j, r) as
//     sc&15 | (m&15)<<4 at 32·(j/4) + 16·(r/4) + 4·(j%4) + r%4;
//   - 96: 32 bytes H, their top two bits: the byte at p = 16·(r/4) +
//     4·(j%4) + r%4 holds sc>>4 at bit 2h and m>>4 at bit 2h+2 for
//     h = 0 (j < 4) at bits 0..3 and h = 1 (j ≥ 4) at bits 4..7;
//   - 128: the quants, chunk c (0..3) group g (0..7) at 256c + 32g: row r's
//     GGUF quant bytes 32c+4g .. 32c+4g+3 at 4r (low nibbles: elements
//     64c+4g.., sub-block 2c; high: 64c+32+4g.., sub-block 2c+1).
//
// So the kernel rebuilds every (row, sub-block) scale and min as a byte
// with a handful of shifts and masks, in register lanes a VPSHUFB spreads.
//
// Q5_Kr8 is Q4_Kr8 with the fifth bits (1408 bytes per super-block): the
// same d, dmin, L and H; at 128 per group g (0..7) 32 bytes, row r's GGUF qh
// bytes 4g..4g+3 at 4r (bit j of one: the fifth bit of that element of
// sub-block j); at 384 the quants as Q4_Kr8's at 128. Same order.
//
// Q6_Kr8 keeps Q6_K's order the same way, without mins: per super-block
// and row isum = Σ_j sc_j·Σ_i (q_i−32)·a_i (sixteen sub-blocks of 16, exact
// int32; the kernels fold the −32 into −32·Σ_j sc_j·bsums_j) and acc =
// fma(float32(isum), float32(d_w·d_a), acc). Its super-block is 1680
// bytes:
//
//   - 0: the 8 rows' d (f16);
//   - 16: 128 bytes of scales (int8), (j, r) at 32·(j/4) + 16·(r/4) +
//     4·(j%4) + r%4;
//   - 144: per half n (0, 1) and group g (0..7) at 768n + 96g: row r's GGUF
//     ql bytes 64n+4g.. at 4r, its ql bytes 64n+32+4g.. at 32+4r and its qh
//     bytes 32n+4g.. at 64+4r (so one group's three loads give four
//     quants of each row in each of sub-blocks 8n+g/4+{0, 2, 4, 6}).
const (
	// Q4_Kr8 is Q4_K in the eight-row layout.
	Q4_Kr8 Type = 1<<18 | Q4_K
	// Q6_Kr8 is Q6_K in the eight-row layout.
	Q6_Kr8 Type = 1<<18 | Q6_K
	// Q5_Kr8 is Q5_K in the eight-row layout.
	Q5_Kr8 Type = 1<<18 | Q5_K
)

// R8Rows is the number of rows of a tile of the eight-row layouts.
const R8Rows = 8

// r8SB is the bytes of one super-block of an eight-row Q4_K tile.
const r8SB = R8Rows * blockQ4K

// r8SB6 is the bytes of one super-block of an eight-row Q6_K tile.
const r8SB6 = R8Rows * blockQ6K

// PackedR8 is the eight-row type of t (Q4_Kr8 of Q4_K, …, Q2_Kr8 of Q2_K),
// 0 for any other.
func PackedR8(t Type) Type {
	switch t {
	case Q4_K:
		return Q4_Kr8
	case Q5_K:
		return Q5_Kr8
	case Q6_K:
		return Q6_Kr8
	case Q3_K:
		return Q3_Kr8
	case Q2_K:
		return Q2_Kr8
	}
	return 0
}

// r8Geom returns, for Q4_Kr8 or Q5_Kr8, the GGUF block size, the offset
// of the quants in a GGUF block and in a tile's super-block, and the
// super-block's bytes.
func r8Geom(t Type) (bs, xq, sq, sbs int) {
	if t == Q5_Kr8 {
		return blockQ5K, 48, 384, R8Rows * blockQ5K
	}
	return blockQ4K, 16, 128, r8SB
}

// r8Pos is the byte of (sub-block j, row r)'s low scale/min bits in L.
func r8Pos(j, r int) int { return 32*(j/4) + 16*(r/4) + 4*(j%4) + r%4 }

// packR8 writes the rows of k elements in src (GGUF Q4_K) to dst in the
// eight-row layout, a tile of eight rows at a time.
func packR8(t Type, dst, src []byte, k int) error {
	nb := k / QKK
	tile := R8Rows * nb * Unpacked(t).TypeSize()
	if k%QKK != 0 || tile == 0 || len(src)%tile != 0 || len(dst) != len(src) {
		return fmt.Errorf("quant: Pack: %d bytes are not whole tiles of 8 %s rows of %d elements", len(src), Unpacked(t), k)
	}
	for o := 0; o < len(src); o += tile {
		d, s := dst[o:o+tile], src[o:o+tile]
		if t == Q6_Kr8 {
			packR8Q6(d, s, nb)
			continue
		}
		if t == Q3_Kr8 || t == Q2_Kr8 {
			packR8Q23(t, d, s, nb)
			continue
		}
		bs, xq, sq, sbs := r8Geom(t)
		for b := 0; b < nb; b++ {
			sb := d[b*sbs : (b+1)*sbs]
			clear(sb[96:128])
			for r := 0; r < R8Rows; r++ {
				x := s[(r*nb+b)*bs : (r*nb+b+1)*bs]
				copy(sb[2*r:], x[0:2])
				copy(sb[16+2*r:], x[2:4])
				for j := 0; j < 8; j++ {
					sc, m := scaleMinK4(j, x[4:16])
					p := r8Pos(j, r)
					sb[32+p] = sc&15 | (m&15)<<4
					h := uint(4 * (j / 4))
					sb[96+p%32] |= (sc>>4)<<h | (m>>4)<<(h+2)
				}
				for c := 0; c < 4; c++ {
					for g := 0; g < 8; g++ {
						copy(sb[sq+256*c+32*g+4*r:sq+256*c+32*g+4*r+4], x[xq+32*c+4*g:])
					}
				}
				if t == Q5_Kr8 {
					for g := 0; g < 8; g++ {
						copy(sb[128+32*g+4*r:128+32*g+4*r+4], x[16+4*g:])
					}
				}
			}
		}
	}
	return nil
}

// r8ScaleMin returns (sub-block j, row r)'s 6-bit scale and min from a
// super-block of an eight-row tile.
func r8ScaleMin(sb []byte, j, r int) (sc, m uint8) {
	p := r8Pos(j, r)
	l, h := sb[32+p], sb[96+p%32]>>uint(4*(j/4))
	return l&15 | (h&3)<<4, l>>4 | (h>>2&3)<<4
}

// unpackRowR8 writes row r of a tile of nb super-blocks as nb GGUF Q4_K
// blocks.
func unpackRowR8(t Type, dst, group []byte, nb, r int) error {
	bs := Unpacked(t).TypeSize()
	if r < 0 || r >= R8Rows || len(dst) < nb*bs || len(group) < R8Rows*nb*bs {
		return fmt.Errorf("quant: UnpackRow: %s row %d of %d blocks from %d into %d bytes", t, r, nb, len(group), len(dst))
	}
	if PackedR8Legacy(Unpacked(t)) == t {
		g := r8LegGeom(t)
		for b := 0; b < nb; b++ {
			r8LegRow(g, dst[b*bs:(b+1)*bs], group[b*g.tb:(b+1)*g.tb], r, false)
		}
		return nil
	}
	if t == Q6_Kr8 {
		for b := 0; b < nb; b++ {
			r8Q6Row(dst[b*blockQ6K:(b+1)*blockQ6K], group[b*r8SB6:(b+1)*r8SB6], r, false)
		}
		return nil
	}
	if t == Q3_Kr8 || t == Q2_Kr8 {
		sbs := bs * R8Rows
		for b := 0; b < nb; b++ {
			r8Q23Row(t, dst[b*bs:(b+1)*bs], group[b*sbs:(b+1)*sbs], r, false)
		}
		return nil
	}
	bs, xq, sq, sbs := r8Geom(t)
	for b := 0; b < nb; b++ {
		sb := group[b*sbs : (b+1)*sbs]
		x := dst[b*bs : (b+1)*bs]
		copy(x[0:2], sb[2*r:])
		copy(x[2:4], sb[16+2*r:])
		var ls, lm [8]uint8
		for j := 0; j < 8; j++ {
			ls[j], lm[j] = r8ScaleMin(sb, j, r)
		}
		clear(x[4:16])
		putScaleMinK4(x[4:16], &ls, &lm)
		for c := 0; c < 4; c++ {
			for g := 0; g < 8; g++ {
				copy(x[xq+32*c+4*g:xq+32*c+4*g+4], sb[sq+256*c+32*g+4*r:])
			}
		}
		if t == Q5_Kr8 {
			for g := 0; g < 8; g++ {
				copy(x[16+4*g:16+4*g+4], sb[128+32*g+4*r:])
			}
		}
	}
	return nil
}

// R8Sums returns the eight pair sums of a Q8_K block's bsums (bsums[2j] +
// bsums[2j+1], the activation sum of sub-block j, which the mins multiply).
func R8Sums(a []byte) [8]int16 {
	var s [8]int16
	for j := range s {
		s[j] = int16(bsum(a[260:292], 2*j) + bsum(a[260:292], 2*j+1))
	}
	return s
}

// packR8Q6 packs one Q6_K tile: 8 rows of nb super-blocks (src: the rows
// one after the other).
func packR8Q6(dst, src []byte, nb int) {
	for b := 0; b < nb; b++ {
		for r := 0; r < R8Rows; r++ {
			r8Q6Row(src[(r*nb+b)*blockQ6K:(r*nb+b+1)*blockQ6K], dst[b*r8SB6:(b+1)*r8SB6], r, true)
		}
	}
}

// r8Q6Row copies row r's GGUF Q6_K block x to (pack) or from (!pack) its
// place in super-block sb of an eight-row tile.
func r8Q6Row(x, sb []byte, r int, pack bool) {
	cp := func(tile, gguf []byte) {
		if pack {
			copy(tile, gguf)
		} else {
			copy(gguf, tile)
		}
	}
	cp(sb[2*r:2*r+2], x[208:210])
	for j := 0; j < 16; j++ {
		cp(sb[16+r8Pos(j, r):16+r8Pos(j, r)+1], x[192+j:193+j])
	}
	for n := 0; n < 2; n++ {
		for g := 0; g < 8; g++ {
			o := 144 + 768*n + 96*g + 4*r
			cp(sb[o:o+4], x[64*n+4*g:64*n+4*g+4])
			cp(sb[o+32:o+36], x[64*n+32+4*g:64*n+32+4*g+4])
			cp(sb[o+64:o+68], x[128+32*n+4*g:128+32*n+4*g+4])
		}
	}
}

// DotR8 is the oracle of the eight-row layouts: the 8 dot products of a
// tile's rows (nb super-blocks of Q4_Kr8 or Q6_Kr8) with one Q8_K
// activation row a, in the order the package comment gives, into y[0..7].
func DotR8(t Type, tile, a []byte, nb int, y []float32) {
	if t == Q6_Kr8 {
		dotR8Q6(tile, a, nb, y)
		return
	}
	if PackedR8Legacy(Unpacked(t)) == t {
		dotR8Leg(t, tile, a, nb, y)
		return
	}
	if t == Q3_Kr8 || t == Q2_Kr8 {
		dotR8Q23(t, tile, a, nb, y)
		return
	}
	_, _, sq, sbs := r8Geom(t)
	var acc, accm [R8Rows]float32
	for b := 0; b < nb; b++ {
		sb := tile[b*sbs : (b+1)*sbs]
		ya := a[b*blockQ8K : (b+1)*blockQ8K]
		da := math.Float32frombits(u32At(ya))
		qa := ya[4:260]
		bs := R8Sums(ya)
		for r := 0; r < R8Rows; r++ {
			var isum, imin int32
			for j := 0; j < 8; j++ {
				sc, m := r8ScaleMin(sb, j, r)
				c, hi := j/2, j%2
				var s int32
				for g := 0; g < 8; g++ {
					for i := 0; i < 4; i++ {
						q := int32(sb[sq+256*c+32*g+4*r+i])
						if hi == 1 {
							q >>= 4
						}
						q &= 15
						if t == Q5_Kr8 {
							q |= int32(sb[128+32*g+4*r+i]>>j&1) << 4
						}
						s += q * int32(int8(qa[32*j+4*g+i]))
					}
				}
				isum += int32(sc) * s
				imin += int32(m) * int32(bs[j])
			}
			acc[r] = ggmlf32.FMA32(float32(isum), float32(halfAt(sb[2*r:])*da), acc[r])
			accm[r] = ggmlf32.FMA32(float32(imin), float32(halfAt(sb[16+2*r:])*da), accm[r])
		}
	}
	for r := range R8Rows {
		y[r] = acc[r] - accm[r]
	}
}

// dotR8Q6 is DotR8 for Q6_Kr8.
func dotR8Q6(tile, a []byte, nb int, y []float32) {
	var acc [R8Rows]float32
	for b := 0; b < nb; b++ {
		sb := tile[b*r8SB6 : (b+1)*r8SB6]
		ya := a[b*blockQ8K : (b+1)*blockQ8K]
		da := math.Float32frombits(u32At(ya))
		qa := ya[4:260]
		for r := 0; r < R8Rows; r++ {
			var isum int32
			for n := 0; n < 2; n++ {
				for g := 0; g < 8; g++ {
					o := 144 + 768*n + 96*g + 4*r
					for i := 0; i < 4; i++ {
						la, lb, h := sb[o+i], sb[o+32+i], sb[o+64+i]
						q := [4]int32{
							int32(la&15 | (h&3)<<4), int32(lb&15 | (h>>2&3)<<4),
							int32(la>>4 | (h>>4&3)<<4), int32(lb>>4 | (h>>6&3)<<4),
						}
						for k := 0; k < 4; k++ {
							j := 8*n + 2*k + g/4
							sc := int32(int8(sb[16+r8Pos(j, r)]))
							isum += sc * (q[k] - 32) * int32(int8(qa[128*n+32*k+4*g+i]))
						}
					}
				}
			}
			acc[r] = ggmlf32.FMA32(float32(isum), float32(halfAt(sb[2*r:])*da), acc[r])
		}
	}
	copy(y[:R8Rows], acc[:])
}
