//go:build amd64 && !purego

package cpu

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/minfer/minfer/quant"
)

// streamBytes is the least size of a streamed weight matrix: twice the
// 32 MiB L3 of the machine this was tuned on, so a sweep reads DRAM.
const streamBytes = 128 << 20

// hotBytes is the size of the in-cache (L2) variant: the kernel's
// compute ceiling, for comparison.
const hotBytes = 512 << 10

// streamMatrix returns a weight matrix of at least size bytes of type wt
// with rows of K elements (a 64-row quantized tile repeated; the kernels'
// speed does not depend on the values) and its row count.
func streamMatrix(b *testing.B, r *rand.Rand, wt quant.Type, K, size int) ([]byte, int) {
	const tileRows = 64
	tile := quantWeights(b, r, wt, tileRows, K)
	N := (size/len(tile) + 1) * tileRows
	w := make([]byte, N/tileRows*len(tile))
	for off := 0; off < len(w); off += len(tile) {
		copy(w[off:], tile)
	}
	return w, N
}

// BenchmarkStreamRows measures decode-shaped (one activation row) mat-muls
// whose weights do not fit in cache, as every weight of a decode step
// streams from memory once per token; MB/s is weight bytes read. The
// "read" cases are the bare streaming-read ceiling over the same size; the
// "hot" cases run the same kernels on a matrix that stays in L2 (their
// compute ceiling).
func BenchmarkStreamRows(b *testing.B) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, wt := range []quant.Type{quant.Q8_0, quant.Q5_0, quant.Q4_0, quant.Q4_K, quant.Q6_K} {
		for _, K := range []int{896, 1024, 4864} {
			if _, err := wt.RowSize(K); err != nil {
				continue
			}
			for _, hot := range []bool{false, true} {
				name := fmt.Sprintf("%s/K%d", wt, K)
				size := streamBytes
				if hot {
					name, size = name+"/hot", hotBytes
				}
				b.Run(name, func(b *testing.B) {
					k, err := NewMatMul(wt)
					if err != nil {
						b.Fatal(err)
					}
					if k.rows == nil {
						b.Skip("no SIMD row kernel")
					}
					w, N := streamMatrix(b, r, wt, K, size)
					act := make([]byte, k.ActRowBytes(K))
					k.QuantizeRows(randVec(r, K, 1), K, 0, 1, act)
					y := make([]float32, N)
					b.SetBytes(int64(len(w)))
					for b.Loop() {
						k.Run(K, w, act, 1, y, N, 0, N)
					}
				})
			}
		}
	}
	buf := benchBytes(b, streamBytes)
	for i := range buf {
		buf[i] = byte(i)
	}
	for _, c := range []struct {
		name string
		ok   bool
		f    func(*byte, int) uint64
	}{{"read/avx2", hasAVX2, streamSumAVX2}, {"read/avx512", hasAVX512, streamSumAVX512},
		{"read/avx512+prefetch", hasAVX512, streamSumAVX512PF}} {
		b.Run(c.name, func(b *testing.B) {
			if !c.ok {
				b.Skip("not supported here")
			}
			b.SetBytes(int64(len(buf)))
			var s uint64
			for b.Loop() {
				s += c.f(&buf[0], len(buf))
			}
			if s == 1 {
				b.Log(s)
			}
		})
	}
}

// decodeBytes is the size of the weight matrix BenchmarkDecode streams:
// twice the 32 MiB L3 of the machine this was tuned on.
const decodeBytes = 64 << 20

// dramBytes is the size of BenchmarkDecode's "dram" cases: 32 times that
// L3, so no part of a pass is left in cache from the one before (a 64 MiB
// matrix read twice in a row still finds some of it in the L3, which
// flatters both the kernel and the read). A decode step streams many
// matrices of a few MiB instead, and on the 2026-12-03 Zen 4 host one 1 GiB
// matrix (its four spread streams 256 MiB apart) ran the AVX2 Q4_K / Q6_K
// kernels at 8 / 6 GB/s where a decode step's shapes ran them at 16-19
// (BenchmarkTokenShape, the figure to trust for end to end there).
const dramBytes = 1 << 30

