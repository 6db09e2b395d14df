// Package passes rewrites IR graphs: fusions, dead-code elimination, kernel
// selection and the grouping of nodes into barrier-delimited fused groups.
// Each pass is a plain function over *ir.Graph, listed once in Pipeline with
// the passes it must follow; any pass but the required ones can be switched
// off by name (minferc compile --disable-pass NAME).
package passes

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/minfer/minfer/ir"
	"github.com/minfer/minfer/quant"
)

// Options parameterize the pipeline.
type Options struct {
	// Disabled names passes to skip.
	Disabled map[string]bool
	// KVType is the element type of the KV cache (F32, F16 or Q8_0).
	KVType quant.Type
	// FlashAttn selects the flash attention kernels (attention_fa/<type>,
	// f32, f16 and q8_0 caches) instead of the non-flash ones.
	FlashAttn bool
	// Pack names the SIMD tier whose weight layouts pack-weights writes:
	// "avx2" (Q5_0, Q4_0, Q5_1, Q4_1 mat-mul weights to Q5_0r8 .. Q4_1r8), "avx512"
	// (Q8_0, Q5_0 and Q4_0 to Q8_0r16, Q5_0r16, Q4_0r16: another float order, see
	// quant/r16.go), both with K-quants to the eight-row layouts (another
	// float order, see quant/kr8.go: "avx2" Q2_K..Q6_K, "avx512" Q4_K..Q6_K),
	// "kquant" (only Q4_K..Q6_K to those), "r8vnni" ("avx2" but Q3_K and
	// Q2_K) or "" (none: the GGUF's layouts, which every tier reads).
	Pack string
	// Verify runs ir.Verify after every pass (tests turn it on; the
	// compiler verifies once at the end).
	Verify bool
	// Trace, if set, is called after each pass that ran.
	Trace func(pass string, g *ir.Graph)
}

// Pass is one entry of the pipeline.
type Pass struct {
	Name string
	// Doc says what the pass does, for --help and docs.
	Doc string
	Fn  func(g *ir.Graph, o *Options) error
	// After lists passes that must run before this one when both run.
	After []string
	// Required passes cannot be disabled: the executor depends on them.
	Required bool
}

// Pipeline is the ordered pass list. Each ordering constraint (After) says
// why, as the entries of Go's cmd/compile passOrder do.
var Pipeline = []Pass{
	{Name: "dce", Doc: "remove nodes whose results nothing reads (KV writes are kept)", Fn: deadCode},
	// prune-output-rows after dce: it moves the row selection only through a
	// value with exactly one reader, and a dead reader would stop it.
	{Name: "prune-output-rows", Doc: "compute the last layer's tail and the output head only for the rows whose logits are requested", Fn: sinkOutputRows, After: []string{"dce"}},
	// fuse-rmsnorm and fuse-swiglu after prune-output-rows: not for their own
	// sake (RMSNormMul and SwiGLU are row-local, so the selection passes them
	// either way) but so that every fusion runs on the pruned graph, and
	// fuse-epilogues, which must follow pruning, follows them.
	{Name: "fuse-rmsnorm", Doc: "fuse RMSNorm with the following weight multiply", Fn: fuseRMSNorm, After: []string{"prune-output-rows"}},
	{Name: "fuse-swiglu", Doc: "fuse SiLU(gate) ⊙ up into one SwiGLU op", Fn: fuseSwiGLU, After: []string{"prune-output-rows"}},
	// fuse-epilogues after the other fusions and so after prune-output-rows:
	// isRowLocal refuses a node with epilogues, so a residual add folded into
	// the last down projection would stop the row selection there (the last
	// layer's FFN would run on every prompt row).
	{Name: "fuse-epilogues", Doc: "fold bias adds, residual adds and RoPE into the producing mat-mul as epilogues", Fn: fuseEpilogues, After: []string{"fuse-rmsnorm", "fuse-swiglu"}},
	// private-embedding after fuse-rmsnorm: it gives the whole-row norm that
	// reads the embedding its own lookup, and runs after the fusion so it sees
	// that norm in its final form, RMSNormMul. It accepts an unfused RMSNorm
	// as well, so this order is a preference, not a correctness need.
	{Name: "private-embedding", Doc: "give the first norm its own copy of the embedding rows, so the lookup shares a fused group with layer 0's attention", Fn: privateEmbedding, After: []string{"fuse-rmsnorm"}},
	{Name: "kv-type", Doc: "set the KV cache element type", Fn: setKVType, Required: true},
	// pack-weights after dce: a weight only dead nodes read must not hold
	// its tensor back (every reader must be a mat-mul for it to pack).
	{Name: "pack-weights", Doc: "store Q5_0 and Q4_0 mat-mul weights in the four-row layouts of the AVX2 kernels (with --pack-weights avx2)", Fn: packWeights, After: []string{"dce"}},
	// select-kernels after fuse-epilogues and kv-type: a kernel is named by
	// the final op (fused ops and epilogues included) and its operand types,
	// the KV cache type among them (attention/f16, ...).
	// (and after pack-weights: the weight type names the kernel).
	{Name: "select-kernels", Doc: "choose each node's kernel by its operand types", Fn: selectKernels, After: []string{"fuse-epilogues", "kv-type", "pack-weights"}, Required: true},
	// group last, after select-kernels: schedules list nodes, so every pass
	// that adds, removes or rewrites nodes must come before it (group itself
	// reads epilogues, e.g. a RoPE epilogue binds a mat-mul to KV heads).
	{Name: "group", Doc: "partition the nodes into fused groups, one pool barrier each, for prefill and for decode", Fn: group, After: []string{"select-kernels"}, Required: true},
}

