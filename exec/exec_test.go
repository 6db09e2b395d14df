package exec_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/minfer/minfer/alloc"
	"github.com/minfer/minfer/backends/cpu"
	"github.com/minfer/minfer/compiler"
	"github.com/minfer/minfer/exec"
	"github.com/minfer/minfer/frontends/gguf"
	"github.com/minfer/minfer/internal/fixtures"
	"github.com/minfer/minfer/ir"
	"github.com/minfer/minfer/passes"
	"github.com/minfer/minfer/quant"
	"github.com/minfer/minfer/reference"
)

var allModels = []string{
	"llama-synth-f32", "llama-synth-f16", "llama-synth-bf16", "llama-synth-q8_0",
	"llama-synth-q4_0", "llama-synth-q4_1", "llama-synth-q5_0", "llama-synth-q5_1",
	"llama-synth-q2_k", "llama-synth-q3_k", "llama-synth-q4_k", "llama-synth-q5_k", "llama-synth-q6_k",
	"qwen2-synth-f32", "qwen2-synth-q8_0", "qwen2-synth-q4_k_m",
	"qwen3-synth-f32", "qwen3-synth-q8_0", "qwen3-synth-q4_k_m",
}

var prompt = []int32{620, 894, 134, 864, 856, 848, 924, 819, 69, 813, 170, 805, 488, 954, 262, 830, 1001, 609, 2, 945}

type compiled struct {
	g   *ir.Graph
	mem map[string]*alloc.Plan
	f   *gguf.File
}

func compile(t testing.TB, name string, kv quant.Type, maxTokens int) compiled {
	t.Helper()
	return compileFA(t, name, kv, maxTokens, false)
}

// compileFA is compile with flash attention on or off.
func compileFA(t testing.TB, name string, kv quant.Type, maxTokens int, fa bool) compiled {
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
	if err := passes.Run(g, passes.Options{KVType: kv, FlashAttn: fa, Verify: true}); err != nil {
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
	return compiled{g, mem, f}
}

func seq(a, b int) []int32 {
	var s []int32
	for i := a; i < b; i++ {
		s = append(s, int32(i))
	}
	return s
}

type evaluator interface {
	Eval(tokens, positions, outIDs []int32) ([]float32, error)
	Reset()
}

// run evaluates the prompt as a batch of 12 with every row's logits, then
// the rest one token at a time.
func run(t testing.TB, m evaluator) []float32 {
	t.Helper()
	m.Reset()
	out, err := m.Eval(prompt[:12], seq(0, 12), seq(0, 12))
	if err != nil {
		t.Fatal(err)
	}
	out = append([]float32(nil), out...) // the executor's result is valid until its next Eval
	for i := 12; i < len(prompt); i++ {
		o, err := m.Eval(prompt[i:i+1], []int32{int32(i)}, []int32{0})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, o...)
	}
	return out
}

func diffBits(a, b []float32) (int, float64) {
	n := 0
	var worst float64
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			n++
			worst = math.Max(worst, math.Abs(float64(a[i]-b[i])))
		}
	}
	return n, worst
}

// TestMatchesReference: with scalar kernels the compiled, fused, grouped,
// parallel executor computes exactly what the reference executor computes
// on the original graph, for every fixture model, with 1, 2 and 3 threads.
func TestMatchesReference(t *testing.T) {
	for _, name := range allModels {
		t.Run(name, func(t *testing.T) {
			c := compile(t, name, quant.F32, 16)
			g0, err := gguf.BuildGraph(c.f)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := reference.New(g0, c.f)
			if err != nil {
				t.Fatal(err)
			}
			want := run(t, ref)
			for _, threads := range []int{1, 2, 3} {
				m, err := exec.New(c.g, c.mem, c.f, exec.Config{Threads: threads})
				if err != nil {
					t.Fatal(err)
				}
				got := run(t, m)
				m.Close()
				if len(got) != len(want) {
					t.Fatalf("-t %d: %d logits, want %d", threads, len(got), len(want))
				}
				if n, worst := diffBits(got, want); n != 0 {
					t.Errorf("-t %d: %d of %d logits differ from the reference (worst %.3g)", threads, n, len(want), worst)
				}
			}
		})
	}
}