// decodeKernel is one row kernel of one SIMD tier as BenchmarkDecode and
// TestDecodeKernels see it: the asm called directly (not through the
// start-up dispatch), so the AVX2 tier is measured and tested on an
// AVX-512 machine too.
type decodeKernel struct {
	typ  quant.Type
	tier string // "avx2" or "avx512"
	ok   bool   // the CPU has the tier
	f    RowsFunc
}

// decodeKernels lists every row kernel of every tier (dot_*_amd64.go).
func decodeKernels() []decodeKernel {
	var ks []decodeKernel
	for _, k := range rowKernelTable() {
		ks = append(ks, decodeKernel{k.typ, k.tier, k.tier == "avx2" && hasAVX2 ||
			k.tier == "avx512" && hasAVX512 || k.tier == "avx512vnni" && hasVNNI ||
			k.tier == "avxvnni" && hasAVXVNNI, k.f})
	}
	return ks
}

// threadCPU is the CPU time the calling OS thread has used: timings from
// it leave out the time other processes take on a shared machine.
func threadCPU() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}

// BenchmarkDecode streams a 64 MiB weight matrix (rows of K elements, out
// of cache) through each row kernel of each tier against one activation
// row, as a decode step does, and after every kernel pass times a plain
// streaming read of the same bytes with the same tier's vector width
// (streamSumAVX2 / streamSumAVX512). It reports the kernel's weight bytes
// per second of the thread's CPU time (GB/s; ns/op is wall time), the
// read's (readGB/s) and their ratio; the ratio is the figure to compare
// across runs, as both sides share the machine's memory traffic. The
// "hot" cases run a 512 KiB matrix that stays in L2: the kernel's
// compute ceiling; the "dram" cases a 1 GiB matrix (dramBytes), at
// K=1024 and 3072 and, for the 32-element formats, also at Qwen2.5's 896
// and 4864. Kernels of tiers the CPU lacks are skipped.
func BenchmarkDecode(b *testing.B) {
	r := rand.New(rand.NewPCG(51, 52))
	buf := benchBytes(b, decodeBytes+(1<<20))
	parent := b
	for i := range buf {
		buf[i] = byte(i)
	}
	var dram []byte // allocated by the first dram case that runs
	type shape struct {
		K    int
		kind string // "", "hot" or "dram"
	}
	for _, k := range decodeKernels() {
		cases := []shape{{1024, ""}, {3072, ""}, {1024, "hot"}, {1024, "dram"}, {3072, "dram"}}
		switch k.typ {
		case quant.Q4_0, quant.Q5_0, quant.Q8_0:
			// Qwen2.5's widths: K=896 rows are short (28 blocks), and
			// its Q8_0 output head is one; 4864 is the ffn width.
			cases = append(cases, shape{896, "dram"}, shape{4864, "dram"})
		}
		for _, c := range cases {
			K, size, name := c.K, decodeBytes, fmt.Sprintf("%s/K%d/%s", k.typ, c.K, k.tier)
			switch c.kind {
			case "hot":
				size = 512 << 10
			case "dram":
				size = dramBytes
			}
			if c.kind != "" {
				name = fmt.Sprintf("%s/K%d/%s/%s", k.typ, K, c.kind, k.tier)
			}
			b.Run(name, func(b *testing.B) {
				if !k.ok {
					b.Skipf("the CPU lacks the %s tier", k.tier)
				}
				buf := buf
				if c.kind == "dram" {
					if dram == nil {
						dram = benchBytes(parent, dramBytes)
					}
					buf = dram
				}
				read := streamSumAVX2
				if k.tier != "avx2" && k.tier != "avxvnni" {
					read = streamSumAVX512
				}
				mm, err := NewMatMul(k.typ)
				if err != nil {
					b.Fatal(err)
				}
				wrb := mm.WeightRowBytes(K)
				const tileRows = 64
				tile := quantWeights(b, r, k.typ, tileRows, K)
				N := size / wrb
				w := buf[:N*wrb]
				for off := 0; off < len(w); off += len(tile) {
					copy(w[off:], tile)
				}
				act := make([]byte, mm.ActRowBytes(K))
				mm.QuantizeRows(randVec(r, K, 1), K, 0, 1, act)
				y := make([]float32, N)
				streamVsRead(b, w, read, func() { k.f(K, w, wrb, act, y, 0, N) })
			})
		}
	}
}

