//go:build amd64 && !purego

package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"github.com/minfer/minfer/quant"
)

// AVX2 GEMM kernels for the prefill mat-muls of K-quant weights against
// Q8_K activations (gemm_kquant_avx2_amd64.s, written by internal/asmgen).
//
// The weights are first unpacked, a tile of R rows at a time, into the
// layouts below (packQ4KTile, packQ5KTile, packQ6KTile, packQ2KTile,
// packQ3KTile: plain functions of the weight bytes, so a plan could store
// them ready-made). One asm call then computes the R×C outputs of mt
// tiles of C activation rows against that weight tile: every unpacked
// weight chunk and its scale words are loaded once per C activation rows,
// and the activations are read as memory operands of VPMADDUBSW (Q3_K:
// the other way round, see its layout). Every output keeps the float
// order of the AVX2 row kernel and of quant's pure-Go dot (ggml's x86
// AVX2 ggml_vec_dot_q*_K_q8_K): per super-block 8 exact int32 lanes
// (lane k: elements 4k..4k+3 of every 32-element chunk), float32
// d = d_a·d_w, one FMA per lane into an 8-lane accumulator (Q4_K: also
// the 4-lane mins FMA with -(d_a·dmin_w); Q5_K: a scalar one with the
// exact mins sum; Q2_K: first an 8-lane FMA with the mins), super-blocks
// in order, then hsum_float_8 (Q4_K: + (m0+m2)+(m1+m3); Q5_K: + summs).
// Per call the wrapper also prepares per-activation data the kernels
// read at p: bsum pair sums (Q4_K, Q5_K) or quants biased to unsigned
// (Q3_K).
//
// The wrapper sweeps a group of weight tiles (gemmKQGroupRows rows,
// unpacked once per call) over blocks of activation rows that fit in L2
// (gemmKQActBlock bytes), so each block is reused by every tile of the
// group. Weight rows left over (fewer than R) and activation rows left
// over (fewer than C) go to the row kernels, whose bits are the same.

// Unpacked tile layouts, per 256-element super-block of an R-row tile
// (super-block b of the tile at b·tileBytes; "chunk" j is the 32 weights
// multiplied with the activation bytes 32j..32j+31 of the super-block):
//
// Q4_K and Q5_K (values 0..31, the 5th bit from qh), 324·R bytes:
//
//	0      Q [8 chunks][R rows][32] the 4-bit values 0..15, one per byte
//	256R   S [8][R] uint32 the chunk's 6-bit scale s as s | s<<16
//	288R   D [R] float32 d (the f16 super-block scale)
//	292R   MN [R/2][16] int16: the 8 mins of rows 2p, then of 2p+1
//	308R   NDM [R/2][8] float32: -dmin of row 2p ×4, then of 2p+1 ×4
//
// Q6_K, 548·R bytes (chunk j = 4n+s: half n, quarter s of ggml's loop):
//
//	0      Q [8][R][32] the 6-bit values 0..63 (unsigned, as stored)
//	256R   S [8][R][16] int16: scale 8n+2s ×8, then scale 8n+2s+1 ×8
//	512R   O [R][16] int16: -32·scale i (the offset term against bsums)
//	544R   D [R] float32 d
//
// Q2_K, 552·R bytes (chunk j = 4·half + shift/2):
//
//	0      Q [8][R][32] the 2-bit values 0..3
//	256R   S [8][R][16] int16: scale 2j (low nibble) ×8, then 2j+1 ×8
//	512R   MN [R][16] int16: the 16 mins (high nibbles)
//	544R   D [R] float32 d
//	548R   ND [R] float32 -dmin
//
// Q3_K, 548·R bytes (chunk j = 4·half + shift/2):
//
//	0      Q [8][R][32] the signed 3-bit values -4..3 (q - 4 where the hmask bit is clear)
//	256R   S [8][R][16] int16: scale 2j - 32 ×8, then 2j+1 - 32 ×8
//	512R   O [R][8] int32: lane k's -128·Σ_j s·(its 4 values of chunk j),
//	       which cancels the activations' +128 bias
//	544R   D [R] float32 d

