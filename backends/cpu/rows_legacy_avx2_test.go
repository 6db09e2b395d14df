//go:build amd64 && !purego

package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/minfer/minfer/quant"
)

// legacyAVX2Q8Rows lists the generated row kernels against Q8_0
// activations (internal/asmgen/rows_q80.go, rows_legacy_avx2.go), wrapped
// as the dispatch wraps them: Q4_0, Q5_0 and Q8_0 on AVX2 and on AVX-512
// VNNI.
func legacyAVX2Q8Rows() []rowKernel {
	return []rowKernel{
		{quant.Q4_0, "avx2", legacyRows(rowsQ4_0AVX2, 18, 34)},
		{quant.Q5_0, "avx2", legacyRows(rowsQ5_0AVX2, 22, 34)},
		{quant.Q8_0, "avx2", legacyRows(rowsQ8_0AVX2, 34, 34)},
		{quant.Q4_0, "avx512vnni", legacyRows(rowsQ4_0VNNI, 18, 34)},
		{quant.Q5_0, "avx512vnni", legacyRows(rowsQ5_0VNNI, 22, 34)},
		{quant.Q8_0, "avx512vnni", legacyRows(rowsQ8_0VNNI, 34, 34)},
		{quant.Q4_0, "avxvnni", legacyRows(rowsQ4_0AVXVNNI, 18, 34)},
		{quant.Q5_0, "avxvnni", legacyRows(rowsQ5_0AVXVNNI, 22, 34)},
	}
}

// skipTier skips a subtest of a kernel whose tier the CPU lacks.
func skipTier(t *testing.T, k rowKernel) {
	if strings.HasPrefix(k.tier, "avx512vnni") && !hasVNNI {
		t.Skip("no AVX-512 VNNI (or MINFER_NO_AVX512 set): the VNNI kernel cannot run")
	}
	if k.tier == "avxvnni" && !hasAVXVNNI {
		t.Skip("no AVX-VNNI (or MINFER_NO_AVXVNNI set): the AVX-VNNI kernel cannot run")
	}
}

// edgeLegacyWeights returns n rows of nb blocks of type wt (bs bytes a
// block, f16 d first): quant bytes random (kind 0), all 0xFF (1, every
// value at its maximum; Q8_0: -1), all 0x00 (2, the minimum; Q8_0: 0),
// all 0x80 (3, Q8_0's -128) or all 0x7F (4), with d random finite,
// subnormal, zero, the f16 maximum, ±Inf or NaN (a per-block mix when
// specials is set, else random finite).
func edgeLegacyWeights(r *rand.Rand, n, nb, bs, kind int, specials bool) []byte {
	w := make([]byte, n*nb*bs)
	fill := [...]byte{0, 0xFF, 0x00, 0x80, 0x7F}[kind]
	for i := range w {
		w[i] = fill
		if kind == 0 {
			w[i] = byte(r.IntN(256))
		}
	}
	for b := 0; b < n*nb; b++ {
		h := quant.FP32ToFP16(float32(r.NormFloat64()) * 0.01)
		if specials {
			switch r.IntN(8) {
			case 0:
				h = 0
			case 1:
				h = 0x0001 // the least subnormal
			case 2:
				h = 0x7bff // 65504
			case 3:
				h = 0x7c00 // +Inf
			case 4:
				h = 0xfc00 // -Inf
			case 5:
				h = 0x7e00 // NaN
			}
		}
		binary.LittleEndian.PutUint16(w[b*bs:], h)
	}
	return w
}

// edgeQ8_0 returns a Q8_0 activation row of nb blocks: a random finite d
// and quants of the given kind (0 random in [-127, 127], 1 all 127,
// 2 all -127, 3 alternating 127 / -127, 4 zero, 5 all -128, which the
// quantizer never writes but the Q4_0/Q5_0 kernels must take).
func edgeQ8_0(r *rand.Rand, nb, kind int) []byte {
	a := make([]byte, nb*34)
	for b := 0; b < nb; b++ {
		blk := a[b*34 : (b+1)*34]
		binary.LittleEndian.PutUint16(blk, quant.FP32ToFP16(float32(r.NormFloat64())*0.03))
		for i := 2; i < 34; i++ {
			switch kind {
			case 0:
				blk[i] = byte(r.IntN(255) - 127)
			case 1:
				blk[i] = 127
			case 2:
				blk[i] = 0x81
			case 3:
				blk[i] = byte(127 + 130*(i%2))
			case 5:
				blk[i] = 0x80
			}
		}
	}
	return a
}

