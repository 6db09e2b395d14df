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

// BenchmarkPackTile: CPU ns per row and super-block of packQ4KTile and
// packQ6KTile, hot (a few tiles in cache) and cold (64 MiB of weights).
func BenchmarkPackTile(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	const K, R = 1024, 8
	for _, wt := range []quant.Type{quant.Q4_K, quant.Q6_K} {
		for _, N := range []int{64, 65536} {
			wb := gemmWeights(b, r, wt, N, K, false)
			wrb := len(wb) / N
			pack, tb := packQ4KTile, q4kTileBytes
			if wt == quant.Q6_K {
				pack, tb = packQ6KTile, q6kTileBytes
			}
			dst := make([]byte, tb*R*(K/256))
			b.Run(fmt.Sprintf("%s/N=%d", wt, N), func(b *testing.B) {
				c0 := processCPU()
				for b.Loop() {
					for n := 0; n < N; n += R {
						pack(dst, wb[n*wrb:], wrb, K/256, R)
					}
				}
				b.ReportMetric(float64((processCPU()-c0).Nanoseconds())/float64(b.N)/float64(N*K/256), "cpu-ns/row-sb")
			})
		}
	}
}
