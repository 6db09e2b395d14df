package exec_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/minfer/minfer/alloc"
	"github.com/minfer/minfer/backends/cpu"
	"github.com/minfer/minfer/exec"
	"github.com/minfer/minfer/frontends/gguf"
	"github.com/minfer/minfer/internal/fixtures"
	"github.com/minfer/minfer/ir"
	"github.com/minfer/minfer/passes"
	"github.com/minfer/minfer/quant"
)

// TestR16MatchesLlamaCpp: with Q8_0, Q5_0 and Q4_0 weights packed for the AVX-512
// VNNI tier (pack-weights avx512: the sixteen-row layouts, whose float
// order is llama.cpp's repacked kernels', not its vec_dot's), the logits
// of the fixture models stay within the same bands of llama.cpp's default
// logits as the unpacked plans' (TestF16CacheMatchesLlamaCppDefault) —
// the synthetic models' random weights carry a last-bit difference of a
// dot to the next activation quantization, so packed and unpacked logits
// differ by up to about a third of the band, as either does from
// llama.cpp's — and are bit-identical at 1, 2 and 3
// threads and between the batch evaluation (the small-M kernels) and the
// step one (the row kernel, one token at a time) where both give a row.
func TestR16MatchesLlamaCpp(t *testing.T) {
	if _, err := cpu.NewMatMul(quant.Q8_0r16); err != nil {
		t.Skipf("no sixteen-row kernels here: %v", err)
	}
	packedMatchesLlamaCpp(t, "avx512", quant.R16Rows, "llama-synth-q8_0", "llama-synth-q5_0", "llama-synth-q4_0", "qwen2-synth-q8_0", "qwen3-synth-q8_0")
}

// TestR8MatchesLlamaCpp is TestR16MatchesLlamaCpp for Q4_K, Q5_K and Q6_K weights
// packed in the eight-row layouts (pack-weights kquant: llama.cpp's
// repacked Q4_K order, which llama.cpp itself runs for Q4_K on AVX2 CPUs):
// the fixture models with those types stay within the bands of
// llama.cpp's default logits, bit-identical at 1, 2 and 3 threads and
// between the batch and step evaluations.
func TestR8MatchesLlamaCpp(t *testing.T) {
	if _, err := cpu.NewMatMul(quant.Q4_Kr8); err != nil {
		t.Skipf("no eight-row kernels here: %v", err)
	}
	packedMatchesLlamaCpp(t, "kquant", quant.R8Rows, "llama-synth-q4_k", "llama-synth-q5_k", "llama-synth-q6_k", "qwen2-synth-q4_k_m", "qwen3-synth-q4_k_m")
	// Q3_K and Q2_K go to the eight-row layouts only in the AVX2 tier's
	// packing (passes.packedR8VNNI)
	packedMatchesLlamaCpp(t, "avx2", quant.R8Rows, "llama-synth-q3_k", "llama-synth-q2_k")
	// and Q5_0, Q4_0 to Q5_0r8, Q4_0r8 (the sixteen-row layouts' order),
	// Q5_1, Q4_1 to Q5_1r8, Q4_1r8
	packedMatchesLlamaCpp(t, "avx2", quant.R8Rows, "llama-synth-q5_0", "llama-synth-q4_0", "llama-synth-q5_1", "llama-synth-q4_1", "qwen2-synth-q4_k_m")
}

// TestR8Q5MatchesR16: a model's Q5_0 (Q4_0) weights in the eight-row layout
// (pack-weights avx2, AVX2 kernels) give every logit the bits they give in
// the sixteen-row layout (pack-weights avx512, AVX-512 VNNI kernels): the
// two layouts share one float order.
func TestR8Q5MatchesR16(t *testing.T) {
	if _, err := cpu.NewMatMul(quant.Q5_0r16); err != nil {
		t.Skipf("no sixteen-row kernels here: %v", err)
	}
	if _, err := cpu.NewMatMul(quant.Q5_0r8); err != nil {
		t.Skipf("no eight-row kernels here: %v", err)
	}
	for _, name := range []string{"llama-synth-q5_0", "llama-synth-q4_0"} {
		r8MatchesR16(t, name)
	}
}

