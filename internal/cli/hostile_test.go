package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minfer/minfer/exec"
	"github.com/minfer/minfer/frontends/gguf"
	"github.com/minfer/minfer/internal/fixtures"
	"github.com/minfer/minfer/plan"
	"github.com/minfer/minfer/quant"
	"github.com/minfer/minfer/reference"
)

// editGGUF writes a copy of the fixture model name into dir with its
// metadata edited: edit gets each key and value and returns the value to
// write, or drop=true to leave the key out. extra keys are appended.
func editGGUF(t *testing.T, dir, name string, edit func(key string, v any) (any, bool), extra map[string]any) string {
	t.Helper()
	return rewriteGGUF(t, dir, name, edit, extra, nil)
}

// rewriteGGUF is editGGUF that can also change tensors: tedit gets each
// tensor and returns its new type and data.
func rewriteGGUF(t *testing.T, dir, name string, edit func(key string, v any) (any, bool), extra map[string]any,
	tedit func(name string, typ quant.Type, dims []uint64, data []byte) (quant.Type, []byte)) string {
	t.Helper()
	f, err := gguf.Open(fixtures.Path(t, "models", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := gguf.NewWriter()
	for _, kv := range f.KV {
		v, drop := kv.Value, false
		if edit != nil {
			v, drop = edit(kv.Key, kv.Value)
		}
		if !drop {
			w.AddKV(kv.Key, v)
		}
	}
	for k, v := range extra {
		w.AddKV(k, v)
	}
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		typ, data := ti.Type, f.TensorData(ti)
		if tedit != nil {
			typ, data = tedit(ti.Name, typ, ti.Dims, data)
		}
		if err := w.AddTensor(ti.Name, typ, ti.Dims, data); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, strings.TrimSuffix(name, ".gguf")+"-edited.gguf")
	if err := w.WriteFile(out); err != nil {
		t.Fatal(err)
	}
	return out
}

// cutVocab cuts the tokenizer arrays to n entries.
func cutVocab(n int) func(string, any) (any, bool) {
	return func(key string, v any) (any, bool) {
		switch key {
		case "tokenizer.ggml.tokens", "tokenizer.ggml.token_type", "tokenizer.ggml.scores":
			a := v.(gguf.Array)
			switch x := a.Values.(type) {
			case []string:
				a.Values = x[:n]
			case []int32:
				a.Values = x[:n]
			case []float32:
				a.Values = x[:n]
			}
			return a, false
		case "tokenizer.ggml.merges":
			return v, true // merges name tokens that are gone
		}
		return v, false
	}
}

// expectErr runs f and wants an error containing every one of want.
func expectErr(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want one mentioning %q", what, want)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %q does not mention %q", what, err, w)
		}
	}
}

// TestVocabSizeMismatch (issue 13 item 1): a vocabulary of fewer tokens
// than token_embd rows is refused by compile, run (both executors) and
// tokenize's model check, naming both sides; no plan is written.
func TestVocabSizeMismatch(t *testing.T) {
	dir := t.TempDir()
	model := editGGUF(t, dir, "qwen2-synth-q8_0.gguf", func(k string, v any) (any, bool) {
		v, _ = cutVocab(300)(k, v)
		return v, false
	}, nil)
	// Keep the merges: the vocab must then fail for its size, not for them.
	out := filepath.Join(dir, "x.plan")
	cc := CompileCmd{Model: model, Out: out, MaxBatch: 512, KVType: "f32", Weights: "embed", Quiet: true}
	err := cc.Run()
	expectErr(t, "compile", err, "tokenizer.ggml.tokens has 300 entries", "token_embd.weight has 1024 rows")
	if _, serr := os.Stat(out); serr == nil {
		t.Errorf("compile wrote %s", out)
	}
	for _, ref := range []bool{false, true} {
		rc := RunCmd{Model: model, Reference: ref, KVType: "f32", GenFlags: GenFlags{Prompt: "hi", NPredict: 2}}
		expectErr(t, "run", rc.Run(), "300 entries", "1024 rows")
	}
}

