//go:build amd64 && !purego

package cpu

import (
	"encoding/binary"
	"math"

	"github.com/minfer/minfer/quant"
)

// Paired AVX2 GEMM kernels for Q4_K, Q5_K, Q6_K and Q3_K weights
// (gemm_kquant_avx2p_amd64.s, written by internal/asmgen from
// gemm_kquant_avx2p.go, which explains the arithmetic): one VPMADDWD by
// the scale words serves two 32-element chunks, three multiplies per two
// chunks, row and column instead of four, with the same exact int32 lanes
// as ggml's AVX2 grouping and the same float order as the plain kernels
// (gemm_kquant_avx2_amd64.go), so the same bits as quant's pure-Go dot.
//
// For that, chunks 2i and 2i+1 (i = 0..3) of a super-block are stored as
// one pair of two 32-byte halves: viewing each chunk as 16 little-endian
// words (element pairs), half A holds in dword k word 2k of chunk 2i and
// word 2k of chunk 2i+1, half B word 2k+1 of each. Both the weights (in
// the tile) and the activations (in a per-call copy, kqPairActs) are laid
// out so.
//
// Paired tile layout, per 256-element super-block of an R-row tile
// (448·R bytes):
//
//	0      Q [4 pairs][R rows][64] halves A, B of the values (Q4_K 0..15,
//	       Q5_K 0..31, Q6_K 0..63, one per byte)
//	256R   S Q4_K, Q5_K: [R][4] int32 scale words s_2i | s_2i+1<<16
//	       (broadcast by the kernel's load; the rest of the 128R bytes
//	       unused); Q6_K: [4][R][8] int32, dword k the int16 scales of lane k of
//	       chunks 2i and 2i+1 (its 16-element scales 4i and 4i+2 for
//	       k < 4, 4i+1 and 4i+3 for k ≥ 4)
//	Q4_K, Q5_K:
//	384R   DW [8] float32: lane l the d of row l mod R (one VMULPS by the
//	       activations' DA makes the 8 outputs' d_a·d_w, lane c·R+r)
//	384R+32 NDW [8] float32: lane l -dmin of row l mod R (Q4_K)
//	416R   MN [R/2][16] int16, Q4_K: rows 2p, 2p+1 interleaved, dword
//	       2t+h the mins 2t, 2t+1 of row 2p+h (against the activations'
//	       interleaved bsum pairs, VPMADDWD lane 2t+h is ggml's mins lane
//	       t of row 2p+h); Q5_K: the 8 mins of rows 2p, then of 2p+1
//	432R   NDM [R/2][8] float32: -dmin of row 2p ×4, then of 2p+1 ×4 (Q5_K)
//	Q6_K:
//	384R   O [R][16] int16: -32·scale i (the offset term against bsums)
//	416R   DW [8] float32: lane l the d of row l mod R
//	Q2_K (values 0..3; S as Q6_K's, its 16 4-bit scales):
//	384R   MN [R][16] int16: the 16 mins (against the bsums)
//	416R   DW [8] float32: lane l the d of row l mod R
//	416R+32 NDW [8] float32: lane l -dmin of row l mod R
//	Q3_K (values signed, -4..3; S as Q6_K's, its 16 scales minus 32):
//	384R   O [R][8] int32: lane k's -128·Σ_j s·(its 4 values of chunk j)
//	416R   DW [8] float32: lane l the d of row l mod R
//
// The activation copy (kqPairActs), per tile of C activation rows and
// super-block (kqPairActBytes: 288·C+32 bytes): the C rows' 256 quants in
// pairs as above, then C × 32 bytes of sums (Q4_K: the 8 bsum pair sums
// bp_i interleaved as bp0, bp1, bp0, bp1, bp2, bp3, bp2, bp3, …; Q5_K: the
// 8 twice, as kqBsumPairs; Q6_K: the 16 bsums), then DA, 8 float32 (R·C =
// 8): lane l the d of activation row l/R of the tile (Q3_K: the quants
// biased to unsigned, q+128, and no sums) (R the weight rows
// of the kernel's tile), so that with a 32-byte aligned
// buffer (align32) every quant vector the kernel reads is aligned
// (measured: the 292·C-byte blocks of the first version, half of whose
// vectors crossed a cache line, were ≈10% slower).

const kqPairTileBytes = 448

