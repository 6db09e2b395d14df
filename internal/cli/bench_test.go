package cli

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/minfer/minfer/internal/fixtures"
)

// TestBenchOutputs: -o json/jsonl/csv/md carry llama-bench's fields, and
// --json is -o json.
func TestBenchOutputs(t *testing.T) {
	model := fixtures.Path(t, "models", "qwen2-synth-q8_0.gguf")
	planPath := filepath.Join(t.TempDir(), "p.plan")
	if err := (&CompileCmd{Model: model, Out: planPath, MaxBatch: 64, KVType: "f32", Weights: "embed", Quiet: true}).Run(); err != nil {
		t.Fatal(err)
	}
	run := func(c BenchCmd) string {
		c.Plan, c.Prompt, c.Gen, c.Reps, c.Threads = planPath, []int{8}, []int{4}, 2, []int{1}
		return capture(t, c.Run)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(run(BenchCmd{JSON: true, Output: "md"})), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d results, want pp and tg", len(rows))
	}
	for _, r := range rows {
		for _, f := range benchFields {
			if _, ok := r[f]; !ok {
				t.Errorf("%v: no field %s", r["test"], f)
			}
		}
		if r["model_filename"] != planPath || r["n_threads"] != 1.0 || r["n_depth"] != 0.0 ||
			r["model_n_params"].(float64) <= 0 || r["model_size"].(float64) <= 0 || r["avg_ts"].(float64) <= 0 ||
			len(r["samples_ts"].([]any)) != 2 || len(r["samples_ns"].([]any)) != 2 ||
			!strings.HasPrefix(r["model_type"].(string), "qwen2 ") || r["kernel_tier"] == "" {
			t.Errorf("result %v", r)
		}
	}
	if rows[0]["n_prompt"] != 8.0 || rows[0]["n_gen"] != 0.0 || rows[1]["n_prompt"] != 0.0 || rows[1]["n_gen"] != 4.0 ||
		rows[1]["barriers_per_token"].(float64) <= 0 {
		t.Errorf("pp/tg rows: %v", rows)
	}
	lines := strings.Split(strings.TrimSpace(run(BenchCmd{Output: "jsonl"})), "\n")
	for _, l := range lines {
		var r map[string]any
		if err := json.Unmarshal([]byte(l), &r); err != nil || r["avg_ts"] == nil {
			t.Errorf("jsonl line %q: %v", l, err)
		}
	}
	recs, err := csv.NewReader(strings.NewReader(run(BenchCmd{Output: "csv"}))).ReadAll()
	if err != nil || len(recs) != 3 || !slices.Equal(recs[0], benchFields) {
		t.Errorf("csv: %v %v", recs, err)
	}
	md := run(BenchCmd{Output: "md"})
	if !strings.HasPrefix(md, "| model | size | params | backend | threads | test | t/s |") || !strings.Contains(md, "| pp8 |") || !strings.Contains(md, " ± ") {
		t.Errorf("md:\n%s", md)
	}
}

// TestBenchParallel: minferc compile --slots N writes a plan whose KV
// holds N sequences, and bench -np measures them decoding together
// (n_parallel, aggregate tok/s); -np beyond the slots is an error naming
// the fix.
func TestBenchParallel(t *testing.T) {
	model := fixtures.Path(t, "models", "qwen2-synth-q8_0.gguf")
	planPath := filepath.Join(t.TempDir(), "p.plan")
	c := CompileCmd{Model: model, Out: planPath, MaxBatch: 64, KVType: "f16", Weights: "embed", Quiet: true, Slots: 3}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	out := capture(t, (&BenchCmd{Plan: planPath, Gen: []int{4}, Reps: 1, Threads: []int{2}, Parallel: []int{1, 3}, Output: "json"}).Run)
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0]["test"] != "tg4 x1" || rows[1]["test"] != "tg4 x3" || rows[1]["n_parallel"] != 3.0 || rows[1]["avg_ts"].(float64) <= 0 {
		t.Fatalf("rows: %v", rows)
	}
	err := (&BenchCmd{Plan: planPath, Gen: []int{4}, Reps: 1, Threads: []int{1}, Parallel: []int{4}, Output: "md"}).Run()
	if err == nil || !strings.Contains(err.Error(), "has 3 KV slot(s); compile it with minferc compile --slots 4") {
		t.Fatalf("-np 4 on 3 slots: %v", err)
	}
	dump := capture(t, (&DumpGraphCmd{Model: planPath}).Run)
	if !strings.Contains(dump, "3 slots × 512 positions, f16), prefill batch 64 tokens, decode batch 3 row(s)") {
		t.Fatalf("dump-graph does not describe the slots:\n%s", dump[:min(len(dump), 400)])
	}
	if err := (&CompileCmd{Model: model, Out: planPath, KVType: "f32", Slots: 0}).Validate(); err == nil || !strings.Contains(err.Error(), "--slots 0") {
		t.Fatalf("--slots 0: %v", err)
	}
}

// TestBenchDepthAndLists: -p/-n lists give one row each, -d runs every test
// at that depth (named as llama-bench names it), and a depth that does not
// fit the context is refused.
func TestBenchDepthAndLists(t *testing.T) {
	model := fixtures.Path(t, "models", "qwen2-synth-q8_0.gguf")
	planPath := filepath.Join(t.TempDir(), "p.plan")
	if err := (&CompileCmd{Model: model, Out: planPath, MaxBatch: 64, KVType: "f16", Weights: "embed", Quiet: true}).Run(); err != nil {
		t.Fatal(err)
	}
	c := BenchCmd{Plan: planPath, Prompt: []int{4, 8}, Gen: []int{0, 3}, Depth: []int{0, 70}, Reps: 1, Threads: []int{1, 2}, Output: "jsonl"}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(capture(t, c.Run)), "\n") {
		var r BenchResult
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		if r.AvgTs <= 0 || len(r.SamplesNs) != 1 {
			t.Errorf("%s: %+v", r.Test, r)
		}
		got = append(got, fmt.Sprintf("%d %s %d/%d/%d", r.NThreads, r.Test, r.NPrompt, r.NGen, r.NDepth))
	}
	want := []string{
		"1 pp4 4/0/0", "1 pp8 8/0/0", "1 tg3 0/3/0", "1 pp4 @ d70 4/0/70", "1 pp8 @ d70 8/0/70", "1 tg3 @ d70 0/3/70",
		"2 pp4 4/0/0", "2 pp8 8/0/0", "2 tg3 0/3/0", "2 pp4 @ d70 4/0/70", "2 pp8 @ d70 8/0/70", "2 tg3 @ d70 0/3/70",
	}
	if !slices.Equal(got, want) {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	c.Depth = []int{510}
	if err := c.Run(); err == nil || !strings.Contains(err.Error(), "does not fit the context") {
		t.Errorf("-d 510 -p 8 on a 512-position plan: err = %v", err)
	}
}
