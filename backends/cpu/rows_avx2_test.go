//go:build amd64 && !purego

package cpu

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/minfer/minfer/quant"
)

// generatedAVX2Rows lists the generated AVX2 row kernels
// (internal/asmgen/rows_avx2.go), wrapped as the dispatch wraps them.
func generatedAVX2Rows() []rowKernel {
	return []rowKernel{
		{quant.Q4_K, "avx2", kqRows(kqRowsQ4KAVX2, 144)},
		{quant.Q5_K, "avx2", kqRows(kqRowsQ5KAVX2, 176)},
		{quant.Q6_K, "avx2", kqRows(kqRowsQ6KAVX2, 210)},
	}
}

// edgeQ8K returns a raw Q8_K activation row of nb super-blocks: a random
// finite d, quants of the given kind (0 random int8 including -128,
// 1 all 127, 2 all -128, 3 alternating 127 / -128, 4 zero) and bsums that
// match them, as the kernels require.
func edgeQ8K(r *rand.Rand, nb, kind int) []byte {
	a := make([]byte, nb*kqBlockQ8K)
	for b := 0; b < nb; b++ {
		blk := a[b*kqBlockQ8K : (b+1)*kqBlockQ8K]
		binary.LittleEndian.PutUint32(blk, math.Float32bits(float32(r.NormFloat64())*0.03))
		q := blk[4:260]
		for i := range q {
			switch kind {
			case 0:
				q[i] = byte(r.IntN(256))
			case 1:
				q[i] = 127
			case 2:
				q[i] = 0x80
			case 3:
				q[i] = byte(127 + 129*(i%2))
			}
		}
		for g := 0; g < 16; g++ {
			var s int16
			for _, v := range q[16*g : 16*g+16] {
				s += int16(int8(v))
			}
			binary.LittleEndian.PutUint16(blk[260+2*g:], uint16(s))
		}
	}
	return a
}

// edgeKQWeights returns n rows of nb super-blocks of bs bytes: random
// bytes (kind 0), all 0xFF (1) or all 0x00 (2) quants and scales, with
// finite f16 scales at the offsets in halfs (random, or 1.0 for kind 1).
func edgeKQWeights(r *rand.Rand, n, nb, bs int, halfs []int, kind int) []byte {
	w := make([]byte, n*nb*bs)
	for i := range w {
		switch kind {
		case 0:
			w[i] = byte(r.IntN(256))
		case 1:
			w[i] = 0xFF
		}
	}
	for b := 0; b < n*nb; b++ {
		for _, off := range halfs {
			h := quant.FP32ToFP16(float32(r.NormFloat64()) * 0.01)
			if kind == 1 {
				h = quant.FP32ToFP16(1)
			}
			binary.LittleEndian.PutUint16(w[b*bs+off:], h)
		}
	}
	return w
}

// TestGeneratedAVX2RowsEdges checks the generated AVX2 row kernels, called
// directly, bit for bit against the pure-Go dot on edge inputs: all-max,
// all-zero and random raw quants and scales against ±127/-128 activations,
// an odd row count, sub-ranges and row lengths that cross the kernels'
// 16-super-block header segments.
func TestGeneratedAVX2RowsEdges(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2 (or MINFER_NO_AVX2 set): the AVX2 kernels cannot run")
	}
	r := rand.New(rand.NewPCG(17, 19))
	for _, k := range generatedAVX2Rows() {
		t.Run(k.typ.String(), func(t *testing.T) {
			dot := quant.DotFor(k.typ)
			bs, halfs := map[quant.Type]int{quant.Q4_K: 144, quant.Q5_K: 176, quant.Q6_K: 210}[k.typ], []int{0, 2}
			if k.typ == quant.Q6_K {
				halfs = []int{208}
			}
			const N = 7
			for _, nb := range []int{1, 2, 16, 17, 33} {
				K := nb * 256
				wrb := nb * bs
				for wk := 0; wk < 3; wk++ {
					w := edgeKQWeights(r, N, nb, bs, halfs, wk)
					for ak := 0; ak < 5; ak++ {
						a := edgeQ8K(r, nb, ak)
						for _, rg := range [][2]int{{0, N}, {0, N - 1}, {1, 6}, {2, 6}, {2, 3}, {N - 1, N}, {3, 3}} {
							y := make([]float32, N)
							for i := range y {
								y[i] = float32(math.NaN())
							}
							k.f(K, w[:rg[1]*wrb], wrb, a, y, rg[0], rg[1])
							for n := range y {
								if n < rg[0] || n >= rg[1] {
									if !math.IsNaN(float64(y[n])) {
										t.Fatalf("nb=%d rows %v: wrote y[%d]", nb, rg, n)
									}
									continue
								}
								want := dot(K, w[n*wrb:(n+1)*wrb], a)
								if math.Float32bits(y[n]) != math.Float32bits(want) {
									t.Fatalf("nb=%d weights %d act %d rows %v: y[%d] = %v (%#08x), oracle %v (%#08x)",
										nb, wk, ak, rg, n, y[n], math.Float32bits(y[n]), want, math.Float32bits(want))
								}
							}
						}
					}
				}
			}
		})
	}
}

