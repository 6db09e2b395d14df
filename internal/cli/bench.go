package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"

	"minfer/backends/cpu"
	"minfer/exec"
	"minfer/plan"
)

// BenchCmd is `minfer bench`: llama-bench's pp/tg measurements on a plan.
type BenchCmd struct {
	Plan    string `arg:"" help:"Compiled plan file." type:"existingfile"`
	Prompt  int    `short:"p" help:"Prompt tokens evaluated as one prefill (pp)." default:"512"`
	Gen     int    `short:"n" help:"Tokens decoded one at a time from an empty cache (tg)." default:"128"`
	Threads []int  `short:"t" help:"Thread counts to measure (repeatable)." default:"1"`
	Reps    int    `short:"r" help:"Repetitions; the median is reported." default:"5"`
	JSON    bool   `help:"Print JSON."`
}

// BenchResult is one measured configuration.
type BenchResult struct {
	Test     string    `json:"test"`
	Threads  int       `json:"threads"`
	TokPerS  float64   `json:"tok_per_s"`
	Samples  []float64 `json:"samples"`
	Barriers float64   `json:"barriers_per_token,omitempty"`
}

// Run measures.
func (c *BenchCmd) Run() error {
	l, err := plan.OpenWith(c.Plan, plan.OpenOptions{SkipWeightChecksum: true, SkipSourceHash: true})
	if err != nil {
		return err
	}
	defer l.Close()
	p := l.Graph.Params
	if c.Prompt+1 > p.NCtx || c.Gen > p.NCtx {
		return fmt.Errorf("-p %d / -n %d do not fit the plan's context of %d", c.Prompt, c.Gen, p.NCtx)
	}
	if c.Reps < 1 {
		return fmt.Errorf("-r must be at least 1")
	}
	// Deterministic pseudo-random tokens, as llama-bench uses random ids.
	toks := make([]int32, max(c.Prompt, c.Gen))
	x := uint32(12345)
	for i := range toks {
		x = x*1664525 + 1013904223
		toks[i] = int32(x>>8) % int32(p.NVocab)
	}
	var results []BenchResult
	for _, t := range c.Threads {
		m, err := exec.New(l.Graph, l.Memory, l, exec.Config{Threads: t})
		if err != nil {
			return err
		}
		if c.Prompt > 0 {
			r := BenchResult{Test: fmt.Sprintf("pp%d", c.Prompt), Threads: t}
			for rep := 0; rep <= c.Reps; rep++ { // the first run warms up
				m.Reset()
				start := time.Now()
				for i := 0; i < c.Prompt; i += 512 {
					end := min(c.Prompt, i+512)
					if _, err := m.Eval(toks[i:end], positions(i, end), []int32{int32(end - i - 1)}); err != nil {
						return err
					}
				}
				if rep > 0 {
					r.Samples = append(r.Samples, float64(c.Prompt)/time.Since(start).Seconds())
				}
			}
			r.TokPerS = median(r.Samples)
			results = append(results, r)
		}
		if c.Gen > 0 {
			r := BenchResult{Test: fmt.Sprintf("tg%d", c.Gen), Threads: t}
			for rep := 0; rep <= c.Reps; rep++ {
				m.Reset()
				before := m.Stats().DecodeBarriers
				start := time.Now()
				for i := 0; i < c.Gen; i++ {
					if _, err := m.Eval(toks[i:i+1], []int32{int32(i)}, []int32{0}); err != nil {
						return err
					}
				}
				if rep > 0 {
					r.Samples = append(r.Samples, float64(c.Gen)/time.Since(start).Seconds())
					r.Barriers = float64(m.Stats().DecodeBarriers-before) / float64(c.Gen)
				}
			}
			r.TokPerS = median(r.Samples)
			results = append(results, r)
		}
		m.Close()
	}
	if c.JSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"plan": c.Plan, "kernels": cpu.Features(), "results": results})
	}
	fmt.Printf("plan %s, kernels %s\n\n", c.Plan, cpu.Features())
	fmt.Printf("| test | threads | tok/s (median of %d) | min | max |\n|---|---|---|---|---|\n", c.Reps)
	for _, r := range results {
		fmt.Printf("| %s | %d | %.2f | %.2f | %.2f |\n", r.Test, r.Threads, r.TokPerS, slices.Min(r.Samples), slices.Max(r.Samples))
	}
	return nil
}

func positions(a, b int) []int32 {
	p := make([]int32, b-a)
	for i := range p {
		p[i] = int32(a + i)
	}
	return p
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
