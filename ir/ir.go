// Package ir is minfer's typed graph of tensor operations: the contract
// between the frontends that build graphs, the passes that rewrite them, the
// allocator that plans their memory and the executors that run them.
//
// Conventions:
//   - Shapes are row-major, outermost first: an activation of T tokens and
//     width N has Shape{DimT, N}; a weight with N output rows of K inputs has
//     Shape{N, K} (GGUF/ggml order reversed: ne1, ne0).
//   - Two dimensions are symbolic and fixed only when a graph runs: DimT, the
//     tokens in the batch, and DimR, the rows whose logits are requested.
//   - Values are produced by exactly one node (or are graph inputs, weights or
//     persistent state). The KV cache is a persistent State value; KVWrite
//     produces a new version of it (a value with StateOf set) that attention
//     reads, so dataflow orders the write before the read.
//
// ir imports no other minfer package but quant (for element types).
package ir

import (
	"fmt"
	"strings"

	"github.com/minfer/minfer/quant"
)

// Dim is one extent of a shape: a non-negative constant or a symbolic size.
type Dim int64

// Symbolic dimensions.
const (
	DimT Dim = -1 // tokens in the batch being evaluated
	DimR Dim = -2 // rows whose logits are requested (≤ DimT)
)

// String formats the Dim for errors and dumps.
func (d Dim) String() string {
	switch d {
	case DimT:
		return "T"
	case DimR:
		return "R"
	}
	return fmt.Sprint(int64(d))
}

// Shape is a row-major list of dimensions.
type Shape []Dim

// String formats the Shape for errors and dumps.
func (s Shape) String() string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = d.String()
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// Equal reports whether two shapes are identical (symbols compare by name).
func (s Shape) Equal(o Shape) bool {
	if len(s) != len(o) {
		return false
	}
	for i := range s {
		if s[i] != o[i] {
			return false
		}
	}
	return true
}

// Cols is the innermost extent (the row width) of a rank-2 shape.
func (s Shape) Cols() int { return int(s[len(s)-1]) }

// Kind says where a value's storage comes from.
type Kind uint8

// Value kinds.
const (
	Activation Kind = iota // produced by a node, lives in the activation arena
	Input                  // supplied per call: token ids, positions, output row ids
	Weight                 // a model tensor, read-only
	State                  // persistent across calls (KV cache)
)

// String formats the Kind for errors and dumps.
func (k Kind) String() string {
	return [...]string{"activation", "input", "weight", "state"}[k]
}

// Value is a tensor in the graph.
type Value struct {
	ID    int
	Name  string
	Kind  Kind
	DType quant.Type
	Shape Shape
	// Source names the model tensor a Weight value reads (GGUF tensor name).
	Source string
	// StateOf is set on a value that is a new version of persistent state
	// (the output of KVWrite): it shares StateOf's storage.
	StateOf *Value
	// Producer is the node computing the value (nil for inputs, weights, state).
	Producer *Node
}

// String formats the Value for errors and dumps.
func (v *Value) String() string {
	return fmt.Sprintf("%%%d:%s %s%s", v.ID, v.Name, v.DType, v.Shape)
}

// Op is the operation a node performs.
type Op uint8

// Operations. The primitive ops are what frontends emit; the fused ops are
// introduced by passes and have the same semantics as the primitive
// sequences they replace (docs/IR.md gives each op's exact arithmetic).
const (
	OpInvalid Op = iota
	// OpGetRows: out[i] = dequant(table[ids[i]]). Inputs: table [V,N] (weight
	// or activation), ids i32 [M]. Output f32 [M,N].
	OpGetRows
	// OpRMSNorm: per group of Attr.GroupSize consecutive elements (the whole
	// row when 0), y = x / sqrt(mean(x²) + Attr.Eps). Input x f32.
	OpRMSNorm
	// OpMul: x ⊙ w, w broadcast when its width divides x's row width (norm
	// weights, per-head norm weights) or same shape.
	OpMul
	// OpAdd: x + y, y broadcast like OpMul (bias) or same shape (residual).
	OpAdd
	// OpMatMul: out[t][n] = Σ_k x[t][k]·W[n][k]. Inputs: x f32 [M,K], W [N,K]
	// of any weight type; x is converted to W's vec-dot type first, as
	// llama.cpp does. Output f32 [M,N].
	OpMatMul
	// OpRope: rotary position embedding of each head of width Attr.HeadDim
	// (first Attr.RopeDims elements rotated). Inputs: x f32 [T,H·hd], pos i32
	// [T], and when Attr.RopeFreqs a third: the frequency factors, an f32
	// weight [RopeDims/2] (GGUF rope_freqs.weight) dividing each pair's angle
	// before the linear scale, as ggml_rope_ext's freq_factors.
	// Attr.RopeNeoX selects pairs (i, i+d/2) instead of (2i, 2i+1).
	OpRope
	// OpKVWrite: cache[pos[t]] = x[t]. Inputs: x f32 [T,W], pos i32 [T],
	// cache state [C,W]. Output: the new version of cache.
	OpKVWrite
	// OpAttention: causal GQA attention. Inputs: q f32 [T,H·hd], k cache,
	// v cache (KVWrite outputs, [C,Hkv·hd]), pos i32 [T]. Query t attends to
	// cache rows 0..pos[t]; softmax(q·k·Attr.Scale) weights v. Output [T,H·hd].
	OpAttention
	// OpSoftmax: row-wise softmax(x·Attr.Scale).
	OpSoftmax
	// OpSiLU: x·sigmoid(x).
	OpSiLU
	// OpSwiGLU: silu(gate) ⊙ up (fused SiLU + Mul). Inputs gate, up.
	OpSwiGLU
	// OpRMSNormMul: OpRMSNorm followed by OpMul with the weight (fused).
	// Inputs x, w.
	OpRMSNormMul
	numOps
)