// kqPairActBytes is the size of the activations of one super-block of a
// tile of C activation rows.
func kqPairActBytes(C int) int { return 288*C + 32 }

// pairWords returns halves A and B of 8 bytes (4 words) of two chunks lo
// and hi at the same place: A dword k = lo word 2k | hi word 2k<<16,
// B dword k = lo word 2k+1 | hi word 2k+1<<16.
func pairWords(lo, hi uint64) (a, b uint64) {
	const m0, m1 = 0x0000ffff0000ffff, 0xffff0000ffff0000
	return lo&m0 | hi<<16&m1, lo>>16&m0 | hi&m1
}

// kqPairSums is the layout of the sums in a paired activation block.
type kqPairSums int

const (
	kqSumsQ4K kqPairSums = iota // bsum pairs interleaved for two rows' mins
	kqSumsQ5K                   // bsum pairs twice
	kqSumsQ6K                   // the 16 raw bsums
	kqSumsQ3K                   // none; the quants biased to unsigned (q+128)
)

// kqPairActs fills dst, for the tiles of C activation rows among the
// first M (a multiple of C), with the activation blocks the paired
// kernels of tiles of R weight rows (R·C = 8) read (layout above).
func kqPairActs(dst, act []byte, arb, nb, M, C, R int, sums kqPairSums) {
	ab := kqPairActBytes(C)
	_ = dst[M/C*nb*ab-1]
	if nb == 0 {
		return
	}
	_ = act[(M-1)*arb+nb*kqBlockQ8K-1]
	// the quants in asm (the halves as pairWords makes them), row by row
	for m := 0; m < M; m++ {
		if sums == kqSumsQ3K {
			pairActQuantsBiasedAVX2(&dst[m/C*nb*ab+256*(m%C)], &act[m*arb], nb, ab)
			continue
		}
		pairActQuantsAVX2(&dst[m/C*nb*ab+256*(m%C)], &act[m*arb], nb, ab)
	}
	o := 0
	for t := 0; t < M; t += C {
		for b := 0; b < nb; b++ {
			blk := dst[o : o+ab]
			for c := 0; c < C; c++ {
				x := act[(t+c)*arb+b*kqBlockQ8K : (t+c)*arb+b*kqBlockQ8K+kqBlockQ8K]
				s := (*[32]byte)(blk[256*C+32*c:])
				bs := (*[32]byte)(x[260:292])
				switch sums {
				case kqSumsQ3K:
				case kqSumsQ6K:
					*s = *bs
				case kqSumsQ5K:
					for i := 0; i < 8; i++ {
						v := binary.LittleEndian.Uint16(bs[4*i:]) + binary.LittleEndian.Uint16(bs[4*i+2:])
						binary.LittleEndian.PutUint16(s[2*i:], v)
						binary.LittleEndian.PutUint16(s[16+2*i:], v)
					}
				default:
					// pair sums bp_2t, bp_2t+1 as dwords 2t and 2t+1
					for t := 0; t < 4; t++ {
						v := uint32(binary.LittleEndian.Uint16(bs[8*t:])+binary.LittleEndian.Uint16(bs[8*t+2:])) |
							uint32(binary.LittleEndian.Uint16(bs[8*t+4:])+binary.LittleEndian.Uint16(bs[8*t+6:]))<<16
						binary.LittleEndian.PutUint32(s[8*t:], v)
						binary.LittleEndian.PutUint32(s[8*t+4:], v)
					}
				}
				for r := 0; r < R; r++ {
					copy(blk[288*C+4*(c*R+r):288*C+4*(c*R+r)+4], x[0:4])
				}
			}
			o += ab
		}
	}
}

// packQ4KTileP unpacks R Q4_K weight rows (row r at w[r*wrb:], nb
// super-blocks; R even) into dst in the paired layout.
func packQ4KTileP(dst, w []byte, wrb, nb, R int) { packK4TileP(dst, w, wrb, nb, R, false) }

// packQ5KTileP is packQ4KTileP for Q5_K (values 0..31).
func packQ5KTileP(dst, w []byte, wrb, nb, R int) { packK4TileP(dst, w, wrb, nb, R, true) }