// TestDecodeBarrierCount: the decode schedule pays one barrier per group.
func TestDecodeBarrierCount(t *testing.T) {
	c := compile(t, "qwen2-synth-q4_k_m", quant.F32, 16)
	m, err := exec.New(c.g, c.mem, c.f, exec.Config{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	run(t, m)
	st := m.Stats()
	per := float64(st.DecodeBarriers) / float64(st.DecodeTokens)
	if int(per) != c.g.Decode.Barriers() || per != math.Trunc(per) {
		t.Fatalf("%.2f barriers per decode token, schedule has %d groups", per, c.g.Decode.Barriers())
	}
	t.Logf("%d layers: %.0f barriers per decode token (%.2f per layer)", c.g.Params.NLayer, per, per/float64(c.g.Params.NLayer))
}

// TestKVTypes: f16 and q8_0 caches give logits close to the f32 cache's,
// with the non-flash and the flash attention kernels.
func TestKVTypes(t *testing.T) {
	base := compile(t, "qwen2-synth-q8_0", quant.F32, 16)
	m, err := exec.New(base.g, base.mem, base.f, exec.Config{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := run(t, m)
	m.Close()
	for _, kv := range []quant.Type{quant.F16, quant.Q8_0} {
		for _, fa := range []bool{false, true} {
			c := compileFA(t, "qwen2-synth-q8_0", kv, 16, fa)
			m, err := exec.New(c.g, c.mem, c.f, exec.Config{Threads: 2})
			if err != nil {
				t.Fatal(err)
			}
			got := run(t, m)
			m.Close()
			_, worst := diffBits(got, want)
			// llama.cpp's own exact-vs-default gap (f16 cache) is 0.3 on this model.
			if worst > 0.6 {
				t.Errorf("kv %s fa=%v: worst |Δ| %.3g vs the f32 cache", kv, fa, worst)
			}
			t.Logf("kv %s fa=%v: worst |Δ| %.3g vs f32 cache", kv, fa, worst)
		}
	}
}

func TestChunkedPrefill(t *testing.T) {
	c := compile(t, "llama-synth-q8_0", quant.F32, 5)
	m, err := exec.New(c.g, c.mem, c.f, exec.Config{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	got := run(t, m) // 12-token batch runs as chunks of 5
	big := compile(t, "llama-synth-q8_0", quant.F32, 16)
	m2, err := exec.New(big.g, big.mem, big.f, exec.Config{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	want := run(t, m2)
	if n, worst := diffBits(got, want); n != 0 {
		t.Fatalf("chunked prefill differs in %d logits (worst %.3g)", n, worst)
	}
}

func TestEvalErrors(t *testing.T) {
	c := compile(t, "qwen2-synth-q8_0", quant.F32, 16)
	m, err := exec.New(c.g, c.mem, c.f, exec.Config{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cases := []struct {
		toks, pos, out []int32
		want           string
	}{
		{[]int32{5000}, []int32{0}, []int32{0}, "outside the vocabulary"},
		{[]int32{1, 2}, []int32{0, 2}, []int32{0}, "consecutive"},
		{[]int32{1}, []int32{600}, []int32{0}, "position"},
		{[]int32{1}, []int32{0}, []int32{1}, "outside the batch"},
		{nil, nil, nil, "empty"},
	}
	for i, cs := range cases {
		m.Reset()
		if _, err := m.Eval(cs.toks, cs.pos, cs.out); err == nil || !strings.Contains(err.Error(), cs.want) {
			t.Errorf("case %d: err = %v, want %q", i, err, cs.want)
		}
	}
}

// TestDecodeAllocatesNothing: a decode step reuses every buffer (f32 cache,
// the default f16 cache with flash attention, and a q8_0 cache with and
// without it).
func TestDecodeAllocatesNothing(t *testing.T) {
	for _, tc := range []struct {
		kv quant.Type
		fa bool
	}{{quant.F32, false}, {quant.F16, true}, {quant.Q8_0, false}, {quant.Q8_0, true}} {
		t.Run(fmt.Sprintf("%s/fa=%v", tc.kv, tc.fa), func(t *testing.T) { decodeAllocs(t, compileFA(t, "qwen2-synth-q8_0", tc.kv, 16, tc.fa)) })
	}
}

func decodeAllocs(t *testing.T, c compiled, src ...exec.WeightSource) {
	var ws exec.WeightSource = c.f
	if len(src) > 0 {
		ws = src[0]
	}
	m, err := exec.New(c.g, c.mem, ws, exec.Config{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.Eval(prompt[:4], seq(0, 4), []int32{3}); err != nil {
		t.Fatal(err)
	}
	pos := int32(4)
	tok, p, out := []int32{prompt[4]}, []int32{0}, []int32{0}
	allocs := testing.AllocsPerRun(20, func() {
		p[0] = pos
		if _, err := m.Eval(tok, p, out); err != nil {
			t.Fatal(err)
		}
		pos++
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per decode step", allocs)
	}
}

// TestHugeContextRefused: a plan whose KV cache cannot fit in this
// machine's memory is refused with a clear error, not an out-of-memory crash.
func TestHugeContextRefused(t *testing.T) {
	f, err := gguf.Open(fixtures.Path(t, "models", "qwen2-synth-q8_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g, kv, err := compiler.Graph(f, compiler.Options{NCtx: 1 << 28})
	if err != nil {
		t.Fatal(err)
	}
	mem, err := compiler.Memory(g, kv, 16)
	if err != nil {
		t.Fatal(err)
	}
	_, err = exec.New(g, mem, f, exec.Config{Threads: 2})
	if err == nil || !strings.Contains(err.Error(), "--n-ctx") {
		t.Fatalf("err = %v, want a memory error suggesting --n-ctx", err)
	}
}

// TestOddContextPadded: a context size that is not a multiple of 256 is
// padded as llama.cpp pads it, so attention's padded length stays valid.
func TestOddContextPadded(t *testing.T) {
	f, err := gguf.Open(fixtures.Path(t, "models", "qwen2-synth-q8_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g, kv, err := compiler.Graph(f, compiler.Options{NCtx: 100})
	if err != nil {
		t.Fatal(err)
	}
	if g.Params.NCtx != 256 {
		t.Fatalf("--n-ctx 100 gave a %d-position cache, want 256", g.Params.NCtx)
	}
	mem, err := compiler.Memory(g, kv, 16)
	if err != nil {
		t.Fatal(err)
	}
	m, err := exec.New(g, mem, f, exec.Config{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.Eval(prompt[:12], seq(0, 12), []int32{11}); err != nil {
		t.Fatal(err)
	}
}

// packedSource serves a GGUF's tensors in the layouts the graph reads
// them in (pack-weights), as a plan written from it holds them.
func packedSource(f *gguf.File, g *ir.Graph) compiler.PackedSource {
	return compiler.PackedSource{Src: f, G: g}
}

// TestPackedDecodeAllocatesNothing: with weights packed for the AVX2
// kernels (the row kernels, groups cut by the workers' column ranges, and
// the packed embedding's row lookup) or for the AVX-512 VNNI ones (the
// sixteen-row layouts' records and cut tiles) or for the eight-row
// K-quant kernels, a decode step allocates nothing.
func TestPackedDecodeAllocatesNothing(t *testing.T) {
	for _, tc := range []struct {
		tier, model string
		probe       quant.Type
	}{{"avx2", "llama-synth-q4_0", quant.Q4_0x4}, {"avx512", "llama-synth-q4_0", quant.Q4_0r16}, {"kquant", "qwen3-synth-q4_k_m", quant.Q4_Kr8}} {
		t.Run(tc.tier, func(t *testing.T) {
			if _, err := cpu.NewMatMul(tc.probe); err != nil {
				t.Skipf("no %s kernels here: %v", tc.probe, err)
			}
			f, err := gguf.Open(fixtures.Path(t, "models", tc.model+".gguf"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			g, err := gguf.BuildGraph(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := passes.Run(g, passes.Options{KVType: quant.F16, Pack: tc.tier, Verify: true}); err != nil {
				t.Fatal(err)
			}
			mem := map[string]*alloc.Plan{}
			for _, s := range []*ir.Schedule{g.Prefill, g.Decode} {
				mt := 16
				if s.Name == "decode" {
					mt = 1
				}
				p, err := alloc.PlanSchedule(g, s, alloc.Options{MaxTokens: mt, MaxOut: mt, NCtx: g.Params.NCtx, KVType: quant.F16})
				if err != nil {
					t.Fatal(err)
				}
				mem[s.Name] = p
			}
			packed := 0
			for _, v := range g.Weights() {
				if v.DType.PlanOnly() {
					packed++
				}
			}
			if packed == 0 {
				t.Fatal("nothing packed")
			}
			decodeAllocs(t, compiled{g, mem, nil}, packedSource(f, g))
		})
	}
}