// TestMalformedVocabSaysWhat (issue 13 items 11 and 12): a tokenizer that
// is present but unusable is named as such by run (not "no tokenizer"),
// and compile refuses it instead of writing a plan exec would refuse.
func TestMalformedVocabSaysWhat(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		edit func(string, any) (any, bool)
		want string
	}{
		{"eos of the wrong type", func(k string, v any) (any, bool) {
			if k == "tokenizer.ggml.eos_token_id" {
				return "two", false
			}
			return v, false
		}, "tokenizer.ggml.eos_token_id"},
		{"negative bos id", setKey("tokenizer.ggml.bos_token_id", int32(-5)), "tokenizer.ggml.bos_token_id"},
		{"missing merges", func(k string, v any) (any, bool) { return v, k == "tokenizer.ggml.merges" }, "tokenizer.ggml.merges"},
		{"model bert", func(k string, v any) (any, bool) {
			if k == "tokenizer.ggml.model" {
				return "bert", false
			}
			return v, false
		}, `"bert"`},
		{"unknown pre-tokenizer", func(k string, v any) (any, bool) {
			if k == "tokenizer.ggml.pre" {
				return "no-such-pre", false
			}
			return v, false
		}, `"no-such-pre"`},
		{"empty vocab", cutVocab(0), "tokenizer"},
		{"malformed merges", func(k string, v any) (any, bool) {
			if k == "tokenizer.ggml.merges" {
				return gguf.Array{Elem: gguf.TypeString, Values: []string{"nospace"}}, false
			}
			return v, false
		}, "merge"},
	}
	for i, c := range cases {
		sub := filepath.Join(dir, string(rune('a'+i)))
		os.Mkdir(sub, 0o755)
		model := editGGUF(t, sub, "qwen2-synth-q8_0.gguf", c.edit, nil)
		rc := RunCmd{Model: model, KVType: "f32", GenFlags: GenFlags{Prompt: "hi", NPredict: 2}}
		err := rc.Run()
		expectErr(t, c.name+": run", err, "tokenizer metadata is unusable", c.want)
		out := filepath.Join(sub, "x.plan")
		cc := CompileCmd{Model: model, Out: out, MaxBatch: 512, KVType: "f32", Weights: "ref", Quiet: true}
		expectErr(t, c.name+": compile", cc.Run(), c.want)
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: compile wrote a plan", c.name)
		}
	}
}

// within runs f and fails the test if it takes longer than d (a hang).
func within(t *testing.T, d time.Duration, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("%s: still running after %v", what, d)
		return nil
	}
}

// TestEndlessInputRefused (issue 13 item 4): exec -f and tokenize --file
// refuse devices and FIFOs (/dev/zero would be read forever) and files
// longer than the context can hold, with the file named; "-" reads
// standard input, bounded the same way.
func TestEndlessInputRefused(t *testing.T) {
	dir := t.TempDir()
	model := fixtures.Path(t, "models", "qwen2-synth-q8_0.gguf")
	planPath := filepath.Join(dir, "m.plan")
	cc := CompileCmd{Model: model, Out: planPath, MaxBatch: 512, KVType: "f32", Weights: "embed", Quiet: true, NCtx: 256}
	if err := cc.Run(); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(big, bytes.Repeat([]byte("a"), 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ file, want string }{
		{"/dev/zero", "/dev/zero is a character device, not a regular file"},
		{fifo, "is a named pipe (FIFO), not a regular file"},
		{big, "longer than a context of 256 tokens can hold"},
	} {
		ec := ExecCmd{Plan: planPath, GenFlags: GenFlags{File: c.file, NPredict: 1}}
		expectErr(t, "exec -f "+c.file, within(t, 10*time.Second, "exec -f "+c.file, ec.Run), c.want)
		if c.file != big {
			tc := TokenizeCmd{Model: model, File: c.file}
			expectErr(t, "tokenize --file "+c.file, within(t, 10*time.Second, "tokenize --file "+c.file, tc.Run), c.want)
		}
	}
	// Standard input: an endless stream stops at the bound.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		chunk := bytes.Repeat([]byte("b"), 1<<16)
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}()
	old := os.Stdin
	os.Stdin = r
	defer func() { os.Stdin = old; r.Close(); w.Close() }()
	ec := ExecCmd{Plan: planPath, GenFlags: GenFlags{File: "-", NPredict: 1}}
	expectErr(t, "exec -f -", within(t, 10*time.Second, "exec -f -", ec.Run), "standard input has more than", "256 tokens")
}

