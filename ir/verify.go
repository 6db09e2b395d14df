package ir

import (
	"errors"
	"fmt"

	"gonum.org/v1/gonum/graph/simple"
	"gonum.org/v1/gonum/graph/topo"

	"github.com/minfer/minfer/quant"
)

// Verify checks the graph's invariants: dense IDs, every activation produced
// exactly once and before use (so the node order is a valid schedule and the
// graph is acyclic), and each op's operand kinds, element types and shapes.
// It returns all problems found, joined.
func Verify(g *Graph) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for i, v := range g.Values {
		if v.ID != i {
			bad("value %q has id %d at index %d", v.Name, v.ID, i)
		}
	}
	if g.Tokens == nil || g.Positions == nil || g.OutIDs == nil || g.Logits == nil {
		bad("graph lacks one of its inputs (tokens, positions, out_ids) or its logits output")
	}
	produced := make(map[*Value]*Node)
	known := make(map[*Value]bool, len(g.Values))
	for _, v := range g.Values {
		known[v] = true
	}
	for i, n := range g.Nodes {
		if n.ID != i {
			bad("node %s has id %d at index %d", n.Op, n.ID, i)
		}
		for _, in := range n.Inputs {
			if !known[in] {
				bad("node #%d %s reads a value not in the graph (%s)", i, n.Op, in)
				continue
			}
			if (in.Kind == Activation || in.StateOf != nil) && produced[in] == nil {
				bad("node #%d %s reads %s before it is produced", i, n.Op, in)
			}
		}
		if len(n.Outputs) != 1 {
			bad("node #%d %s has %d outputs, want 1", i, n.Op, len(n.Outputs))
			continue
		}
		out := n.Outputs[0]
		if produced[out] != nil {
			bad("value %s produced twice (nodes #%d and #%d)", out, produced[out].ID, i)
		}
		if out.Producer != n {
			bad("value %s does not name node #%d as its producer", out, i)
		}
		produced[out] = n
		if err := checkNode(n); err != nil {
			bad("node #%d %s %q: %v", i, n.Op, n.Name, err)
		}
		inputs := make(map[*Value]bool, len(n.Inputs))
		for _, in := range n.Inputs {
			inputs[in] = true
		}
		for _, e := range n.Epilogues {
			if e.Arg != nil && !inputs[e.Arg] {
				bad("node #%d %s: epilogue %s operand %s is not among its inputs", i, n.Op, e.Op, e.Arg)
			}
			if e.Freqs != nil && !inputs[e.Freqs] {
				bad("node #%d %s: epilogue %s frequency factors %s are not among its inputs", i, n.Op, e.Op, e.Freqs)
			}
		}
	}
	if g.Logits != nil && produced[g.Logits] == nil {
		bad("logits %s are never produced", g.Logits)
	}
	if g.Tokens != nil && g.Positions != nil && g.OutIDs != nil && g.Logits != nil {
		errs = append(errs, verifyIndices(g)...)
	}
	if _, err := TopoOrder(g); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		for _, s := range []*Schedule{g.Prefill, g.Decode} {
			if err := VerifySchedule(g, s); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// verifyIndices checks what the executor's bounds rest on: the executor
// checks every call's token ids against Params.NVocab, positions against
// Params.NCtx and output rows against the batch (Params.CheckBatch), so
// every value a kernel indexes with them must have exactly that many rows.
// The graph inputs are i32 vectors of the batch (tokens, positions) and of
// the requested rows (out_ids); no other i32 value may exist; get_rows by
// token ids reads a table of n_vocab rows, by output rows a table of the
// batch's rows, never by positions; KV writes and attention index the
// caches, of n_ctx rows, with the positions; the logits are n_vocab wide.
// A plan file whose graph was edited (checksums recomputed) fails here
// instead of reaching a kernel with an index past its buffer.
func verifyIndices(g *Graph) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	p := g.Params
	if p.NVocab <= 0 || p.NCtx <= 0 {
		bad("params: n_vocab %d and n_ctx %d must be positive", p.NVocab, p.NCtx)
		return errs
	}
	if g.Tokens == g.Positions || g.Tokens == g.OutIDs || g.Positions == g.OutIDs {
		bad("tokens, positions and out_ids must be three distinct values")
		return errs
	}
	for _, in := range []struct {
		v *Value
		n Dim
	}{{g.Tokens, DimT}, {g.Positions, DimT}, {g.OutIDs, DimR}} {
		if in.v.Kind != Input || in.v.DType != quant.I32 || !in.v.Shape.Equal(Shape{in.n}) {
			bad("input %s must be an i32 input of shape [%s]", in.v, in.n)
		}
	}
	if !g.Logits.Shape.Equal(Shape{DimR, Dim(p.NVocab)}) {
		bad("logits %s must be [R, n_vocab %d]", g.Logits, p.NVocab)
	}
	for _, v := range g.Values {
		if v.DType == quant.I32 && v != g.Tokens && v != g.Positions && v != g.OutIDs {
			bad("value %s is i32 but not one of the graph's index inputs", v)
		}
		if v.Kind == Input && v != g.Tokens && v != g.Positions && v != g.OutIDs {
			bad("value %s is an input the executor does not fill", v)
		}
		if v.Kind == State && (len(v.Shape) != 2 || v.Shape[0] != Dim(p.NCtx)) {
			bad("cache %s must have n_ctx = %d rows", v, p.NCtx)
		}
	}
	for _, n := range g.Nodes {
		in := n.Inputs
		switch n.Op {
		case OpGetRows:
			if len(in) < 2 || len(in[0].Shape) == 0 {
				continue // checkNode reports it
			}
			switch in[1] {
			case g.Tokens:
				if in[0].Shape[0] != Dim(p.NVocab) {
					bad("node #%d get_rows %q: table %s indexed by token ids must have n_vocab = %d rows", n.ID, n.Name, in[0], p.NVocab)
				}
			case g.OutIDs:
				if in[0].Shape[0] != DimT {
					bad("node #%d get_rows %q: table %s indexed by output rows must have the batch's rows", n.ID, n.Name, in[0])
				}
			default:
				bad("node #%d get_rows %q indexes %s by %s: only token ids and output rows may index a table", n.ID, n.Name, in[0], in[1])
			}
		case OpKVWrite, OpRope:
			if len(in) >= 2 && in[1] != g.Positions {
				bad("node #%d %s %q: its positions operand is %s, not the positions input", n.ID, n.Op, n.Name, in[1])
			}
		case OpAttention:
			if len(in) >= 4 && in[3] != g.Positions {
				bad("node #%d %s %q: its positions operand is %s, not the positions input", n.ID, n.Op, n.Name, in[3])
			}
		}
		for _, e := range n.Epilogues {
			if e.Op == OpRope && e.Arg != g.Positions {
				bad("node #%d %s %q: rope epilogue operand %s is not the positions input", n.ID, n.Op, n.Name, e.Arg)
			}
		}
	}
	return errs
}