func r8MatchesR16(t *testing.T, name string) {
	var logits [2][2][]float32
	for i, tier := range []string{"avx2", "avx512"} {
		f, g, mem := compilePacked(t, name, tier, 64)
		m, err := exec.New(g, mem, packedSource(f, g), exec.Config{Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		logits[i][0], logits[i][1] = evalFixture(t, m, []int32{1, 150, 292, 318, 991, 306, 626, 263, 124, 310, 278, 997, 889, 450, 96, 173, 1017, 916})
		m.Close()
	}
	for j, what := range []string{"batch", "step"} {
		if n, worst := diffBits(logits[0][j], logits[1][j]); n != 0 {
			t.Errorf("%s %s: %d logits of the eight-row plan differ from the sixteen-row plan's (worst %.3g)", name, what, n, worst)
		}
	}
}

// packedMatchesLlamaCpp runs the check of TestR16MatchesLlamaCpp on the
// named fixture models packed for tier (layouts of group rows).
func packedMatchesLlamaCpp(t *testing.T, tier string, group int, names ...string) {
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			var rj struct {
				NVocab int     `json:"n_vocab"`
				Tokens []int32 `json:"tokens"`
			}
			b, err := os.ReadFile(fixtures.Path(t, "ref", name+".default.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &rj); err != nil {
				t.Fatal(err)
			}
			plain := compileFA(t, name, quant.F16, len(rj.Tokens), true)
			m, err := exec.New(plain.g, plain.mem, plain.f, exec.Config{Threads: 2})
			if err != nil {
				t.Fatal(err)
			}
			pb, ps := evalFixture(t, m, rj.Tokens)
			m.Close()

			f, g, mem := compilePacked(t, name, tier, len(rj.Tokens))
			packed := 0
			for _, v := range g.Weights() {
				if quant.GroupRows(v.DType) == group {
					packed++
				}
			}
			if packed == 0 {
				t.Fatal("nothing packed")
			}
			var batch, step []float32
			for _, threads := range []int{2, 1, 3} {
				m, err := exec.New(g, mem, packedSource(f, g), exec.Config{Threads: threads})
				if err != nil {
					t.Fatal(err)
				}
				bb, ss := evalFixture(t, m, rj.Tokens)
				m.Close()
				if batch == nil {
					batch, step = bb, ss
					continue
				}
				if n, worst := diffBits(bb, batch); n != 0 {
					t.Errorf("-t %d: %d batch logits differ from -t 2 (worst %.3g)", threads, n, worst)
				}
				if n, worst := diffBits(ss, step); n != 0 {
					t.Errorf("-t %d: %d step logits differ from -t 2 (worst %.3g)", threads, n, worst)
				}
			}
			nv := rj.NVocab
			// The step file's first row is the prefill's last (a small-M
			// row); the batch's row 16 is what the first decode step gives.
			if n, _ := diffBits(step[:nv], batch[15*nv:16*nv]); n != 0 {
				t.Errorf("the step evaluation's prefill row differs from the batch's row 15 in %d logits", n)
			}
			band := defaultBand(name)
			for _, c := range []struct {
				what        string
				got, unpack []float32
			}{{"batch", batch, pb}, {"step", step, ps}} {
				want := fixtures.ReadF32(t, fixtures.Path(t, "ref", name+".default."+c.what+".f32"))
				worst, worstPlain, vsPlain := 0.0, 0.0, 0.0
				var rows []string
				for r := 0; r < len(want)/nv; r++ {
					var d float64
					for i := r * nv; i < (r+1)*nv; i++ {
						e := math.Abs(float64(c.got[i] - want[i]))
						if math.IsNaN(e) {
							e = math.Inf(1)
						}
						d = max(d, e)
						worstPlain = max(worstPlain, math.Abs(float64(c.unpack[i]-want[i])))
						vsPlain = max(vsPlain, math.Abs(float64(c.got[i]-c.unpack[i])))
					}
					worst = max(worst, d)
					rows = append(rows, fmt.Sprintf("%.2g", d))
				}
				if worst > band {
					t.Errorf("%s: worst row |Δ| against llama.cpp %.3g > %.3g; rows %s", c.what, worst, band, strings.Join(rows, " "))
				}
				t.Logf("%s: against llama.cpp worst %.3g (unpacked %.3g, band %.3g); against unpacked %.3g", c.what, worst, worstPlain, band, vsPlain)
			}
		})
	}
}

// compilePacked compiles a fixture model with weights packed for a tier.
func compilePacked(t *testing.T, name, tier string, maxTokens int) (*gguf.File, *ir.Graph, map[string]*alloc.Plan) {
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
	if err := passes.Run(g, passes.Options{KVType: quant.F16, FlashAttn: true, Pack: tier, Verify: true}); err != nil {
		t.Fatal(err)
	}
	mem := map[string]*alloc.Plan{}
	for _, s := range []*ir.Schedule{g.Prefill, g.Decode} {
		mt := maxTokens
		if s.Name == "decode" {
			mt = 1
		}
		p, err := alloc.PlanSchedule(g, s, alloc.Options{MaxTokens: mt, MaxOut: mt, NCtx: g.Params.NCtx, KVType: quant.F16})
		if err != nil {
			t.Fatal(err)
		}
		mem[s.Name] = p
	}
	return f, g, mem
}