// stepRowCounts are the row counts TestAVX2RowsStepCounts runs: every
// count 1..9, then counts whose four-row steps take rows a quarter of the
// range apart (rows i, q+i, 2q+i, 3q+i) with 0..3 rows left over.
var stepRowCounts = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 14, 17, 23, 31, 38}

// TestAVX2RowsStepCounts checks the AVX2 Q4_K, Q6_K, Q5_K, Q3_K and Q2_K row kernels, called
// directly, bit for bit against the pure-Go dot for every row count of
// stepRowCounts from two starting rows: the four-row step (its rows spread
// over the range), the pair and the single row that finish a range (odd
// tails included; Q5_K's pairs spread too), and every position of a row
// within a step. Weights are
// quantized from random rows, raw random bytes and all-0x00 / all-0xff
// blocks; activations are quantized random rows and the edgeQ8K patterns
// (±127, -128, zero); row lengths cross the 16-super-block header segments
// of the Q4_K kernel.
func TestAVX2RowsStepCounts(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2 (or MINFER_NO_AVX2 set): the AVX2 kernels cannot run")
	}
	testRowsStepCounts(t, []rowKernel{
		{quant.Q4_K, "avx2", kqRows(kqRowsQ4KAVX2, 144)},
		{quant.Q6_K, "avx2", kqRows(kqRowsQ6KAVX2, 210)},
		{quant.Q5_K, "avx2", kqRows(kqRowsQ5KAVX2, 176)},
		{quant.Q3_K, "avx2", kqRows(kqRowsQ3KAVX2, 110)},
		{quant.Q2_K, "avx2", kqRows(kqRowsQ2KAVX2, 84)},
	})
}

// TestVNNIRowsStepCounts is TestAVX2RowsStepCounts for the AVX-512 VNNI
// Q4_K, Q6_K, Q5_K, Q3_K and Q2_K row kernels (their four-row / two-row steps spread
// over the range too).
func TestVNNIRowsStepCounts(t *testing.T) {
	if !hasVNNI {
		t.Skip("no AVX-512 VNNI (or MINFER_NO_AVX512 set): the VNNI kernels cannot run")
	}
	testRowsStepCounts(t, []rowKernel{
		{quant.Q4_K, "avx512vnni", kqRows(kqRowsQ4KVNNI, 144)},
		{quant.Q6_K, "avx512vnni", kqRows(kqRowsQ6KVNNI, 210)},
		{quant.Q5_K, "avx512vnni", kqRows(kqRowsQuad(kqRowsQ5KVNNI, kqRowsQ5KAVX2), 176)},
		{quant.Q3_K, "avx512vnni", kqRows(kqRowsQ3KVNNI, 110)},
		{quant.Q2_K, "avx512vnni", kqRows(kqRowsQ2KVNNI, 84)},
	})
}

func testRowsStepCounts(t *testing.T, kernels []rowKernel) {
	r := rand.New(rand.NewPCG(23, 29))
	for _, k := range kernels {
		t.Run(k.typ.String(), func(t *testing.T) {
			dot := quant.DotFor(k.typ)
			const N = 40
			for _, nb := range []int{1, 3, 4, 12, 17} {
				K := nb * 256
				for wk := 0; wk < 3; wk++ {
					w, wrb := rowTestWeights(t, r, k.typ, N, K, wk)
					for ak := 0; ak < 6; ak++ {
						var a []byte
						if ak == 5 {
							a = make([]byte, nb*kqBlockQ8K)
							quant.QuantizeQ8K(kqRandRow(r, K, nb), a)
						} else {
							a = edgeQ8K(r, nb, ak)
						}
						want := make([]float32, N)
						for n := range want {
							want[n] = dot(K, w[n*wrb:(n+1)*wrb], a)
						}
						for n0 := 0; n0 < 2; n0++ {
							for _, rows := range stepRowCounts {
								n1 := n0 + rows
								y := make([]float32, N)
								for i := range y {
									y[i] = float32(math.NaN())
								}
								k.f(K, w[:n1*wrb], wrb, a, y, n0, n1)
								for n := range y {
									if n < n0 || n >= n1 {
										if !math.IsNaN(float64(y[n])) {
											t.Fatalf("nb=%d rows [%d,%d): wrote y[%d]", nb, n0, n1, n)
										}
										continue
									}
									if math.Float32bits(y[n]) != math.Float32bits(want[n]) {
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