// TestTruncatedWeightsFault (issue 13 item 3): a --weights ref plan whose
// GGUF is truncated after the plan was loaded faults when a kernel reads
// the weights; the fault becomes an error naming the GGUF (not SIGBUS),
// at 1 and 2 threads, and the model refuses further calls.
func TestTruncatedWeightsFault(t *testing.T) {
	for _, threads := range []int{1, 2} {
		dir := t.TempDir()
		model := copyFixture(t, dir, "models", "qwen2-synth-q8_0.gguf")
		planPath := filepath.Join(dir, "m.plan")
		cc := CompileCmd{Model: model, Out: planPath, MaxBatch: 512, KVType: "f32", Weights: "ref", Quiet: true}
		if err := cc.Run(); err != nil {
			t.Fatal(err)
		}
		l, err := plan.OpenWith(planPath, plan.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		m, err := exec.New(l.Graph, l.Memory, l, exec.Config{Threads: threads, WeightFiles: l.Source.Path})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(model, 4096); err != nil {
			t.Fatal(err)
		}
		err = within(t, 20*time.Second, "eval on truncated weights", func() error {
			_, err := m.Eval([]int32{1, 2, 3}, []int32{0, 1, 2}, []int32{2})
			return err
		})
		expectErr(t, "eval", err, "memory fault", model, "truncated")
		_, err = m.Eval([]int32{4}, []int32{3}, []int32{0})
		expectErr(t, "second eval", err, "cannot be used")
		m.Close()
		l.Close()
	}
	// The reference executor reads the GGUF mapping directly.
	dir := t.TempDir()
	model := copyFixture(t, dir, "models", "qwen2-synth-q8_0.gguf")
	f, err := gguf.Open(model)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g, err := gguf.BuildGraph(f)
	if err != nil {
		t.Fatal(err)
	}
	g.Params.NCtx = 256
	rm, err := reference.New(g, f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(model, 4096); err != nil {
		t.Fatal(err)
	}
	_, err = rm.Eval([]int32{1, 2}, []int32{0, 1}, []int32{1})
	expectErr(t, "reference eval", err, "memory fault", "truncated")
}

// TestFlagBounds (issue 13 item 10): -t far beyond the CPUs is refused
// naming the threads (not the context), a negative --batch or -t is an
// error, not silently 0.
func TestFlagBounds(t *testing.T) {
	dir := t.TempDir()
	model := fixtures.Path(t, "models", "qwen2-synth-q8_0.gguf")
	planPath := filepath.Join(dir, "m.plan")
	cc := CompileCmd{Model: model, Out: planPath, MaxBatch: 512, KVType: "f32", Weights: "embed", Quiet: true}
	if err := cc.Run(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		g    GenFlags
		want string
	}{
		{GenFlags{Threads: 100000}, "-t 100000: at most"},
		{GenFlags{Threads: -2}, "-t -2"},
		{GenFlags{Batch: -3}, "--batch -3"},
		{GenFlags{NPredict: -5}, "-n -5"},
	} {
		ec := ExecCmd{Plan: planPath, GenFlags: c.g}
		expectErr(t, "exec "+c.want, ec.Run(), c.want)
		rc := RunCmd{Model: model, KVType: "f32", GenFlags: c.g}
		expectErr(t, "run "+c.want, rc.Run(), c.want)
	}
	l, err := plan.Open(planPath)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = exec.New(l.Graph, l.Memory, l, exec.Config{Threads: exec.MaxThreads + 1})
	expectErr(t, "exec.New", err, "threads: at most")
}

// setKey returns an edit that sets key to v.
func setKey(key string, val any) func(string, any) (any, bool) {
	return func(k string, v any) (any, bool) {
		if k == key {
			return val, false
		}
		return v, false
	}
}

// TestNonFiniteHyperParams (issue 13 item 13): an infinite or NaN epsilon
// or rope base is refused by run and compile naming the key; inspect --json
// prints such values as strings instead of failing.
func TestNonFiniteHyperParams(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		key string
		val any
	}{
		{"qwen2.attention.layer_norm_rms_epsilon", float32(math.Inf(1))},
		{"qwen2.attention.layer_norm_rms_epsilon", float32(math.NaN())},
		{"qwen2.rope.freq_base", float32(math.Inf(-1))},
		{"qwen2.rope.freq_base", float64(1e300)}, // beyond float32
	} {
		sub := t.TempDir()
		model := editGGUF(t, sub, "qwen2-synth-q8_0.gguf", setKey(c.key, c.val), nil)
		rc := RunCmd{Model: model, KVType: "f32", GenFlags: GenFlags{Prompt: "hi", NPredict: 1}}
		expectErr(t, fmt.Sprintf("run %s=%v", c.key, c.val), rc.Run(), c.key, "finite")
		cc := CompileCmd{Model: model, Out: filepath.Join(sub, "x.plan"), MaxBatch: 512, KVType: "f32", Weights: "embed", Quiet: true}
		expectErr(t, fmt.Sprintf("compile %s=%v", c.key, c.val), cc.Run(), c.key, "finite")
	}
	model := editGGUF(t, dir, "qwen2-synth-q8_0.gguf", setKey("qwen2.rope.freq_base", float32(math.Inf(1))),
		map[string]any{"test.nan": math.NaN(), "test.floats": []float32{1, float32(math.Inf(-1))}})
	for _, full := range []bool{false, true} {
		out := capture(t, (&InspectCmd{Model: model, JSON: true, Full: full}).Run)
		var doc map[string]any
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("inspect --json output is not JSON: %v", err)
		}
		meta := doc["metadata"].(map[string]any)
		if meta["qwen2.rope.freq_base"] != "+Inf" || meta["test.nan"] != "NaN" {
			t.Errorf("inspect --json: freq_base %v, test.nan %v", meta["qwen2.rope.freq_base"], meta["test.nan"])
		}
		if fl, _ := meta["test.floats"].([]any); len(fl) != 2 || fl[1] != "-Inf" {
			t.Errorf("inspect --json: test.floats %v", meta["test.floats"])
		}
	}
}

