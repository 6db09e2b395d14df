//go:build amd64 && !purego

package cpu

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/minfer/minfer/quant"
)

// packK4TileRef is the plain, byte-at-a-time statement of the Q4_K/Q5_K
// tile layout (gemm_kquant_avx2_amd64.go), kept as the reference for the
// word-at-a-time packK4Tile.
func packK4TileRef(dst, w []byte, wrb, nb, R int, five bool) {
	tb := q4kTileBytes * R
	bs, ql := 144, 16
	if five {
		bs, ql = 176, 48
	}
	for b := 0; b < nb; b++ {
		t := dst[b*tb : (b+1)*tb]
		for r := 0; r < R; r++ {
			x := w[r*wrb+b*bs : r*wrb+b*bs+bs]
			for i := 0; i < 4; i++ {
				for l := 0; l < 32; l++ {
					v := x[ql+32*i+l]
					lo, hi := v&15, v>>4
					if five {
						lo |= (x[16+l] >> uint(2*i) & 1) << 4
						hi |= (x[16+l] >> uint(2*i+1) & 1) << 4
					}
					t[32*(2*i*R+r)+l] = lo
					t[32*((2*i+1)*R+r)+l] = hi
				}
			}
			p, h := r/2, 16*(r%2)
			for j := 0; j < 8; j++ {
				s, m := q4kScaleMin(j, x[4:16])
				binary.LittleEndian.PutUint32(t[256*R+4*(j*R+r):], uint32(s)|uint32(s)<<16)
				binary.LittleEndian.PutUint16(t[292*R+32*p+h+2*j:], uint16(m))
			}
			d := quant.FP16ToFP32(binary.LittleEndian.Uint16(x[0:]))
			nd := -quant.FP16ToFP32(binary.LittleEndian.Uint16(x[2:]))
			binary.LittleEndian.PutUint32(t[288*R+4*r:], math.Float32bits(d))
			for l := 0; l < 4; l++ {
				binary.LittleEndian.PutUint32(t[308*R+32*p+h+4*l:], math.Float32bits(nd))
			}
		}
	}
}

// q4kScaleMin is get_scale_min_k4: the 6-bit scale and min of sub-block j
// from a Q4_K block's 12 scale bytes.
func q4kScaleMin(j int, q []byte) (sc, m byte) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xf | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// packQ6KTileRef is the plain statement of the Q6_K tile layout, the
// reference for packQ6KTile.
func packQ6KTileRef(dst, w []byte, wrb, nb, R int) {
	tb := q6kTileBytes * R
	_ = dst[nb*tb-1]
	for b := 0; b < nb; b++ {
		t := dst[b*tb : (b+1)*tb]
		for r := 0; r < R; r++ {
			x := w[r*wrb+b*210 : r*wrb+b*210+210]
			sc := x[192:208]
			for n := 0; n < 2; n++ {
				ql := x[64*n : 64*n+64]
				qh := x[128+32*n : 128+32*n+32]
				for s := 0; s < 4; s++ {
					j := 4*n + s
					q := t[32*(j*R+r) : 32*(j*R+r)+32]
					src := ql[32*(s&1) : 32*(s&1)+32]
					sh := uint(4 * (s >> 1))
					for l := 0; l < 32; l += 8 {
						v := binary.LittleEndian.Uint64(src[l:]) >> sh & 0x0f0f0f0f0f0f0f0f
						hb := binary.LittleEndian.Uint64(qh[l:]) >> uint(2*s) & 0x0303030303030303
						binary.LittleEndian.PutUint64(q[l:], v|hb<<4)
					}
					sv := t[256*R+32*(j*R+r) : 256*R+32*(j*R+r)+32]
					a := uint64(uint16(int16(int8(sc[8*n+2*s])))) * 0x0001000100010001
					c := uint64(uint16(int16(int8(sc[8*n+2*s+1])))) * 0x0001000100010001
					binary.LittleEndian.PutUint64(sv[0:], a)
					binary.LittleEndian.PutUint64(sv[8:], a)
					binary.LittleEndian.PutUint64(sv[16:], c)
					binary.LittleEndian.PutUint64(sv[24:], c)
				}
			}
			for i := 0; i < 16; i++ {
				binary.LittleEndian.PutUint16(t[512*R+32*r+2*i:], uint16(int16(-32*int32(int8(sc[i])))))
			}
			d := quant.FP16ToFP32(binary.LittleEndian.Uint16(x[208:]))
			binary.LittleEndian.PutUint32(t[544*R+4*r:], math.Float32bits(d))
		}
	}
}

