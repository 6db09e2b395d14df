//go:build amd64 && !purego

package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"runtime"

	"github.com/minfer/minfer/quant"
)

// TestSmallMKernels calls every small-M kernel of every tier directly (the
// AVX2 ones on an AVX-512 machine too) and checks each output's bits
// against quant's pure-Go dot: M = 2..8 activation rows (rows of random
// and extreme activations mixed), K of one block up to qwen-sized rows
// (for the K-quants up to 28 super-blocks: several of their segments),
// weight-row ranges over several of their tiles,
// odd weight-row ranges, an output stride wider than the rows, random,
// raw-byte and extreme weight blocks; outputs outside the range must stay
// untouched.
func TestSmallMKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(71, 72))
	for _, k := range smallKernelTable() {
		t.Run(k.typ.String()+"/"+k.name, func(t *testing.T) {
			if !tierOK(k.tier) {
				t.Skipf("the %s tier is unavailable: the CPU lacks it or a MINFER_NO_* switch dropped it", k.tier)
			}
			dot := quant.DotFor(k.typ)
			vdt := k.typ.VecDotType()
			bsz := k.typ.BlockSize()
			const N, ldy = 37, 41 // more than two of the K-quant kernels' 16-row tiles
			for _, nb := range []int{1, 2, 3, 7, 28} {
				K := nb * bsz
				arb, _ := vdt.RowSize(K)
				for kind := 0; kind < 3; kind++ {
					w, wrb := rowTestWeights(t, r, k.typ, N, K, kind)
					for M := 2; M <= 8; M++ {
						act := make([]byte, M*arb)
						for m := 0; m < M; m++ {
							x := kqRandRow(r, K, (kind+m)%3)
							if m%2 == 1 {
								for i := range x {
									if i%3 == 0 {
										x[i] = 1000 * float32(1-2*(i%2))
									}
								}
							}
							if err := quant.QuantizeAct(vdt, x, act[m*arb:(m+1)*arb]); err != nil {
								t.Fatal(err)
							}
						}
						for _, rg := range [][2]int{{0, N}, {0, 1}, {1, 6}, {3, 10}, {3, 35}, {16, 33}, {5, 5}, {N - 1, N}} {
							y := make([]float32, M*ldy)
							for i := range y {
								y[i] = float32(math.NaN())
							}
							k.f(K, w[:rg[1]*wrb], wrb, act, arb, M, y, ldy, rg[0], rg[1])
							for m := 0; m < M; m++ {
								for n := 0; n < ldy; n++ {
									got := y[m*ldy+n]
									if n < rg[0] || n >= rg[1] {
										if !math.IsNaN(float64(got)) {
											t.Fatalf("K=%d M=%d rows %v: wrote y[%d][%d]", K, M, rg, m, n)
										}
										continue
									}
									want := dot(K, w[n*wrb:(n+1)*wrb], act[m*arb:(m+1)*arb])
									if math.Float32bits(got) != math.Float32bits(want) {
										t.Fatalf("K=%d weights %d M=%d rows %v: y[%d][%d] = %v (%#08x), oracle %v (%#08x)",
											K, kind, M, rg, m, n, got, math.Float32bits(got), want, math.Float32bits(want))
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

// TestSmallMDispatch checks that MatMul.Run gives the pure-Go dot's bits
// for every M up to 9 through whatever path the start-up dispatch chose
// (small-M kernel, GEMM or row kernels) for every type with a small-M
// kernel or a GEMM.
func TestSmallMDispatch(t *testing.T) {
	r := rand.New(rand.NewPCG(73, 74))
	for _, wt := range []quant.Type{quant.Q8_0, quant.Q5_0, quant.Q4_0, quant.Q4_K, quant.Q5_K, quant.Q6_K} {
		k, err := NewMatMul(wt)
		if err != nil {
			t.Fatal(err)
		}
		const N = 37
		// K=4864: the two-weight-row kernels' records no longer fit
		// smallZWRecordBudget at any M and zmm2 runs instead.
		for _, K := range []int{2 * 256, 19 * 256} {
			w, wrb := rowTestWeights(t, r, wt, N, K, 0)
			arb := k.ActRowBytes(K)
			// 1..9, then counts the small-M kernel takes in chunks
			// (upTo) and past them the GEMM with a rest of 1..3 rows
			// for the small-M kernel (gemmTail).
			var c ActCache
			for _, M := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16, 17, 23, 31, 33, 37, 41, 66, 67} {
				x := make([]float32, M*K)
				for m := 0; m < M; m++ {
					copy(x[m*K:], kqRandRow(r, K, m%3))
				}
				act := make([]byte, M*arb)
				k.QuantizeRows(x, K, 0, M, act)
				for _, cached := range []bool{false, true} {
					y := make([]float32, M*N)
					if cached {
						c.Reset()
						k.RunCached(K, w, act, M, y, N, 3, 20, &c)
						k.RunCached(K, w, act, M, y, N, 20, N, &c)
					} else {
						k.Run(K, w, act, M, y, N, 3, N)
					}
					for m := 0; m < M; m++ {
						for n := 3; n < N; n++ {
							want := quant.DotFor(wt)(K, w[n*wrb:(n+1)*wrb], act[m*arb:(m+1)*arb])
							if math.Float32bits(y[m*N+n]) != math.Float32bits(want) {
								t.Fatalf("%s K=%d M=%d cached=%v: y[%d][%d] = %v, oracle %v", wt, K, M, cached, m, n, y[m*N+n], want)
							}
						}
					}
				}
			}
		}
	}
}

// BenchmarkSmallM measures the mat-mul of a batched decode step: N=896
// weight rows of K=1024 (and, for Q4_K and Q6_K, K=4864: qwen2-0.5b's
// ffn_down) against M = 1, 2, 4, 8 activation rows, through MatMul.Run
// (the path the dispatch chooses: "run") and, for types with them, the
// installed small-M kernel called directly ("small"), every small-M
// kernel of smallKernelTable the CPU can run (by name: "avx2", "zmm2",
// "zmmw"),
// and the GEMM ("gemm") and row-kernel loop ("rows").
// ns/row is per weight row (all M outputs of it); cpu-ns/row the same in
// the thread's CPU time (robust to other processes). The weights (under
// 1 MB) stay in L2 across iterations; a model's come from DRAM every
// step, where software prefetch matters (see internal/asmgen/smallz.go).
func BenchmarkSmallM(b *testing.B) {
	const N = 896
	r := rand.New(rand.NewPCG(75, 76))
	for _, sh := range []struct {
		K     int
		types []quant.Type
	}{
		{1024, []quant.Type{quant.Q8_0, quant.Q5_0, quant.Q4_0, quant.Q4_K, quant.Q5_K, quant.Q6_K}},
		{4864, []quant.Type{quant.Q4_K, quant.Q6_K}}, // qwen2-0.5b's ffn_down
	} {
		K := sh.K
		for _, wt := range sh.types {
			k, err := NewMatMul(wt)
			if err != nil {
				b.Fatal(err)
			}
			w, wrb := rowTestWeights(b, r, wt, N, K, 0)
			arb := k.ActRowBytes(K)
			for _, M := range []int{1, 2, 4, 8} {
				x := make([]float32, M*K)
				for m := 0; m < M; m++ {
					copy(x[m*K:], kqRandRow(r, K, 0))
				}
				act := make([]byte, M*arb)
				k.QuantizeRows(x, K, 0, M, act)
				y := make([]float32, M*N)
				paths := map[string]func(){
					"run": func() { k.Run(K, w, act, M, y, N, 0, N) },
				}
				if M > 1 {
					if k.small.f != nil {
						paths["small"] = func() { k.small.f(K, w, wrb, act, arb, M, y, N, 0, N) }
					}
					for _, sk := range smallKernelTable() {
						if sk.typ == wt && tierOK(sk.tier) {
							f := sk.f
							paths[sk.name] = func() { f(K, w, wrb, act, arb, M, y, N, 0, N) }
						}
					}
					if k.gemm != nil {
						paths["gemm"] = func() { k.gemm(K, w, wrb, act, arb, M, y, N, 0, N) }
					}
					if k.rows != nil {
						paths["rows"] = func() {
							for nb := 0; nb < N; nb += matMulTile {
								for m := 0; m < M; m++ {
									k.rows(K, w, wrb, act[m*arb:(m+1)*arb], y[m*N:], nb, min(nb+matMulTile, N))
								}
							}
						}
					}
				}
				for _, p := range []string{"run", "small", "avx2", "avxvnni", "zmm2", "zmmw", "gemm", "rows"} {
					f := paths[p]
					if f == nil {
						continue
					}
					b.Run(fmt.Sprintf("%s/K=%d/M=%d/%s", wt, K, M, p), func(b *testing.B) {
						runtime.LockOSThread()
						defer runtime.UnlockOSThread()
						c0 := threadCPU()
						for b.Loop() {
							f()
						}
						b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/N, "ns/row")
						b.ReportMetric(float64(threadCPU()-c0)/float64(b.N)/N, "cpu-ns/row")
					})
				}
			}
		}
	}
}

// TestSmallZRecords checks the record builders of the two-weight-row ZMM
// kernels (asm) against smallZRecords (Go) for every M and offset factor,
// on raw activation bytes (any quant, -128 included; any finite f16 scale).
func TestSmallZRecords(t *testing.T) {
	if !hasVNNI {
		t.Skip("the AVX-512 VNNI tier is unavailable: the CPU lacks it or a MINFER_NO_* switch dropped it")
	}
	r := rand.New(rand.NewPCG(77, 78))
	for M := 2; M <= 8; M++ {
		for _, nb := range []int{1, 3, 28} {
			for _, c := range []int32{128, 16, 8} {
				arb := nb*34 + 6
				act := make([]byte, M*arb)
				for i := range act {
					act[i] = byte(r.Uint32())
				}
				for j := 0; j < M; j++ {
					for b := 0; b < nb; b++ {
						act[j*arb+b*34+1] &^= 0x40 // a finite scale: VCVTPH2PS quiets NaNs, the table does not
					}
				}
				mp := (M + 1) &^ 1
				n := nb * (64 + 64*mp)
				want, got := make([]byte, n), make([]byte, n)
				for i := range got {
					got[i] = 0xAA
				}
				smallZRecords(want, act, arb, nb, M, mp, c)
				smallZRecordsAsm[M-2](&got[0], &act[0], arb, nb, int(c))
				for i := range want {
					if want[i] != got[i] {
						t.Fatalf("M=%d nb=%d c=%d: record byte %d (block %d, offset %d) = %#02x, want %#02x",
							M, nb, c, i, i/(64+64*mp), i%(64+64*mp), got[i], want[i])
					}
				}
			}
		}
	}
}

// TestSmallZWRecords checks the record builders of the ZMM kernels with
// two weight rows per register (asm) against smallZWRecords (Go) for every
// M and offset factor, on raw activation bytes (any quant, -128 included;
// any finite f16 scale).
func TestSmallZWRecords(t *testing.T) {
	if !hasVNNI {
		t.Skip("the AVX-512 VNNI tier is unavailable: the CPU lacks it or a MINFER_NO_* switch dropped it")
	}
	r := rand.New(rand.NewPCG(81, 82))
	for M := 2; M <= 8; M++ {
		for _, nb := range []int{1, 3, 28} {
			for _, c := range []int32{128, 16, 8} {
				arb := nb*34 + 6
				act := make([]byte, M*arb)
				for i := range act {
					act[i] = byte(r.Uint32())
				}
				for j := 0; j < M; j++ {
					for b := 0; b < nb; b++ {
						act[j*arb+b*34+1] &^= 0x40 // a finite scale: VCVTPH2PS quiets NaNs, the table does not
					}
				}
				bs := smallZWRecordBytes(M)
				want, got := make([]byte, nb*bs), make([]byte, nb*bs)
				for i := range got {
					got[i] = 0xAA
				}
				smallZWRecords(want, act, arb, nb, M, c)
				smallZWRecordsAsm[M-2](&got[0], &act[0], arb, nb, int(c))
				for i := range want {
					if want[i] != got[i] {
						t.Fatalf("M=%d nb=%d c=%d: record byte %d (block %d, offset %d) = %#02x, want %#02x",
							M, nb, c, i, i/bs, i%bs, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestSmallKCached runs the small-M K-quant kernels of each tier the way a
// worker does: one ActCache, the output columns in chunks, the records
// derived on the first chunk and reused by the others; then new activation
// rows in the same buffer after a Reset. Every output must have the
// oracle's bits, and one chunked product must leave one derived block.
func TestSmallKCached(t *testing.T) {
	r := rand.New(rand.NewPCG(81, 82))
	for _, tc := range []struct {
		typ  quant.Type
		tier string
		name string
		fc   GemmCachedFunc
	}{
		{quant.Q4_K, "avx2", "avx2", smallKGemm(smallKAVX2[quant.Q4_K])},
		{quant.Q6_K, "avx2", "avx2", smallKGemm(smallKAVX2[quant.Q6_K])},
		{quant.Q4_K, "avx512vnni", "zmm2", smallKZGemm(smallKZ[quant.Q4_K])},
		{quant.Q6_K, "avx512vnni", "zmm2", smallKZGemm(smallKZ[quant.Q6_K])},
	} {
		t.Run(tc.typ.String()+"/"+tc.name, func(t *testing.T) {
			if !tierOK(tc.tier) {
				t.Skipf("the %s tier is unavailable: the CPU lacks it or a MINFER_NO_* switch dropped it", tc.tier)
			}
			dot := quant.DotFor(tc.typ)
			const N = 53
			for _, K := range []int{256, 19 * 256} {
				w, wrb := rowTestWeights(t, r, tc.typ, N, K, 0)
				arb, _ := quant.Q8_K.RowSize(K)
				for M := 2; M <= 8; M++ {
					act := make([]byte, M*arb)
					var c ActCache
					for round := 0; round < 2; round++ {
						for m := 0; m < M; m++ {
							if err := quant.QuantizeAct(quant.Q8_K, kqRandRow(r, K, (m+round)%3), act[m*arb:(m+1)*arb]); err != nil {
								t.Fatal(err)
							}
						}
						c.Reset()
						y := make([]float32, M*N)
						for _, ch := range [][2]int{{0, 7}, {7, 23}, {23, 24}, {24, N}} {
							tc.fc(K, w, wrb, act, arb, M, y, N, ch[0], ch[1], &c)
						}
						live := 0
						for _, e := range c.ents {
							if e.gen == c.gen {
								live++
							}
						}
						if live != 1 {
							t.Fatalf("K=%d M=%d: %d derived blocks after one chunked product, want 1", K, M, live)
						}
						for m := 0; m < M; m++ {
							for n := 0; n < N; n++ {
								want := dot(K, w[n*wrb:(n+1)*wrb], act[m*arb:(m+1)*arb])
								if got := y[m*N+n]; math.Float32bits(got) != math.Float32bits(want) {
									t.Fatalf("K=%d M=%d round %d: y[%d][%d] = %v, oracle %v", K, M, round, m, n, got, want)
								}
							}
						}
					}
				}
			}
		})
	}
}

// TestSmallUpTo checks the dispatch of more than 8 rows on this CPU's
// tier: on AVX-512 VNNI the legacy types have no GEMM and their small-M
// kernels take every row count; elsewhere the counts of smallm_amd64.go.
func TestSmallUpTo(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2: no small-M kernels")
	}
	for _, wt := range []quant.Type{quant.Q8_0, quant.Q5_0, quant.Q4_0, quant.Q4_K, quant.Q6_K} {
		k, err := NewMatMul(wt)
		if err != nil {
			t.Fatal(err)
		}
		legacy := wt.BlockSize() == 32
		want := smallKQuantUpTo()
		if legacy {
			want = smallLegacyUpTo()
		}
		if k.small.upTo != want || k.small.upTo <= k.small.maxM {
			t.Errorf("%s: small-M kernel up to %d rows, want %d (> %d)", wt, k.small.upTo, want, k.small.maxM)
		}
		if hasVNNI && legacy && (k.gemm != nil || k.small.upTo != math.MaxInt) {
			t.Errorf("%s on AVX-512 VNNI: GEMM installed %v, small-M up to %d; want no GEMM, every count", wt, k.gemm != nil, k.small.upTo)
		}
		t.Logf("%s: small-M kernel %s up to %d rows in chunks of %d, GEMM %v", wt, k.small.tier, k.small.upTo, k.small.maxM, k.gemm != nil)
	}
}
