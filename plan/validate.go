package plan

import (
	"cmp"
	"encoding/hex"
	"fmt"
	"math"
	"slices"

	"github.com/minfer/minfer/alloc"
	"github.com/minfer/minfer/ir"
	"github.com/minfer/minfer/quant"
	"github.com/minfer/minfer/tokenizer"
)

// weightSpec is a tensor the graph reads: its name, type and exact size.
type weightSpec struct {
	name string
	typ  quant.Type
	size int64
	k    int64 // elements per row
}

// weightSpecs lists the tensors the graph's Weight values read, in order of
// first appearance, one entry per distinct Source.
func weightSpecs(g *ir.Graph) ([]weightSpec, error) {
	var specs []weightSpec
	seen := make(map[string]int)
	for _, v := range g.Weights() {
		if v.Source == "" {
			return nil, fmt.Errorf("weight %s names no source tensor", v)
		}
		size, err := weightSize(v)
		if err != nil {
			return nil, err
		}
		if i, ok := seen[v.Source]; ok {
			if specs[i].typ != v.DType || specs[i].size != size {
				return nil, fmt.Errorf("weight values of tensor %q disagree on type or size (%s %d bytes vs %s %d bytes)", v.Source, specs[i].typ, specs[i].size, v.DType, size)
			}
			continue
		}
		seen[v.Source] = len(specs)
		if gr := quant.GroupRows(v.DType); v.DType.PlanOnly() && (len(v.Shape) != 2 || gr == 0 || int(v.Shape[0])%gr != 0) {
			return nil, fmt.Errorf("weight %s: %s weights are matrices of a multiple of %d rows", v, v.DType, gr)
		}
		specs = append(specs, weightSpec{v.Source, v.DType, size, int64(v.Shape[len(v.Shape)-1])})
	}
	return specs, nil
}

// weightSize is the byte size of a weight value: its shape must be
// constant, its rows a whole number of blocks.
func weightSize(v *ir.Value) (int64, error) {
	if len(v.Shape) == 0 {
		return 0, fmt.Errorf("weight %s has no shape", v)
	}
	rows := int64(1)
	for _, d := range v.Shape[:len(v.Shape)-1] {
		if d < 0 {
			return 0, fmt.Errorf("weight %s has a symbolic dimension", v)
		}
		if d != 0 && rows > math.MaxInt64/int64(d) {
			return 0, fmt.Errorf("weight %s is too large", v)
		}
		rows *= int64(d)
	}
	cols := v.Shape[len(v.Shape)-1]
	if cols < 0 || cols > math.MaxInt32 {
		return 0, fmt.Errorf("weight %s has a bad row width", v)
	}
	rs, err := v.DType.RowSize(int(cols))
	if err != nil {
		return 0, fmt.Errorf("weight %s: %v", v, err)
	}
	if rs != 0 && rows > math.MaxInt64/int64(rs) {
		return 0, fmt.Errorf("weight %s is too large", v)
	}
	return rows * int64(rs), nil
}

// validate checks everything in p that does not depend on the file or the
// machine: the graph and its schedules, the memory plans, the vocabulary,
// the sampling defaults and the options. Write and Parse both run it, so
// the compiler cannot write a plan the executor would refuse.
func validate(p *Plan) error {
	if p.Graph == nil {
		return fmt.Errorf("section %s: no graph", secGraph)
	}
	// Building the tokenizer (what the executor builds from the vocabulary:
	// a plan that passes here loads) is the longest check; it runs on its
	// own goroutine, once the vocabulary's structure is known good, while
	// the graph and memory plans are verified. Errors are reported in the
	// order the checks are written.
	var (
		vocabErr error
		tokErr   error
		tok      *tokenizer.Tokenizer
		tokDone  = make(chan struct{})
	)
	if p.Vocab != nil {
		vocabErr = checkVocab(p.Vocab)
		if vocabErr == nil {
			if n := len(p.Vocab.Tokens); n != p.Graph.Params.NVocab {
				vocabErr = fmt.Errorf("%d tokens, but the model's vocabulary (logit rows) has %d", n, p.Graph.Params.NVocab)
			}
		}
	}
	if p.Vocab != nil && vocabErr == nil {
		go func() {
			defer close(tokDone)
			tok, tokErr = tokenizer.New(p.Vocab)
		}()
	} else {
		close(tokDone)
	}
	defer func() { <-tokDone }()
	if err := verifyGraph(p.Graph); err != nil {
		return fmt.Errorf("section %s: invalid graph: %w", secGraph, err)
	}
	for _, name := range []string{"prefill", "decode"} {
		if mp := p.Memory[name]; mp != nil && mp.Options.SlotCount() != p.Options.SlotCount() {
			return fmt.Errorf("section %s: %d KV slots, but the %s memory plan holds %d", secOptions, p.Options.SlotCount(), name, mp.Options.SlotCount())
		}
	}
	if err := validateMemory(p.Graph, p.Memory); err != nil {
		return fmt.Errorf("section %s: %w", secMemory, err)
	}
	if vocabErr != nil {
		return fmt.Errorf("section %s: %w", secTokenizer, vocabErr)
	}
	<-tokDone
	if tokErr != nil {
		return fmt.Errorf("section %s: %w", secTokenizer, tokErr)
	}
	p.tok = tok
	if err := p.Sampling.Validate(); err != nil {
		return fmt.Errorf("section %s: %w", secSampling, err)
	}
	if err := validateOptions(p.Graph, p.Options); err != nil {
		return fmt.Errorf("section %s: %w", secOptions, err)
	}
	if p.CPU.Arch == "" {
		return fmt.Errorf("section %s: no architecture", secCPU)
	}
	switch p.Mode {
	case Embed:
	case Ref:
		if err := checkSourceRef(p.Source); err != nil {
			return fmt.Errorf("section %s: %w", secSource, err)
		}
	default:
		return fmt.Errorf("section %s: unknown weights mode %d", secWeightsIndex, p.Mode)
	}
	return nil
}