func checkNode(n *Node) error {
	in := n.Inputs
	out := n.Outputs[0]
	need := func(k int) error {
		if len(in) < k {
			return fmt.Errorf("has %d inputs, needs %d", len(in), k)
		}
		return nil
	}
	f32 := func(vs ...*Value) error {
		for _, v := range vs {
			if v.DType != quant.F32 {
				return fmt.Errorf("operand %s must be f32", v)
			}
			if len(v.Shape) != 2 {
				return fmt.Errorf("operand %s must be rank 2", v)
			}
		}
		return nil
	}
	i32vec := func(v *Value, n Dim) error {
		if v.DType != quant.I32 || len(v.Shape) != 1 || (n != 0 && v.Shape[0] != n) {
			return fmt.Errorf("operand %s must be i32 [%s]", v, n)
		}
		return nil
	}
	sameAs := func(s Shape) error {
		if !out.Shape.Equal(s) {
			return fmt.Errorf("output shape %s, want %s", out.Shape, s)
		}
		return nil
	}
	broadcast := func(x, w *Value) error {
		if w.Shape.Equal(x.Shape) {
			return nil
		}
		if len(w.Shape) == 1 && w.Shape[0] > 0 && x.Shape.Cols()%int(w.Shape[0]) == 0 {
			return nil
		}
		return fmt.Errorf("operand %s does not broadcast over %s", w, x)
	}
	var err error
	switch n.Op {
	case OpGetRows:
		if err = need(2); err != nil {
			return err
		}
		if len(in[0].Shape) != 2 {
			return fmt.Errorf("table %s must be rank 2", in[0])
		}
		if err = i32vec(in[1], 0); err != nil {
			return err
		}
		return sameAs(Shape{in[1].Shape[0], in[0].Shape[1]})
	case OpRMSNorm, OpSoftmax, OpSiLU:
		if err = need(1); err != nil {
			return err
		}
		if err = f32(in[0]); err != nil {
			return err
		}
		if n.Op == OpRMSNorm {
			if err = checkNorm(n, in[0]); err != nil {
				return err
			}
		}
		return sameAs(in[0].Shape)
	case OpMul, OpAdd, OpRMSNormMul:
		if err = need(2); err != nil {
			return err
		}
		if err = f32(in[0]); err != nil {
			return err
		}
		if in[1].DType != quant.F32 {
			return fmt.Errorf("operand %s must be f32", in[1])
		}
		if err = broadcast(in[0], in[1]); err != nil {
			return err
		}
		if n.Op == OpRMSNormMul {
			if err = checkNorm(n, in[0]); err != nil {
				return err
			}
		}
		return sameAs(in[0].Shape)
	case OpSwiGLU:
		if err = need(2); err != nil {
			return err
		}
		if err = f32(in[0], in[1]); err != nil {
			return err
		}
		if !in[0].Shape.Equal(in[1].Shape) {
			return fmt.Errorf("gate %s and up %s differ in shape", in[0], in[1])
		}
		return sameAs(in[0].Shape)
	case OpMatMul:
		if err = need(2); err != nil {
			return err
		}
		x, w := in[0], in[1]
		if err = f32(x); err != nil {
			return err
		}
		if len(w.Shape) != 2 || w.Shape[1] != x.Shape[1] {
			return fmt.Errorf("weight %s does not match input %s", w, x)
		}
		if bs := w.DType.BlockSize(); bs == 0 || int(w.Shape[1])%bs != 0 {
			return fmt.Errorf("weight %s: row length not a multiple of its block size", w)
		}
		if gr := quant.GroupRows(w.DType); w.DType.PlanOnly() && (gr == 0 || int(w.Shape[0])%gr != 0) {
			return fmt.Errorf("weight %s: %s rows come in groups of %d", w, w.DType, gr)
		}
		if err = sameAs(Shape{x.Shape[0], w.Shape[0]}); err != nil {
			return err
		}
		return checkEpilogues(n)
	case OpRope:
		if err = need(2); err != nil {
			return err
		}
		if err = f32(in[0]); err != nil {
			return err
		}
		if err = i32vec(in[1], in[0].Shape[0]); err != nil {
			return err
		}
		if err = checkRope(n.Attrs, in[0]); err != nil {
			return err
		}
		switch {
		case n.Attrs.RopeFreqs && len(in) != 3:
			return fmt.Errorf("has %d inputs, want 3 (x, positions, frequency factors)", len(in))
		case !n.Attrs.RopeFreqs && len(in) != 2:
			return fmt.Errorf("has %d inputs, want 2 (x, positions) without frequency factors", len(in))
		case n.Attrs.RopeFreqs:
			if err = checkRopeFreqs(n.Attrs, in[2]); err != nil {
				return err
			}
		}
		return sameAs(in[0].Shape)
	case OpKVWrite:
		if err = need(3); err != nil {
			return err
		}
		x, pos, cache := in[0], in[1], in[2]
		if err = f32(x); err != nil {
			return err
		}
		if err = i32vec(pos, x.Shape[0]); err != nil {
			return err
		}
		if cache.Kind != State || len(cache.Shape) != 2 || cache.Shape[1] != x.Shape[1] {
			return fmt.Errorf("cache %s must be state of width %s", cache, x.Shape[1])
		}
		if out.StateOf != cache || out.Kind != State || !out.Shape.Equal(cache.Shape) {
			return fmt.Errorf("output %s must be a new version of %s", out, cache)
		}
		return nil
	case OpAttention:
		if err = need(4); err != nil {
			return err
		}
		q, k, v, pos := in[0], in[1], in[2], in[3]
		if err = f32(q); err != nil {
			return err
		}
		a := n.Attrs
		if a.HeadDim <= 0 || a.NHead <= 0 || a.NHeadKV <= 0 || a.NHead%a.NHeadKV != 0 {
			return fmt.Errorf("bad heads: %d query, %d kv, head_dim %d", a.NHead, a.NHeadKV, a.HeadDim)
		}
		if q.Shape.Cols() != a.NHead*a.HeadDim {
			return fmt.Errorf("q %s is not %d heads of %d", q, a.NHead, a.HeadDim)
		}
		for _, c := range []*Value{k, v} {
			if c.StateOf == nil || c.Shape.Cols() != a.NHeadKV*a.HeadDim {
				return fmt.Errorf("cache %s must be a KVWrite output %d heads of %d wide", c, a.NHeadKV, a.HeadDim)
			}
		}
		if err = i32vec(pos, q.Shape[0]); err != nil {
			return err
		}
		return sameAs(q.Shape)
	}
	return fmt.Errorf("unknown op")
}