// q3kScale is the signed 6-bit scale j (0..15) of a Q3_K block, minus 32,
// from its 12 scale bytes.
func q3kScale(sc []byte, j int) int32 {
	lo := sc[j%8] >> (4 * uint(j/8)) & 0xf
	hi := sc[8+j%4] >> (2 * uint(j/4)) & 3
	return int32(lo|hi<<4) - 32
}

// packQ3KTileRef is the plain, byte-at-a-time statement of the Q3_K tile
// layout (gemm_kquant_avx2_amd64.go), the reference for packQ3KTile.
func packQ3KTileRef(dst, w []byte, wrb, nb, R int) {
	tb := q6kTileBytes * R
	_ = dst[nb*tb-1]
	for b := 0; b < nb; b++ {
		t := dst[b*tb : (b+1)*tb]
		for r := 0; r < R; r++ {
			x := w[r*wrb+b*110 : r*wrb+b*110+110]
			hm, sc := x[0:32], x[96:108]
			var off [8]int32
			for j := 0; j < 8; j++ {
				half, sh := j/4, uint(2*(j%4))
				q := t[32*(j*R+r) : 32*(j*R+r)+32]
				src := x[32+32*half : 32+32*half+32]
				m := byte(1) << uint(j)
				s0, s1 := q3kScale(sc, 2*j), q3kScale(sc, 2*j+1)
				for l := 0; l < 32; l++ {
					v := int32(src[l]>>sh&3) - 4
					if hm[l]&m != 0 {
						v += 4
					}
					q[l] = byte(int8(v))
					if l < 16 {
						off[l/4] += s0 * v
					} else {
						off[l/4] += s1 * v
					}
				}
				sv := t[256*R+32*(j*R+r) : 256*R+32*(j*R+r)+32]
				a := uint64(uint16(int16(s0))) * 0x0001000100010001
				c := uint64(uint16(int16(s1))) * 0x0001000100010001
				binary.LittleEndian.PutUint64(sv[0:], a)
				binary.LittleEndian.PutUint64(sv[8:], a)
				binary.LittleEndian.PutUint64(sv[16:], c)
				binary.LittleEndian.PutUint64(sv[24:], c)
			}
			for k := 0; k < 8; k++ {
				binary.LittleEndian.PutUint32(t[512*R+32*r+4*k:], uint32(-128*off[k]))
			}
			d := quant.FP16ToFP32(binary.LittleEndian.Uint16(x[108:]))
			binary.LittleEndian.PutUint32(t[544*R+4*r:], math.Float32bits(d))
		}
	}
}

// packQ2KTileRef is the plain statement of the Q2_K tile layout, the
// reference for packQ2KTile.
func packQ2KTileRef(dst, w []byte, wrb, nb, R int) {
	tb := q2kTileBytes * R
	_ = dst[nb*tb-1]
	for b := 0; b < nb; b++ {
		t := dst[b*tb : (b+1)*tb]
		for r := 0; r < R; r++ {
			x := w[r*wrb+b*84 : r*wrb+b*84+84]
			sc := x[0:16]
			for j := 0; j < 8; j++ {
				q := t[32*(j*R+r) : 32*(j*R+r)+32]
				src := x[16+32*(j/4) : 16+32*(j/4)+32]
				for l := 0; l < 32; l += 8 {
					v := binary.LittleEndian.Uint64(src[l:]) >> uint(2*(j%4)) & 0x0303030303030303
					binary.LittleEndian.PutUint64(q[l:], v)
				}
				sv := t[256*R+32*(j*R+r) : 256*R+32*(j*R+r)+32]
				a := uint64(sc[2*j]&0xf) * 0x0001000100010001
				c := uint64(sc[2*j+1]&0xf) * 0x0001000100010001
				binary.LittleEndian.PutUint64(sv[0:], a)
				binary.LittleEndian.PutUint64(sv[8:], a)
				binary.LittleEndian.PutUint64(sv[16:], c)
				binary.LittleEndian.PutUint64(sv[24:], c)
			}
			for i := 0; i < 16; i++ {
				binary.LittleEndian.PutUint16(t[512*R+32*r+2*i:], uint16(sc[i]>>4))
			}
			d := quant.FP16ToFP32(binary.LittleEndian.Uint16(x[80:]))
			nd := -quant.FP16ToFP32(binary.LittleEndian.Uint16(x[82:]))
			binary.LittleEndian.PutUint32(t[544*R+4*r:], math.Float32bits(d))
			binary.LittleEndian.PutUint32(t[548*R+4*r:], math.Float32bits(nd))
		}
	}
}