func checkSourceRef(s SourceRef) error {
	if s.Path == "" {
		return fmt.Errorf("weights referenced in a source GGUF, but no source path")
	}
	if s.Size <= 0 {
		return fmt.Errorf("source %s has size %d", s.Path, s.Size)
	}
	if b, err := hex.DecodeString(s.SHA256); err != nil || len(b) != 32 {
		return fmt.Errorf("source %s: bad sha256 %q", s.Path, s.SHA256)
	}
	return nil
}

func validateOptions(g *ir.Graph, o Options) error {
	if o.NCtx <= 0 || o.MaxBatch <= 0 {
		return fmt.Errorf("n_ctx %d and max batch %d must be positive", o.NCtx, o.MaxBatch)
	}
	if o.Slots < 0 || o.Slots > alloc.MaxSlots {
		return fmt.Errorf("%d KV slots: must be 1..%d", o.Slots, alloc.MaxSlots)
	}
	if o.KVType != "" {
		t, ok := quant.ParseType(o.KVType)
		if !ok {
			return fmt.Errorf("unknown KV type %q", o.KVType)
		}
		for _, v := range g.Values {
			if v.Kind == ir.State && v.DType != t {
				return fmt.Errorf("KV type %s, but cache %s is %s", t, v, v.DType)
			}
		}
	}
	return nil
}

// validateMemory checks that each of the graph's schedules has a memory
// plan made for it, and nothing else is there.
func validateMemory(g *ir.Graph, m map[string]*alloc.Plan) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("memory plan validation failed on malformed input: %v", r)
		}
	}()
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		if k != "prefill" && k != "decode" {
			return fmt.Errorf("memory plan for unknown schedule %q", k)
		}
	}
	for _, s := range []*ir.Schedule{g.Prefill, g.Decode} {
		mp := m[s.Name]
		if mp == nil {
			return fmt.Errorf("no memory plan for the %s schedule", s.Name)
		}
		if mp.Schedule != s.Name {
			return fmt.Errorf("memory plan %q is for schedule %q", s.Name, mp.Schedule)
		}
		if err := mp.ValidateSchedule(g, s); err != nil {
			return fmt.Errorf("%s plan: %w", s.Name, err)
		}
	}
	return nil
}

// checkIndex checks the weights index against the graph: exactly the
// tensors the graph reads, each with the type and byte size of its weight
// values, inside the section (Embed) or the source file (Ref), and for
// Embed 64-byte aligned and not overlapping.
func checkIndex(g *ir.Graph, mode Weights, idx []WeightEntry, limit int64) (map[string]WeightEntry, error) {
	specs, err := weightSpecs(g)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]WeightEntry, len(idx))
	for _, e := range idx {
		if _, dup := byName[e.Name]; dup {
			return nil, fmt.Errorf("tensor %q listed twice", e.Name)
		}
		byName[e.Name] = e
	}
	for _, s := range specs {
		e, ok := byName[s.name]
		if !ok {
			return nil, fmt.Errorf("tensor %q, read by the graph, is missing", s.name)
		}
		if e.Type != s.typ.String() {
			return nil, fmt.Errorf("tensor %q is %s, the graph reads it as %s", s.name, e.Type, s.typ)
		}
		if e.Size != s.size {
			return nil, fmt.Errorf("tensor %q has %d bytes, its shape and type need %d", s.name, e.Size, s.size)
		}
	}
	if len(byName) != len(specs) {
		return nil, fmt.Errorf("%d tensors listed, the graph reads %d", len(byName), len(specs))
	}
	where := "the weights section"
	if mode == Ref {
		where = "the source GGUF"
	}
	for _, e := range idx {
		if e.Offset < 0 || e.Size < 0 || e.Offset > limit || limit-e.Offset < e.Size {
			return nil, fmt.Errorf("tensor %q at offset %d size %d is beyond the %d bytes of %s", e.Name, e.Offset, e.Size, limit, where)
		}
		if mode == Embed && e.Offset%tensorAlign != 0 {
			return nil, fmt.Errorf("tensor %q at offset %d is not %d-byte aligned", e.Name, e.Offset, tensorAlign)
		}
	}
	if mode == Embed {
		sorted := slices.Clone(idx)
		slices.SortFunc(sorted, func(a, b WeightEntry) int { return cmp.Compare(a.Offset, b.Offset) })
		for i := 1; i < len(sorted); i++ {
			if sorted[i-1].Offset+sorted[i-1].Size > sorted[i].Offset {
				return nil, fmt.Errorf("tensors %q and %q overlap", sorted[i-1].Name, sorted[i].Name)
			}
		}
	}
	return byName, nil
}
