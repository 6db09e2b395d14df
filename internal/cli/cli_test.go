package cli

import (
	"bytes"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/graph/formats/dot"

	"github.com/minfer/minfer/internal/fixtures"
)

// capture runs f with os.Stdout redirected and returns what it printed.
func capture(t *testing.T, f func() error) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	done := make(chan []byte)
	go func() { b, _ := io.ReadAll(r); done <- b }()
	ferr := f()
	w.Close()
	os.Stdout = old
	out := <-done
	if ferr != nil {
		t.Fatal(ferr)
	}
	return string(out)
}

const fixtureTokens = "620,894,134,864,856,848,924,819,69,813,170,805,488,954,262,830,1001,609,2,945,77,798,863,291"

// TestCompileExecMatchesReference goes through the files a user would:
// minferc compile → plan.bin → minfer exec --tokens --logits-out, at 1 and 2
// threads, batch and step, against minfer run --reference on the GGUF.
func TestCompileExecMatchesReference(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"qwen3-synth-q4_k_m", "llama-synth-q4_0", "qwen2-synth-f32"} {
		model := fixtures.Path(t, "models", name+".gguf")
		for _, weights := range []string{"embed", "ref"} {
			planPath := filepath.Join(dir, name+"-"+weights+".plan")
			cc := CompileCmd{Model: model, Out: planPath, MaxBatch: 512, KVType: "f32", Weights: weights, Quiet: true}
			if err := cc.Run(); err != nil {
				t.Fatal(err)
			}
			for _, batch := range []int{0, 1} {
				refOut := filepath.Join(dir, "ref.f32")
				rc := RunCmd{Model: model, Reference: true, GenFlags: GenFlags{Tokens: fixtureTokens, LogitsOut: refOut, Batch: batch}}
				if err := rc.Run(); err != nil {
					t.Fatal(err)
				}
				want := fixtures.ReadF32(t, refOut)
				for _, threads := range []int{1, 2} {
					out := filepath.Join(dir, "exec.f32")
					ec := ExecCmd{Plan: planPath, GenFlags: GenFlags{Tokens: fixtureTokens, LogitsOut: out, Batch: batch, Threads: threads}}
					if err := ec.Run(); err != nil {
						t.Fatal(err)
					}
					got := fixtures.ReadF32(t, out)
					if len(got) != 24*1024 || len(got) != len(want) {
						t.Fatalf("%s: %d logits, reference %d", name, len(got), len(want))
					}
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s weights=%s batch=%d -t %d: logit %d = %g, reference %g", name, weights, batch, threads, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}

func TestDumpGraphDOTParses(t *testing.T) {
	model := fixtures.Path(t, "models", "qwen2-synth-q8_0.gguf")
	planPath := filepath.Join(t.TempDir(), "p.plan")
	if err := (&CompileCmd{Model: model, Out: planPath, MaxBatch: 64, KVType: "f32", Weights: "embed", Quiet: true}).Run(); err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{model, planPath} {
		out := capture(t, (&DumpGraphCmd{Model: src, DOT: true}).Run)
		if _, err := dot.ParseString(out); err != nil {
			t.Fatalf("%s: DOT does not parse: %v", src, err)
		}
		if src == planPath && !strings.Contains(out, "cluster_g") {
			t.Errorf("compiled graph shows no fused groups")
		}
	}
}

func TestTokenizeMatchesFixtureVectors(t *testing.T) {
	vocab := fixtures.Path(t, "tokenizer", "ggml-vocab-qwen2.gguf")
	out := capture(t, (&TokenizeCmd{Model: vocab, Text: "Hello world"}).Run)
	if strings.TrimSpace(out) != "9707 1879" {
		t.Fatalf("tokenize = %q", out)
	}
	text := capture(t, (&DetokenizeCmd{Model: vocab, IDs: []string{"9707", "1879"}}).Run)
	if strings.TrimSpace(text) != "Hello world" {
		t.Fatalf("detokenize = %q", text)
	}
}

func TestPromptLongerThanContext(t *testing.T) {
	model := fixtures.Path(t, "models", "llama-synth-q8_0.gguf")
	rc := RunCmd{Model: model, NCtx: 8, KVType: "f32", GenFlags: GenFlags{Prompt: strings.Repeat("hello world ", 200), NPredict: 4}} // --n-ctx 8 pads to 256
	r, w, _ := os.Pipe()
	old := os.Stdout
	os.Stdout = w
	err := rc.Run()
	w.Close()
	os.Stdout = old
	io.Copy(io.Discard, r)
	if err == nil || !strings.Contains(err.Error(), "context") {
		t.Fatalf("err = %v, want a clear context error", err)
	}
}

func TestCorruptPlanRefused(t *testing.T) {
	model := fixtures.Path(t, "models", "llama-synth-q8_0.gguf")
	dir := t.TempDir()
	planPath := filepath.Join(dir, "p.plan")
	if err := (&CompileCmd{Model: model, Out: planPath, MaxBatch: 64, KVType: "f32", Weights: "embed", Quiet: true}).Run(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(planPath)
	bad := bytes.Clone(b)
	bad[len(bad)/2] ^= 0xff
	os.WriteFile(planPath, bad, 0o644)
	err := (&ExecCmd{Plan: planPath, GenFlags: GenFlags{Prompt: "hi", NPredict: 1}}).Run()
	if err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("corrupt plan: err = %v", err)
	}
}

// TestDemo runs README's main command (synthesize, compile, execute) in
// process with a short generation.
func TestDemo(t *testing.T) {
	out := capture(t, (&DemoCmd{Preset: "qwen2-tiny", Type: "q8_0", Dir: t.TempDir(), GenFlags: GenFlags{Prompt: "Once upon a time", NPredict: 8, Threads: 2}}).Run)
	if !strings.HasPrefix(out, "Once upon a time") || len(out) <= len("Once upon a time\n") {
		t.Fatalf("demo printed %q", out)
	}
}