const (
	q4kTileBytes = 324 // per row and super-block
	q6kTileBytes = 548
	q2kTileBytes = 552
)

// packQ3KTile unpacks R Q3_K weight rows (row r at w[r*wrb:], nb
// super-blocks) into dst in the layout above: the values, scale words and
// lane offsets in asm (packQ3KAVX2), d here (packQ3KTileRef in
// pack_test.go states the layout byte by byte).
func packQ3KTile(dst, w []byte, wrb, nb, R int) {
	if nb == 0 || R == 0 {
		return
	}
	tb := q6kTileBytes * R
	_ = dst[nb*tb-1]
	_ = w[(R-1)*wrb+nb*110-1]
	packQ3KAVX2(&dst[0], &w[0], wrb, nb, R)
	for b := 0; b < nb; b++ {
		for r := 0; r < R; r++ {
			d := quant.FP16ToFP32(binary.LittleEndian.Uint16(w[r*wrb+b*110+108:]))
			binary.LittleEndian.PutUint32(dst[b*tb+544*R+4*r:], math.Float32bits(d))
		}
	}
}

// kqBiasedActs fills dst, for the tiles of C activation rows among the
// first M (a multiple of C), tile after tile, super-block after
// super-block, row after row, with the 256 quants of that Q8_K
// super-block biased to unsigned (q+128, q XOR 0x80), which the Q3_K
// kernel multiplies with the signed weights.
func kqBiasedActs(dst, act []byte, arb, nb, M, C int) {
	_ = dst[M*nb*256-1]
	o := 0
	for t := 0; t < M; t += C {
		for b := 0; b < nb; b++ {
			for c := 0; c < C; c++ {
				q := act[(t+c)*arb+b*kqBlockQ8K+4 : (t+c)*arb+b*kqBlockQ8K+260]
				d := dst[o : o+256]
				for l := 0; l < 256; l += 8 {
					binary.LittleEndian.PutUint64(d[l:], binary.LittleEndian.Uint64(q[l:])^0x8080808080808080)
				}
				o += 256
			}
		}
	}
}

// packQ2KTile unpacks R Q2_K weight rows (row r at w[r*wrb:], nb
// super-blocks) into dst in the layout above: the values, scale and min
// words in asm (packQ2KAVX2), d and -dmin here (packQ2KTileRef in
// pack_test.go states the layout byte by byte).
func packQ2KTile(dst, w []byte, wrb, nb, R int) {
	if nb == 0 || R == 0 {
		return
	}
	tb := q2kTileBytes * R
	_ = dst[nb*tb-1]
	_ = w[(R-1)*wrb+nb*84-1]
	packQ2KAVX2(&dst[0], &w[0], wrb, nb, R)
	for b := 0; b < nb; b++ {
		for r := 0; r < R; r++ {
			x := w[r*wrb+b*84+80 : r*wrb+b*84+84]
			d := quant.FP16ToFP32(binary.LittleEndian.Uint16(x[0:]))
			nd := -quant.FP16ToFP32(binary.LittleEndian.Uint16(x[2:]))
			binary.LittleEndian.PutUint32(dst[b*tb+544*R+4*r:], math.Float32bits(d))
			binary.LittleEndian.PutUint32(dst[b*tb+548*R+4*r:], math.Float32bits(nd))
		}
	}
}

// packQ4KTile unpacks R Q4_K weight rows (row r at w[r*wrb:], nb
// super-blocks; R even) into dst in the layout above.
func packQ4KTile(dst, w []byte, wrb, nb, R int) { packK4Tile(dst, w, wrb, nb, R, false) }

// packQ5KTile unpacks R Q5_K weight rows into dst in the Q4_K layout, the
// values being 5-bit (0..31) and the rest the same.
func packQ5KTile(dst, w []byte, wrb, nb, R int) { packK4Tile(dst, w, wrb, nb, R, true) }