var opNames = [...]string{
	OpInvalid:    "invalid",
	OpGetRows:    "get_rows",
	OpRMSNorm:    "rms_norm",
	OpMul:        "mul",
	OpAdd:        "add",
	OpMatMul:     "mat_mul",
	OpRope:       "rope",
	OpKVWrite:    "kv_write",
	OpAttention:  "attention",
	OpSoftmax:    "softmax",
	OpSiLU:       "silu",
	OpSwiGLU:     "swiglu",
	OpRMSNormMul: "rms_norm_mul",
}

// String formats the Op for errors and dumps.
func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// ParseOp maps an op name back to its Op.
func ParseOp(s string) (Op, bool) {
	for i, n := range opNames {
		if n == s && Op(i) != OpInvalid {
			return Op(i), true
		}
	}
	return OpInvalid, false
}

// Attrs holds the scalar parameters of a node; each op reads the fields its
// documentation names and ignores the rest.
type Attrs struct {
	Eps       float32 // rms_norm
	GroupSize int     // rms_norm: normalize groups of this many elements (0: whole row)
	HeadDim   int     // rope, attention
	NHead     int     // attention: query heads
	NHeadKV   int     // attention: key/value heads
	RopeDims  int     // rope: rotated elements per head
	RopeBase  float32 // rope: frequency base
	RopeScale float32 // rope: linear position scale (1 = none)
	RopeNeoX  bool    // rope: NeoX pair layout
	Scale     float32 // attention, softmax: logit scale
	// RopeFreqs says that a rope node's third input (a rope epilogue's
	// Freqs) holds per-pair frequency factors. Omitted from plan JSON when
	// false, so plans without factors are unchanged and an older reader
	// refuses a plan with them (strict decoding) instead of ignoring them.
	RopeFreqs bool `json:",omitempty"`
}

// Epilogue is work fused onto the end of a node by a pass: applied to each
// output element (or row) right after it is computed, with no extra pass over
// memory. Executors must apply epilogues in order.
type Epilogue struct {
	Op  Op     // OpAdd (bias or residual) or OpRope
	Arg *Value // the bias / residual operand; rope: the positions
	// Freqs is a rope epilogue's frequency factors (the rope node's third
	// input, present exactly when Attrs.RopeFreqs), nil otherwise.
	Freqs *Value
	Attrs Attrs
}

// Node is one operation.
type Node struct {
	ID      int
	Op      Op
	Name    string
	Inputs  []*Value
	Outputs []*Value
	Attrs   Attrs
	// Epilogues run on each block of output rows right after the node
	// computes it. Their Arg values also appear in Inputs, so dataflow,
	// liveness and Verify see them.
	Epilogues []Epilogue
	// Kernel names the executor kernel chosen for the node at compile time
	// (by the select-kernels pass: e.g. "mat_mul/q4_K"); executors look it
	// up once at load, never per element or block.
	Kernel string
	// Layer is the transformer block the node belongs to (-1 outside blocks).
	Layer int
	// Group is the fused group the node is scheduled in (-1 before grouping).
	Group int
}