// Names lists the pipeline's pass names in order.
func Names() []string {
	var ns []string
	for _, p := range Pipeline {
		ns = append(ns, p.Name)
	}
	return ns
}

// Run applies the pipeline to g.
func Run(g *ir.Graph, o Options) error {
	if err := checkPipeline(Pipeline); err != nil {
		return err
	}
	for name := range o.Disabled {
		p, ok := find(name)
		if !ok {
			return fmt.Errorf("unknown pass %q (passes: %s)", name, strings.Join(Names(), ", "))
		}
		if p.Required {
			return fmt.Errorf("pass %q cannot be disabled: the executor depends on it", name)
		}
	}
	if o.KVType == 0 && !o.Disabled["kv-type"] {
		o.KVType = quant.F32
	}
	for _, p := range Pipeline {
		if o.Disabled[p.Name] {
			continue
		}
		if err := p.Fn(g, &o); err != nil {
			return fmt.Errorf("pass %s: %w", p.Name, err)
		}
		if o.Verify {
			if err := ir.Verify(g); err != nil {
				return fmt.Errorf("after pass %s: %w", p.Name, err)
			}
		}
		if o.Trace != nil {
			o.Trace(p.Name, g)
		}
	}
	return nil
}

func find(name string) (Pass, bool) {
	for _, p := range Pipeline {
		if p.Name == name {
			return p, true
		}
	}
	return Pass{}, false
}

// checkPipeline verifies the table's ordering constraints.
func checkPipeline(pl []Pass) error {
	pos := make(map[string]int)
	for i, p := range pl {
		if _, dup := pos[p.Name]; dup {
			return fmt.Errorf("pass %q listed twice", p.Name)
		}
		pos[p.Name] = i
	}
	for i, p := range pl {
		for _, a := range p.After {
			j, ok := pos[a]
			if !ok {
				return fmt.Errorf("pass %q must follow unknown pass %q", p.Name, a)
			}
			if j >= i {
				return fmt.Errorf("pass %q must follow %q but is listed before it", p.Name, a)
			}
		}
	}
	return nil
}

// consumers counts readers of each value (Logits counts as read).
func consumers(g *ir.Graph) map[*ir.Value][]*ir.Node {
	return g.Consumers()
}

// remove drops the given nodes and any values no longer referenced, then
// renumbers the graph.
func remove(g *ir.Graph, dead map[*ir.Node]bool) {
	if len(dead) == 0 {
		return
	}
	nodes := g.Nodes[:0]
	for _, n := range g.Nodes {
		if !dead[n] {
			nodes = append(nodes, n)
		}
	}
	g.Nodes = nodes
	pruneValues(g)
}

