// Package compiler drives the whole compile: GGUF → IR graph → passes →
// memory plans → plan.Plan. minferc compile and minfer's in-process paths
// (run, demo) share it.
package compiler

import (
	"fmt"
	"path/filepath"
	"runtime/debug"

	"github.com/minfer/minfer/alloc"
	"github.com/minfer/minfer/frontends/gguf"
	"github.com/minfer/minfer/ir"
	"github.com/minfer/minfer/passes"
	"github.com/minfer/minfer/plan"
	"github.com/minfer/minfer/quant"
	"github.com/minfer/minfer/sample"
	"github.com/minfer/minfer/tokenizer"
)

// Options are the compile settings.
type Options struct {
	// NCtx is the KV cache size in positions (0: the model's context length,
	// capped at DefaultCtx).
	NCtx int
	// MaxBatch is the largest prompt chunk the prefill plan holds (0: 512).
	MaxBatch int
	// KVType is the cache element type: "f32", "f16" or "q8_0" ("" = f16,
	// llama.cpp's default).
	KVType string
	// Slots is the number of sequences the plan keeps a KV cache of NCtx
	// positions for (0: 1); see Memory.
	Slots int
	// FlashAttn compiles attention to the flash kernels (--flash-attn on).
	FlashAttn bool
	// Disabled names passes to skip.
	Disabled []string
	// PackWeights is the SIMD tier whose weight layouts the pack-weights
	// pass writes ("avx2"), or "" for the GGUF's own layouts.
	PackWeights string
	// Weights says whether weights are embedded or referenced.
	Weights plan.Weights
	// Verify runs ir.Verify after every pass.
	Verify bool
	// Log receives one line per stage when set.
	Log func(format string, args ...any)
}

// DefaultCtx caps the KV cache when no --n-ctx is given, as llama.cpp's
// tools default to a few thousand positions rather than the trained length.
const DefaultCtx = 4096

// Graph builds and optimizes the graph of a GGUF file.
func Graph(f *gguf.File, o Options) (*ir.Graph, quant.Type, error) {
	g, err := gguf.BuildGraph(f)
	if err != nil {
		return nil, 0, err
	}
	kv := quant.F16
	if o.KVType != "" {
		t, ok := quant.ParseType(o.KVType)
		if !ok {
			return nil, 0, fmt.Errorf("unknown --kv-type %q (f32, f16 or q8_0)", o.KVType)
		}
		kv = t
	}
	if o.NCtx < 0 {
		return nil, 0, fmt.Errorf("--n-ctx %d must be positive", o.NCtx)
	}
	nctx := o.NCtx
	if nctx == 0 {
		nctx = min(g.Params.NCtx, DefaultCtx)
	}
	setContext(g, nctx)
	dis := map[string]bool{}
	for _, d := range o.Disabled {
		dis[d] = true
	}
	if err := passes.Run(g, passes.Options{Disabled: dis, KVType: kv, FlashAttn: o.FlashAttn, Pack: o.PackWeights, Verify: o.Verify}); err != nil {
		return nil, 0, err
	}
	if err := ir.Verify(g); err != nil {
		return nil, 0, fmt.Errorf("compiled graph fails verification (a compiler bug): %w", err)
	}
	return g, kv, nil
}

// setContext resizes the KV cache state to n positions, rounded up to a
// multiple of ir.CtxPad as llama.cpp does.
func setContext(g *ir.Graph, n int) {
	n = ir.PadContext(n)
	g.Params.NCtx = n
	for _, v := range g.Values {
		if v.Kind == ir.State {
			v.Shape = ir.Shape{ir.Dim(n), v.Shape[1]}
		}
	}
}

// MaxOut is how many rows of logits one prefill chunk can return: a
// generation needs one, a logits dump of every position is chunked by the
// executor. (512 rows of a 151936-word vocabulary would be 311 MB.)
const MaxOut = 64

// Memory plans both schedules for one KV slot (Slots plans several).
func Memory(g *ir.Graph, kv quant.Type, maxBatch int) (map[string]*alloc.Plan, error) {
	return Slots(g, kv, maxBatch, 1)
}

// Slots plans both schedules with KV regions for slots sequences of
// g.Params.NCtx positions each. The prefill plan holds maxBatch token rows
// (0: 512) and up to MaxOut rows of logits; the decode plan holds one row
// per slot, rows and logits, so that one decode step of every slot's
// sequence runs the decode schedule (norms computed redundantly by every
// worker: no barrier of their own) with its mat-muls as one GEMM over the
// slots' rows.
func Slots(g *ir.Graph, kv quant.Type, maxBatch, slots int) (map[string]*alloc.Plan, error) {
	if maxBatch <= 0 {
		maxBatch = 512
	}
	if slots <= 0 {
		slots = 1
	}
	if slots > alloc.MaxSlots {
		return nil, fmt.Errorf("--slots %d: at most %d", slots, alloc.MaxSlots)
	}
	maxBatch = min(maxBatch, g.Params.NCtx)
	mem := map[string]*alloc.Plan{}
	for _, s := range []*ir.Schedule{g.Prefill, g.Decode} {
		mt, mo := maxBatch, min(maxBatch, MaxOut)
		if s == g.Decode {
			mt = min(slots, maxBatch)
			mo = min(mt, MaxOut)
		}
		o := alloc.Options{MaxTokens: mt, MaxOut: mo, NCtx: g.Params.NCtx, KVType: kv}
		if slots > 1 {
			o.Slots = slots // absent from the JSON of one-slot plans, as before slots existed
		}
		p, err := alloc.PlanSchedule(g, s, o)
		if err != nil {
			return nil, fmt.Errorf("memory plan for %s: %w", s.Name, err)
		}
		mem[s.Name] = p
	}
	return mem, nil
}