// String formats the Node for errors and dumps.
func (n *Node) String() string {
	ins := make([]string, len(n.Inputs))
	for i, v := range n.Inputs {
		ins[i] = fmt.Sprintf("%%%d", v.ID)
	}
	return fmt.Sprintf("#%d %s(%s) -> %s", n.ID, n.Op, strings.Join(ins, ","), n.Outputs[0])
}

// Graph is a whole model's forward pass for one batch of tokens.
type Graph struct {
	// Arch is the model architecture ("llama", "qwen2", "qwen3").
	Arch string
	// Params are the hyper-parameters the graph was built from.
	Params Params
	Values []*Value
	Nodes  []*Node // in a valid execution order
	// Tokens, Positions and OutIDs are the per-call inputs.
	Tokens, Positions, OutIDs *Value
	// Logits is the graph output, f32 [R, n_vocab].
	Logits *Value
	// Schedules are filled by the grouping pass: one for prompt batches
	// (prefill) and one for single-token decode.
	Prefill, Decode *Schedule
}

// Params are the model hyper-parameters a graph was built from; executors
// read the context size and vocabulary from here.
type Params struct {
	NVocab, NEmbd, NFF, NLayer int
	NHead, NHeadKV, HeadDim    int
	NCtx                       int
	RMSEps                     float32
	RopeBase                   float32
	Tied                       bool
}

// NewValue adds a value to the graph.
func (g *Graph) NewValue(name string, kind Kind, dt quant.Type, shape Shape) *Value {
	v := &Value{ID: len(g.Values), Name: name, Kind: kind, DType: dt, Shape: shape}
	g.Values = append(g.Values, v)
	return v
}

// AddNode appends a node computing one f32 activation of the given shape.
func (g *Graph) AddNode(op Op, name string, layer int, attrs Attrs, shape Shape, inputs ...*Value) *Value {
	out := g.NewValue(name, Activation, quant.F32, shape)
	n := &Node{ID: len(g.Nodes), Op: op, Name: name, Inputs: inputs, Outputs: []*Value{out}, Attrs: attrs, Layer: layer, Group: -1}
	out.Producer = n
	g.Nodes = append(g.Nodes, n)
	return out
}

// Renumber gives values and nodes dense IDs in slice order and rebuilds
// Producer links; passes call it after deleting or reordering.
func (g *Graph) Renumber() {
	for i, v := range g.Values {
		v.ID = i
		v.Producer = nil
	}
	for i, n := range g.Nodes {
		n.ID = i
		for _, o := range n.Outputs {
			o.Producer = n
		}
	}
}

// Consumers maps each value to the nodes that read it, in node order.
func (g *Graph) Consumers() map[*Value][]*Node {
	m := make(map[*Value][]*Node)
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			m[in] = append(m[in], n)
		}
	}
	return m
}

// Weights lists the graph's weight values in order of first appearance.
func (g *Graph) Weights() []*Value {
	var ws []*Value
	for _, v := range g.Values {
		if v.Kind == Weight {
			ws = append(ws, v)
		}
	}
	return ws
}

// CheckBatch validates one evaluation call against the model: token ids in
// the vocabulary, positions that continue the filled cache positions
// consecutively and stay inside the context, and requested output rows
// inside the batch. Every executor calls it before running a graph.
func (p Params) CheckBatch(filled int, tokens, positions, outIDs []int32) error {
	T := len(tokens)
	if T == 0 {
		return fmt.Errorf("empty batch")
	}
	if len(positions) != T {
		return fmt.Errorf("%d positions for %d tokens", len(positions), T)
	}
	for i, t := range tokens {
		if t < 0 || int(t) >= p.NVocab {
			return fmt.Errorf("token %d at index %d is outside the vocabulary (0..%d)", t, i, p.NVocab-1)
		}
	}
	for i, pos := range positions {
		if int(pos) != filled+i {
			return fmt.Errorf("position %d at index %d: the cache holds %d positions, so the batch must start there and be consecutive", pos, i, filled)
		}
		if int(pos) >= p.NCtx {
			return fmt.Errorf("position %d exceeds the context size %d", pos, p.NCtx)
		}
	}
	for i, r := range outIDs {
		if r < 0 || int(r) >= T {
			return fmt.Errorf("output row %d at index %d is outside the batch of %d", r, i, T)
		}
	}
	return nil
}

// CtxPad is the granularity of KV cache sizes: llama.cpp pads its context to
// a multiple of 256 cells, and attention's arithmetic (the padded length its
// softmax and dot orders run over) depends on it.
const CtxPad = 256

// PadContext rounds a context size up to a multiple of CtxPad.
func PadContext(n int) int { return (n + CtxPad - 1) / CtxPad * CtxPad }
