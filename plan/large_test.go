package plan

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/minfer/minfer/frontends/gguf"
	"github.com/minfer/minfer/synth"
)

// TestLargePlan measures Write and Open on a Qwen2.5-0.5B-shaped q4_k_m
// model (about 400 MB of weights, 151936-token vocabulary). It runs only
// when MINFER_PLAN_LARGE is set: to the path of a GGUF to use, or to "1" to
// synthesize one (which takes a while).
func TestLargePlan(t *testing.T) {
	env := os.Getenv("MINFER_PLAN_LARGE")
	if env == "" {
		t.Skip("set MINFER_PLAN_LARGE=1 (or to a GGUF path) to measure a 400 MB plan")
	}
	dir := t.TempDir()
	src := env
	if env == "1" {
		src = filepath.Join(dir, "qwen2-0.5b-q4_k_m.gguf")
		start := time.Now()
		if err := synth.WriteFile(src, synth.Options{Preset: "qwen2-0.5b", Type: "q4_k_m", Seed: 1}); err != nil {
			t.Fatal(err)
		}
		t.Logf("synthesized %s in %v", src, time.Since(start))
	}
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, mode := range []Weights{Embed, Ref} {
		p := compile(t, f, mode)
		path := filepath.Join(dir, "plan-"+mode.String()+".bin")
		start := time.Now()
		if err := Write(path, p, f, nil); err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(path)
		t.Logf("%s: wrote %d bytes in %v", mode, st.Size(), time.Since(start))
		for _, o := range []OpenOptions{{}, {SkipWeightChecksum: true, SkipSourceHash: true}} {
			for range 3 {
				start = time.Now()
				l, err := OpenWith(path, o)
				if err != nil {
					t.Fatal(err)
				}
				total := time.Since(start)
				t.Logf("%s %+v: open %v; %+v; %d tokens, %d merges", mode, o, total, l.Stats, len(l.Vocab.Tokens), len(l.Vocab.Merges))
				l.Close()
			}
		}
	}
}