// packK4Tile is packQ4KTile (five false) or packQ5KTile (five true). It
// runs once per weight row and prefill call, reading the weights from
// memory, so it works on whole words: Q4_K's nibbles in asm
// (packQ4KNibblesAVX2), Q5_K's 8 at a time, and the twelve scale bytes as
// three uint32 (get_scale_min_k4 on four sub-blocks at once).
func packK4Tile(dst, w []byte, wrb, nb, R int, five bool) {
	tb := q4kTileBytes * R
	bs, ql := 144, 16
	if five {
		bs, ql = 176, 48
	}
	_ = dst[nb*tb-1]
	_ = w[(R-1)*wrb+nb*bs-1]
	if !five {
		packQ4KNibblesAVX2(&dst[0], &w[0], wrb, nb, R)
	}
	for b := 0; b < nb; b++ {
		t := dst[b*tb : (b+1)*tb]
		for r := 0; r < R; r++ {
			x := w[r*wrb+b*bs : r*wrb+b*bs+bs]
			for i := 0; i < 4 && five; i++ {
				q := (*[128]byte)(x[ql : ql+128])
				qh := (*[32]byte)(x[16:48])
				lo := (*[32]byte)(t[32*(2*i*R+r):])
				hi := (*[32]byte)(t[32*((2*i+1)*R+r):])
				for l := 0; l < 32; l += 8 {
					v := binary.LittleEndian.Uint64(q[32*i+l:])
					vl, vh := v&0x0f0f0f0f0f0f0f0f, v>>4&0x0f0f0f0f0f0f0f0f
					h := binary.LittleEndian.Uint64(qh[l:]) >> uint(2*i)
					vl |= (h & 0x0101010101010101) << 4
					vh |= (h >> 1 & 0x0101010101010101) << 4
					binary.LittleEndian.PutUint64(lo[l:], vl)
					binary.LittleEndian.PutUint64(hi[l:], vh)
				}
			}
			// scales s0..s7 and mins m0..m7, four to a uint32
			u0 := binary.LittleEndian.Uint32(x[4:])
			u1 := binary.LittleEndian.Uint32(x[8:])
			u2 := binary.LittleEndian.Uint32(x[12:])
			s03, m03 := u0&0x3f3f3f3f, u1&0x3f3f3f3f
			s47 := u2&0x0f0f0f0f | (u0>>6&0x03030303)<<4
			m47 := u2>>4&0x0f0f0f0f | (u1>>6&0x03030303)<<4
			sv := t[256*R:]
			for j := 0; j < 4; j++ {
				s := s03 >> uint(8*j) & 0xff
				binary.LittleEndian.PutUint32(sv[4*(j*R+r):], s|s<<16)
				s = s47 >> uint(8*j) & 0xff
				binary.LittleEndian.PutUint32(sv[4*((j+4)*R+r):], s|s<<16)
			}
			p, h := r/2, 16*(r%2)
			mn := (*[16]byte)(t[292*R+32*p+h:])
			binary.LittleEndian.PutUint64(mn[0:], bytesToWords(m03))
			binary.LittleEndian.PutUint64(mn[8:], bytesToWords(m47))
			d := quant.FP16ToFP32(binary.LittleEndian.Uint16(x[0:]))
			nd := uint64(math.Float32bits(-quant.FP16ToFP32(binary.LittleEndian.Uint16(x[2:]))))
			binary.LittleEndian.PutUint32(t[288*R+4*r:], math.Float32bits(d))
			ndm := (*[16]byte)(t[308*R+32*p+h:])
			binary.LittleEndian.PutUint64(ndm[0:], nd|nd<<32)
			binary.LittleEndian.PutUint64(ndm[8:], nd|nd<<32)
		}
	}
}