// Compile turns an open GGUF file into a plan (not yet written).
func Compile(f *gguf.File, o Options) (*plan.Plan, error) {
	logf := o.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	g, kv, err := Graph(f, o)
	if err != nil {
		return nil, err
	}
	logf("graph: %s, %d layers, %d nodes; decode %d groups, prefill %d groups", g.Arch, g.Params.NLayer, len(g.Nodes), len(g.Decode.Groups), len(g.Prefill.Groups))
	if o.Slots < 0 {
		return nil, fmt.Errorf("--slots %d must be positive", o.Slots)
	}
	mem, err := Slots(g, kv, o.MaxBatch, o.Slots)
	if err != nil {
		return nil, err
	}
	pre := mem["prefill"]
	slots := pre.Options.SlotCount()
	logf("memory: arena %d bytes (%.1f%% of %d unshared), KV %d bytes for %d slot(s) × %d positions (%s)",
		pre.ArenaBytes, 100*float64(pre.ArenaBytes)/float64(max(1, pre.SumBytes)), pre.SumBytes, pre.KVBytes, slots, g.Params.NCtx, kv)
	vocab, err := Vocab(f, g)
	if err != nil {
		return nil, err
	}
	if vocab == nil {
		logf("tokenizer: none (no %s key): the plan runs with --tokens only", keyTokModel)
	}
	src, err := plan.HashSource(f.Path)
	if err != nil {
		return nil, err
	}
	if abs, err := filepath.Abs(f.Path); err == nil {
		src.Path = abs
	}
	return &plan.Plan{
		Graph:    g,
		Memory:   mem,
		Vocab:    vocab,
		Sampling: sample.DefaultParams(),
		Options: plan.Options{
			NCtx: g.Params.NCtx, MaxBatch: pre.Options.MaxTokens, KVType: kv.String(),
			DisabledPasses: o.Disabled, Tool: Tool(), Slots: pre.Options.Slots,
		},
		CPU:    plan.Machine(requiredFeatures(g)...),
		Source: src,
		Mode:   o.Weights,
		// The chat template travels with the plan (its optional
		// chat_template section); a non-string value is not a template.
		ChatTemplate: chatTemplate(f),
	}, nil
}

// KeyChatTemplate is the GGUF key of the model's Jinja chat template.
const KeyChatTemplate = "tokenizer.chat_template"

func chatTemplate(f *gguf.File) string {
	if !f.Has(KeyChatTemplate) {
		return ""
	}
	s, err := f.String(KeyChatTemplate)
	if err != nil {
		return ""
	}
	return s
}

const keyTokModel = "tokenizer.ggml.model"

// Vocab loads the tokenizer of f for the graph g built from it, checked as
// the plan loader and the executor check it: nil (and no error) when the
// file has no tokenizer.ggml.model key at all, an error saying what is
// wrong when the tokenizer metadata is there but unusable, or when its
// token count is not the row count of the embedding (the logits would not
// match the sampler's vocabulary).
func Vocab(f *gguf.File, g *ir.Graph) (*tokenizer.Vocab, error) {
	if !f.Has(keyTokModel) {
		return nil, nil
	}
	v, err := gguf.LoadVocab(f)
	if err != nil {
		return nil, fmt.Errorf("%s: the tokenizer metadata is unusable: %w", f.Path, err)
	}
	if _, err := tokenizer.New(v); err != nil {
		return nil, fmt.Errorf("%s: the tokenizer metadata is unusable: %w", f.Path, err)
	}
	if g != nil && len(v.Tokens) != g.Params.NVocab {
		return nil, fmt.Errorf("%s: tokenizer.ggml.tokens has %d entries, but token_embd.weight has %d rows: the vocabulary does not match the model", f.Path, len(v.Tokens), g.Params.NVocab)
	}
	return v, nil
}

// Tool names this build of the compiler.
func Tool() string {
	v := "devel"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += "+" + s.Value[:12]
			}
		}
		return fmt.Sprintf("minferc %s (%s)", v, bi.GoVersion)
	}
	return "minferc " + v
}

// requiredFeatures lists the CPU features (x/sys/cpu names) the plan's
// weight layouts need: none for the GGUF's own layouts, which every kernel
// tier reads; AVX2, FMA and F16C for the four-row and eight-row layouts
// (pack-weights avx2, kquant, r8vnni), whose only kernels are AVX2 ones; those and AVX-512 F, BW, DQ,
// VL and VNNI for the sixteen-row layouts (pack-weights avx512), whose
// only kernels are AVX-512 VNNI ones. plan.CheckCPU refuses the plan
// elsewhere.
func requiredFeatures(g *ir.Graph) []string {
	var req []string
	for _, v := range g.Weights() {
		switch quant.GroupRows(v.DType) {
		case 4, quant.R8Rows:
			if req == nil {
				req = []string{"avx2", "fma", "f16c"}
			}
		case quant.R16Rows:
			return []string{"avx2", "avx512bw", "avx512dq", "avx512f", "avx512vl", "avx512vnni", "f16c", "fma"}
		}
	}
	return req
}