// TestUnsupportedModelsNamed (issue 13 item 14): head size 1 is blamed on
// the key, not on the frontend; a file with IQ4_XS / IQ2_XXS / IQ1_M
// tensors is shown by inspect and refused by compile and run naming the
// type and the tensor.
func TestUnsupportedModelsNamed(t *testing.T) {
	dir := t.TempDir()
	model := editGGUF(t, dir, "qwen2-synth-q8_0.gguf", nil, map[string]any{
		"qwen2.attention.key_length": uint32(1), "qwen2.attention.value_length": uint32(1)})
	rc := RunCmd{Model: model, KVType: "f32", GenFlags: GenFlags{Prompt: "hi", NPredict: 1}}
	err := rc.Run()
	expectErr(t, "head_dim 1", err, "qwen2.attention.key_length = 1", "odd")
	if err != nil && strings.Contains(err.Error(), "frontend bug") {
		t.Errorf("head_dim 1 blamed on the frontend: %v", err)
	}
	for _, c := range []struct {
		typ  quant.Type
		name string
	}{{quant.IQ4_XS, "IQ4_XS"}, {quant.IQ2_XXS, "IQ2_XXS"}, {quant.IQ1_M, "IQ1_M"}, {quant.IQ4_NL, "IQ4_NL"}} {
		sub := t.TempDir()
		const victim = "blk.0.ffn_up.weight"
		model := rewriteGGUF(t, sub, "qwen2-synth-q8_0.gguf", nil, nil, func(name string, typ quant.Type, dims []uint64, data []byte) (quant.Type, []byte) {
			if name != victim {
				return typ, data
			}
			rs, err := c.typ.RowSize(int(dims[0]))
			if err != nil {
				t.Fatal(err)
			}
			return c.typ, make([]byte, rs*int(dims[1]))
		})
		out := capture(t, (&InspectCmd{Model: model}).Run)
		if !strings.Contains(out, strings.ToLower(c.name)) {
			t.Errorf("inspect does not show the %s tensor:\n%s", c.name, out)
		}
		cc := CompileCmd{Model: model, Out: filepath.Join(sub, "x.plan"), MaxBatch: 512, KVType: "f32", Weights: "embed", Quiet: true}
		expectErr(t, "compile "+c.name, cc.Run(), victim, c.name+" is not supported yet")
		rc := RunCmd{Model: model, KVType: "f32", GenFlags: GenFlags{Prompt: "hi", NPredict: 1}}
		expectErr(t, "run "+c.name, rc.Run(), victim, c.name+" is not supported yet")
	}
}