// bytesToWords widens the four bytes of v to four little-endian uint16.
func bytesToWords(v uint32) uint64 {
	x := uint64(v)
	x = (x | x<<16) & 0x0000ffff0000ffff
	return (x | x<<8) & 0x00ff00ff00ff00ff
}

// packQ6KTile unpacks R Q6_K weight rows (row r at w[r*wrb:], nb
// super-blocks) into dst in the layout above: the values in asm
// (packQ6KQuantsAVX2), the scale words here, 8 bytes at a time.
func packQ6KTile(dst, w []byte, wrb, nb, R int) {
	tb := q6kTileBytes * R
	_ = dst[nb*tb-1]
	_ = w[(R-1)*wrb+nb*210-1]
	packQ6KQuantsAVX2(&dst[0], &w[0], wrb, nb, R)
	for b := 0; b < nb; b++ {
		t := dst[b*tb : (b+1)*tb]
		for r := 0; r < R; r++ {
			x := w[r*wrb+b*210 : r*wrb+b*210+210]
			sc := (*[16]byte)(x[192:208])
			for j := 0; j < 8; j++ {
				sv := (*[32]byte)(t[256*R+32*(j*R+r):])
				a := uint64(uint16(int16(int8(sc[2*j])))) * 0x0001000100010001
				c := uint64(uint16(int16(int8(sc[2*j+1])))) * 0x0001000100010001
				binary.LittleEndian.PutUint64(sv[0:], a)
				binary.LittleEndian.PutUint64(sv[8:], a)
				binary.LittleEndian.PutUint64(sv[16:], c)
				binary.LittleEndian.PutUint64(sv[24:], c)
			}
			o := (*[32]byte)(t[512*R+32*r:])
			for i := 0; i < 16; i += 4 {
				v := uint64(uint16(int16(-32*int32(int8(sc[i]))))) | uint64(uint16(int16(-32*int32(int8(sc[i+1])))))<<16 |
					uint64(uint16(int16(-32*int32(int8(sc[i+2])))))<<32 | uint64(uint16(int16(-32*int32(int8(sc[i+3])))))<<48
				binary.LittleEndian.PutUint64(o[2*i:], v)
			}
			d := quant.FP16ToFP32(binary.LittleEndian.Uint16(x[208:]))
			binary.LittleEndian.PutUint32(t[544*R+4*r:], math.Float32bits(d))
		}
	}
}

//go:noescape
func packQ4KNibblesAVX2(dst *byte, w *byte, wrb int, nb int, R int)

//go:noescape
func packQ6KQuantsAVX2(dst *byte, w *byte, wrb int, nb int, R int)

//go:noescape
func packQ3KAVX2(dst *byte, w *byte, wrb int, nb int, R int)

//go:noescape
func packQ2KAVX2(dst *byte, w *byte, wrb int, nb int, R int)

//go:noescape
func prefetchL2(p *byte, n int)

type kqGemmAsm func(t *byte, nb int, a *byte, arb int, p *byte, y *float32, ldy int, mt int, fs *float32)

//go:noescape
func gemmQ2KAVX2x2x6(t *byte, nb int, a *byte, arb int, p *byte, y *float32, ldy int, mt int, fs *float32)

//go:noescape
func gemmQ2KAVX2x4x3(t *byte, nb int, a *byte, arb int, p *byte, y *float32, ldy int, mt int, fs *float32)

//go:noescape
func gemmQ2KAVX2x2x4(t *byte, nb int, a *byte, arb int, p *byte, y *float32, ldy int, mt int, fs *float32)

//go:noescape
func gemmQ2KAVX2x4x2(t *byte, nb int, a *byte, arb int, p *byte, y *float32, ldy int, mt int, fs *float32)

//go:noescape
func gemmQ3KAVX2x2x6(t *byte, nb int, a *byte, arb int, p *byte, y *float32, ldy int, mt int, fs *float32)

//go:noescape
func gemmQ3KAVX2x4x3(t *byte, nb int, a *byte, arb int, p *byte, y *float32, ldy int, mt int, fs *float32)

