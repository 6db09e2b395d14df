package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/minfer/minfer/internal/fixtures"
)

// copyFixture copies a fixture model into dir (tests may not touch the
// shared file).
func copyFixture(t *testing.T, dir string, elem ...string) string {
	t.Helper()
	b, err := os.ReadFile(fixtures.Path(t, elem...))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, elem[len(elem)-1])
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCompileRefusesInputAsOutput (issue 13 item 5): compile -o over its
// own GGUF, directly or through a link, is refused in both weights modes,
// and the model is unchanged.
func TestCompileRefusesInputAsOutput(t *testing.T) {
	dir := t.TempDir()
	model := copyFixture(t, dir, "models", "qwen2-synth-q8_0.gguf")
	before, _ := os.ReadFile(model)
	link := filepath.Join(dir, "link.gguf")
	if err := os.Symlink(model, link); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"embed", "ref"} {
		for _, out := range []string{model, link} {
			cc := CompileCmd{Model: model, Out: out, MaxBatch: 512, KVType: "f32", Weights: w, Quiet: true}
			err := cc.Run()
			if err == nil || !strings.Contains(err.Error(), "is the input") {
				t.Errorf("--weights %s -o %s: err = %v", w, out, err)
			}
		}
	}
	if after, _ := os.ReadFile(model); !bytes.Equal(before, after) {
		t.Fatal("the model changed")
	}
}

// TestExecValidatesBeforeWriting (issue 13 item 7): bad token ids or more
// tokens than the context leave an existing --logits-out as it was.
func TestExecValidatesBeforeWriting(t *testing.T) {
	dir := t.TempDir()
	model := fixtures.Path(t, "models", "qwen2-synth-q8_0.gguf")
	planPath := filepath.Join(dir, "m.plan")
	cc := CompileCmd{Model: model, Out: planPath, MaxBatch: 512, KVType: "f32", Weights: "embed", Quiet: true}
	if err := cc.Run(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "old.f32")
	if err := os.WriteFile(out, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("1,", 5000) + "1"
	for _, c := range []struct{ tokens, want string }{
		{"1,2,99999", "id 99999 is outside the vocabulary"},
		{"1,-2", "id -2 is outside the vocabulary"},
		{long, "but the context holds"},
	} {
		ec := ExecCmd{Plan: planPath, GenFlags: GenFlags{Tokens: c.tokens, LogitsOut: out}}
		err := ec.Run()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--tokens %.20s: err = %v, want %q", c.tokens, err, c.want)
		}
		if b, _ := os.ReadFile(out); string(b) != "old" {
			t.Fatalf("--tokens %.20s: old output now %d bytes", c.tokens, len(b))
		}
		ec = ExecCmd{Plan: planPath, GenFlags: GenFlags{Tokens: "1,2", LogitsOut: planPath}}
		if err := ec.Run(); err == nil || !strings.Contains(err.Error(), "is the input") {
			t.Errorf("--logits-out over the plan: err = %v", err)
		}
	}
	if e, _ := os.ReadDir(dir); len(e) != 2 {
		t.Fatalf("left %v", e)
	}
}

// TestPlanMode (issue 13 item 17): plans, like the other outputs, get 0666
// minus the umask (they were 0600).
func TestPlanMode(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := t.TempDir()
	out := filepath.Join(dir, "m.plan")
	cc := CompileCmd{Model: fixtures.Path(t, "models", "qwen2-synth-q8_0.gguf"), Out: out, MaxBatch: 512, KVType: "f32", Weights: "ref", Quiet: true}
	if err := cc.Run(); err != nil {
		t.Fatal(err)
	}
	synthOut := filepath.Join(dir, "s.gguf")
	if err := (&SynthCmd{Preset: "qwen2-tiny", Type: "q8_0", Seed: 1, Out: synthOut}).Run(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{out, synthOut} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v, want 0644 under umask 022", p, st.Mode().Perm())
		}
	}
}
