//go:build amd64 && !purego

package cpu

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/minfer/minfer/quant"
)

// BenchmarkTokenShape runs the Q4_K/Q6_K row kernels of each tier (AVX2,
// AVX-512 VNNI) over the mat-muls of one Qwen3-0.6B decode step (28
// layers, each its own weights, then the 151936-row Q6_K head), back to
// back, the weights in one huge-page arena as a plan's are: the kernels'
// share of a one-thread decode step without the rest of it.
func BenchmarkTokenShape(b *testing.B) {
	for _, tier := range []string{"avx2", "avx512vnni"} {
		b.Run(tier, func(b *testing.B) {
			if tier == "avx2" && !hasAVX2 || tier == "avx512vnni" && !hasVNNI {
				b.Skipf("the CPU lacks the %s tier", tier)
			}
			benchTokenShape(b, tier)
		})
	}
}

func benchTokenShape(b *testing.B, tier string) {
	r := rand.New(rand.NewPCG(1, 2))
	type mm struct {
		typ  quant.Type
		N, K int
	}
	var shapes []mm
	for l := 0; l < 28; l++ {
		six := l%3 == 0
		vt, dt := quant.Q4_K, quant.Q4_K
		if six {
			vt, dt = quant.Q6_K, quant.Q6_K
		}
		shapes = append(shapes, mm{quant.Q4_K, 2048, 1024}, mm{quant.Q4_K, 1024, 1024}, mm{vt, 1024, 1024},
			mm{quant.Q4_K, 1024, 2048}, mm{quant.Q4_K, 3072, 1024}, mm{quant.Q4_K, 3072, 1024}, mm{dt, 1024, 3072})
	}
	shapes = append(shapes, mm{quant.Q6_K, 151936, 1024})
	kern := map[quant.Type]RowsFunc{}
	for _, k := range rowKernelTable() {
		if k.tier == tier && (k.typ == quant.Q4_K || k.typ == quant.Q6_K) {
			kern[k.typ] = k.f
		}
	}
	type call struct {
		f   RowsFunc
		K   int
		w   []byte
		wrb int
		a   []byte
		y   []float32
		N   int
	}
	var calls []call
	total := 0
	for _, s := range shapes {
		m, _ := NewMatMul(s.typ)
		total += (s.N*m.WeightRowBytes(s.K) + 63) &^ 63
	}
	arena := benchBytes(b, total)
	total = 0
	tiles := map[quant.Type][]byte{}
	for _, s := range shapes {
		m, _ := NewMatMul(s.typ)
		wrb := m.WeightRowBytes(s.K)
		key := s.typ
		if tiles[key] == nil || len(tiles[key]) != 64*wrb {
			tiles[key] = quantWeights(b, r, s.typ, 64, s.K)
		}
		w := arena[total : total+s.N*wrb]
		total += (len(w) + 63) &^ 63
		for off := 0; off < len(w); off += len(tiles[key]) {
			copy(w[off:], tiles[key])
		}
		act := make([]byte, m.ActRowBytes(s.K))
		m.QuantizeRows(randVec(r, s.K, 1), s.K, 0, 1, act)
		calls = append(calls, call{kern[s.typ], s.K, w, wrb, act, make([]float32, s.N), s.N})
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	run := func(name string, sel func(i int) bool, read bool) {
		b.Run(name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			bytes := 0
			for i, c := range calls {
				if sel(i) {
					bytes += len(c.w)
				}
			}
			var ns int64
			var s uint64
			for b.Loop() {
				t0 := threadCPU()
				for i, c := range calls {
					if !sel(i) {
						continue
					}
					if read {
						s += streamSumAVX2(&c.w[0], len(c.w)&^255)
					} else {
						c.f(c.K, c.w, c.wrb, c.a, c.y, 0, c.N)
					}
				}
				ns += threadCPU() - t0
			}
			if s == 1 {
				b.Log(s)
			}
			b.ReportMetric(float64(bytes)*float64(b.N)/float64(ns), "GB/s")
			b.ReportMetric(float64(ns)/float64(b.N)/1e6, "cpu-ms/tok")
		})
	}
	head := len(calls) - 1
	all := func(int) bool { return true }
	run("all", all, false)
	run("allread", all, true)
	run("layers", func(i int) bool { return i != head }, false)
	run("head", func(i int) bool { return i == head }, false)
	run("layersread", func(i int) bool { return i != head }, true)
	run("headread", func(i int) bool { return i == head }, true)
}