// sameFloat reports whether got has the oracle's bits (any NaN matching
// any NaN: the payload of a NaN the scales made is not part of the
// contract).
func sameFloat(got, want float32) bool {
	if math.IsNaN(float64(got)) && math.IsNaN(float64(want)) {
		return true
	}
	return math.Float32bits(got) == math.Float32bits(want)
}

// TestGeneratedLegacyAVX2RowsEdges checks the AVX2 Q4_0 / Q5_0 (generated)
// and Q8_0 row kernels, called directly (so on an AVX-512 machine too), bit
// for bit against the pure-Go dot: random, all-max, all-min and (Q8_0)
// -128 quants; zero, subnormal, maximal, infinite and NaN scales; extreme
// activations; every row count of the 4- and 8-row groups' tails and
// sub-ranges.
func TestGeneratedLegacyAVX2RowsEdges(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2 (or MINFER_NO_AVX2 set): the AVX2 kernels cannot run")
	}
	r := rand.New(rand.NewPCG(23, 29))
	for _, k := range legacyAVX2Q8Rows() {
		t.Run(k.typ.String()+"/"+k.tier, func(t *testing.T) {
			skipTier(t, k)
			dot := quant.DotFor(k.typ)
			bs := k.typ.TypeSize()
			const N = 19
			for _, nb := range []int{1, 2, 3, 28, 33, 80, 128} {
				K := nb * 32
				wrb := nb * bs
				for wk := 0; wk < 5; wk++ {
					for _, specials := range []bool{false, true} {
						w := edgeLegacyWeights(r, N, nb, bs, wk, specials)
						for ak := 0; ak < 6; ak++ {
							if ak == 5 && k.typ == quant.Q8_0 {
								continue // ggml's sign trick needs |a| ≤ 127, as the quantizer gives
							}
							a := edgeQ8_0(r, nb, ak)
							for _, rg := range [][2]int{{0, N}, {0, 1}, {0, 2}, {0, 3}, {0, 4}, {0, 5}, {1, 7}, {0, 8}, {2, 9}, {3, 10}, {0, 9}, {1, 16}, {3, N}, {5, 5}, {N - 1, N}} {
								y := make([]float32, N)
								for i := range y {
									y[i] = -1234.5
								}
								k.f(K, w[:rg[1]*wrb], wrb, a, y, rg[0], rg[1])
								for n := range y {
									if n < rg[0] || n >= rg[1] {
										if y[n] != -1234.5 {
											t.Fatalf("nb=%d rows %v: wrote y[%d]", nb, rg, n)
										}
										continue
									}
									want := dot(K, w[n*wrb:(n+1)*wrb], a)
									if !sameFloat(y[n], want) {
										t.Fatalf("nb=%d weights %d/%v act %d rows %v: y[%d] = %v (%#08x), oracle %v (%#08x)",
											nb, wk, specials, ak, rg, n, y[n], math.Float32bits(y[n]), want, math.Float32bits(want))
									}
								}
							}
						}
					}
				}
			}
		})
	}
}

