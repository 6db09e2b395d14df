//go:build amd64 && !purego

package cpu

import (
	"fmt"

	"github.com/minfer/minfer/quant"
)

// AVX-512 VNNI GEMM kernels for the prefill mat-muls of Q4_K, Q5_K and
// Q6_K weights against Q8_K activations (gemm_kquant_avx512_amd64.s, written
// by internal/asmgen). They read the AVX2 kernels' unpacked weight tiles
// (packQ4KTile, packQ5KTile, packQ6KTile: see gemm_kquant_avx2_amd64.go) and share their
// wrapper (kqGemm.gemm: weight-tile groups swept over L2-sized blocks of
// activation rows, remainders to the row kernels). Each ZMM accumulator
// holds two weight rows (one per 256-bit half) against one activation
// row, so one VPMADDUBSW and one VPDPWSSD do 64 weight bytes where the
// AVX2 kernels need three instructions for 32. The integer lanes, the
// per-super-block FMAs and the final reduction are those of the AVX2
// kernels and of quant's pure-Go dot, so every output has the oracle's
// bits.

//go:noescape
func gemmQ4KAVX512x4x8(t *byte, nb int, a *byte, arb int, p *byte, y *float32, ldy int, mt int, fs *float32)

//go:noescape
func gemmQ4KAVX512x8x4(t *byte, nb int, a *byte, arb int, p *byte, y *float32, ldy int, mt int, fs *float32)

//go:noescape
func gemmQ4KAVX512x4x6(t *byte, nb int, a *byte, arb int, p *byte, y *float32, ldy int, mt int, fs *float32)

//go:noescape
func gemmQ4KAVX512x8x5(t *byte, nb int, a *byte, arb int, p *byte, y *float32, ldy int, mt int, fs *float32)

//go:noescape
func gemmQ5KAVX512x4x8(t *byte, nb int, a *byte, arb int, p *byte, y *float32, ldy int, mt int, fs *float32)

//go:noescape
func gemmQ5KAVX512x8x4(t *byte, nb int, a *byte, arb int, p *byte, y *float32, ldy int, mt int, fs *float32)

//go:noescape
func gemmQ5KAVX512x4x6(t *byte, nb int, a *byte, arb int, p *byte, y *float32, ldy int, mt int, fs *float32)

//go:noescape
func gemmQ5KAVX512x8x5(t *byte, nb int, a *byte, arb int, p *byte, y *float32, ldy int, mt int, fs *float32)

//go:noescape
func gemmQ6KAVX512x4x8(t *byte, nb int, a *byte, arb int, p *byte, y *float32, ldy int, mt int, fs *float32)

//go:noescape
func gemmQ6KAVX512x8x4(t *byte, nb int, a *byte, arb int, p *byte, y *float32, ldy int, mt int, fs *float32)

//go:noescape
func gemmQ6KAVX512x4x6(t *byte, nb int, a *byte, arb int, p *byte, y *float32, ldy int, mt int, fs *float32)

//go:noescape
func gemmQ6KAVX512x8x5(t *byte, nb int, a *byte, arb int, p *byte, y *float32, ldy int, mt int, fs *float32)

// kqGemmsAVX512 lists every generated AVX-512 K-quant GEMM by type (the
// tests check them all); the first of each type is the one registered:
// 8×4 measured fastest at Qwen3-0.6B shapes with M=512 (Q4_K ≈125–130
// GMAC/cpu-s against ≈70 for the hand-written 4×4 VNNI kernel and ≈60 for
// the AVX2 2×6; Q6_K ≈105–135 against ≈85 and ≈60).
var kqGemmsAVX512 = map[quant.Type][]*kqGemm{
	quant.Q4_K: {
		avx512Name(newKQGemmQ4K(8, 4, gemmQ4KAVX512x8x4)),
		avx512Name(newKQGemmQ4K(4, 8, gemmQ4KAVX512x4x8)),
		avx512Name(newKQGemmQ4K(4, 6, gemmQ4KAVX512x4x6)),
		avx512Name(newKQGemmQ4K(8, 5, gemmQ4KAVX512x8x5)),
	},
	quant.Q5_K: {
		avx512Name(newKQGemmQ5K(8, 4, gemmQ5KAVX512x8x4)),
		avx512Name(newKQGemmQ5K(4, 8, gemmQ5KAVX512x4x8)),
		avx512Name(newKQGemmQ5K(4, 6, gemmQ5KAVX512x4x6)),
		avx512Name(newKQGemmQ5K(8, 5, gemmQ5KAVX512x8x5)),
	},
	quant.Q6_K: {
		avx512Name(newKQGemmQ6K(8, 4, gemmQ6KAVX512x8x4)),
		avx512Name(newKQGemmQ6K(4, 8, gemmQ6KAVX512x4x8)),
		avx512Name(newKQGemmQ6K(4, 6, gemmQ6KAVX512x4x6)),
		avx512Name(newKQGemmQ6K(8, 5, gemmQ6KAVX512x8x5)),
	},
}

func avx512Name(g *kqGemm) *kqGemm {
	g.name = fmt.Sprintf("%s avx512", g.name)
	return g
}

// The first kernel of each type is the one installed on the AVX-512 VNNI
// tier (8×4 tiles; for Q4_K and Q6_K 1.5–1.9× the hand-written 4×4
// kernels they replaced, BenchmarkGemmKQuantAVX512 at 8e13914), except
// where 512-bit ops run at half rate (zmmHalfRate: Zen 4), which keeps the
// paired AVX2 GEMMs.
// Q3_K and Q2_K kinds of these kernels were generated and tested on
// 2026-12-03 and dropped: on the Zen 4 host they only tied the paired AVX2
// GEMMs (Q3_K 75–88 against 78–90 GMAC/cpu-s, Q2_K 69–73 against 62–79).
// Q8_0/Q5_0/Q4_0 have no GEMM on this tier: their small-M kernels, run in
// chunks, beat the VNNI GEMMs they had at every row count
// (smallLegacyUpTo).
func init() {
	if !hasVNNI || zmmHalfRate() {
		return
	}
	for _, t := range []quant.Type{quant.Q4_K, quant.Q5_K, quant.Q6_K} {
		g := kqGemmsAVX512[t][0]
		registerGemmCached(t, "avx512vnni", g.C, g.gemmCached)
	}
}