//go:noescape
func gemmQ3KAVX2x2x4(t *byte, nb int, a *byte, arb int, p *byte, y *float32, ldy int, mt int, fs *float32)

//go:noescape
func gemmQ3KAVX2x4x2(t *byte, nb int, a *byte, arb int, p *byte, y *float32, ldy int, mt int, fs *float32)

// kqGemm describes one AVX2 K-quant GEMM: tile shape, asm kernel, the
// row kernel for remainders, and the weight type's tile layout.
type kqGemm struct {
	name      string
	R, C      int
	kern      kqGemmAsm
	rows      kqRowsAsm
	wts       int        // weight bytes per super-block
	tileBytes int        // unpacked bytes per row and super-block
	mins      bool       // Q4_K, Q5_K: the kernel reads bsum pairs (kqBsumPairs) at p
	biased    bool       // Q3_K: the kernel reads biased activations (kqBiasedActs) at p
	paired    bool       // Q4_K, Q5_K, Q6_K paired kernels: activation blocks (kqPairActs) at p
	sums      kqPairSums // paired: the layout of the sums in the activation blocks
	pack      func(dst, w []byte, wrb, nb, R int)
}

// fsFloats is the size of the kernel's float scratch.
func (g *kqGemm) fsFloats() int {
	n := 8 * g.R * g.C
	if g.mins {
		n += 4 * g.R * g.C
	}
	if g.paired {
		n += 16 // the super-block's products d_a·d_w, d_a·(-dmin_w)
	}
	return n
}

// gemmKQGroupRows is the number of weight rows unpacked together and swept
// over each block of activation rows; gemmKQActBlock bounds the bytes of
// such a block (kept in L2). Neither changes any result.
var (
	gemmKQGroupRows = 32
	gemmKQActBlock  = 192 << 10
)

type kqScratch struct {
	b, p []byte
	f    []float32
}

// kqBsumPairs fills dst, for the tiles of C activation rows among the
// first M (a multiple of C), tile after tile, super-block after
// super-block, row after row, with 32 bytes: the 8 int16 sums
// bsums[2i]+bsums[2i+1] of that Q8_K super-block, twice (what the Q4_K and
// Q5_K kernels multiply with two weight rows' mins).
func kqBsumPairs(dst, act []byte, arb, nb, M, C int) {
	_ = dst[M*nb*32-1]
	o := 0
	for t := 0; t < M; t += C {
		for b := 0; b < nb; b++ {
			for c := 0; c < C; c++ {
				bs := act[(t+c)*arb+b*kqBlockQ8K+260 : (t+c)*arb+b*kqBlockQ8K+292]
				d := dst[o : o+32]
				for i := 0; i < 8; i++ {
					v := binary.LittleEndian.Uint16(bs[4*i:]) + binary.LittleEndian.Uint16(bs[4*i+2:])
					binary.LittleEndian.PutUint16(d[2*i:], v)
					binary.LittleEndian.PutUint16(d[16+2*i:], v)
				}
				o += 32
			}
		}
	}
}

var kqScratchPool = sync.Pool{New: func() any { return new(kqScratch) }}

// actBlock writes tiles t0..t1 (C rows each, pb bytes per tile and
// super-block) of the per-activation data the kernel reads: the paired
// kernels' blocks, the bsum pairs or the biased quants. A tile's bytes
// come from its own rows only.
func (g *kqGemm) actBlock(pairs, act []byte, arb, nb, C, R, pb, t0, t1 int) {
	dst, a, m := pairs[t0*nb*pb:t1*nb*pb], act[t0*C*arb:], (t1-t0)*C
	switch {
	case g.paired:
		kqPairActs(dst, a, arb, nb, m, C, R, g.sums)
	case g.mins:
		kqBsumPairs(dst, a, arb, nb, m, C)
	default:
		kqBiasedActs(dst, a, arb, nb, m, C)
	}
}

