package cli

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/minfer/minfer/backends/cpu"
	"github.com/minfer/minfer/exec"
	"github.com/minfer/minfer/ir"
	"github.com/minfer/minfer/plan"
	"github.com/minfer/minfer/quant"
)

// BenchCmd is `minfer bench`: llama-bench's pp/tg measurements on a plan.
type BenchCmd struct {
	Plan    string `arg:"" help:"Compiled plan file." type:"existingfile"`
	Prompt  []int  `short:"p" help:"Prompt tokens evaluated as one prefill (pp); a list (-p 128,512,2048) measures each, 0 none." default:"512"`
	Gen     []int  `short:"n" help:"Tokens decoded one at a time (tg); a list measures each, 0 none." default:"128"`
	Depth   []int  `short:"d" help:"Depth: positions already in the KV cache when each test starts (filled with a prompt of random tokens, untimed, as llama-bench's -d); a list measures each." default:"0"`
	Threads []int  `short:"t" help:"Thread counts to measure (repeatable or a list; default: all CPUs this process may use, as exec)."`
	Reps    int    `short:"r" help:"Repetitions (after one warm-up run)." default:"5"`
	Output  string `short:"o" help:"Output format, as llama-bench's: md, csv, json, jsonl." default:"md" enum:"md,csv,json,jsonl"`
	JSON    bool   `help:"Same as -o json."`
	// Parallel measures batched decode (what minfer serve does with
	// concurrent requests): N sequences, each in its own KV slot, decode
	// -n tokens together, one EvalSeqs step per token of every sequence.
	Parallel []int `name:"parallel" help:"Sequences decoding together for tg (repeatable; also -np, as llama.cpp's): aggregate tok/s of all of them. Needs a plan compiled with --slots ≥ N."`
	// CPUProfile writes a Go CPU profile of the measured runs (and their warm-ups).
	CPUProfile string `help:"Write a Go CPU profile of the whole measurement to this file." name:"cpuprofile"`
}

// BenchResult is one measured configuration, with llama-bench's field
// names (its -o json output) and minfer's own after them.
type BenchResult struct {
	ModelFilename string    `json:"model_filename"`
	ModelType     string    `json:"model_type"`
	ModelSize     int64     `json:"model_size"`
	ModelNParams  int64     `json:"model_n_params"`
	NThreads      int       `json:"n_threads"`
	NPrompt       int       `json:"n_prompt"`
	NGen          int       `json:"n_gen"`
	NDepth        int       `json:"n_depth"`
	AvgNs         int64     `json:"avg_ns"`
	StddevNs      int64     `json:"stddev_ns"`
	AvgTs         float64   `json:"avg_ts"`
	StddevTs      float64   `json:"stddev_ts"`
	SamplesNs     []int64   `json:"samples_ns"`
	SamplesTs     []float64 `json:"samples_ts"`
	Test          string    `json:"test"`               // "pp512", "tg128", "tg128 @ d4096", "tg128 x8" (-np 8)
	Barriers      float64   `json:"barriers_per_token"` // pool barriers per decoded token (0 for pp)
	KernelTier    string    `json:"kernel_tier"`
	NParallel     int       `json:"n_parallel"` // sequences decoded together (tg with -np; 1 otherwise)
}

// benchFields are the columns of -o csv, in order.
var benchFields = []string{"model_filename", "model_type", "model_size", "model_n_params", "n_threads", "n_prompt", "n_gen", "n_depth",
	"avg_ns", "stddev_ns", "avg_ts", "stddev_ts", "samples_ns", "samples_ts", "test", "barriers_per_token", "kernel_tier", "n_parallel"}

// finish fills the statistics from the samples (ns per repetition for n
// tokens), as llama-bench does: t/s per sample, mean and sample standard
// deviation of each.
func (r *BenchResult) finish(n int) {
	ns := make([]float64, len(r.SamplesNs))
	r.SamplesTs = make([]float64, len(r.SamplesNs))
	for i, v := range r.SamplesNs {
		ns[i] = float64(v)
		r.SamplesTs[i] = float64(n) * 1e9 / float64(v)
	}
	m, sd := meanStddev(ns)
	r.AvgNs, r.StddevNs = int64(m), int64(sd)
	r.AvgTs, r.StddevTs = meanStddev(r.SamplesTs)
}

