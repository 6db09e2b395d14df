package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/minfer/minfer/frontends/gguf"
	"github.com/minfer/minfer/internal/fixtures"
	"github.com/minfer/minfer/plan"
)

func TestRewriteArgs(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"run m.gguf -ctk q8_0 -ctv q8_0", "run m.gguf --cache-type-k q8_0 --cache-type-v q8_0"},
		{"run m.gguf -ctk=f16", "run m.gguf --cache-type-k=f16"},
		{"bench p.plan -np 8 -np=4", "bench p.plan --parallel 8 --parallel=4"},
		{"run m.gguf -n -1", "run m.gguf -n-1"},
		{"run m.gguf --seed -1 --repeat-last-n -1", "run m.gguf --seed=-1 --repeat-last-n=-1"},
		{"run m.gguf --temp -0.5", "run m.gguf --temp=-0.5"},
		{"run m.gguf -n 5 -p -1", "run m.gguf -n 5 -p-1"},
		{"run m.gguf -f -", "run m.gguf -f -"},                       // "-" is a value kong reads
		{"run m.gguf --seed=-1", "run m.gguf --seed=-1"},             // already joined
		{"run m.gguf -p x -- -ctk -1", "run m.gguf -p x -- -ctk -1"}, // nothing after --
		{"run m.gguf -c 512", "run m.gguf -c 512"},
	} {
		got := strings.Join(RewriteArgs(strings.Fields(tc.in)), " ")
		if got != tc.want {
			t.Errorf("RewriteArgs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// testApp holds the commands whose flags follow llama.cpp's habits.
type testApp struct {
	Exec    ExecCmd    `cmd:""`
	Run     RunCmd     `cmd:""`
	Compile CompileCmd `cmd:""`
	Bench   BenchCmd   `cmd:""`
}

// TestHabitFlags parses command lines people type from llama.cpp habit
// through the same parser the commands use.
func TestHabitFlags(t *testing.T) {
	m := filepath.Join(t.TempDir(), "m.gguf")
	os.WriteFile(m, []byte("GGUF"), 0o644)
	i64 := func(v int64) *int64 { return &v }
	iv := func(v int) *int { return &v }
	for _, tc := range []struct {
		args  string
		check func(a *testApp) bool
	}{
		{"run M -c 2048", func(a *testApp) bool { return a.Run.NCtx == 2048 }},
		{"run M --ctx-size 2048", func(a *testApp) bool { return a.Run.NCtx == 2048 }},
		{"compile M -c 1024", func(a *testApp) bool { return a.Compile.NCtx == 1024 }},
		{"compile M --ctx-size 1024", func(a *testApp) bool { return a.Compile.NCtx == 1024 }},
		{"compile M --n-ctx 1024", func(a *testApp) bool { return a.Compile.NCtx == 1024 }},
		{"run M -ctk q8_0 -ctv q8_0", func(a *testApp) bool { return a.Run.CacheTypeK == "q8_0" && a.Run.CacheTypeV == "q8_0" }},
		{"compile M -ctk f16", func(a *testApp) bool { return a.Compile.CacheTypeK == "f16" }},
		{"compile M -fa on", func(a *testApp) bool { return a.Compile.FlashAttn == "on" }},
		{"compile M", func(a *testApp) bool { return a.Compile.FlashAttn == "auto" && a.Compile.KVType == "f16" }},
		{"compile M -fa off", func(a *testApp) bool { return a.Compile.FlashAttn == "off" }},
		{"run M -fa=on", func(a *testApp) bool { return a.Run.FlashAttn == "on" }},
		{"run M -n -1", func(a *testApp) bool { return a.Run.NPredict == -1 }},
		{"exec M -n -1 --seed -1", func(a *testApp) bool { return a.Exec.NPredict == -1 && reflect.DeepEqual(a.Exec.Seed, i64(-1)) }},
		{"exec M --repeat-last-n -1", func(a *testApp) bool { return reflect.DeepEqual(a.Exec.RepeatLastN, iv(-1)) }},
		{"exec M -f -", func(a *testApp) bool { return a.Exec.File == "-" }},
		{"bench M", func(a *testApp) bool { return len(a.Bench.Threads) == 0 && a.Bench.Output == "md" }},
		{"bench M -o jsonl", func(a *testApp) bool { return a.Bench.Output == "jsonl" }},
		{"bench M", func(a *testApp) bool {
			return slices.Equal(a.Bench.Prompt, []int{512}) && slices.Equal(a.Bench.Gen, []int{128}) && slices.Equal(a.Bench.Depth, []int{0})
		}},
		{"bench M -p 128,512,2048 -n 0 -d 4096", func(a *testApp) bool {
			return slices.Equal(a.Bench.Prompt, []int{128, 512, 2048}) && slices.Equal(a.Bench.Gen, []int{0}) && slices.Equal(a.Bench.Depth, []int{4096})
		}},
		{"bench M -t 1,2 -d 0,512", func(a *testApp) bool {
			return slices.Equal(a.Bench.Threads, []int{1, 2}) && slices.Equal(a.Bench.Depth, []int{0, 512})
		}},
		{"bench M --json", func(a *testApp) bool { return a.Bench.JSON }},
	} {
		var app testApp
		var stderr bytes.Buffer
		ctx, code := Parse(&app, "minfer", "test", strings.Fields(strings.ReplaceAll(tc.args, "M", m)), &stderr)
		if ctx == nil {
			t.Errorf("%s: exit %d: %s", tc.args, code, stderr.String())
			continue
		}
		if !tc.check(&app) {
			t.Errorf("%s: parsed %+v", tc.args, app)
		}
	}
}

// TestUsageError: a command line that does not parse prints the error and
// a one-line hint naming the command's help, not the whole help, and exits
// with status 2.
func TestUsageError(t *testing.T) {
	m := filepath.Join(t.TempDir(), "m.gguf")
	os.WriteFile(m, []byte("GGUF"), 0o644)
	for _, tc := range []struct{ args, err, hint string }{
		{"exec " + m + " --bogus", "unknown flag --bogus", "run 'minfer exec --help' for usage"},
		{"run " + m + " -ctk q8_0 -ctv f16", "-ctk q8_0 and -ctv f16 differ", "run 'minfer run --help' for usage"},
		{"compile " + m + " --kv-type f32 -ctk q8_0", "--kv-type f32 and cache type q8_0 differ", "run 'minfer compile --help'"},
		{"run " + m + " -ctk q4_0", `cache type "q4_0": minfer's KV cache is one of f32, f16, q8_0`, "run 'minfer run --help'"},
		{"nosuch", "unexpected argument nosuch", "run 'minfer --help' for usage"},
	} {
		var app testApp
		var stderr bytes.Buffer
		ctx, code := Parse(&app, "minfer", "test", strings.Fields(tc.args), &stderr)
		out := stderr.String()
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if ctx != nil || code != 2 || len(lines) != 2 {
			t.Errorf("%s: exit %d, printed %q; want exit 2 and two lines", tc.args, code, out)
			continue
		}
		if !strings.HasPrefix(lines[0], "minfer: error: ") || !strings.Contains(lines[0], tc.err) {
			t.Errorf("%s: first line %q, want the error %q", tc.args, lines[0], tc.err)
		}
		if !strings.Contains(lines[1], tc.hint) {
			t.Errorf("%s: hint %q, want %q", tc.args, lines[1], tc.hint)
		}
	}
}

func TestCacheTypes(t *testing.T) {
	for _, tc := range []struct {
		kv, k, v, want, err string
	}{
		{"f32", "", "", "f32", ""},
		{"f16", "", "", "f16", ""},
		{"f16", "q8_0", "", "q8_0", ""}, // f16 is the default: -ctk wins
		{"f16", "", "F32", "f32", ""},
		{"f16", "q8_0", "q8_0", "q8_0", ""},
		{"q8_0", "q8_0", "", "q8_0", ""},
		{"f16", "q8_0", "f32", "", "differ"},
		{"f32", "q8_0", "", "", "differ"},
		{"f32", "bf16", "", "", "one of f32, f16, q8_0"},
	} {
		got, err := CacheTypeFlags{tc.k, tc.v}.kvType(tc.kv)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("kv %s -ctk %q -ctv %q: err %v, want %q", tc.kv, tc.k, tc.v, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("kv %s -ctk %q -ctv %q = %q, %v; want %q", tc.kv, tc.k, tc.v, got, err, tc.want)
		}
	}
}

// TestRandomSeedPrinted: --seed -1 draws a seed and prints it so the run
// can be repeated; --seed -2 is refused before anything loads.
func TestRandomSeedPrinted(t *testing.T) {
	minus := func(v int64) *int64 { return &v }
	var stderr bytes.Buffer
	s := SamplingFlags{Seed: minus(-1)}
	p, err := s.params(plan.Plan{}.Sampling, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	want := "--seed " + strings.TrimSpace(strings.TrimPrefix(strings.Fields(stderr.String())[1], "seed: "))
	if !strings.Contains(stderr.String(), want) || !strings.Contains(stderr.String(), "repeats this run") {
		t.Fatalf("printed %q", stderr.String())
	}
	s2 := SamplingFlags{Seed: minus(int64(p.Seed))}
	if p2, err := s2.params(plan.Plan{}.Sampling, &stderr); err != nil || p2.Seed != p.Seed {
		t.Fatalf("--seed %d gives seed %d, %v", p.Seed, p2.Seed, err)
	}
	g := GenFlags{SamplingFlags: SamplingFlags{Seed: minus(-2)}}
	if err := g.check(); err == nil || !strings.Contains(err.Error(), "--seed -2") {
		t.Fatalf("--seed -2: err %v", err)
	}
}

func TestVersion(t *testing.T) {
	v := Version("minfer")
	for _, want := range []string{"minfer ", runtime.Version(), "kernel tier ", "commit"} {
		if !strings.Contains(v, want) {
			t.Errorf("version %q lacks %q", v, want)
		}
	}
}

// TestPromptFromStdin: -f - reads the prompt from standard input.
func TestPromptFromStdin(t *testing.T) {
	model := fixtures.Path(t, "models", "llama-synth-q8_0.gguf")
	r, w, _ := os.Pipe()
	w.WriteString("from stdin")
	w.Close()
	old := os.Stdin
	os.Stdin = r
	defer func() { os.Stdin = old }()
	out := capture(t, (&RunCmd{Model: model, KVType: "f32", GenFlags: GenFlags{File: "-", NPredict: 1}}).Run)
	if !strings.HasPrefix(out, "from stdin") {
		t.Fatalf("printed %q", out)
	}
}

// TestErrorsNameInput: errors name the file the user gave, and a GGUF given
// to exec says what to do with it.
func TestErrorsNameInput(t *testing.T) {
	model := fixtures.Path(t, "models", "llama-synth-q8_0.gguf")
	err := (&ExecCmd{Plan: model, GenFlags: GenFlags{Prompt: "hi", NPredict: 1}}).Run()
	for _, want := range []string{model + " is a GGUF model", "minferc compile " + model, "minfer run " + model} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("exec on a GGUF: err %v, want %q", err, want)
		}
	}
	bad := filepath.Join(t.TempDir(), "my-model.plan")
	os.WriteFile(bad, append([]byte(plan.Magic), make([]byte, 40)...), 0o644)
	for name, run := range map[string]func() error{
		"exec":  (&ExecCmd{Plan: bad, GenFlags: GenFlags{Prompt: "hi", NPredict: 1}}).Run,
		"bench": (&BenchCmd{Plan: bad, Prompt: []int{8}, Gen: []int{8}, Reps: 1, Output: "md"}).Run,
	} {
		err := run()
		if err == nil || !strings.HasPrefix(err.Error(), bad+": ") || strings.Contains(err.Error(), "plan.bin") {
			t.Errorf("%s of a truncated plan: err %v, want it to name %s and not plan.bin", name, err, bad)
		}
	}
}

// TestContextAboveTrainedWarns: --n-ctx above the model's trained context
// warns and proceeds.
func TestContextAboveTrainedWarns(t *testing.T) {
	model := fixtures.Path(t, "models", "llama-synth-q8_0.gguf") // trained for 512 positions
	var w bytes.Buffer
	f, err := gguf.Open(model)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	warnContext(&w, f, 512)
	if w.Len() != 0 {
		t.Fatalf("--n-ctx 512 warned: %q", w.String())
	}
	warnContext(&w, f, 1024)
	if !strings.Contains(w.String(), "--n-ctx 1024 is more than the 512 positions "+model+" was trained for") {
		t.Fatalf("warning %q", w.String())
	}
	out := filepath.Join(t.TempDir(), "p.plan")
	if err := (&CompileCmd{Model: model, Out: out, NCtx: 1024, MaxBatch: 64, KVType: "f32", Weights: "embed", Quiet: true}).Run(); err != nil {
		t.Fatalf("compile --n-ctx 1024: %v", err)
	}
	l, err := plan.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Graph.Params.NCtx != 1024 {
		t.Fatalf("plan context %d, want 1024", l.Graph.Params.NCtx)
	}
}

// TestFlashOn: --flash-attn auto is flash for the f16 (default) and q8_0
// caches, not f32; on takes f32, f16 and q8_0 caches.
func TestFlashOn(t *testing.T) {
	for _, tc := range []struct {
		mode, kv string
		want     bool
		err      string
	}{
		{"auto", "f16", true, ""}, {"", "", true, ""}, {"auto", "f32", false, ""}, {"auto", "q8_0", true, ""},
		{"on", "f32", true, ""}, {"on", "f16", true, ""}, {"off", "f16", false, ""}, {"on", "q8_0", true, ""}, {"on", "q4_0", false, "not q4_0"},
	} {
		got, err := flashOn(tc.mode, tc.kv)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("flashOn(%q, %q): err %v, want %q", tc.mode, tc.kv, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("flashOn(%q, %q) = %v, %v; want %v", tc.mode, tc.kv, got, err, tc.want)
		}
	}
}