// gemm is the GemmFunc.
func (g *kqGemm) gemm(K int, w []byte, wrb int, act []byte, arb, M int, y []float32, ldy, n0, n1 int) {
	g.gemmCached(K, w, wrb, act, arb, M, y, ldy, n0, n1, nil)
}

// kqActKind is the kind of activation block a kqGemm derives (actKey.kind).
const (
	kqActPaired = 1 + iota // + the kqPairSums layout
	kqActMins   = 16
	kqActBiased = 17
)

// gemmCached is the GemmCachedFunc: gemm with its activation blocks (the
// paired blocks, bsum pairs or biased quants of the first MC rows) taken
// from c when an earlier call on the same rows derived them.
func (g *kqGemm) gemmCached(K int, w []byte, wrb int, act []byte, arb, M int, y []float32, ldy, n0, n1 int, c *ActCache) {
	if n1 <= n0 || M <= 0 {
		return
	}
	nb := K / 256
	if K%256 != 0 || n0 < 0 || nb*g.wts > wrb || nb*kqBlockQ8K > arb {
		panic(fmt.Sprintf("cpu: %s avx2 gemm: bad shape K=%d wrb=%d arb=%d", g.name, K, wrb, arb))
	}
	if M > 1 && ldy < n1 {
		panic("cpu: gemm output stride shorter than the rows")
	}
	_ = y[(M-1)*ldy+n1-1]
	if nb == 0 {
		for m := 0; m < M; m++ {
			clear(y[m*ldy+n0 : m*ldy+n1])
		}
		return
	}
	_ = w[(n1-1)*wrb+nb*g.wts-1]
	_ = act[(M-1)*arb+nb*kqBlockQ8K-1]
	R, C := g.R, g.C
	MC := M - M%C
	NR := n0 + (n1-n0)/R*R
	if MC > 0 && NR > n0 {
		tb := nb * g.tileBytes * R // bytes of one unpacked tile
		group := max(1, gemmKQGroupRows/R)
		block := max(C, gemmKQActBlock/arb/C*C)
		sp := kqScratchPool.Get().(*kqScratch)
		if need := group*tb + 31; cap(sp.b) < need {
			sp.b = make([]byte, need)
		}
		if need := g.fsFloats(); cap(sp.f) < need {
			sp.f = make([]float32, need)
		}
		buf, fs := align32(sp.b[:cap(sp.b)], group*tb), sp.f[:g.fsFloats()]
		// per-activation data the kernel reads at p, pb bytes per tile of
		// C rows and super-block: bsum pairs (Q4_K, Q5_K, 32 bytes per
		// row), biased quants (Q3_K, 256 per row) or the paired kernels'
		// activation blocks (kqPairActBytes)
		var pairs []byte
		pp, pb := (*byte)(nil), 0
		switch {
		case g.paired:
			pb = kqPairActBytes(C)
		case g.mins:
			pb = 32 * C
		case g.biased:
			pb = 256 * C
		}
		if pb > 0 {
			if c != nil {
				key := actKey{act: &act[0], arb: arb, nb: nb, M: MC, C: C, kind: kqActBiased}
				switch {
				case g.paired:
					key.R, key.kind = R, kqActPaired+int(g.sums)
				case g.mins:
					key.kind = kqActMins
				}
				if c.sharer != nil {
					pairs = c.sharer.Share(key, MC/C*nb*pb, MC/C, func(dst []byte, t0, t1 int) {
						g.actBlock(dst, act, arb, nb, C, R, pb, t0, t1)
					})
				}
				if pairs == nil {
					pairs = c.derived(key, MC/C*nb*pb, func(dst []byte) { g.actBlock(dst, act, arb, nb, C, R, pb, 0, MC/C) })
				}
			} else {
				if need := MC/C*nb*pb + 31; cap(sp.p) < need {
					sp.p = make([]byte, need)
				}
				pairs = align32(sp.p[:cap(sp.p)], MC/C*nb*pb)
				g.actBlock(pairs, act, arb, nb, C, R, pb, 0, MC/C)
			}
		}
		for ng := n0; ng < NR; ng += group * R {
			ge := min(ng+group*R, NR)
			for n := ng; n < ge; n += R {
				g.pack(buf[(n-ng)/R*tb:(n-ng)/R*tb+tb], w[n*wrb:], wrb, nb, R)
			}
			// the next group's weight rows, to L2 while this one is swept
			if ne := min(ge+group*R, NR); ne > ge {
				prefetchL2(&w[ge*wrb], (ne-ge-1)*wrb+nb*g.wts)
			}
			for m0 := 0; m0 < MC; m0 += block {
				mt := (min(m0+block, MC) - m0) / C
				if pb > 0 {
					pp = &pairs[m0/C*nb*pb]
				}
				for n := ng; n < ge; n += R {
					g.kern(&buf[(n-ng)/R*tb], nb, &act[m0*arb], arb, pp, &y[m0*ldy+n], ldy, mt, &fs[0])
				}
			}
		}
		kqScratchPool.Put(sp)
	} else {
		NR = n0
	}
	if NR < n1 {
		for m := 0; m < MC; m++ {
			g.rows(&w[NR*wrb], wrb, &act[m*arb], &y[m*ldy+NR], n1-NR, nb)
		}
	}
	for m := MC; m < M; m++ {
		g.rows(&w[n0*wrb], wrb, &act[m*arb], &y[m*ldy+n0], n1-n0, nb)
	}
}

