package exec

import (
	"math"
	"testing"

	"github.com/minfer/minfer/alloc"
	"github.com/minfer/minfer/frontends/gguf"
	"github.com/minfer/minfer/internal/fixtures"
	"github.com/minfer/minfer/ir"
	"github.com/minfer/minfer/passes"
	"github.com/minfer/minfer/quant"
)

// Reset clears nothing, which is right only if attention never reads a
// cache position the current sequence has not written. Poison every byte
// of the cache with NaN patterns before each sequence: the logits must be
// bit-identical to a fresh model's, for every cache type, batch and step.
func TestResetNeedsNoClear(t *testing.T) {
	for _, kv := range []quant.Type{quant.F32, quant.F16, quant.Q8_0} {
		t.Run(kv.String(), func(t *testing.T) {
			g, mem, f := compileFixture(t, "qwen2-synth-q8_0", kv)
			evalAll := func(m *Model) []float32 {
				var out []float32
				toks := []int32{620, 894, 134, 864, 856, 848, 924, 819, 69, 813}
				o, err := m.Eval(toks[:6], []int32{0, 1, 2, 3, 4, 5}, []int32{0, 5})
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, o...)
				for i := 6; i < len(toks); i++ {
					o, err := m.Eval(toks[i:i+1], []int32{int32(i)}, []int32{0})
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, o...)
				}
				return out
			}
			fresh, err := New(g, mem, f, Config{Threads: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer fresh.Close()
			want := evalAll(fresh)
			m, err := New(g, mem, f, Config{Threads: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			for round, pat := range []byte{0xff, 0x7f, 0xff} {
				for i := range m.kv {
					m.kv[i] = pat // NaN in f32, f16 and as q8_0 scales
				}
				m.Reset()
				got := evalAll(m)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("round %d: logit %d = %v after a poisoned cache, fresh model %v", round, i, got[i], want[i])
					}
				}
			}
		})
	}
}

// compileFixture builds, optimizes and plans a fixture model for batches of
// up to 16 tokens.
func compileFixture(t *testing.T, name string, kv quant.Type) (*ir.Graph, map[string]*alloc.Plan, *gguf.File) {
	t.Helper()
	return compileFixtureFA(t, name, kv, false)
}

// compileFixtureFA is compileFixture with flash attention on or off.
func compileFixtureFA(t *testing.T, name string, kv quant.Type, fa bool) (*ir.Graph, map[string]*alloc.Plan, *gguf.File) {
	t.Helper()
	return compileFixtureWith(t, name, kv, fa, 0, 16)
}

// compileFixtureWith builds, optimizes and plans fixture model name with a
// kv cache, flash attention on or off, a KV cache of nctx positions (0:
// the model's own context; as minferc compile -c) and a prefill plan of
// maxTokens token rows (decode: 1).
func compileFixtureWith(t *testing.T, name string, kv quant.Type, fa bool, nctx, maxTokens int) (*ir.Graph, map[string]*alloc.Plan, *gguf.File) {
	t.Helper()
	f, err := gguf.Open(fixtures.Path(t, "models", name+".gguf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	g, err := gguf.BuildGraph(f)
	if err != nil {
		t.Fatal(err)
	}
	if nctx > 0 {
		g.Params.NCtx = nctx
		for _, v := range g.Values {
			if v.Kind == ir.State {
				v.Shape = ir.Shape{ir.Dim(nctx), v.Shape[1]}
			}
		}
	}
	if err := passes.Run(g, passes.Options{KVType: kv, FlashAttn: fa}); err != nil {
		t.Fatal(err)
	}
	mem := map[string]*alloc.Plan{}
	for _, s := range []*ir.Schedule{g.Prefill, g.Decode} {
		mt := maxTokens
		if s.Name == "decode" {
			mt = 1
		}
		p, err := alloc.PlanSchedule(g, s, alloc.Options{MaxTokens: mt, MaxOut: mt, NCtx: g.Params.NCtx, KVType: kv})
		if err != nil {
			t.Fatal(err)
		}
		mem[s.Name] = p
	}
	return g, mem, f
}