// packK4TileP is packQ4KTileP (five false) or packQ5KTileP (five true):
// Q4_K's values in asm (packQ4KNibblesAVX2P), Q5_K's 8 at a time here,
// and the twelve scale bytes as three uint32 (as packK4Tile).
func packK4TileP(dst, w []byte, wrb, nb, R int, five bool) {
	tb := kqPairTileBytes * R
	bs, ql := 144, 16
	if five {
		bs, ql = 176, 48
	}
	_ = dst[nb*tb-1]
	_ = w[(R-1)*wrb+nb*bs-1]
	if !five {
		packQ4KNibblesAVX2P(&dst[0], &w[0], wrb, nb, R)
	}
	for b := 0; b < nb; b++ {
		t := dst[b*tb : (b+1)*tb]
		for r := 0; r < R; r++ {
			x := w[r*wrb+b*bs : r*wrb+b*bs+bs]
			for i := 0; i < 4 && five; i++ {
				q := (*[128]byte)(x[ql : ql+128])
				qh := (*[32]byte)(x[16:48])
				p := (*[64]byte)(t[64*(i*R+r):])
				for l := 0; l < 32; l += 8 {
					v := binary.LittleEndian.Uint64(q[32*i+l:])
					vl, vh := v&0x0f0f0f0f0f0f0f0f, v>>4&0x0f0f0f0f0f0f0f0f
					h := binary.LittleEndian.Uint64(qh[l:]) >> uint(2*i)
					vl |= (h & 0x0101010101010101) << 4
					vh |= (h >> 1 & 0x0101010101010101) << 4
					pa, pb := pairWords(vl, vh)
					binary.LittleEndian.PutUint64(p[l:], pa)
					binary.LittleEndian.PutUint64(p[32+l:], pb)
				}
			}
			u0 := binary.LittleEndian.Uint32(x[4:])
			u1 := binary.LittleEndian.Uint32(x[8:])
			u2 := binary.LittleEndian.Uint32(x[12:])
			s03, m03 := u0&0x3f3f3f3f, u1&0x3f3f3f3f
			s47 := u2&0x0f0f0f0f | (u0>>6&0x03030303)<<4
			m47 := u2>>4&0x0f0f0f0f | (u1>>6&0x03030303)<<4
			// dword i: s_2i | s_2i+1<<16
			sv := (*[16]byte)(t[256*R+16*r:])
			binary.LittleEndian.PutUint64(sv[0:], bytesToWords(s03))
			binary.LittleEndian.PutUint64(sv[8:], bytesToWords(s47))
			d := math.Float32bits(quant.FP16ToFP32(binary.LittleEndian.Uint16(x[0:])))
			nd := math.Float32bits(-quant.FP16ToFP32(binary.LittleEndian.Uint16(x[2:])))
			dv := (*[64]byte)(t[384*R:])
			for l := r; l < 8; l += R {
				binary.LittleEndian.PutUint32(dv[4*(l&7):], d)
				binary.LittleEndian.PutUint32(dv[32+4*(l&7):], nd)
			}
			p, h := r/2, 16*(r%2)
			if five {
				mn := (*[16]byte)(t[416*R+32*p+h:])
				binary.LittleEndian.PutUint64(mn[0:], bytesToWords(m03))
				binary.LittleEndian.PutUint64(mn[8:], bytesToWords(m47))
				ndm := (*[16]byte)(t[432*R+32*p+h:])
				binary.LittleEndian.PutUint64(ndm[0:], uint64(nd)|uint64(nd)<<32)
				binary.LittleEndian.PutUint64(ndm[8:], uint64(nd)|uint64(nd)<<32)
			} else {
				// dword 2t+r%2: mins 2t, 2t+1
				mn := (*[32]byte)(t[416*R+32*p+4*(r&1):])[:28]
				m03w, m47w := bytesToWords(m03), bytesToWords(m47)
				binary.LittleEndian.PutUint32(mn[0:], uint32(m03w))
				binary.LittleEndian.PutUint32(mn[8:], uint32(m03w>>32))
				binary.LittleEndian.PutUint32(mn[16:], uint32(m47w))
				binary.LittleEndian.PutUint32(mn[24:], uint32(m47w>>32))
			}
		}
	}
}