func newKQGemmQ4K(R, C int, kern kqGemmAsm) *kqGemm {
	return &kqGemm{name: fmt.Sprintf("q4_K %dx%d", R, C), R: R, C: C, kern: kern, rows: kqRowsQ4KAVX2,
		wts: 144, tileBytes: q4kTileBytes, mins: true, pack: packQ4KTile}
}

func newKQGemmQ5K(R, C int, kern kqGemmAsm) *kqGemm {
	return &kqGemm{name: fmt.Sprintf("q5_K %dx%d", R, C), R: R, C: C, kern: kern, rows: kqRowsQ5KAVX2,
		wts: 176, tileBytes: q4kTileBytes, mins: true, pack: packQ5KTile}
}

func newKQGemmQ2K(R, C int, kern kqGemmAsm) *kqGemm {
	return &kqGemm{name: fmt.Sprintf("q2_K %dx%d", R, C), R: R, C: C, kern: kern, rows: kqRowsQ2KAVX2,
		wts: 84, tileBytes: q2kTileBytes, pack: packQ2KTile}
}

func newKQGemmQ3K(R, C int, kern kqGemmAsm) *kqGemm {
	return &kqGemm{name: fmt.Sprintf("q3_K %dx%d", R, C), R: R, C: C, kern: kern, rows: kqRowsQ3KAVX2,
		wts: 110, tileBytes: q6kTileBytes, biased: true, pack: packQ3KTile}
}

func newKQGemmQ6K(R, C int, kern kqGemmAsm) *kqGemm {
	return &kqGemm{name: fmt.Sprintf("q6_K %dx%d", R, C), R: R, C: C, kern: kern, rows: kqRowsQ6KAVX2,
		wts: 210, tileBytes: q6kTileBytes, pack: packQ6KTile}
}