// TestPackQ6KTile: packQ6KTile writes every byte as the reference does.
func TestPackQ6KTile(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, R := range []int{2, 4, 8} {
		for _, raw := range []bool{false, true} {
			t.Run(fmt.Sprintf("R%d/raw=%v", R, raw), func(t *testing.T) {
				const K = 768
				nb := K / 256
				wb := gemmWeights(t, r, quant.Q6_K, R, K, raw)
				wrb := len(wb) / R
				got := make([]byte, q6kTileBytes*R*nb)
				want := make([]byte, len(got))
				for i := range got {
					got[i], want[i] = 0xa5, 0xa5
				}
				packQ6KTile(got, wb, wrb, nb, R)
				packQ6KTileRef(want, wb, wrb, nb, R)
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("byte %d of %d: %#x, reference %#x", i, len(got), got[i], want[i])
					}
				}
			})
		}
	}
}

// packQ3KTilePRef states the paired Q3_K tile (gemm_kquant_avx2p_amd64.go)
// from the plain one: chunks 2i, 2i+1 as halves A, B (pairWords), half A of
// their scale words, the offsets and d of each row.
func packQ3KTilePRef(dst, w []byte, wrb, nb, R int) {
	le := binary.LittleEndian
	pb, tb := q6kTileBytes*R, kqPairTileBytes*R
	plain := make([]byte, nb*pb)
	packQ3KTileRef(plain, w, wrb, nb, R)
	for b := 0; b < nb; b++ {
		p, t := plain[b*pb:(b+1)*pb], dst[b*tb:(b+1)*tb]
		for r := 0; r < R; r++ {
			for i := 0; i < 4; i++ {
				lo, hi := p[32*(2*i*R+r):], p[32*((2*i+1)*R+r):]
				slo, shi := p[256*R+32*(2*i*R+r):], p[256*R+32*((2*i+1)*R+r):]
				q, sv := t[64*(i*R+r):], t[256*R+32*(i*R+r):]
				for l := 0; l < 32; l += 8 {
					a, bb := pairWords(le.Uint64(lo[l:]), le.Uint64(hi[l:]))
					le.PutUint64(q[l:], a)
					le.PutUint64(q[32+l:], bb)
					sa, _ := pairWords(le.Uint64(slo[l:]), le.Uint64(shi[l:]))
					le.PutUint64(sv[l:], sa)
				}
			}
			copy(t[384*R+32*r:384*R+32*r+32], p[512*R+32*r:])
			for l := r; l < 8; l += R {
				copy(t[416*R+4*l:416*R+4*l+4], p[544*R+4*r:])
			}
		}
	}
}

// packQ2KTilePRef states the paired Q2_K tile from the plain one: chunks
// 2i, 2i+1 as halves A, B, half A of their scale words, the mins, d and
// -dmin of each row.
func packQ2KTilePRef(dst, w []byte, wrb, nb, R int) {
	le := binary.LittleEndian
	pb, tb := q2kTileBytes*R, kqPairTileBytes*R
	plain := make([]byte, nb*pb)
	packQ2KTileRef(plain, w, wrb, nb, R)
	for b := 0; b < nb; b++ {
		p, t := plain[b*pb:(b+1)*pb], dst[b*tb:(b+1)*tb]
		for r := 0; r < R; r++ {
			for i := 0; i < 4; i++ {
				lo, hi := p[32*(2*i*R+r):], p[32*((2*i+1)*R+r):]
				slo, shi := p[256*R+32*(2*i*R+r):], p[256*R+32*((2*i+1)*R+r):]
				q, sv := t[64*(i*R+r):], t[256*R+32*(i*R+r):]
				for l := 0; l < 32; l += 8 {
					a, bb := pairWords(le.Uint64(lo[l:]), le.Uint64(hi[l:]))
					le.PutUint64(q[l:], a)
					le.PutUint64(q[32+l:], bb)
					sa, _ := pairWords(le.Uint64(slo[l:]), le.Uint64(shi[l:]))
					le.PutUint64(sv[l:], sa)
				}
			}
			copy(t[384*R+32*r:384*R+32*r+32], p[512*R+32*r:])
			for l := r; l < 8; l += R {
				copy(t[416*R+4*l:416*R+4*l+4], p[544*R+4*r:])
				copy(t[416*R+32+4*l:416*R+32+4*l+4], p[548*R+4*r:])
			}
		}
	}
}