// packQ6KTileP unpacks R Q6_K weight rows (row r at w[r*wrb:], nb
// super-blocks) into dst in the paired layout: the values in asm
// (packQ6KQuantsAVX2P), the scale words here.
func packQ6KTileP(dst, w []byte, wrb, nb, R int) {
	tb := kqPairTileBytes * R
	_ = dst[nb*tb-1]
	_ = w[(R-1)*wrb+nb*210-1]
	packQ6KQuantsAVX2P(&dst[0], &w[0], wrb, nb, R)
	for b := 0; b < nb; b++ {
		t := dst[b*tb : (b+1)*tb]
		for r := 0; r < R; r++ {
			x := w[r*wrb+b*210 : r*wrb+b*210+210]
			sc := (*[16]byte)(x[192:208])
			w16 := func(i int) uint64 { return uint64(uint16(int16(int8(sc[i])))) }
			for i := 0; i < 4; i++ {
				// lanes 0..3: scales 4i (chunk 2i) and 4i+2 (chunk 2i+1);
				// lanes 4..7: 4i+1 and 4i+3
				lo := w16(4*i) | w16(4*i+2)<<16
				hi := w16(4*i+1) | w16(4*i+3)<<16
				sv := (*[32]byte)(t[256*R+32*(i*R+r):])
				binary.LittleEndian.PutUint64(sv[0:], lo|lo<<32)
				binary.LittleEndian.PutUint64(sv[8:], lo|lo<<32)
				binary.LittleEndian.PutUint64(sv[16:], hi|hi<<32)
				binary.LittleEndian.PutUint64(sv[24:], hi|hi<<32)
			}
			o := (*[32]byte)(t[384*R+32*r:])
			for i := 0; i < 16; i++ {
				binary.LittleEndian.PutUint16(o[2*i:], uint16(int16(-32*int32(int8(sc[i])))))
			}
			d := math.Float32bits(quant.FP16ToFP32(binary.LittleEndian.Uint16(x[208:])))
			for l := r; l < 8; l += R {
				binary.LittleEndian.PutUint32(t[416*R+4*l:], d)
			}
		}
	}
}

// packQ3KTileP unpacks R Q3_K weight rows (row r at w[r*wrb:], nb
// super-blocks) into dst in the paired layout: the signed values (-4..3)
// and the per-lane scale word pairs as in Q6_K's, at 384R the offsets
// [R][8] int32 of the plain tile (-128·Σ s·v per lane, which cancel the
// activations' +128 bias), at 416R DW; all but DW in asm (packQ3KAVX2P).
func packQ3KTileP(dst, w []byte, wrb, nb, R int) {
	if nb == 0 || R == 0 {
		return
	}
	tb := kqPairTileBytes * R
	_ = dst[nb*tb-1]
	_ = w[(R-1)*wrb+nb*110-1]
	packQ3KAVX2P(&dst[0], &w[0], wrb, nb, R)
	for b := 0; b < nb; b++ {
		for r := 0; r < R; r++ {
			d := math.Float32bits(quant.FP16ToFP32(binary.LittleEndian.Uint16(w[r*wrb+b*110+108:])))
			for l := r; l < 8; l += R {
				binary.LittleEndian.PutUint32(dst[b*tb+416*R+4*l:], d)
			}
		}
	}
}

// packQ2KTileP unpacks R Q2_K weight rows (row r at w[r*wrb:], nb
// super-blocks) into dst in the paired layout: the values (0..3) and the
// per-lane scale word pairs as in Q6_K's, at 384R the 16 mins as words, at
// 416R DW and at 416R+32 NDW (lane l -dmin of row l mod R); all but DW and
// NDW in asm (packQ2KAVX2P).
func packQ2KTileP(dst, w []byte, wrb, nb, R int) {
	if nb == 0 || R == 0 {
		return
	}
	tb := kqPairTileBytes * R
	_ = dst[nb*tb-1]
	_ = w[(R-1)*wrb+nb*84-1]
	packQ2KAVX2P(&dst[0], &w[0], wrb, nb, R)
	for b := 0; b < nb; b++ {
		for r := 0; r < R; r++ {
			x := w[r*wrb+b*84+80 : r*wrb+b*84+84]
			d := math.Float32bits(quant.FP16ToFP32(binary.LittleEndian.Uint16(x[0:])))
			nd := math.Float32bits(-quant.FP16ToFP32(binary.LittleEndian.Uint16(x[2:])))
			for l := r; l < 8; l += R {
				binary.LittleEndian.PutUint32(dst[b*tb+416*R+4*l:], d)
				binary.LittleEndian.PutUint32(dst[b*tb+416*R+32+4*l:], nd)
			}
		}
	}
}

