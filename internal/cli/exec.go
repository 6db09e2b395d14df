package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/minfer/minfer/alloc"
	"github.com/minfer/minfer/backends/cpu"
	"github.com/minfer/minfer/compiler"
	"github.com/minfer/minfer/exec"
	"github.com/minfer/minfer/frontends/gguf"
	"github.com/minfer/minfer/generate"
	"github.com/minfer/minfer/internal/safefile"
	"github.com/minfer/minfer/ir"
	"github.com/minfer/minfer/plan"
	"github.com/minfer/minfer/reference"
	"github.com/minfer/minfer/sample"
	"github.com/minfer/minfer/synth"
	"github.com/minfer/minfer/tokenizer"
)

// GenFlags are the generation options of exec, run and demo.
type GenFlags struct {
	Prompt       string `short:"p" help:"Prompt text." default:"Once upon a time"`
	File         string `short:"f" help:"Read the prompt from a file (- for standard input)."`
	NPredict     int    `short:"n" help:"Tokens to generate (-1: until end of text or a full context)." default:"64" name:"n-predict"`
	Threads      int    `short:"t" help:"Worker threads (0: all CPUs this process may use)."`
	Batch        int    `help:"Prompt chunk per evaluation (0: as compiled); with --tokens, tokens per call (1: decode path)."`
	IgnoreEOS    bool   `help:"Keep generating past end-of-text tokens." name:"ignore-eos"`
	ParseSpecial bool   `help:"Recognize control tokens written in the prompt." name:"parse-special"`
	Stats        bool   `help:"Print timing, barrier and memory statistics."`
	Tokens       string `help:"Teacher-force these token ids (comma separated) and write logits with --logits-out instead of generating."`
	LogitsOut    string `help:"Write float32 little-endian logits [n_tokens][n_vocab] for --tokens." name:"logits-out"`
	CPUProfile   string `help:"Write a Go CPU profile of the run to this file." name:"cpuprofile"`
	SamplingFlags

	inputs []string // the files this command reads: never an output
}

// checkIDs refuses token ids outside the vocabulary and more tokens than
// the context holds.
func checkIDs(ids []int32, nvocab, nctx int) error {
	if len(ids) == 0 {
		return fmt.Errorf("no token ids")
	}
	if len(ids) > nctx {
		return fmt.Errorf("%d tokens, but the context holds %d", len(ids), nctx)
	}
	for i, id := range ids {
		if id < 0 || int(id) >= nvocab {
			return fmt.Errorf("token %d: id %d is outside the vocabulary (0..%d)", i, id, nvocab-1)
		}
	}
	return nil
}

// maxThreadsPerCPU bounds -t: more workers than a few per CPU the process
// may use never help (they share the cores and wait at every barrier).
const maxThreadsPerCPU = 4

func (g *GenFlags) threads() int {
	if g.Threads > 0 {
		return g.Threads
	}
	return runtime.GOMAXPROCS(0)
}

// check refuses flag values that make no sense, before anything is loaded.
func (g *GenFlags) check() error {
	if g.Threads < 0 {
		return fmt.Errorf("-t %d: the thread count must be positive (0: all CPUs)", g.Threads)
	}
	if limit := min(exec.MaxThreads, maxThreadsPerCPU*runtime.GOMAXPROCS(0)); g.Threads > limit {
		return fmt.Errorf("-t %d: at most %d threads (%d per CPU this process may use, %d CPUs)", g.Threads, limit, maxThreadsPerCPU, runtime.GOMAXPROCS(0))
	}
	if g.Batch < 0 {
		return fmt.Errorf("--batch %d must be positive (0: as compiled)", g.Batch)
	}
	if g.NPredict < -1 {
		return fmt.Errorf("-n %d: give a token count, or -1 for until end of text", g.NPredict)
	}
	if g.Seed != nil && *g.Seed < -1 {
		return fmt.Errorf("--seed %d: give a seed, or -1 for a random one", *g.Seed)
	}
	return nil
}

// prompt returns the prompt text: --file (at most what a context of nctx
// tokens can hold) or -p.
func (g *GenFlags) prompt(tok *tokenizer.Tokenizer, nctx int) (string, error) {
	if g.File != "" {
		limit := int64(nctx) * int64(tok.MaxTokenBytes())
		return readText(g.File, limit, fmt.Sprintf("longer than a context of %d tokens can hold", nctx))
	}
	return g.Prompt, nil
}

// session is what a generation needs from an executor.
type session struct {
	model   generate.Model
	tok     *tokenizer.Tokenizer
	nctx    int
	nvocab  int
	samp    sample.Params
	graph   *ir.Graph
	mem     map[string]*alloc.Plan
	compute *exec.Model // nil for the reference executor
}

