//go:build amd64 && !purego

package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/minfer/minfer/quant"
)

// reverseSharer is an ActSharer that builds each block alone, one tile at
// a time from the last to the first, as workers taking tiles in any order
// would; it counts the blocks. With refuse set it returns nil for every
// other block, as a sharer that gave up waiting does.
type reverseSharer struct {
	blocks int
	refuse bool
}

func (s *reverseSharer) Share(key any, n, tiles int, fill func(dst []byte, t0, t1 int)) []byte {
	s.blocks++
	if s.refuse && s.blocks%2 == 0 {
		return nil
	}
	buf := make([]byte, n+63)
	for i := range buf {
		buf[i] = 0xA5 // a tile left unwritten shows
	}
	dst := align64(buf, n)
	for t := tiles - 1; t >= 0; t-- {
		fill(dst, t, t+1)
	}
	return dst
}

// The AVX2 GEMMs whose activation blocks are made tile by tile (the legacy
// GEMMs' repacked block, the K-quant GEMMs' pair copies, bsum pairs and
// biased quants) give the same bits when an ActSharer builds those blocks
// tile by tile as when they build them whole.
func TestGemmAVX2SharedActBlocks(t *testing.T) {
	needAVX2(t)
	r := rand.New(rand.NewPCG(101, 102))
	const N, M = 24, 40
	type gemmCase struct {
		wt   quant.Type
		K    int
		name string
		f    GemmCachedFunc
		kq   bool
	}
	var cases []gemmCase
	for _, wt := range []quant.Type{quant.Q8_0, quant.Q5_0, quant.Q4_0, quant.Q4_1, quant.Q5_1} {
		for _, tl := range legacyAVX2Tiles[wt] {
			cases = append(cases, gemmCase{wt, 256, wt.String(), legacyGemmAVX2(wt, tl), false})
		}
	}
	for _, wt := range []quant.Type{quant.Q4_K, quant.Q5_K, quant.Q6_K, quant.Q2_K, quant.Q3_K} {
		for _, g := range kqGemmsAVX2[wt] {
			cases = append(cases, gemmCase{wt, 512, g.name, g.gemmCached, true})
		}
	}
	for _, tc := range cases {
		var wb []byte
		if tc.kq {
			wb = gemmWeights(t, r, tc.wt, N, tc.K, false)
		} else {
			wb = legacyWeights(t, r, tc.wt, N, tc.K, false)
		}
		wrb := len(wb) / N
		act, arb := gemmActs(t, r, tc.wt.VecDotType(), M, tc.K)
		want := make([]float32, M*N)
		tc.f(tc.K, wb, wrb, act, arb, M, want, N, 0, N, nil)
		var s reverseSharer
		for _, refuse := range []bool{false, true} {
			s.refuse = refuse
			var c ActCache
			c.SetSharer(&s)
			got := make([]float32, M*N)
			for _, rg := range [][2]int{{0, 8}, {8, 16}, {16, N}} { // column chunks reuse nothing: each shares anew
				tc.f(tc.K, wb, wrb, act, arb, M, got, N, rg[0], rg[1], &c)
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s (refusing every other block: %v): y[%d] = %v with tile-by-tile activation blocks, %v whole",
						tc.name, refuse, i, got[i], want[i])
				}
			}
		}
		if s.blocks == 0 && !tc.kq {
			t.Errorf("%s: the legacy GEMM built no activation block through the sharer", tc.name)
		}
		t.Logf("%s: %d blocks built tile by tile", tc.name, s.blocks)
	}
}