// TestGeneratedLegacyAVX2RowsRandom checks the same kernels on
// quantized model-like rows (legacyWeights) of qwen-sized K against
// quantized activations, whole ranges and ragged ones, and a row stride
// wider than the row.
func TestGeneratedLegacyAVX2RowsRandom(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2 (or MINFER_NO_AVX2 set): the AVX2 kernels cannot run")
	}
	r := rand.New(rand.NewPCG(31, 37))
	for _, k := range legacyAVX2Q8Rows() {
		for _, K := range []int{32, 896, 2528, 2560, 4064, 4096, 4864} {
			for _, raw := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/K%d/raw=%v", k.typ, k.tier, K, raw), func(t *testing.T) {
					skipTier(t, k)
					const N = 23
					dot := quant.DotFor(k.typ)
					// rows of K+64 elements, of which the kernel reads K
					wb := legacyWeights(t, r, k.typ, N, K+64, raw)
					wrb := len(wb) / N
					rs, _ := k.typ.RowSize(K)
					arb, _ := quant.Q8_0.RowSize(K)
					act := make([]byte, arb)
					if err := quant.QuantizeAct(quant.Q8_0, legacyFloats(r, K, 1e3), act); err != nil {
						t.Fatal(err)
					}
					for _, rg := range [][2]int{{0, N}, {1, N}, {2, N - 1}, {3, N - 3}, {7, 8}, {0, 8}, {5, 14}, {9, N}} {
						y := make([]float32, N)
						k.f(K, wb, wrb, act, y, rg[0], rg[1])
						for n := rg[0]; n < rg[1]; n++ {
							want := dot(K, wb[n*wrb:n*wrb+rs], act)
							if math.Float32bits(y[n]) != math.Float32bits(want) {
								t.Fatalf("rows %v: y[%d] = %v (%#08x), oracle %v (%#08x)", rg, n,
									y[n], math.Float32bits(y[n]), want, math.Float32bits(want))
							}
						}
					}
				})
			}
		}
	}
}

// legacyStepRowCounts are the row counts TestLegacyRowsStepCounts runs:
// every count 1..9, then counts whose steps of four or eight rows spread
// over the range (rows i, q+i, 2q+i, ... of q = rows/n) leave 0..7 rows
// for the group of neighbouring rows that ends the range.
var legacyStepRowCounts = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 14, 16, 17, 23, 24, 31, 38}

// TestLegacyRowsStepCounts checks the Q8_0, Q5_0 and Q4_0 row kernels of
// both tiers (legacyAVX2Q8Rows: each called directly), bit for bit against
// the pure-Go dot, for every row count of legacyStepRowCounts from two
// starting rows, so every spread step, every row left after the steps and
// every position of a row within a step is covered; weights random,
// all-max, all-min, all -128 and all 127 (scales random, with specials
// for the random ones), activations random and extreme, rows of 1, 3, 28
// (Qwen2.5's 896), 128 and 152 blocks (Qwen2.5's 4864).
func TestLegacyRowsStepCounts(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2 (or MINFER_NO_AVX2 set): the AVX2 kernels cannot run")
	}
	r := rand.New(rand.NewPCG(43, 47))
	for _, k := range legacyAVX2Q8Rows() {
		t.Run(k.typ.String()+"/"+k.tier, func(t *testing.T) {
			skipTier(t, k)
			dot := quant.DotFor(k.typ)
			bs := k.typ.TypeSize()
			const N = 40
			for _, nb := range []int{1, 3, 28, 128, 152} {
				K, wrb := nb*32, nb*bs
				for wk := 0; wk < 5; wk++ {
					w := edgeLegacyWeights(r, N, nb, bs, wk, wk == 0)
					for ak := 0; ak < 6; ak++ {
						if ak == 5 && k.typ == quant.Q8_0 {
							continue // ggml's sign trick needs |a| ≤ 127, as the quantizer gives
						}
						a := edgeQ8_0(r, nb, ak)
						want := make([]float32, N)
						for n := range want {
							want[n] = dot(K, w[n*wrb:(n+1)*wrb], a)
						}
						for n0 := 0; n0 < 2; n0++ {
							for _, rows := range legacyStepRowCounts {
								n1 := n0 + rows
								y := make([]float32, N)
								for i := range y {
									y[i] = -1234.5
								}
								k.f(K, w[:n1*wrb], wrb, a, y, n0, n1)
								for n := range y {
									if n < n0 || n >= n1 {
										if y[n] != -1234.5 {
											t.Fatalf("nb=%d rows [%d,%d): wrote y[%d]", nb, n0, n1, n)
										}
										continue
									}
									if !sameFloat(y[n], want[n]) {
										t.Fatalf("nb=%d weights %d act %d rows [%d,%d): y[%d] = %v (%#08x), oracle %v (%#08x)",
											nb, wk, ak, n0, n1, n, y[n], math.Float32bits(y[n]), want[n], math.Float32bits(want[n]))
									}
								}
							}
						}
					}
				}
			}
		})
	}
}