func (s *session) run(g *GenFlags, out io.Writer) (err error) {
	// Everything the flags name is checked before any output is opened, so
	// a refused run leaves existing files as they were.
	var ids []int32
	if g.Tokens != "" || g.LogitsOut != "" {
		if g.Tokens == "" || g.LogitsOut == "" {
			return fmt.Errorf("--tokens and --logits-out go together")
		}
		if ids, err = parseIDs(g.Tokens); err != nil {
			return err
		}
		if err := checkIDs(ids, s.nvocab, s.nctx); err != nil {
			return fmt.Errorf("--tokens: %w", err)
		}
		if err := safefile.CheckTarget(g.LogitsOut, g.inputs...); err != nil {
			return fmt.Errorf("--logits-out: %w", err)
		}
	}
	if g.CPUProfile != "" {
		f, err := safefile.Create(g.CPUProfile, g.inputs...)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer f.Abort()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() {
			pprof.StopCPUProfile()
			if cerr := f.Commit(); err == nil {
				err = cerr
			}
		}()
	}
	if ids != nil {
		f, err := safefile.Create(g.LogitsOut, g.inputs...)
		if err != nil {
			return fmt.Errorf("--logits-out: %w", err)
		}
		defer f.Abort()
		if err := generate.DumpLogits(s.model, ids, g.Batch, s.nctx, f); err != nil {
			return err
		}
		if err := f.Commit(); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "wrote %d×%d logits to %s\n", len(ids), s.nvocab, g.LogitsOut)
		s.printStats(g, nil)
		return nil
	}
	if s.tok == nil {
		return fmt.Errorf("the model has no tokenizer (no tokenizer.ggml.model key): use --tokens")
	}
	text, err := g.prompt(s.tok, s.nctx)
	if err != nil {
		return err
	}
	samp, err := g.params(s.samp, os.Stderr)
	if err != nil {
		return err
	}
	fmt.Fprint(out, text)
	res, err := generate.Run(s.model, s.tok, text, generate.Options{
		NPredict: g.NPredict, NCtx: s.nctx, Batch: g.Batch, Sampling: samp,
		ParseSpecial: g.ParseSpecial, IgnoreEOS: g.IgnoreEOS, Out: out,
	})
	fmt.Fprintln(out)
	if err != nil {
		return err
	}
	s.printStats(g, res)
	return nil
}

func (s *session) printStats(g *GenFlags, res *generate.Result) {
	if !g.Stats {
		return
	}
	w := os.Stderr
	if res != nil {
		fmt.Fprintf(w, "prompt: %d tokens in %.1f ms = %.1f tok/s (prefill)\n", len(res.Prompt), ms(res.PrefillTime), res.PrefillRate())
		fmt.Fprintf(w, "generated: %d tokens in %.1f ms = %.1f tok/s (decode), stop: %s\n", len(res.Generated), ms(res.DecodeTime), res.DecodeRate(), res.Stop)
	}
	if s.compute == nil {
		fmt.Fprintf(w, "executor: reference (scalar oracle, single thread)\n")
		return
	}
	st := s.compute.Stats()
	L := s.graph.Params.NLayer
	fmt.Fprintf(w, "executor: compiled, %d threads, kernels: %s\n", s.compute.Threads(), cpu.Features())
	if st.DecodeTokens > 0 {
		per := float64(st.DecodeBarriers) / float64(st.DecodeTokens)
		fmt.Fprintf(w, "decode: %.1f pool barriers per token (%.2f per layer, %d layers), %d fused groups, %d ops per token\n",
			per, per/float64(L), L, len(s.graph.Decode.Groups), len(s.graph.Nodes))
		if st.DecodeCalls > 0 && s.compute.Threads() > 1 {
			fmt.Fprintf(w, "decode: %.2f workers per pass on average (the thread tuner, %d changes; MINFER_FIXED_THREADS=1 keeps all)\n",
				float64(st.DecodeWorkerPasses)/float64(st.DecodeCalls), st.ThreadSwitches)
			fmt.Fprintf(w, "decode: %.3f ms of worker time per pass waiting at barriers and for the last worker (%.1f%% of the passes' worker time)\n",
				float64(st.DecodeWait)/1e6/float64(st.DecodeCalls), 100*st.DecodeWait.Seconds()/(st.DecodeTime.Seconds()*float64(st.DecodeWorkerPasses)/float64(st.DecodeCalls)))
		}
	}
	if st.PrefillTokens > 0 {
		fmt.Fprintf(w, "prefill: %d barriers for %d tokens, %d fused groups per chunk\n", st.PrefillBarriers, st.PrefillTokens, len(s.graph.Prefill.Groups))
	}
	pre, dec := s.mem["prefill"], s.mem["decode"]
	fmt.Fprintf(w, "memory: arena %s prefill (%d tokens; %s if unshared) / %s decode, private %s per worker, KV %s (%s, %s)\n",
		mib(pre.ArenaBytes), pre.Options.MaxTokens, mib(pre.SumBytes), mib(dec.ArenaBytes), mib(max(pre.PrivateBytes, dec.PrivateBytes)),
		mib(pre.KVBytes), kvSlots(pre.Options), pre.Options.KVType)
}