// kqGemmsAVX2 lists every generated AVX2 K-quant GEMM by type (the tests
// check them all); the first of each type is the one registered. Q4_K,
// Q5_K, Q6_K: the paired 2×4 kernel (gemm_kquant_avx2p_amd64.go), ≈15%
// faster than the plain 2×6 it replaced at M=512 (BenchmarkGemmKQuantAVX2,
// Zen 5; the plain Q4_K, Q5_K, Q6_K kernels are no longer generated);
// Q2_K: the paired 2×4 and Q3_K the paired 4×2 (since 2026-12-03; at
// M=512, N=K=1024, GMAC/cpu-s: Q2_K 102 against the plain 2×6's 73 and
// the paired 4×2's 90; Q3_K 96 against the plain 4×3's 62 and the paired
// 2×4's 86).
var kqGemmsAVX2 = map[quant.Type][]*kqGemm{
	quant.Q4_K: {
		newKQGemmQ4KP(2, 4, gemmQ4KAVX2Px2x4),
		newKQGemmQ4KP(4, 2, gemmQ4KAVX2Px4x2),
	},
	quant.Q5_K: {
		newKQGemmQ5KP(2, 4, gemmQ5KAVX2Px2x4),
		newKQGemmQ5KP(4, 2, gemmQ5KAVX2Px4x2),
	},
	quant.Q2_K: {
		newKQGemmQ2KP(2, 4, gemmQ2KAVX2Px2x4),
		newKQGemmQ2KP(4, 2, gemmQ2KAVX2Px4x2),
		newKQGemmQ2K(2, 6, gemmQ2KAVX2x2x6),
		newKQGemmQ2K(4, 3, gemmQ2KAVX2x4x3),
		newKQGemmQ2K(2, 4, gemmQ2KAVX2x2x4),
		newKQGemmQ2K(4, 2, gemmQ2KAVX2x4x2),
	},
	quant.Q3_K: {
		newKQGemmQ3KP(4, 2, gemmQ3KAVX2Px4x2),
		newKQGemmQ3KP(2, 4, gemmQ3KAVX2Px2x4),
		newKQGemmQ3K(4, 3, gemmQ3KAVX2x4x3), // its weights are memory operands: 4×3 wins
		newKQGemmQ3K(2, 6, gemmQ3KAVX2x2x6),
		newKQGemmQ3K(2, 4, gemmQ3KAVX2x2x4),
		newKQGemmQ3K(4, 2, gemmQ3KAVX2x4x2),
	},
	quant.Q6_K: {
		newKQGemmQ6KP(2, 4, gemmQ6KAVX2Px2x4),
		newKQGemmQ6KP(4, 2, gemmQ6KAVX2Px4x2),
	},
}

// registerKQGemmAVX2 installs the AVX2 K-quant GEMMs. The choice is
// explicit rather than a matter of init order: on a machine with the
// AVX-512 VNNI tier, Q4_K, Q5_K and Q6_K keep their AVX-512 GEMMs
// (gemm_kquant_avx512_amd64.go registers them only when hasVNNI), and these are
// installed only where that tier is absent or its 512-bit ops run at half
// rate (zmmHalfRate); Q2_K and Q3_K have no VNNI
// GEMM, and their AVX2 GEMMs beat the AVX2 row-kernel loop there too
// (BenchmarkGemmKQuantAVX2: ≈1.5× and ≈2× at M=512), so they are
// installed whenever AVX2 is.
func registerKQGemmAVX2() {
	if !hasAVX2 {
		return
	}
	if !hasVNNI || zmmHalfRate() {
		registerGemmCached(quant.Q4_K, "avx2", kqGemmsAVX2[quant.Q4_K][0].C, kqGemmsAVX2[quant.Q4_K][0].gemmCached)
		registerGemmCached(quant.Q5_K, "avx2", kqGemmsAVX2[quant.Q5_K][0].C, kqGemmsAVX2[quant.Q5_K][0].gemmCached)
		registerGemmCached(quant.Q6_K, "avx2", kqGemmsAVX2[quant.Q6_K][0].C, kqGemmsAVX2[quant.Q6_K][0].gemmCached)
	}
	registerGemmCached(quant.Q2_K, "avx2", kqGemmsAVX2[quant.Q2_K][0].C, kqGemmsAVX2[quant.Q2_K][0].gemmCached)
	registerGemmCached(quant.Q3_K, "avx2", kqGemmsAVX2[quant.Q3_K][0].C, kqGemmsAVX2[quant.Q3_K][0].gemmCached)
}

func init() { registerKQGemmAVX2() }
