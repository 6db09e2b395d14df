// Package plan reads and writes plan.bin, the compiled form of a model that
// `minferc compile` writes and `minfer exec` loads: the compiled ir.Graph
// with its schedules, the memory plans of both schedules, the tokenizer
// vocabulary, default sampling parameters, the compile options, the CPU
// features the plan's kernels need, the identity of the source GGUF and the
// weights (embedded, or referenced in the source GGUF).
//
// The executor depends on this package, never on the GGUF parser: a plan
// carries everything needed to run. docs/PLAN-FORMAT.md describes the byte
// layout, the encoding of each section, the checksums and the rules by
// which a plan is refused.
//
// A plan read from disk is untrusted input: Parse and Open bound-check every
// offset, count and value ID, verify every section's CRC-32C, rebuild the
// graph's pointers, and validate the graph (ir.Verify, schedules included)
// and the memory plans (alloc.Plan.Validate) before returning. Malformed
// input yields an error naming the problem, never a panic.
package plan

import (
	"fmt"
	"time"

	"github.com/minfer/minfer/alloc"
	"github.com/minfer/minfer/ir"
	"github.com/minfer/minfer/sample"
	"github.com/minfer/minfer/tokenizer"
)

// FormatVersion is the plan.bin format version this package writes and
// reads. It changes whenever the byte layout or the encoding of a section
// changes incompatibly; a reader refuses any other version.
const FormatVersion = 1

// Magic is the 8 bytes every plan.bin starts with.
const Magic = "MINFPLAN"

// Weights says where a plan's weights are stored.
type Weights int

// Weight storage modes.
const (
	// Embed copies every weight tensor into the plan file (64-byte aligned),
	// which then runs on its own.
	Embed Weights = iota
	// Ref records each tensor's offset and size in the source GGUF, which
	// must be present, unchanged, at load time.
	Ref
)

// String formats the Weights for errors and dumps.
func (w Weights) String() string {
	switch w {
	case Embed:
		return "embed"
	case Ref:
		return "ref"
	}
	return fmt.Sprintf("weights(%d)", int(w))
}

// ParseWeights maps "embed" or "ref" (the --weights flag) to a Weights mode.
func ParseWeights(s string) (Weights, error) {
	switch s {
	case "embed":
		return Embed, nil
	case "ref":
		return Ref, nil
	}
	return 0, fmt.Errorf("unknown weights mode %q (embed or ref)", s)
}

// SourceRef identifies the GGUF file a plan was compiled from.
type SourceRef struct {
	Path   string // as given to the compiler (absolute when it was)
	Size   int64  // bytes
	SHA256 string // hex digest of the whole file
}

// Options records how the plan was compiled.
type Options struct {
	NCtx           int      // KV cache positions of each slot
	MaxBatch       int      // the largest prompt batch the prefill memory plan holds
	KVType         string   // KV cache element type ("f32", "f16", "q8_0")
	DisabledPasses []string // passes switched off with --disable-pass
	Tool           string   // compiler name and version, e.g. "minferc v0.1.0 (go1.26)"
	// Compiled is when the plan was written; Write sets it when zero.
	Compiled time.Time
	// Slots is the number of sequences the plan keeps a KV cache for
	// (minferc compile --slots); 0, as in plans written before slots
	// existed and omitted from the JSON, means 1. It must equal the memory
	// plans' alloc.Options.Slots.
	Slots int `json:",omitempty"`
}

// SlotCount is the number of KV slots (Slots, 0 read as 1).
func (o Options) SlotCount() int { return max(1, o.Slots) }

// CPUInfo is the CPU fingerprint of a plan.
type CPUInfo struct {
	// Arch is the GOARCH the plan was compiled on. A plan with Required
	// features is refused on any other architecture; one without (every
	// plan minferc writes) runs on any.
	Arch string
	// Required lists the golang.org/x/sys/cpu feature names (lower case,
	// without "Has": "avx2", "fma", "avx512vnni", "asimddp") the plan's
	// kernels need; a plan is refused on a CPU lacking any of them.
	Required []string
	// Machine lists every feature of the compiling machine, for information.
	Machine []string
}

// Plan is the content of a plan.bin file.
type Plan struct {
	Graph *ir.Graph
	// Memory holds the memory plan of each schedule, keyed by schedule
	// name: "prefill" (g.Prefill) and "decode" (g.Decode).
	Memory map[string]*alloc.Plan
	// Vocab is the tokenizer vocabulary; nil when the model has none.
	Vocab    *tokenizer.Vocab
	Sampling sample.Params
	Options  Options
	CPU      CPUInfo
	Source   SourceRef
	Mode     Weights
	// ChatTemplate is the model's Jinja chat template (the GGUF's
	// tokenizer.chat_template), "" when it has none. It is stored in the
	// optional chat_template section, so older readers still load the plan.
	ChatTemplate string

	tok *tokenizer.Tokenizer // built from Vocab by validation, see Tokenizer
}

// Tokenizer returns the tokenizer of Vocab (nil when the plan has none).
// Loading a plan already builds it to validate the vocabulary, so this
// returns that one instead of building it a second time (for a 150k-token
// vocabulary, a large part of the start-up).
func (p *Plan) Tokenizer() (*tokenizer.Tokenizer, error) {
	if p.Vocab == nil {
		return nil, nil
	}
	if p.tok == nil {
		t, err := tokenizer.New(p.Vocab)
		if err != nil {
			return nil, err
		}
		p.tok = t
	}
	return p.tok, nil
}

// WeightSource supplies the raw bytes of the model's tensors by name (the
// ir.Value.Source of each Weight value); *gguf.File implements it.
type WeightSource interface {
	WeightBytes(name string) ([]byte, error)
}

// WeightOffsetSource is a WeightSource that can also tell where a tensor
// lies in the source file (its absolute byte offset), as Ref mode records.
// A source that instead exposes its whole mapped file image through a
// Bytes() []byte method (as *gguf.File does) is located from the position
// of WeightBytes' result inside that image.
type WeightOffsetSource interface {
	WeightSource
	WeightOffset(name string) (int64, error)
}

// WeightEntry is one tensor of the weights index.
type WeightEntry struct {
	Name string
	Type string // quant type name ("q4_K", "f32", ...)
	// Offset is relative to the start of the weights section in Embed mode
	// (a multiple of 64) and the absolute offset in the source GGUF in Ref
	// mode.
	Offset int64
	Size   int64
}
