package exec

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/minfer/minfer/alloc"
	"github.com/minfer/minfer/frontends/gguf"
	"github.com/minfer/minfer/ir"
	"github.com/minfer/minfer/quant"
)

// TestDecodeBlockSplitKeepsBits: decode steps whose flash attention is
// split by KV block (forced at 2 threads, chosen at 3 for the fixture's 2
// KV heads), at positions 700..1023 (3 and 4 blocks of a 1024-position
// cache), give the 1-thread logits bit for bit, with and without workers
// stalling at random.
// The f16 cache (the default) and the q8_0 cache (not in -short runs, the
// emulated arm64 ones: backends/cpu's block split test covers it there).
func TestDecodeBlockSplitKeepsBits(t *testing.T) {
	for _, kv := range []quant.Type{quant.F16, quant.Q8_0} {
		t.Run(kv.String(), func(t *testing.T) {
			if kv == quant.Q8_0 && testing.Short() {
				t.Skip("-short: the q8_0 cache's block split is left to backends/cpu's TestFlashBlockSplit")
			}
			decodeBlockSplitKeepsBits(t, kv)
		})
	}
}

func decodeBlockSplitKeepsBits(t *testing.T, kv quant.Type) {
	g, mem, f := compileFixtureCtx(t, "qwen3-synth-q4_k_m", kv, true, 1024)
	r := rand.New(rand.NewPCG(81, 82))
	toks := make([]int32, g.Params.NCtx)
	for i := range toks {
		toks[i] = int32(r.IntN(1000))
	}
	pre := 700
	cases := []struct {
		threads      int
		force, stall bool
	}{{2, true, false}, {3, false, false}, {2, true, true}, {3, true, true}, {2, false, false}}
	if testing.Short() { // emulated arm64 in CI: fewer steps, no stalls
		pre, cases = 760, cases[:2]
	}
	evalAll := func(m *Model) []float32 {
		m.Reset()
		pos := make([]int32, pre)
		for i := range pos {
			pos[i] = int32(i)
		}
		o, err := m.Eval(toks[:pre], pos, []int32{int32(pre - 1)})
		if err != nil {
			t.Fatal(err)
		}
		out := append([]float32(nil), o...)
		for i := pre; i < len(toks); i++ {
			o, err := m.Eval(toks[i:i+1], []int32{int32(i)}, []int32{0})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, o...)
		}
		return out
	}
	one, err := New(g, mem, f, Config{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := evalAll(one)
	base := one.Stats().DecodeBarriers
	one.Close()
	for _, tc := range cases {
		t.Run(fmt.Sprintf("t%d/force=%v/stall=%v", tc.threads, tc.force, tc.stall), func(t *testing.T) {
			forceBlocks = tc.force
			defer func() { forceBlocks = false }()
			if tc.stall {
				stallHook = func(w int) {
					if rand.IntN(5) == 0 {
						time.Sleep(time.Duration(rand.IntN(100)) * time.Microsecond)
					}
				}
				defer func() { stallHook = nil }()
			}
			// every pass on all workers: the test counts the split's barriers
			m, err := New(g, mem, f, Config{Threads: tc.threads, FixedThreads: true})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			got := evalAll(m)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("logit %d = %v, 1 thread %v", i, got[i], want[i])
				}
			}
			// Each decode step at position ≥ FlashBlock that splits by
			// block pays one more barrier per layer.
			extra := m.Stats().DecodeBarriers - base
			split := tc.force || useBlocks(int32(g.Params.NCtx-1), g.Params.NHeadKV, tc.threads)
			if wantExtra := int64(0); split {
				wantExtra = int64((len(toks) - pre) * int(g.Params.NLayer))
				if extra != wantExtra {
					t.Errorf("%d extra barriers, want %d (one per layer of each split step)", extra, wantExtra)
				}
			} else if extra != 0 {
				t.Errorf("%d extra barriers without the split", extra)
			}
		})
	}
}

// compileFixtureCtx is compileFixtureFA with a KV cache of nctx positions
// (as minferc compile -c).
func compileFixtureCtx(t *testing.T, name string, kv quant.Type, fa bool, nctx int) (*ir.Graph, map[string]*alloc.Plan, *gguf.File) {
	t.Helper()
	return compileFixtureWith(t, name, kv, fa, nctx, 16)
}
