package quant

import (
	"math"

	"github.com/minfer/minfer/internal/ggmlf32"
)

// The eight-row layouts of Q3_K and Q2_K: Q6_Kr8's arrangement (kr8.go)
// for the two K-quants whose sixteen sub-blocks of 16 weights take 2-bit
// quants from the same bytes, with the same byte count per row as the
// GGUF, so the row kernels stream no more than the GGUF layout's do.
//
// In both GGUF blocks, quant byte l (0..31) of half n holds, at bits 2k and
// 2k+1 (k = 0..3), element 128n+32k+l, of sub-block 8n+2k+l/16; Q3_K's
// hmask byte l holds that element's third bit at bit 4n+k. So a group g
// (0..7) of four bytes of each of eight rows, in one 32-byte load, gives
// four quants of each row in each of sub-blocks 8n+2k+g/4, as Q6_Kr8's
// groups do.
//
// Q3_Kr8, 880 bytes per super-block of a tile (8 rows × 110):
//
//   - 0: the 8 rows' d (f16, row r at 2r);
//   - 16: 64 bytes L: for j = 0..7 at 16 + r8Pos(j, r) row r's GGUF scale
//     byte j, the low four bits of its 6-bit scales j and j+8;
//   - 80: 32 bytes H, their top two bits, as Q4_Kr8's H with (scale,
//     min) read as (scale j, scale j+8): at 80 + r8Pos(j, r) mod 32, bit
//     4·(j/4) holds scale j's and bit 4·(j/4)+2 scale j+8's;
//   - 112: per half n and group g at 256n + 32g: row r's GGUF quant bytes
//     32n+4g .. +3 at 4r;
//   - 624: per group g at 32g: row r's hmask bytes 4g .. +3 at 4r.
//
// Per super-block and row isum = Σ_j s_j·Σ_i (q_i−4)·a_i (s_j = scale − 32,
// q_i = low bits | third bit << 2; exact int32; the kernels fold the −4
// into −4·Σ_j s_j·bsums_j) and acc = fma(float32(isum), float32(d_w·d_a),
// acc): Q6_Kr8's order.
//
// Q2_Kr8, 672 bytes per super-block (8 rows × 84):
//
//   - 0: the 8 rows' d; 16: their dmin;
//   - 32: 128 bytes, at 32 + r8Pos(j, r) (j = 0..15) row r's GGUF scale
//     byte j (scale in the low nibble, min in the high);
//   - 160: per half n and group g at 256n + 32g: row r's GGUF quant bytes
//     32n+4g .. +3 at 4r.
//
// Per super-block and row isum = Σ_j sc_j·Σ_i q_i·a_i, imin = Σ_j
// m_j·bsums_j, acc and accm as Q4_Kr8's, result acc − accm.
const (
	// Q3_Kr8 is Q3_K in the eight-row layout.
	Q3_Kr8 Type = 1<<18 | Q3_K
	// Q2_Kr8 is Q2_K in the eight-row layout.
	Q2_Kr8 Type = 1<<18 | Q2_K
)

// r8SB3 and r8SB2 are the bytes of one super-block of an eight-row Q3_K
// and Q2_K tile.
const (
	r8SB3 = R8Rows * blockQ3K
	r8SB2 = R8Rows * blockQ2K
)

// packR8Q23 packs one Q3_K or Q2_K tile: 8 rows of nb super-blocks (src:
// the rows one after the other).
func packR8Q23(t Type, dst, src []byte, nb int) {
	bs, sbs := blockQ3K, r8SB3
	if t == Q2_Kr8 {
		bs, sbs = blockQ2K, r8SB2
	}
	for b := 0; b < nb; b++ {
		sb := dst[b*sbs : (b+1)*sbs]
		if t == Q3_Kr8 {
			clear(sb[80:112])
		}
		for r := 0; r < R8Rows; r++ {
			r8Q23Row(t, src[(r*nb+b)*bs:(r*nb+b+1)*bs], sb, r, true)
		}
	}
}