func meanStddev(v []float64) (mean, stddev float64) {
	if len(v) == 0 {
		return 0, 0
	}
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	if len(v) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(v)-1))
}

// modelInfo describes the plan's model as llama-bench does its model:
// "<arch> <params> <main weight type>", bytes of weights, parameters.
func modelInfo(l *plan.Loaded) (typ string, size, params int64) {
	seen := map[string]bool{}
	bytesOf := map[quant.Type]int64{}
	for _, v := range l.Graph.Values {
		if v.Kind != ir.Weight || seen[v.Source] {
			continue
		}
		seen[v.Source] = true
		n := int64(1)
		for _, d := range v.Shape {
			n *= int64(d)
		}
		params += n
		if e, ok := l.Index[v.Source]; ok {
			size += int64(e.Size)
			bytesOf[v.DType] += int64(e.Size)
		}
	}
	main, most := quant.F32, int64(-1)
	for t, b := range bytesOf {
		if b > most || b == most && t < main {
			main, most = t, b
		}
	}
	label := fmt.Sprintf("%.0fM", float64(params)/1e6)
	if params >= 1e9 {
		label = fmt.Sprintf("%.1fB", float64(params)/1e9)
	}
	return fmt.Sprintf("%s %s %s", l.Graph.Arch, label, strings.ToUpper(main.String())), size, params
}