//go:noescape
func pairActQuantsAVX2(dst *byte, src *byte, nb int, ab int)

//go:noescape
func pairActQuantsBiasedAVX2(dst *byte, src *byte, nb int, ab int)

//go:noescape
func packQ3KAVX2P(dst *byte, w *byte, wrb int, nb int, R int)

//go:noescape
func packQ2KAVX2P(dst *byte, w *byte, wrb int, nb int, R int)

//go:noescape
func gemmQ2KAVX2Px2x4(t *byte, nb int, a *byte, arb int, p *byte, y *float32, ldy int, mt int, fs *float32)

//go:noescape
func gemmQ2KAVX2Px4x2(t *byte, nb int, a *byte, arb int, p *byte, y *float32, ldy int, mt int, fs *float32)

//go:noescape
func gemmQ3KAVX2Px2x4(t *byte, nb int, a *byte, arb int, p *byte, y *float32, ldy int, mt int, fs *float32)

//go:noescape
func gemmQ3KAVX2Px4x2(t *byte, nb int, a *byte, arb int, p *byte, y *float32, ldy int, mt int, fs *float32)

//go:noescape
func packQ4KNibblesAVX2P(dst *byte, w *byte, wrb int, nb int, R int)

//go:noescape
func packQ6KQuantsAVX2P(dst *byte, w *byte, wrb int, nb int, R int)

//go:noescape
func gemmQ4KAVX2Px2x4(t *byte, nb int, a *byte, arb int, p *byte, y *float32, ldy int, mt int, fs *float32)

//go:noescape
func gemmQ4KAVX2Px4x2(t *byte, nb int, a *byte, arb int, p *byte, y *float32, ldy int, mt int, fs *float32)

//go:noescape
func gemmQ5KAVX2Px2x4(t *byte, nb int, a *byte, arb int, p *byte, y *float32, ldy int, mt int, fs *float32)

//go:noescape
func gemmQ5KAVX2Px4x2(t *byte, nb int, a *byte, arb int, p *byte, y *float32, ldy int, mt int, fs *float32)

//go:noescape
func gemmQ6KAVX2Px2x4(t *byte, nb int, a *byte, arb int, p *byte, y *float32, ldy int, mt int, fs *float32)

//go:noescape
func gemmQ6KAVX2Px4x2(t *byte, nb int, a *byte, arb int, p *byte, y *float32, ldy int, mt int, fs *float32)

func newKQGemmQ4KP(R, C int, kern kqGemmAsm) *kqGemm {
	g := newKQGemmQ4K(R, C, kern)
	g.name, g.tileBytes, g.paired, g.pack = g.name+"p", kqPairTileBytes, true, packQ4KTileP
	g.sums = kqSumsQ4K
	return g
}

func newKQGemmQ5KP(R, C int, kern kqGemmAsm) *kqGemm {
	g := newKQGemmQ5K(R, C, kern)
	g.name, g.tileBytes, g.paired, g.pack = g.name+"p", kqPairTileBytes, true, packQ5KTileP
	g.sums = kqSumsQ5K
	return g
}

func newKQGemmQ2KP(R, C int, kern kqGemmAsm) *kqGemm {
	g := newKQGemmQ2K(R, C, kern)
	g.name, g.tileBytes, g.paired, g.pack = g.name+"p", kqPairTileBytes, true, packQ2KTileP
	g.sums = kqSumsQ6K // the 16 raw bsums, as Q6_K's (the blocks are shared)
	return g
}

func newKQGemmQ3KP(R, C int, kern kqGemmAsm) *kqGemm {
	g := newKQGemmQ3K(R, C, kern)
	g.name, g.tileBytes, g.paired, g.biased, g.pack = g.name+"p", kqPairTileBytes, true, false, packQ3KTileP
	g.sums = kqSumsQ3K
	return g
}

func newKQGemmQ6KP(R, C int, kern kqGemmAsm) *kqGemm {
	g := newKQGemmQ6K(R, C, kern)
	g.name, g.tileBytes, g.paired, g.pack = g.name+"p", kqPairTileBytes, true, packQ6KTileP
	g.sums = kqSumsQ6K
	return g
}