// r8Q23Row copies row r's GGUF block x (Q3_K or Q2_K as t) to (pack) or
// from (!pack) its place in super-block sb of an eight-row tile. Packing
// ORs the top bits of Q3_K's scales into H, which the caller clears first.
func r8Q23Row(t Type, x, sb []byte, r int, pack bool) {
	cp := func(tile, gguf []byte) {
		if pack {
			copy(tile, gguf)
		} else {
			copy(gguf, tile)
		}
	}
	quants := func(xq, sq int) {
		for n := 0; n < 2; n++ {
			for g := 0; g < 8; g++ {
				o := sq + 256*n + 32*g + 4*r
				cp(sb[o:o+4], x[xq+32*n+4*g:xq+32*n+4*g+4])
			}
		}
	}
	if t == Q2_Kr8 {
		cp(sb[2*r:2*r+2], x[80:82])
		cp(sb[16+2*r:16+2*r+2], x[82:84])
		for j := 0; j < 16; j++ {
			p := 32 + r8Pos(j, r)
			cp(sb[p:p+1], x[j:j+1])
		}
		quants(16, 160)
		return
	}
	cp(sb[2*r:2*r+2], x[108:110])
	for j := 0; j < 8; j++ {
		p := r8Pos(j, r)
		h := uint(4 * (j / 4))
		if pack {
			sb[16+p] = x[96+j]
			lo, hi := q3Scale(x[96:108], j)+32, q3Scale(x[96:108], j+8)+32
			sb[80+p%32] |= byte(lo>>4)<<h | byte(hi>>4)<<(h+2)
			continue
		}
		if j == 0 {
			clear(x[104:108])
		}
		x[96+j] = sb[16+p]
		hb := sb[80+p%32] >> h
		x[104+j%4] |= (hb&3)<<(2*(j/4)) | (hb>>2&3)<<(2*(j/4+2))
	}
	quants(32, 112)
	for g := 0; g < 8; g++ {
		cp(sb[624+32*g+4*r:624+32*g+4*r+4], x[4*g:4*g+4])
	}
}

// r8Q3Scale is (sub-block j, row r)'s signed scale (minus 32) in a Q3_Kr8
// super-block.
func r8Q3Scale(sb []byte, j, r int) int32 {
	p := r8Pos(j%8, r)
	l, h := sb[16+p], sb[80+p%32]>>uint(4*(j%8/4))
	if j >= 8 {
		l, h = l>>4, h>>2
	}
	return int32(l&15|(h&3)<<4) - 32
}

// dotR8Q23 is DotR8 for Q3_Kr8 and Q2_Kr8.
func dotR8Q23(t Type, tile, a []byte, nb int, y []float32) {
	sbs := r8SB3
	if t == Q2_Kr8 {
		sbs = r8SB2
	}
	var acc, accm [R8Rows]float32
	for b := 0; b < nb; b++ {
		sb := tile[b*sbs : (b+1)*sbs]
		ya := a[b*blockQ8K : (b+1)*blockQ8K]
		da := math.Float32frombits(u32At(ya))
		qa := ya[4:260]
		for r := 0; r < R8Rows; r++ {
			var isum, imin int32
			for n := 0; n < 2; n++ {
				for g := 0; g < 8; g++ {
					for k := 0; k < 4; k++ {
						j := 8*n + 2*k + g/4
						var s, p int32
						for i := 0; i < 4; i++ {
							var q int32
							if t == Q2_Kr8 {
								q = int32(sb[160+256*n+32*g+4*r+i] >> (2 * k) & 3)
							} else {
								q = int32(sb[112+256*n+32*g+4*r+i]>>(2*k)&3) - 4
								q += 4 * int32(sb[624+32*g+4*r+i]>>(4*n+k)&1)
							}
							p += q * int32(int8(qa[128*n+32*k+4*g+i]))
						}
						if t == Q2_Kr8 {
							s = int32(sb[32+r8Pos(j, r)] & 15)
						} else {
							s = r8Q3Scale(sb, j, r)
						}
						isum += s * p
					}
				}
			}
			acc[r] = ggmlf32.FMA32(float32(isum), float32(halfAt(sb[2*r:])*da), acc[r])
			if t == Q2_Kr8 {
				for j := 0; j < 16; j++ {
					imin += int32(sb[32+r8Pos(j, r)]>>4) * bsum(ya[260:292], j)
				}
				accm[r] = ggmlf32.FMA32(float32(imin), float32(halfAt(sb[16+2*r:])*da), accm[r])
			}
		}
	}
	for r := range R8Rows {
		y[r] = acc[r] - accm[r]
	}
}