// TestPackQ23KTile: packQ3KTile and packQ2KTile write every byte as their
// references do, for random bytes (any scale and hmask bits) and real
// blocks, at every tile height the GEMMs use.
func TestPackQ23KTile(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, c := range []struct {
		typ       quant.Type
		tileBytes int
		pack, ref func(dst, w []byte, wrb, nb, R int)
	}{
		{quant.Q3_K, q6kTileBytes, packQ3KTile, packQ3KTileRef},
		{quant.Q3_K, kqPairTileBytes, packQ3KTileP, packQ3KTilePRef},
		{quant.Q2_K, q2kTileBytes, packQ2KTile, packQ2KTileRef},
		{quant.Q2_K, kqPairTileBytes, packQ2KTileP, packQ2KTilePRef},
	} {
		for _, R := range []int{1, 2, 3, 4, 8} {
			for _, raw := range []bool{false, true} {
				if c.tileBytes == kqPairTileBytes && R < 2 {
					continue // the paired kernels' tiles have two rows or more (Q2_K's NDW lanes need them)
				}
				t.Run(fmt.Sprintf("%s/%d/R%d/raw=%v", c.typ, c.tileBytes, R, raw), func(t *testing.T) {
					const K = 1024
					nb := K / 256
					wb := gemmWeights(t, r, c.typ, R, K, raw)
					wrb := len(wb) / R
					got := make([]byte, c.tileBytes*R*nb)
					want := make([]byte, len(got))
					for i := range got {
						got[i], want[i] = 0xa5, 0xa5
					}
					c.pack(got, wb, wrb, nb, R)
					c.ref(want, wb, wrb, nb, R)
					for i := range got {
						if got[i] != want[i] {
							t.Fatalf("byte %d of %d: %#x, reference %#x", i, len(got), got[i], want[i])
						}
					}
				})
			}
		}
	}
}

// TestPackK4Tile: packK4Tile writes every byte of the layout as the
// reference does, for random bytes (any scale bits) and real blocks.
func TestPackK4Tile(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, five := range []bool{false, true} {
		wt := map[bool]quant.Type{false: quant.Q4_K, true: quant.Q5_K}[five]
		for _, R := range []int{2, 4, 8} {
			for _, raw := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/R%d/raw=%v", wt, R, raw), func(t *testing.T) {
					const K = 768
					nb := K / 256
					wb := gemmWeights(t, r, wt, R, K, raw)
					wrb := len(wb) / R
					got := make([]byte, q4kTileBytes*R*nb)
					want := make([]byte, len(got))
					for i := range got {
						got[i], want[i] = 0xa5, 0xa5
					}
					packK4Tile(got, wb, wrb, nb, R, five)
					packK4TileRef(want, wb, wrb, nb, R, five)
					if !bytes.Equal(got, want) {
						for i := range got {
							if got[i] != want[i] {
								t.Fatalf("byte %d of %d: %#x, reference %#x", i, len(got), got[i], want[i])
							}
						}
					}
				})
			}
		}
	}
}

// BenchmarkPackTile: CPU ns per row and super-block of the AVX2 GEMMs'
// tile packers (and of the byte-at-a-time Q3_K / Q2_K references), hot (a
// few tiles in cache) and cold (64 MiB of weights).
func BenchmarkPackTile(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	const K, R = 1024, 8
	for _, c := range []struct {
		name string
		typ  quant.Type
		tb   int
		pack func(dst, w []byte, wrb, nb, R int)
	}{
		{"q4_K", quant.Q4_K, q4kTileBytes, packQ4KTile},
		{"q6_K", quant.Q6_K, q6kTileBytes, packQ6KTile},
		{"q3_K", quant.Q3_K, q6kTileBytes, packQ3KTile},
		{"q3_K-ref", quant.Q3_K, q6kTileBytes, packQ3KTileRef},
		{"q2_K", quant.Q2_K, q2kTileBytes, packQ2KTile},
		{"q2_K-ref", quant.Q2_K, q2kTileBytes, packQ2KTileRef},
	} {
		for _, N := range []int{64, 65536} {
			wb := gemmWeights(b, r, c.typ, N, K, false)
			wrb := len(wb) / N
			dst := make([]byte, c.tb*R*(K/256))
			b.Run(fmt.Sprintf("%s/N=%d", c.name, N), func(b *testing.B) {
				c0 := processCPU()
				for b.Loop() {
					for n := 0; n < N; n += R {
						c.pack(dst, wb[n*wrb:], wrb, K/256, R)
					}
				}
				b.ReportMetric(float64((processCPU()-c0).Nanoseconds())/float64(b.N)/float64(N*K/256), "cpu-ns/row-sb")
			})
		}
	}
}