// BenchmarkStreamRowsBest is BenchmarkStreamRows for a machine shared with
// other work: each case times many single passes (a mat-mul of one
// activation row against the whole matrix) and reports the fastest as
// GB/s of weight bytes ("best"), which other processes can only make
// slower. Streamed cases use a 64 MiB matrix (best of 40 passes), hot ones
// 512 KiB (best of 2000); "read" is the plain streaming read (streamSumAVX2)
// over the same sizes. It runs the AVX2 row kernels directly
// (rowKernelTable), whatever tier the dispatch chose.
func BenchmarkStreamRowsBest(b *testing.B) {
	r := rand.New(rand.NewPCG(51, 52))
	buf := benchBytes(b, 64<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	best := func(n int, f func()) float64 {
		var bt time.Duration = 1 << 62
		for i := 0; i < n; i++ {
			t0 := time.Now()
			f()
			if d := time.Since(t0); d < bt {
				bt = d
			}
		}
		return bt.Seconds()
	}
	sizes := []struct {
		name   string
		size   int
		passes int
	}{{"", 64 << 20, 40}, {"/hot", 512 << 10, 2000}}
	for _, sz := range sizes {
		b.Run("read"+sz.name+"/avx2", func(b *testing.B) {
			if !hasAVX2 {
				b.Skip("no AVX2")
			}
			var s uint64
			for b.Loop() {
				sec := best(sz.passes, func() { s += streamSumAVX2(&buf[0], sz.size) })
				b.ReportMetric(float64(sz.size)/sec/1e9, "bestGB/s")
			}
		})
	}
	for _, k := range rowKernelTable() {
		if k.tier != "avx2" {
			continue
		}
		for _, K := range []int{1024, 3072} {
			for _, sz := range sizes {
				b.Run(fmt.Sprintf("%s/K%d%s/avx2", k.typ, K, sz.name), func(b *testing.B) {
					if !hasAVX2 {
						b.Skip("no AVX2")
					}
					mm, err := NewMatMul(k.typ)
					if err != nil {
						b.Fatal(err)
					}
					wrb := mm.WeightRowBytes(K)
					tile := quantWeights(b, r, k.typ, 64, K)
					N := sz.size / wrb
					w := buf[:N*wrb]
					for off := 0; off < len(w); off += len(tile) {
						copy(w[off:], tile)
					}
					act := make([]byte, mm.ActRowBytes(K))
					mm.QuantizeRows(randVec(r, K, 1), K, 0, 1, act)
					y := make([]float32, N)
					for b.Loop() {
						sec := best(sz.passes, func() { k.f(K, w, wrb, act, y, 0, N) })
						b.ReportMetric(float64(len(w))/sec/1e9, "bestGB/s")
					}
				})
			}
		}
	}
}

// streamVsRead times kern (a pass over the weight bytes w) and, after each
// pass, a plain streaming read of the same bytes with read, in the
// calling thread's CPU time, and reports the kernel's weight GB/s, the
// read's (readGB/s) and their ratio.
func streamVsRead(b *testing.B, w []byte, read func(p *byte, n int) uint64, kern func()) {
	nr := len(w) &^ 255
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var kernNs, readNs int64
	var s uint64
	for b.Loop() {
		t0 := threadCPU()
		kern()
		t1 := threadCPU()
		s += read(&w[0], nr)
		t2 := threadCPU()
		kernNs += t1 - t0
		readNs += t2 - t1
	}
	if s == 1 {
		b.Log(s)
	}
	gbs := float64(len(w)) * float64(b.N) / float64(kernNs)
	rgbs := float64(nr) * float64(b.N) / float64(readNs)
	b.ReportMetric(gbs, "GB/s")
	b.ReportMetric(rgbs, "readGB/s")
	b.ReportMetric(gbs/rgbs, "ratio")
}