// pruneValues drops values that no node reads or writes and that are not
// graph inputs or outputs, then renumbers.
func pruneValues(g *ir.Graph) {
	live := map[*ir.Value]bool{g.Tokens: true, g.Positions: true, g.OutIDs: true, g.Logits: true}
	for _, n := range g.Nodes {
		for _, v := range n.Inputs {
			live[v] = true
			if v.StateOf != nil {
				live[v.StateOf] = true
			}
		}
		for _, v := range n.Outputs {
			live[v] = true
		}
	}
	vals := g.Values[:0]
	for _, v := range g.Values {
		if live[v] {
			vals = append(vals, v)
		}
	}
	g.Values = vals
	g.Renumber()
}

// deadCode removes nodes that neither lead to the logits nor write state.
func deadCode(g *ir.Graph, _ *Options) error {
	needed := make(map[*ir.Node]bool)
	var mark func(n *ir.Node)
	mark = func(n *ir.Node) {
		if n == nil || needed[n] {
			return
		}
		needed[n] = true
		for _, in := range n.Inputs {
			mark(in.Producer)
		}
	}
	mark(g.Logits.Producer)
	for _, n := range g.Nodes {
		if n.Op == ir.OpKVWrite {
			mark(n)
		}
	}
	dead := make(map[*ir.Node]bool)
	for _, n := range g.Nodes {
		if !needed[n] {
			dead[n] = true
		}
	}
	remove(g, dead)
	pruneValues(g) // also values no node produces or reads
	return nil
}

// isRowLocal reports whether an op's output row t depends only on row t of
// its activation inputs (so selecting rows commutes with it).
func isRowLocal(n *ir.Node) bool {
	switch n.Op {
	case ir.OpRMSNorm, ir.OpRMSNormMul, ir.OpMul, ir.OpAdd, ir.OpMatMul, ir.OpSiLU, ir.OpSwiGLU, ir.OpSoftmax:
		return len(n.Epilogues) == 0
	}
	return false
}

// sinkOutputRows moves the selection of requested rows (the GetRows on
// out_ids in front of the output head) up through row-local ops, so the
// last layer's feed-forward and residuals run only on those rows. It stops
// at attention, whose rows read every earlier position.
func sinkOutputRows(g *ir.Graph, _ *Options) error {
	for changed := true; changed; {
		changed = false
		cons := consumers(g)
		for _, sel := range g.Nodes {
			if sel.Op != ir.OpGetRows || sel.Inputs[1] != g.OutIDs {
				continue
			}
			src := sel.Inputs[0]
			p := src.Producer
			if p == nil || !isRowLocal(p) || len(cons[src]) != 1 || src.Shape[0] != ir.DimT {
				continue
			}
			// Rewrite rows(p(x1..xk)) as p(rows(x1)..rows(xk)), one shared
			// selection per distinct row-dimensioned activation input.
			for i, in := range p.Inputs {
				if in.Kind != ir.Activation || len(in.Shape) != 2 || in.Shape[0] != ir.DimT {
					continue
				}
				p.Inputs[i] = selectRows(g, cons, in)
			}
			out := sel.Outputs[0] // [R, cols]: p's output from now on
			p.Outputs[0], out.Producer = out, p
			out.Name = src.Name
			g.Nodes = append(g.Nodes[:nodeIndex(g, sel)], g.Nodes[nodeIndex(g, sel)+1:]...)
			g.Renumber()
			order, err := ir.TopoOrder(g)
			if err != nil {
				return err
			}
			g.Nodes = order
			pruneValues(g)
			changed = true
			break
		}
	}
	return nil
}

// selectRows returns the value rows(in, out_ids), reusing an existing
// selection of in when there is one, else appending a new GetRows node
// (the caller restores a topological order).
func selectRows(g *ir.Graph, cons map[*ir.Value][]*ir.Node, in *ir.Value) *ir.Value {
	for _, c := range cons[in] {
		if c.Op == ir.OpGetRows && c.Inputs[0] == in && c.Inputs[1] == g.OutIDs {
			return c.Outputs[0]
		}
	}
	nv := g.NewValue(in.Name+"@out", ir.Activation, quant.F32, ir.Shape{ir.DimR, in.Shape[1]})
	nn := &ir.Node{ID: len(g.Nodes), Op: ir.OpGetRows, Name: in.Name + "@out", Inputs: []*ir.Value{in, g.OutIDs}, Outputs: []*ir.Value{nv}, Layer: -1, Group: -1}
	if in.Producer != nil {
		nn.Layer = in.Producer.Layer
	}
	nv.Producer = nn
	g.Nodes = append(g.Nodes, nn)
	cons[in] = append(cons[in], nn)
	return nv
}