func checkNorm(n *Node, x *Value) error {
	if n.Attrs.Eps <= 0 {
		return fmt.Errorf("eps %g must be positive", n.Attrs.Eps)
	}
	if gs := n.Attrs.GroupSize; gs < 0 || (gs > 0 && x.Shape.Cols()%gs != 0) {
		return fmt.Errorf("group size %d does not divide row width %d", gs, x.Shape.Cols())
	}
	return nil
}

func checkRope(a Attrs, x *Value) error {
	if a.HeadDim <= 0 || x.Shape.Cols()%a.HeadDim != 0 {
		return fmt.Errorf("head_dim %d does not divide width %d", a.HeadDim, x.Shape.Cols())
	}
	if a.RopeDims <= 0 || a.RopeDims > a.HeadDim || a.RopeDims%2 != 0 {
		return fmt.Errorf("rope dims %d invalid for head_dim %d", a.RopeDims, a.HeadDim)
	}
	if a.RopeBase <= 0 {
		return fmt.Errorf("rope base %g must be positive", a.RopeBase)
	}
	return nil
}

// checkRopeFreqs checks a rope's frequency factors: an f32 weight of
// RopeDims/2 elements (one per rotated pair).
func checkRopeFreqs(a Attrs, f *Value) error {
	if f == nil || f.Kind != Weight || f.DType != quant.F32 || !f.Shape.Equal(Shape{Dim(a.RopeDims / 2)}) {
		return fmt.Errorf("rope frequency factors %v must be an f32 weight [%d] (rope dims / 2)", f, a.RopeDims/2)
	}
	return nil
}

