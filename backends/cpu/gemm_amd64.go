//go:build amd64 && !purego

package cpu

import (
	"sync"

	"github.com/minfer/minfer/quant"
)

// AVX-512 VNNI GEMM kernels for the prefill mat-muls (several activation
// rows): Q8_0, Q5_0 and Q4_0 weights against Q8_0 activations (Q4_K and
// Q6_K: the generated kernels of gemm_kquant_avx512_amd64.go). The asm
// (gemm_legacy_vnni_amd64.s, written by internal/asmgen/gemm_legacy_vnni.go)
// computes tiles of 4 weight rows × 4 activation rows with 16 accumulators, loading (and unpacking) each
// weight block once per call and each activation block once per tile
// instead of once per output. Every output keeps the row kernels'
// arithmetic: per block the exact integer dot of each 4 elements in 8
// int32 lanes (Q8_0/Q5_0/Q4_0: VPDPBUSD on activations biased to unsigned
// and signed weights, 128 times the weight sums subtracted in int32),
// converted to float32 exactly, one FMA per lane with the float32 product
// d_w·d_a, blocks in order, then hsum_float_8 — so the bits equal quant's
// pure-Go dot.
//
// The weight-row and activation-row remainders (fewer than 4) go to the
// row kernels, whose results have the same bits.

//go:noescape
func gemmQ8_0VNNI(w *byte, wrb int, a *byte, arb int, as *float32, nb int, y *float32, ldy int, mt int, scr *float32)

//go:noescape
func gemmQ4_0VNNI(w *byte, wrb int, a *byte, arb int, as *float32, nb int, y *float32, ldy int, mt int, scr *float32)

//go:noescape
func gemmQ5_0VNNI(w *byte, wrb int, a *byte, arb int, as *float32, nb int, y *float32, ldy int, mt int, scr *float32)

type gemmAsm func(w *byte, wrb int, a *byte, arb int, as *float32, nb int, y *float32, ldy int, mt int, scr *float32)

// gemmRowBlock is the number of activation rows (a multiple of 4) swept by
// one weight tile before the next: they stay in L2 while the weight tiles
// stream past. Blocking does not change any result.
var gemmRowBlock = 128

// gemmScales holds activation scales converted to f32 (reused buffers).
var gemmScales = sync.Pool{New: func() any { return new([]float32) }}

// legacyGemm wraps an asm GEMM kernel for weight blocks of wts bytes (Q8_0
// activations, 34-byte blocks) with the bounds checks the asm omits; rows
// is the row kernel of the same type for the remainders.
func legacyGemm(kern gemmAsm, rows rowsAsm, wts int) GemmFunc {
	const ats = 34
	return func(K int, w []byte, wrb int, act []byte, arb, M int, y []float32, ldy, n0, n1 int) {
		if n1 <= n0 || M <= 0 {
			return
		}
		nb := K / 32
		if nb == 0 {
			for m := 0; m < M; m++ {
				for n := n0; n < n1; n++ {
					y[m*ldy+n] = 0
				}
			}
			return
		}
		if nb*wts > wrb || nb*ats > arb {
			panic("cpu: gemm row shorter than K")
		}
		if M > 1 && ldy < n1 {
			panic("cpu: gemm output stride shorter than the rows")
		}
		_ = w[(n1-1)*wrb+nb*wts-1]
		_ = act[(M-1)*arb+nb*ats-1]
		_ = y[(M-1)*ldy+n1-1]

		M4 := M &^ 3
		N4 := n0 + (n1-n0)&^3
		if arb != nb*ats { // the asm steps from tile to tile assuming packed rows
			M4 = 0
		}
		if M4 > 0 && N4 > n0 {
			// f32 activation scales, then the asm's scratch (floats per
			// block): the weight tile's scales (4), quants and offsets (64),
			// scale products (16).
			sp := gemmScales.Get().(*[]float32)
			if need := M4*nb + 84*nb; cap(*sp) < need {
				*sp = make([]float32, need)
			}
			sc := (*sp)[:M4*nb]
			scr := (*sp)[M4*nb : M4*nb+84*nb]
			// sc[(t·nb+b)·4+j]: the scale of block b of row 4t+j.
			for t := 0; t < M4/4; t++ {
				for b := 0; b < nb; b++ {
					s := sc[(t*nb+b)*4 : (t*nb+b)*4+4]
					for j := range s {
						o := (4*t+j)*arb + b*ats
						s[j] = quant.FP16ToFP32(uint16(act[o]) | uint16(act[o+1])<<8)
					}
				}
			}
			for m0 := 0; m0 < M4; m0 += gemmRowBlock {
				mt := (min(m0+gemmRowBlock, M4) - m0) / 4
				for n := n0; n < N4; n += 4 {
					kern(&w[n*wrb], wrb, &act[m0*arb], arb, &sc[m0*nb], nb, &y[m0*ldy+n], ldy, mt, &scr[0])
				}
			}
			gemmScales.Put(sp)
		} else {
			N4 = n0
		}
		if N4 < n1 {
			for m := 0; m < M4; m++ {
				rows(&w[N4*wrb], wrb, &act[m*arb], nb, &y[m*ldy+N4], n1-N4)
			}
		}
		for m := M4; m < M; m++ {
			rows(&w[n0*wrb], wrb, &act[m*arb], nb, &y[m*ldy+n0], n1-n0)
		}
	}
}

func init() {
	if !hasVNNI {
		return
	}
	registerGemm(quant.Q8_0, "avx512vnni", 4, legacyGemm(gemmQ8_0VNNI, rowsQ8_0VNNI, 34))
	registerGemm(quant.Q5_0, "avx512vnni", 4, legacyGemm(gemmQ5_0VNNI, rowsQ5_0VNNI, 22))
	registerGemm(quant.Q4_0, "avx512vnni", 4, legacyGemm(gemmQ4_0VNNI, rowsQ4_0AVX2, 18))
	// Q4_K, Q5_K, Q6_K: the generated AVX-512 K-quant GEMMs (8×4 tiles);
	// for Q4_K and Q6_K 1.5–1.9× the hand-written 4×4 kernels they replaced (BenchmarkGemmKQuantAVX512
	// at 8e13914 measured both).
	registerGemmCached(quant.Q4_K, "avx512vnni", kqGemmsAVX512[quant.Q4_K][0].C, kqGemmsAVX512[quant.Q4_K][0].gemmCached)
	registerGemmCached(quant.Q5_K, "avx512vnni", kqGemmsAVX512[quant.Q5_K][0].C, kqGemmsAVX512[quant.Q5_K][0].gemmCached)
	registerGemmCached(quant.Q6_K, "avx512vnni", kqGemmsAVX512[quant.Q6_K][0].C, kqGemmsAVX512[quant.Q6_K][0].gemmCached)
}
