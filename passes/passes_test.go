package passes_test

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minfer/minfer/frontends/gguf"
	"github.com/minfer/minfer/internal/fixtures"
	"github.com/minfer/minfer/ir"
	"github.com/minfer/minfer/passes"
	"github.com/minfer/minfer/quant"
	"github.com/minfer/minfer/reference"
	"github.com/minfer/minfer/synth"
)

// fixtureModels are fixture files, and "synth:PRESET" a synth preset
// written as q8_0 (llama3-tiny: RoPE frequency factors).
var fixtureModels = []string{"llama-synth-q8_0", "llama-synth-f32", "qwen2-synth-q4_k_m", "qwen3-synth-q8_0", "qwen3-synth-f32", "synth:llama3-tiny"}

func build(t *testing.T, name string) (*ir.Graph, *gguf.File) {
	t.Helper()
	path := ""
	if preset, ok := strings.CutPrefix(name, "synth:"); ok {
		path = filepath.Join(t.TempDir(), preset+".gguf")
		if err := synth.WriteFile(path, synth.Options{Preset: preset, Type: "q8_0", Seed: 1}); err != nil {
			t.Fatal(err)
		}
	} else {
		path = fixtures.Path(t, "models", name+".gguf")
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	g, err := gguf.BuildGraph(f)
	if err != nil {
		t.Fatal(err)
	}
	return g, f
}

var prompt = []int32{1, 354, 831, 672, 358, 699, 561, 921, 792, 280, 540, 669}

// logits runs the reference executor over the prompt in one batch (all
// rows) and then one more decode step, returning both.
func logits(t *testing.T, g *ir.Graph, f *gguf.File) []float32 {
	t.Helper()
	m, err := reference.New(g, f)
	if err != nil {
		t.Fatal(err)
	}
	n := len(prompt) - 1
	pos := make([]int32, n)
	rows := make([]int32, n)
	for i := range pos {
		pos[i], rows[i] = int32(i), int32(i)
	}
	out, err := m.Eval(prompt[:n], pos, rows)
	if err != nil {
		t.Fatal(err)
	}
	last, err := m.Eval(prompt[n:], []int32{int32(n)}, []int32{0})
	if err != nil {
		t.Fatal(err)
	}
	return append(out, last...)
}

func sameBits(t *testing.T, what string, a, b []float32) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d vs %d logits", what, len(a), len(b))
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			t.Fatalf("%s: logit %d differs: %g vs %g", what, i, a[i], b[i])
		}
	}
}

// TestEachPassPreservesLogits runs the pipeline with ir.Verify after every
// pass, once with everything on and once with each optional pass off, and
// requires bit-identical logits from the reference executor: none of the
// passes changes arithmetic, only where and when it happens.
func TestEachPassPreservesLogits(t *testing.T) {
	for _, name := range fixtureModels {
		t.Run(name, func(t *testing.T) {
			g0, f := build(t, name)
			want := logits(t, g0, f)
			configs := [][]string{nil}
			for _, p := range passes.Pipeline {
				if !p.Required {
					configs = append(configs, []string{p.Name})
				}
			}
			for _, off := range configs {
				g, _ := build(t, name)
				dis := map[string]bool{}
				for _, o := range off {
					dis[o] = true
				}
				if err := passes.Run(g, passes.Options{Disabled: dis, Verify: true}); err != nil {
					t.Fatalf("disabled %v: %v", off, err)
				}
				sameBits(t, "disabled "+strings.Join(off, ","), want, logits(t, g, f))
			}
		})
	}
}

func count(g *ir.Graph, op ir.Op) int {
	n := 0
	for _, nd := range g.Nodes {
		if nd.Op == op {
			n++
		}
	}
	return n
}

func TestFusionsApply(t *testing.T) {
	g, _ := build(t, "qwen2-synth-q8_0")
	before := len(g.Nodes)
	if err := passes.Run(g, passes.Options{Verify: true}); err != nil {
		t.Fatal(err)
	}
	L := g.Params.NLayer
	if n := count(g, ir.OpRMSNorm); n != 0 {
		t.Errorf("%d unfused RMSNorms left", n)
	}
	if n := count(g, ir.OpRMSNormMul); n != 2*L+1 {
		t.Errorf("%d fused RMSNorms, want %d", n, 2*L+1)
	}
	if n := count(g, ir.OpSwiGLU); n != L {
		t.Errorf("%d SwiGLUs, want %d", n, L)
	}
	if n := count(g, ir.OpAdd) + count(g, ir.OpRope) + count(g, ir.OpSiLU); n != 0 {
		t.Errorf("%d adds/ropes/silus left unfused", n)
	}
	for _, n := range g.Nodes {
		if n.Kernel == "" {
			t.Errorf("node %s has no kernel", n)
		}
	}
	t.Logf("nodes %d -> %d; decode groups %d, prefill groups %d", before, len(g.Nodes), g.Decode.Barriers(), g.Prefill.Barriers())
}

// TestDecodeBarriers pins the grouping: at most four barriers per layer
// per decode token, the lookup and the head sharing groups with layers.
func TestDecodeBarriers(t *testing.T) {
	for _, name := range fixtureModels {
		g, _ := build(t, name)
		if err := passes.Run(g, passes.Options{Verify: true}); err != nil {
			t.Fatal(err)
		}
		L := g.Params.NLayer
		if got := g.Decode.Barriers(); got > 4*L {
			t.Errorf("%s: %d decode barriers for %d layers, want ≤ %d", name, got, L, 4*L)
		}
	}
}

func TestPipelineErrors(t *testing.T) {
	g, _ := build(t, "llama-synth-q8_0")
	if err := passes.Run(g, passes.Options{Disabled: map[string]bool{"no-such-pass": true}}); err == nil || !strings.Contains(err.Error(), "unknown pass") {
		t.Errorf("unknown pass: %v", err)
	}
	if err := passes.Run(g, passes.Options{Disabled: map[string]bool{"group": true}}); err == nil || !strings.Contains(err.Error(), "cannot be disabled") {
		t.Errorf("required pass: %v", err)
	}
	g, _ = build(t, "llama-synth-q8_0")
	if err := passes.Run(g, passes.Options{KVType: quant.Q4_K}); err == nil || !strings.Contains(err.Error(), "KV cache type") {
		t.Errorf("bad kv type: %v", err)
	}
}