// kvSlots describes the KV cache's shape: "4096 positions" for one slot,
// "8 slots × 4096 positions" for a plan compiled with --slots 8 (KV
// memory is slots × n_ctx rows).
func kvSlots(o alloc.Options) string {
	if n := o.SlotCount(); n > 1 {
		return fmt.Sprintf("%d slots × %d positions", n, o.NCtx)
	}
	return fmt.Sprintf("%d positions", o.NCtx)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// ExecCmd is `minfer exec`.
type ExecCmd struct {
	Plan     string `arg:"" help:"Compiled plan file." type:"existingfile"`
	NoVerify bool   `help:"Skip the weights checksum (Embed) and the source SHA-256 (Ref) at load. Still checked: the header, section table and every other section's checksum, the graph, memory plans, vocabulary and weights index, the CPU features, and a referenced source's size." name:"no-verify"`
	GenFlags
	PromptCache string `help:"Reuse the KV state of the longest prompt prefix saved in this file, and save the state after the prompt to it." name:"prompt-cache"`
}

// Run loads the plan and generates.
func (c *ExecCmd) Run() error {
	if err := c.check(); err != nil {
		return err
	}
	t0 := time.Now()
	l, err := openPlan(c.Plan, plan.OpenOptions{SkipWeightChecksum: c.NoVerify, SkipSourceHash: c.NoVerify})
	if err != nil {
		return err
	}
	defer l.Close()
	files := c.Plan
	if l.Mode == plan.Ref {
		files = l.Source.Path
	}
	m, err := exec.New(l.Graph, l.Memory, l, exec.Config{Threads: c.threads(), WeightFiles: files})
	if err != nil {
		return err
	}
	defer m.Close()
	c.inputs = []string{c.Plan, c.File}
	if l.Mode == plan.Ref {
		c.inputs = append(c.inputs, l.Source.Path)
	}
	s := &session{model: m, nctx: l.Graph.Params.NCtx, nvocab: l.Graph.Params.NVocab, samp: l.Sampling, graph: l.Graph, mem: l.Memory, compute: m}
	if s.tok, err = l.Tokenizer(); err != nil {
		return err
	}
	if c.Stats {
		fmt.Fprintf(os.Stderr, "loaded %s in %.1f ms (weights %s, checksums %.1f ms)\n", c.Plan, ms(time.Since(t0)), mib(l.Stats.WeightBytes), ms(l.Stats.WeightsChecksum+l.Stats.Checksums))
	}
	if c.PromptCache != "" {
		return c.runCached(s, l) // promptcache.go
	}
	return s.run(&c.GenFlags, os.Stdout)
}

// RunCmd is `minfer run`: a GGUF model without a plan file.
type RunCmd struct {
	Model       string `arg:"" help:"GGUF model." type:"existingfile"`
	Reference   bool   `help:"Use the scalar reference executor (the oracle) instead of the compiled one."`
	NCtx        int    `short:"c" help:"KV cache positions (0: the model's, at most 4096); also --ctx-size." name:"n-ctx" aliases:"ctx-size"`
	KVType      string `help:"KV cache type (compiled path): f16 (default, as llama.cpp), f32, q8_0." default:"f16" name:"kv-type" enum:"f32,f16,q8_0"`
	FlashAttn   string `help:"Flash attention (compiled path, also -fa): auto, on or off (see minferc compile)." default:"auto" name:"flash-attn" enum:"auto,on,off"`
	PackWeights string `help:"Weight layouts for a SIMD tier (compiled path), packed at load into memory: none, avx2, avx512, kquant or r8vnni (see minferc compile --pack-weights)." default:"none" name:"pack-weights" enum:"none,avx2,avx512,kquant,r8vnni"`
	CacheTypeFlags
	GenFlags
}

// Validate refuses contradicting cache types while the command line is
// parsed (a usage error).
func (c *RunCmd) Validate() error {
	_, err := c.kvType(c.KVType)
	return err
}

// Run generates from the GGUF model.
func (c *RunCmd) Run() error {
	if err := c.check(); err != nil {
		return err
	}
	kv, err := c.kvType(c.KVType)
	if err != nil {
		return err
	}
	fa, err := flashOn(c.FlashAttn, kv)
	if err != nil {
		return err
	}
	f, err := gguf.Open(c.Model)
	if err != nil {
		return err
	}
	defer f.Close()
	if !c.Reference {
		warnContext(os.Stderr, f, c.NCtx)
	}
	s, closeFn, err := ggufSession(f, c.Reference, c.NCtx, kv, fa, c.threads(), 1, c.PackWeights)
	if err != nil {
		return err
	}
	defer closeFn()
	c.inputs = []string{c.Model, c.File}
	return s.run(&c.GenFlags, os.Stdout)
}

// ggufSession compiles f in memory (slots KV regions; 0 means 1; weights
// packed for the tier pack names, "" or "none" for none) or, with ref,
// wraps it in the reference interpreter.
func ggufSession(f *gguf.File, ref bool, nctx int, kv string, fa bool, threads, slots int, pack string) (*session, func(), error) {
	s := &session{samp: sample.DefaultParams()}
	setTok := func(g *ir.Graph) error {
		v, err := compiler.Vocab(f, g)
		if err != nil || v == nil {
			return err
		}
		s.tok, err = tokenizer.New(v)
		return err
	}
	if ref {
		g, err := gguf.BuildGraph(f)
		if err != nil {
			return nil, nil, err
		}
		if err := setTok(g); err != nil {
			return nil, nil, err
		}
		if nctx <= 0 {
			nctx = compiler.DefaultCtx
		}
		g.Params.NCtx = ir.PadContext(min(nctx, g.Params.NCtx))
		m, err := reference.New(g, f)
		if err != nil {
			return nil, nil, err
		}
		s.model, s.graph, s.nctx, s.nvocab = m, g, g.Params.NCtx, g.Params.NVocab
		return s, func() {}, nil
	}
	if pack == "none" {
		pack = ""
	}
	if pack != "" && !cpu.PackTierRuns(pack) {
		return nil, nil, fmt.Errorf("--pack-weights %s: this CPU or build has no kernels for the %s layouts (%s); use --pack-weights none", pack, pack, map[string]string{"avx2": "AVX2, FMA and F16C", "avx512": "AVX-512 VNNI"}[pack])
	}
	g, kvt, err := compiler.Graph(f, compiler.Options{NCtx: nctx, KVType: kv, FlashAttn: fa, PackWeights: pack})
	if err != nil {
		return nil, nil, err
	}
	if err := setTok(g); err != nil {
		return nil, nil, err
	}
	mem, err := compiler.Slots(g, kvt, 0, max(slots, 1))
	if err != nil {
		return nil, nil, err
	}
	var ws exec.WeightSource = f
	if pack != "" {
		ws = compiler.PackedSource{Src: f, G: g}
	}
	m, err := exec.New(g, mem, ws, exec.Config{Threads: threads, WeightFiles: f.Path})
	if err != nil {
		return nil, nil, err
	}
	s.model, s.graph, s.mem, s.compute, s.nctx, s.nvocab = m, g, mem, m, g.Params.NCtx, g.Params.NVocab
	return s, m.Close, nil
}

// DemoCmd is `minfer demo`: the whole pipeline on a synthesized model.
type DemoCmd struct {
	Preset string `help:"Model preset to synthesize (minferc synth --list)." default:"qwen2-tiny"`
	Type   string `help:"Weight type." default:"q8_0"`
	Dir    string `help:"Keep the model and plan in this directory (default: a temporary one)."`
	GenFlags
}

// Run synthesizes, compiles, executes.
func (c *DemoCmd) Run() error {
	if err := c.check(); err != nil {
		return err
	}
	dir := c.Dir
	if dir == "" {
		d, err := safefile.TempDir("", "minfer-demo-")
		if err != nil {
			return err
		}
		defer safefile.RemoveDir(d)
		dir = d
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	model := filepath.Join(dir, c.Preset+"-"+c.Type+".gguf")
	planPath := filepath.Join(dir, c.Preset+"-"+c.Type+".plan")
	fmt.Fprintf(os.Stderr, "1/3 synthesize %s (%s weights, random: the text will be gibberish)\n", c.Preset, c.Type)
	if err := synth.WriteFile(model, synth.Options{Preset: c.Preset, Type: c.Type, Seed: 1}); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "2/3 compile %s -> %s\n", filepath.Base(model), filepath.Base(planPath))
	cc := CompileCmd{Model: model, Out: planPath, MaxBatch: 512, KVType: defaultKVType, Weights: "embed"}
	if err := cc.Run(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "3/3 exec\n")
	c.GenFlags.Stats = true
	ec := ExecCmd{Plan: planPath, GenFlags: c.GenFlags}
	return ec.Run()
}