// Run measures.
func (c *BenchCmd) Run() error {
	if c.JSON {
		c.Output = "json"
	}
	if c.Reps < 1 {
		return fmt.Errorf("-r %d: at least 1 repetition", c.Reps)
	}
	threads := c.Threads
	if len(threads) == 0 {
		threads = []int{(&GenFlags{}).threads()}
	}
	for _, t := range threads {
		if err := (&GenFlags{Threads: t}).check(); err != nil {
			return err
		}
	}
	l, err := openPlan(c.Plan, plan.OpenOptions{SkipWeightChecksum: true, SkipSourceHash: true})
	if err != nil {
		return err
	}
	defer l.Close()
	p := l.Graph.Params
	for _, list := range []struct {
		flag string
		v    []int
	}{{"-p", c.Prompt}, {"-n", c.Gen}, {"-d", c.Depth}} {
		for _, n := range list.v {
			if n < 0 {
				return fmt.Errorf("%s %d: a token count cannot be negative", list.flag, n)
			}
		}
	}
	slots := l.Memory["decode"].Options.SlotCount()
	for _, n := range c.Parallel {
		if n < 1 || n > slots {
			return fmt.Errorf("-np %d: %s has %d KV slot(s); compile it with minferc compile --slots %d", n, c.Plan, slots, max(n, 1))
		}
	}
	if len(c.Parallel) > 0 && slices.Max(append([]int{0}, c.Depth...)) > 0 {
		return fmt.Errorf("-np with -d: batched decode is measured from empty slots; give one or the other")
	}
	depths := c.Depth
	if len(depths) == 0 {
		depths = []int{0}
	}
	maxTest := max(slices.Max(append([]int{0}, c.Prompt...)), slices.Max(append([]int{0}, c.Gen...)))
	maxDepth := slices.Max(depths)
	if maxDepth+maxTest > p.NCtx {
		return fmt.Errorf("-d %d with -p/-n %d does not fit the context of %s (%d positions)", maxDepth, maxTest, c.Plan, p.NCtx)
	}
	typ, size, params := modelInfo(l)
	tier, _, _ := strings.Cut(cpu.Features(), " (")
	// Deterministic pseudo-random tokens, as llama-bench uses random ids:
	// the depth's prompt, then the test's tokens.
	toks := make([]int32, maxDepth+maxTest)
	x := uint32(12345)
	for i := range toks {
		x = x*1664525 + 1013904223
		toks[i] = int32(x>>8) % int32(p.NVocab)
	}
	if c.CPUProfile != "" {
		f, err := os.Create(c.CPUProfile)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	// prefill evaluates toks[a:b] at positions a..b in chunks of 512.
	prefill := func(m *exec.Model, a, b int) error {
		for i := a; i < b; i += 512 {
			end := min(b, i+512)
			if _, err := m.Eval(toks[i:end], positions(i, end), []int32{int32(end - i - 1)}); err != nil {
				return err
			}
		}
		return nil
	}
	// The depth's cache contents, saved after the first thread count filled
	// them: the cache has the same bits at any thread count, so later ones
	// load it instead of filling it again.
	saved := map[int][]byte{}
	var results []BenchResult
	for _, t := range threads {
		m, err := exec.New(l.Graph, l.Memory, l, exec.Config{Threads: t})
		if err != nil {
			return err
		}
		base := BenchResult{ModelFilename: c.Plan, ModelType: typ, ModelSize: size, ModelNParams: params, NThreads: t, KernelTier: tier, NParallel: 1}
		for _, d := range depths {
			// The depth is filled once; each repetition then truncates the
			// cache back to d positions and runs from there, which leaves the
			// cache exactly as a refill would (the same tokens at the same
			// positions, computed with the same bits).
			m.Reset()
			if b, ok := saved[d]; ok {
				if err := m.LoadKV(bytes.NewReader(b), d, d); err != nil {
					m.Close()
					return err
				}
			} else {
				if err := prefill(m, 0, d); err != nil {
					m.Close()
					return err
				}
				if d > 0 && len(threads) > 1 {
					var buf bytes.Buffer
					if err := m.SaveKV(&buf, d); err != nil {
						m.Close()
						return err
					}
					saved[d] = buf.Bytes()
				}
			}
			suffix := ""
			if d > 0 {
				suffix = fmt.Sprintf(" @ d%d", d)
			}
			for _, np := range c.Prompt {
				if np == 0 {
					continue
				}
				r := base
				r.Test, r.NPrompt, r.NDepth = fmt.Sprintf("pp%d%s", np, suffix), np, d
				for rep := 0; rep <= c.Reps; rep++ { // the first run warms up
					if err := m.Truncate(d); err != nil {
						m.Close()
						return err
					}
					start := time.Now()
					if err := prefill(m, d, d+np); err != nil {
						m.Close()
						return err
					}
					if rep > 0 {
						r.SamplesNs = append(r.SamplesNs, time.Since(start).Nanoseconds())
					}
				}
				r.finish(np)
				results = append(results, r)
			}
			for _, ng := range c.Gen {
				if ng == 0 {
					continue
				}
				for _, np := range c.Parallel { // from empty slots: -d does not apply
					if d > 0 {
						break
					}
					r := base
					r.Test, r.NGen, r.NParallel = fmt.Sprintf("tg%d x%d", ng, np), ng, np
					if err := benchParallel(m, &r, toks, ng, np, c.Reps); err != nil {
						m.Close()
						return err
					}
					r.finish(ng * np)
					results = append(results, r)
				}
				if len(c.Parallel) > 0 {
					continue
				}
				r := base
				r.Test, r.NGen, r.NDepth = fmt.Sprintf("tg%d%s", ng, suffix), ng, d
				for rep := 0; rep <= c.Reps; rep++ {
					if err := m.Truncate(d); err != nil {
						m.Close()
						return err
					}
					before := m.Stats().DecodeBarriers
					start := time.Now()
					for i := d; i < d+ng; i++ {
						if _, err := m.Eval(toks[i:i+1], []int32{int32(i)}, []int32{0}); err != nil {
							m.Close()
							return err
						}
					}
					if rep > 0 {
						r.SamplesNs = append(r.SamplesNs, time.Since(start).Nanoseconds())
						r.Barriers = float64(m.Stats().DecodeBarriers-before) / float64(ng)
					}
				}
				r.finish(ng)
				results = append(results, r)
			}
		}
		m.Close()
	}
	return writeBench(os.Stdout, c.Output, results)
}

// benchParallel times np sequences decoding gen tokens each from empty
// slots, all in one EvalSeqs step per position, after one warm-up run;
// sequence k reads the tokens from offset k, so the sequences differ.
func benchParallel(m *exec.Model, r *BenchResult, toks []int32, gen, np, reps int) error {
	seqs := make([]exec.Seq, np)
	for k := range seqs {
		seqs[k] = exec.Seq{Slot: k, Tokens: make([]int32, 1), Positions: make([]int32, 1), Logits: true}
	}
	var s0 exec.Stats
	for rep := 0; rep <= reps; rep++ {
		if rep == 1 {
			s0 = m.Stats()
		}
		m.Reset()
		before := m.Stats().DecodeBarriers + m.Stats().PrefillBarriers
		start := time.Now()
		for i := 0; i < gen; i++ {
			for k := range seqs {
				seqs[k].Tokens[0] = toks[(i+k)%len(toks)]
				seqs[k].Positions[0] = int32(i)
			}
			if _, err := m.EvalSeqs(seqs); err != nil {
				return err
			}
		}
		if rep > 0 {
			r.SamplesNs = append(r.SamplesNs, time.Since(start).Nanoseconds())
			r.Barriers = float64(m.Stats().DecodeBarriers+m.Stats().PrefillBarriers-before) / float64(gen*np)
		}
	}
	// What the measured steps did besides computing, on stderr (the table
	// stays llama-bench's): the thread tuner's workers per step and the
	// worker time spent waiting at barriers and for the last worker.
	if s := m.Stats(); m.Threads() > 1 && s.DecodeCalls > s0.DecodeCalls {
		n := float64(s.DecodeCalls - s0.DecodeCalls)
		wp := float64(s.DecodeWorkerPasses-s0.DecodeWorkerPasses) / n
		fmt.Fprintf(os.Stderr, "tg%d x%d -t %d: %.2f workers per step (the thread tuner), %.3f ms of %.3f ms per step waiting (%.1f%% of the workers' time)\n",
			gen, np, m.Threads(), wp, (s.DecodeWait-s0.DecodeWait).Seconds()*1e3/n, (s.DecodeTime-s0.DecodeTime).Seconds()*1e3/n,
			100*(s.DecodeWait-s0.DecodeWait).Seconds()/((s.DecodeTime-s0.DecodeTime).Seconds()*wp))
	}
	return nil
}

// writeBench prints results in a llama-bench output format.
func writeBench(w io.Writer, format string, results []BenchResult) error {
	switch format {
	case "json":
		if results == nil {
			results = []BenchResult{}
		}
		b, err := json.MarshalIndent(results, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case "jsonl":
		enc := json.NewEncoder(w)
		for _, r := range results {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	case "csv":
		cw := csv.NewWriter(w)
		cw.Write(benchFields)
		for _, r := range results {
			cw.Write(r.csvRow())
		}
		cw.Flush()
		return cw.Error()
	case "md":
		fmt.Fprintln(w, "| model | size | params | backend | threads | test | t/s | barriers/token |")
		fmt.Fprintln(w, "| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |")
		for _, r := range results {
			fmt.Fprintf(w, "| %s | %.2f MiB | %.2f M | CPU %s | %d | %s | %.2f ± %.2f | %.1f |\n",
				r.ModelType, float64(r.ModelSize)/(1<<20), float64(r.ModelNParams)/1e6, r.KernelTier, r.NThreads, r.Test, r.AvgTs, r.StddevTs, r.Barriers)
		}
		return nil
	}
	return fmt.Errorf("-o %s: the formats are md, csv, json, jsonl", format)
}

// csvRow formats r in benchFields' order; lists are joined by spaces, as
// llama-bench's CSV does.
func (r BenchResult) csvRow() []string {
	join := func(n int, f func(int) string) string {
		s := make([]string, n)
		for i := range s {
			s[i] = f(i)
		}
		return strings.Join(s, " ")
	}
	g := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	return []string{r.ModelFilename, r.ModelType, strconv.FormatInt(r.ModelSize, 10), strconv.FormatInt(r.ModelNParams, 10),
		strconv.Itoa(r.NThreads), strconv.Itoa(r.NPrompt), strconv.Itoa(r.NGen), strconv.Itoa(r.NDepth),
		strconv.FormatInt(r.AvgNs, 10), strconv.FormatInt(r.StddevNs, 10), g(r.AvgTs), g(r.StddevTs),
		join(len(r.SamplesNs), func(i int) string { return strconv.FormatInt(r.SamplesNs[i], 10) }),
		join(len(r.SamplesTs), func(i int) string { return g(r.SamplesTs[i]) }),
		r.Test, g(r.Barriers), r.KernelTier, strconv.Itoa(r.NParallel)}
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