func nodeIndex(g *ir.Graph, n *ir.Node) int {
	for i, m := range g.Nodes {
		if m == n {
			return i
		}
	}
	return -1
}

// fuseRMSNorm turns RMSNorm(x) followed by Mul(·, w) with an f32 weight w
// into RMSNormMul(x, w), when the norm's only reader is that Mul.
func fuseRMSNorm(g *ir.Graph, _ *Options) error {
	cons := consumers(g)
	dead := make(map[*ir.Node]bool)
	for _, n := range g.Nodes {
		if n.Op != ir.OpRMSNorm {
			continue
		}
		out := n.Outputs[0]
		rs := cons[out]
		if len(rs) != 1 || rs[0].Op != ir.OpMul || rs[0].Inputs[0] != out || rs[0].Inputs[1].Kind != ir.Weight {
			continue
		}
		m := rs[0]
		m.Op = ir.OpRMSNormMul
		m.Attrs = n.Attrs
		m.Inputs = []*ir.Value{n.Inputs[0], m.Inputs[1]}
		dead[n] = true
	}
	remove(g, dead)
	return nil
}

// fuseSwiGLU turns SiLU(gate) followed by Mul(·, up) into SwiGLU(gate, up).
func fuseSwiGLU(g *ir.Graph, _ *Options) error {
	cons := consumers(g)
	dead := make(map[*ir.Node]bool)
	for _, n := range g.Nodes {
		if n.Op != ir.OpSiLU {
			continue
		}
		out := n.Outputs[0]
		rs := cons[out]
		if len(rs) != 1 || rs[0].Op != ir.OpMul || rs[0].Inputs[0] != out || !rs[0].Inputs[1].Shape.Equal(out.Shape) {
			continue
		}
		m := rs[0]
		m.Op = ir.OpSwiGLU
		m.Inputs = []*ir.Value{n.Inputs[0], m.Inputs[1]}
		dead[n] = true
	}
	remove(g, dead)
	return nil
}

// fuseEpilogues folds into a mat-mul the adds (bias: an f32 weight vector;
// residual: a same-shape activation) and the RoPE that directly follow it,
// when the mat-mul's result has no other reader.
func fuseEpilogues(g *ir.Graph, _ *Options) error {
	for changed := true; changed; {
		changed = false
		cons := consumers(g)
		for _, mm := range g.Nodes {
			if mm.Op != ir.OpMatMul {
				continue
			}
			out := mm.Outputs[0]
			rs := cons[out]
			if len(rs) != 1 || out == g.Logits {
				continue
			}
			next := rs[0]
			var e ir.Epilogue
			switch {
			case next.Op == ir.OpAdd && next.Inputs[0] == out && next.Inputs[1] != out:
				e = ir.Epilogue{Op: ir.OpAdd, Arg: next.Inputs[1]}
			case next.Op == ir.OpAdd && next.Inputs[1] == out && next.Inputs[0].Shape.Equal(out.Shape):
				e = ir.Epilogue{Op: ir.OpAdd, Arg: next.Inputs[0]}
			case next.Op == ir.OpRope && next.Inputs[0] == out:
				e = ir.Epilogue{Op: ir.OpRope, Arg: next.Inputs[1], Attrs: next.Attrs}
				if next.Attrs.RopeFreqs {
					e.Freqs = next.Inputs[2]
				}
			default:
				continue
			}
			// The operand must be computed before the mat-mul runs.
			if p := e.Arg.Producer; p != nil && nodeIndex(g, p) > nodeIndex(g, mm) {
				continue
			}
			mm.Epilogues = append(mm.Epilogues, e)
			mm.Inputs = append(mm.Inputs, e.Arg)
			if e.Freqs != nil {
				mm.Inputs = append(mm.Inputs, e.Freqs)
			}
			res := next.Outputs[0]
			mm.Outputs[0] = res
			res.Producer = mm
			mm.Name = next.Name
			remove(g, map[*ir.Node]bool{next: true})
			changed = true
			break
		}
	}
	return nil
}