func checkEpilogues(n *Node) error {
	out := n.Outputs[0]
	for _, e := range n.Epilogues {
		switch e.Op {
		case OpAdd:
			if e.Arg == nil || e.Arg.DType != quant.F32 {
				return fmt.Errorf("add epilogue needs an f32 operand")
			}
			if e.Freqs != nil {
				return fmt.Errorf("add epilogue has frequency factors %s", e.Freqs)
			}
			if !e.Arg.Shape.Equal(out.Shape) && !(len(e.Arg.Shape) == 1 && e.Arg.Shape[0] == out.Shape[1]) {
				return fmt.Errorf("add epilogue operand %s does not match %s", e.Arg, out)
			}
		case OpRope:
			if err := checkRope(e.Attrs, out); err != nil {
				return fmt.Errorf("rope epilogue: %v", err)
			}
			if e.Arg == nil || e.Arg.DType != quant.I32 {
				return fmt.Errorf("rope epilogue needs the positions as its operand")
			}
			if e.Attrs.RopeFreqs {
				if err := checkRopeFreqs(e.Attrs, e.Freqs); err != nil {
					return fmt.Errorf("rope epilogue: %v", err)
				}
			} else if e.Freqs != nil {
				return fmt.Errorf("rope epilogue has frequency factors %s but not the RopeFreqs attribute", e.Freqs)
			}
		default:
			return fmt.Errorf("unsupported epilogue %s", e.Op)
		}
	}
	return nil
}

// TopoOrder returns the nodes in a dataflow order that is stable across runs
// (gonum's topo.SortStabilized, ties broken by node ID), or an error naming
// the nodes of a cycle.
func TopoOrder(g *Graph) ([]*Node, error) {
	dg := simple.NewDirectedGraph()
	for _, n := range g.Nodes {
		dg.AddNode(simple.Node(n.ID))
	}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			if p := in.Producer; p != nil && p != n && dg.Node(int64(p.ID)) != nil {
				if !dg.HasEdgeFromTo(int64(p.ID), int64(n.ID)) {
					dg.SetEdge(simple.Edge{F: simple.Node(p.ID), T: simple.Node(n.ID)})
				}
			} else if p == n {
				return nil, fmt.Errorf("node #%d %s reads its own output", n.ID, n.Op)
			}
		}
	}
	sorted, err := topo.SortStabilized(dg, nil)
	if err != nil {
		return nil, fmt.Errorf("graph has a cycle: %v", err)
	}
	order := make([]*Node, len(sorted))
	for i, gn := range sorted {
		order[i] = g.Nodes[gn.ID()]
	}
	return order, nil
}
