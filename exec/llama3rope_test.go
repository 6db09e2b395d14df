package exec_test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/minfer/minfer/alloc"
	"github.com/minfer/minfer/exec"
	"github.com/minfer/minfer/frontends/gguf"
	"github.com/minfer/minfer/ir"
	"github.com/minfer/minfer/passes"
	"github.com/minfer/minfer/quant"
	"github.com/minfer/minfer/reference"
	"github.com/minfer/minfer/synth"
)

// llama3Golden is exec/testdata/llama3-rope/llama.cpp.json: llama.cpp's
// logits for the llama3-tiny synth model (llama3 RoPE scaling through
// rope_freqs.weight) and for the same file without the tensor.
type llama3Golden struct {
	Preset string
	Type   string
	Seed   uint64
	NVocab int `json:"n_vocab"`
	Rows   []int32
	Files  struct{ Freqs, NoFreqs string }
	Tokens []int32
}

// llama3Band is the F32 band of the llama.cpp fixture tests
// (reference.bandFor: an independent float64 pass reached 1.4e-5 on the f32
// fixture model, so 1e-4 for every row).
const llama3Band = 1e-4

func readF32(t *testing.T, path string) []float32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// writeLlama3Tiny synthesizes the golden's model into dir, and a copy
// without rope_freqs.weight; it returns both paths.
func writeLlama3Tiny(t *testing.T, dir string, gj llama3Golden) (withFreqs, without string) {
	t.Helper()
	withFreqs = filepath.Join(dir, "llama3-tiny.gguf")
	if err := synth.WriteFile(withFreqs, synth.Options{Preset: gj.Preset, Type: gj.Type, Seed: gj.Seed}); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(withFreqs)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := gguf.NewWriter()
	for _, kv := range f.KV {
		w.AddKV(kv.Key, kv.Value)
	}
	found := false
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		if ti.Name == "rope_freqs.weight" {
			found = true
			continue
		}
		if err := w.AddTensor(ti.Name, ti.Type, ti.Dims, f.TensorData(ti)); err != nil {
			t.Fatal(err)
		}
	}
	if !found {
		t.Fatalf("synth preset %s wrote no rope_freqs.weight", gj.Preset)
	}
	without = filepath.Join(dir, "llama3-tiny-nofreqs.gguf")
	if err := w.WriteFile(without); err != nil {
		t.Fatal(err)
	}
	return withFreqs, without
}

func openGGUF(t *testing.T, path string) *gguf.File {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// refRows runs the reference executor on the model at path, the tokens as
// one batch, and returns the requested rows' logits.
func refRows(t *testing.T, path string, toks, rows []int32) []float32 {
	t.Helper()
	f := openGGUF(t, path)
	g, err := gguf.BuildGraph(f)
	if err != nil {
		t.Fatal(err)
	}
	m, err := reference.New(g, f)
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Eval(toks, seq(0, len(toks)), rows)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// evalRows runs the model at path on the tokens as one batch with the
// compiled executor (f32 cache, no flash attention: llama.cpp's config in
// the golden) and returns the requested rows' logits.
func evalRows(t *testing.T, path string, toks, rows []int32, disabled map[string]bool) []float32 {
	t.Helper()
	f := openGGUF(t, path)
	pos := seq(0, len(toks))
	g, err := gguf.BuildGraph(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := passes.Run(g, passes.Options{KVType: quant.F32, Disabled: disabled, Verify: true}); err != nil {
		t.Fatal(err)
	}
	mem := map[string]*alloc.Plan{}
	for _, s := range []*ir.Schedule{g.Prefill, g.Decode} {
		mt := len(toks)
		if s.Name == "decode" {
			mt = 1
		}
		p, err := alloc.PlanSchedule(g, s, alloc.Options{MaxTokens: mt, MaxOut: len(rows), NCtx: g.Params.NCtx, KVType: quant.F32})
		if err != nil {
			t.Fatal(err)
		}
		mem[s.Name] = p
	}
	m, err := exec.New(g, mem, f, exec.Config{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	co, err := m.Eval(toks, pos, rows)
	if err != nil {
		t.Fatal(err)
	}
	return append([]float32(nil), co...)
}

// rowMaxAbs returns max |a-b| of each n-wide row.
func rowMaxAbs(a, b []float32, n int) []float64 {
	out := make([]float64, len(a)/n)
	for i := range a {
		out[i/n] = math.Max(out[i/n], math.Abs(float64(a[i]-b[i])))
	}
	return out
}

// TestLlama3RopeFreqsMatchLlamaCpp: on a llama model with llama3 RoPE
// scaling (rope_freqs.weight), minfer's compiled executor (RoPE fused into
// the Q/K mat-muls, and unfused) and the reference executor agree with
// llama.cpp's logits up to position 399 within the F32 band, as they do
// on the same model without the tensor (the baseline); ignoring the factors
// would be off by whole logits (the last check, so that the golden tests
// the factors at all).
func TestLlama3RopeFreqsMatchLlamaCpp(t *testing.T) {
	dir := filepath.Join("testdata", "llama3-rope")
	b, err := os.ReadFile(filepath.Join(dir, "llama.cpp.json"))
	if err != nil {
		t.Fatal(err)
	}
	var gj llama3Golden
	if err := json.Unmarshal(b, &gj); err != nil {
		t.Fatal(err)
	}
	llFreqs := readF32(t, filepath.Join(dir, gj.Files.Freqs))
	llNoFreqs := readF32(t, filepath.Join(dir, gj.Files.NoFreqs))
	if len(llFreqs) != len(gj.Rows)*gj.NVocab || len(llNoFreqs) != len(llFreqs) {
		t.Fatalf("golden files hold %d and %d logits, want %d", len(llFreqs), len(llNoFreqs), len(gj.Rows)*gj.NVocab)
	}
	withFreqs, without := writeLlama3Tiny(t, t.TempDir(), gj)

	check := func(t *testing.T, what string, got, want []float32) {
		t.Helper()
		d := rowMaxAbs(got, want, gj.NVocab)
		for r, v := range d {
			if v > llama3Band {
				t.Errorf("%s: row %d (position %d): max |Δlogit| %.3g exceeds %.0e", what, r, gj.Rows[r], v, llama3Band)
			}
		}
		t.Logf("%s: max |Δlogit| per row %s", what, fmt.Sprintf("%.2g", d))
	}
	check(t, "reference vs llama.cpp", refRows(t, withFreqs, gj.Tokens, gj.Rows), llFreqs)
	for _, c := range []struct {
		name     string
		disabled map[string]bool
	}{{"fused", nil}, {"unfused", map[string]bool{"fuse-epilogues": true}}} {
		t.Run(c.name, func(t *testing.T) {
			check(t, "compiled vs llama.cpp", evalRows(t, withFreqs, gj.Tokens, gj.Rows, c.disabled), llFreqs)
			bco := evalRows(t, without, gj.Tokens, gj.Rows, c.disabled)
			check(t, "baseline without rope_freqs: compiled vs llama.cpp", bco, llNoFreqs)
			ignored := rowMaxAbs(bco, llFreqs, gj.NVocab)
			if last := ignored[len(ignored)-1]; last < 1 {
				t.Errorf("ignoring the factors changes position %d's logits by only %.3g: the golden does not test them", gj.Rows[len(gj.Rows)-1], last)
			}
			t.Logf("ignoring the factors: max |Δlogit| per row %.2g", ignored)
		})
	}
}