// privateEmbedding duplicates an embedding lookup whose result feeds a
// whole-row norm and other readers: the norm gets its own lookup, which the
// grouping pass can compute redundantly on every worker, while the other
// readers (the residual) keep the shared one. Each lookup is one dequantized
// row per token, far cheaper than the barrier it saves.
func privateEmbedding(g *ir.Graph, _ *Options) error {
	cons := consumers(g)
	for i := 0; i < len(g.Nodes); i++ {
		n := g.Nodes[i]
		if n.Op != ir.OpGetRows || n.Inputs[0].Kind != ir.Weight {
			continue
		}
		out := n.Outputs[0]
		rs := cons[out]
		if len(rs) < 2 {
			continue
		}
		for _, r := range rs {
			if (r.Op != ir.OpRMSNorm && r.Op != ir.OpRMSNormMul) || r.Attrs.GroupSize != 0 {
				continue
			}
			nv := g.NewValue(out.Name+"@norm", ir.Activation, quant.F32, out.Shape)
			dup := &ir.Node{Op: ir.OpGetRows, Name: n.Name + "@norm", Inputs: append([]*ir.Value(nil), n.Inputs...), Outputs: []*ir.Value{nv}, Layer: n.Layer, Group: -1}
			nv.Producer = dup
			for k, in := range r.Inputs {
				if in == out {
					r.Inputs[k] = nv
				}
			}
			g.Nodes = append(g.Nodes[:i+1], append([]*ir.Node{dup}, g.Nodes[i+1:]...)...)
			i++
		}
	}
	g.Renumber()
	return nil
}

// setKVType gives every KV cache state value (and its versions) the
// requested element type.
func setKVType(g *ir.Graph, o *Options) error {
	t := o.KVType
	switch t {
	case quant.F32, quant.F16:
	case quant.Q8_0:
		for _, v := range g.Values {
			if v.Kind == ir.State && v.Shape.Cols()%quant.QK != 0 {
				return fmt.Errorf("kv type q8_0 needs cache rows that are multiples of %d; %s is %d wide", quant.QK, v.Name, v.Shape.Cols())
			}
		}
	default:
		return fmt.Errorf("unsupported KV cache type %s (f32, f16 or q8_0)", t)
	}
	for _, v := range g.Values {
		if v.Kind == ir.State {
			v.DType = t
		}
	}
	return nil
}

// selectKernels names each node's kernel from its op and operand types, so
// the executor binds a specialized function once at load.
func selectKernels(g *ir.Graph, o *Options) error {
	for _, n := range g.Nodes {
		switch n.Op {
		case ir.OpMatMul:
			n.Kernel = fmt.Sprintf("mat_mul/%s", n.Inputs[1].DType)
		case ir.OpGetRows:
			n.Kernel = fmt.Sprintf("get_rows/%s", n.Inputs[0].DType)
		case ir.OpKVWrite:
			n.Kernel = fmt.Sprintf("kv_write/%s", n.Inputs[2].DType)
		case ir.OpAttention:
			t := n.Inputs[1].DType
			n.Kernel = fmt.Sprintf("attention/%s", t)
			if o.FlashAttn {
				if t != quant.F32 && t != quant.F16 && t != quant.Q8_0 {
					return fmt.Errorf("flash attention reads f32, f16 and q8_0 KV caches, not %s", t)
				}
				n.Kernel = fmt.Sprintf("attention_fa/%s", t)
			}
		default:
			n.Kernel = n.Op.String()
		}
	}
	return nil
}

// packedR8VNNI is quant.PackedR8 but for Q3_K and Q2_K: the eight-row
// K-quant layouts "avx512", "kquant" and "r8vnni" write, the ones whose kernels beat the
// GGUF layout's on the AVX-512 VNNI tier. There the GGUF layout's
// VPDPBUSD row kernels for Q3_K and Q2_K read faster than the eight-row
// ones (Zen 5, one row over a 1 GiB matrix: Q2_K 0.86–0.91 of a plain
// read against 0.59–0.61, Q3_K 0.48–0.72 against 0.50–0.52), while on the
// AVX2 tier the eight-row kernels are the faster (Q3_K 0.30–0.43 → 0.51,
// Q2_K 0.47–0.53 → 0.55–0.66; docs/PERFORMANCE.md, twenty-first session).
func packedR8VNNI(t quant.Type) quant.Type {
	if t == quant.Q3_K || t == quant.Q2_K {
		return 0
	}
	return quant.PackedR8(t)
}

// packWeights rewrites the type of mat-mul weights to minfer's own
// layouts for a SIMD tier (o.Pack):
//
//   - "avx2": Q5_0, Q4_0, Q5_1, Q4_1 to Q5_0r8 .. Q4_1r8 (quant/q5_0r8.go:
//     eight rows in the lanes of a YMM register; for Q5_0 and Q4_0 the
//     sixteen-row layouts' float order, so the same bits as Q5_0r16,
//     Q4_0r16), and the K-quants Q2_K, Q3_K, Q4_K, Q5_K, Q6_K to Q2_Kr8 ..
//     Q6_Kr8;
//   - "avx512": Q8_0, Q5_0 and Q4_0 to Q8_0r16, Q5_0r16 and Q4_0r16
//     (quant/r16.go: the same bytes per row, sixteen rows together, for
//     the AVX-512 VNNI kernels that put a row in each lane), and Q4_K,
//     Q5_K, Q6_K as "avx2" does (not Q3_K, Q2_K: packedR8VNNI);
//   - "kquant": only Q4_K, Q5_K, Q6_K to Q4_Kr8, Q5_Kr8, Q6_Kr8
//     (quant/kr8.go: the same bytes per row, eight rows together, for the
//     AVX2 kernels that put a row in each lane, which the AVX-512 tier
//     runs too);
//   - "r8vnni": the legacy types as "avx2" does and Q4_K, Q5_K, Q6_K as
//     "kquant" does, Q3_K and Q2_K left to the GGUF layout's VNNI row
//     kernels, which decode them 12-16% faster where 512-bit operations run
//     at full rate (Zen 5), though the eight-row ZMM kernels prefill them
//     1.5-1.7x as fast (auto takes "avx2" there).
//
// The r16 and r8 layouts have llama.cpp's repacked-kernel float order, not
// its vec_dot order (Q4_Kr8: the order llama.cpp itself runs for Q4_K on
// AVX2 CPUs). A tensor is packed when every value reading it has the same
// such type and a multiple of the group's rows and every reader is a
// mat-mul taking it as the weight or a row lookup taking it as the table
// (a tied token embedding). The plan writer then writes it packed; the
// tiers without the layout's kernels refuse such a plan (cpu.NewMatMul
// names the recompile command).
func packWeights(g *ir.Graph, o *Options) error {
	var packed func(quant.Type) quant.Type
	switch o.Pack {
	case "":
		return nil
	case "avx2":
		packed = func(t quant.Type) quant.Type {
			return cmp.Or(quant.PackedR8Legacy(t), quant.PackedR8(t))
		}
	case "avx512":
		packed = func(t quant.Type) quant.Type { return cmp.Or(quant.PackedR16(t), packedR8VNNI(t)) }
	case "kquant":
		packed = packedR8VNNI
	case "r8vnni":
		packed = func(t quant.Type) quant.Type { return cmp.Or(quant.PackedR8Legacy(t), packedR8VNNI(t)) }
	default:
		return fmt.Errorf("pack-weights: unknown tier %q (avx2, avx512, kquant, r8vnni, or none)", o.Pack)
	}
	cons := g.Consumers()
	bySource := map[string][]*ir.Value{}
	var order []string
	for _, v := range g.Weights() {
		if _, ok := bySource[v.Source]; !ok {
			order = append(order, v.Source)
		}
		bySource[v.Source] = append(bySource[v.Source], v)
	}
	for _, src := range order {
		vs := bySource[src]
		to := packed(vs[0].DType)
		ok := to != 0
		for _, v := range vs {
			if v.DType != vs[0].DType || len(v.Shape) != 2 || v.Shape[0]%ir.Dim(max(1, quant.GroupRows(to))) != 0 || len(cons[v]) == 0 {
				ok = false
			}
			for _, n := range cons[v] {
				switch {
				case n.Op == ir.OpMatMul && onlyAt(n.Inputs, v, 1):
				case n.Op == ir.OpGetRows && onlyAt(n.Inputs, v, 0):
					// a lookup of a tied embedding (also the output head)
					// unpacks its rows (cpu.GetRowsQuant)
				default:
					ok = false
				}
			}
		}
		if ok {
			for _, v := range vs {
				v.DType = to
			}
		}
	}
	return nil
}

// onlyAt reports whether v is ins[i] and no other input.
func onlyAt(ins []*ir.Value, v *ir.Value, i int) bool {
	for j, in := range ins {
		if (in == v) != (j == i) {
			return false
		}
	}
	return true
}
