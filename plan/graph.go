package plan

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/minfer/minfer/ir"
	"github.com/minfer/minfer/quant"
)

// The graph section is the JSON encoding of graphJSON: values and nodes are
// listed in graph order, a value's ID is its index in Values, a node's its
// index in Nodes, and every reference (node inputs and outputs, epilogue
// operands, StateOf, the graph's inputs and logits, schedule steps) is such
// an index, -1 for none. Ops, kinds, element types and splits are written by
// name, so renumbering an enum does not silently change a plan's meaning.

type graphJSON struct {
	Arch      string
	Params    ir.Params
	Values    []valueJSON
	Nodes     []nodeJSON
	Tokens    int
	Positions int
	OutIDs    int
	Logits    int
	Prefill   *scheduleJSON `json:",omitempty"`
	Decode    *scheduleJSON `json:",omitempty"`
}

type valueJSON struct {
	Name    string
	Kind    string
	DType   string
	Shape   []int64
	Source  string `json:",omitempty"`
	StateOf int    // value index, -1 for none
}

type nodeJSON struct {
	Op        string
	Name      string
	Inputs    []int
	Outputs   []int
	Attrs     ir.Attrs
	Epilogues []epilogueJSON `json:",omitempty"`
	Kernel    string
	Layer     int
	Group     int
}

type epilogueJSON struct {
	Op  string
	Arg int // value index, -1 for none
	// Freqs is a rope epilogue's frequency factors (value index), absent
	// without them: plans without factors keep their bytes, and an older
	// reader refuses one with them (unknown field).
	Freqs *int `json:",omitempty"`
	Attrs ir.Attrs
}

type scheduleJSON struct {
	Name   string
	Groups []groupJSON
}

type groupJSON struct {
	Units int
	Steps []stepJSON
}

type stepJSON struct {
	Node  int
	Split string
}

var kindNames = []ir.Kind{ir.Activation, ir.Input, ir.Weight, ir.State}

var splitNames = []ir.Split{ir.Redundant, ir.SplitCols, ir.SplitRows, ir.Single}

func parseKind(s string) (ir.Kind, bool) {
	for _, k := range kindNames {
		if k.String() == s {
			return k, true
		}
	}
	return 0, false
}

func parseSplit(s string) (ir.Split, bool) {
	for _, k := range splitNames {
		if k.String() == s {
			return k, true
		}
	}
	return 0, false
}

// maxRank bounds the rank of a value's shape.
const maxRank = 4

// encodeGraph serializes g. Its values must carry dense IDs (ir.Verify
// checks that).
func encodeGraph(g *ir.Graph) ([]byte, error) {
	ref := func(v *ir.Value) (int, error) {
		if v == nil {
			return -1, nil
		}
		if v.ID < 0 || v.ID >= len(g.Values) || g.Values[v.ID] != v {
			return 0, fmt.Errorf("value %s is not in the graph", v)
		}
		return v.ID, nil
	}
	refs := func(vs []*ir.Value) ([]int, error) {
		out := make([]int, len(vs))
		for i, v := range vs {
			if v == nil {
				return nil, fmt.Errorf("nil value reference")
			}
			id, err := ref(v)
			if err != nil {
				return nil, err
			}
			out[i] = id
		}
		return out, nil
	}
	gj := graphJSON{Arch: g.Arch, Params: g.Params}
	var err error
	for _, v := range g.Values {
		vj := valueJSON{Name: v.Name, Kind: v.Kind.String(), DType: v.DType.String(), Source: v.Source}
		for _, d := range v.Shape {
			vj.Shape = append(vj.Shape, int64(d))
		}
		if vj.StateOf, err = ref(v.StateOf); err != nil {
			return nil, err
		}
		gj.Values = append(gj.Values, vj)
	}
	for _, n := range g.Nodes {
		nj := nodeJSON{Op: n.Op.String(), Name: n.Name, Attrs: n.Attrs, Kernel: n.Kernel, Layer: n.Layer, Group: n.Group}
		if nj.Inputs, err = refs(n.Inputs); err != nil {
			return nil, fmt.Errorf("node #%d: %w", n.ID, err)
		}
		if nj.Outputs, err = refs(n.Outputs); err != nil {
			return nil, fmt.Errorf("node #%d: %w", n.ID, err)
		}
		for _, e := range n.Epilogues {
			ej := epilogueJSON{Op: e.Op.String(), Attrs: e.Attrs}
			if ej.Arg, err = ref(e.Arg); err != nil {
				return nil, fmt.Errorf("node #%d epilogue: %w", n.ID, err)
			}
			if e.Freqs != nil {
				fi, err := ref(e.Freqs)
				if err != nil {
					return nil, fmt.Errorf("node #%d epilogue: %w", n.ID, err)
				}
				ej.Freqs = &fi
			}
			nj.Epilogues = append(nj.Epilogues, ej)
		}
		gj.Nodes = append(gj.Nodes, nj)
	}
	for _, p := range []struct {
		dst *int
		v   *ir.Value
	}{{&gj.Tokens, g.Tokens}, {&gj.Positions, g.Positions}, {&gj.OutIDs, g.OutIDs}, {&gj.Logits, g.Logits}} {
		if *p.dst, err = ref(p.v); err != nil {
			return nil, err
		}
	}
	gj.Prefill = encodeSchedule(g.Prefill)
	gj.Decode = encodeSchedule(g.Decode)
	return json.Marshal(gj)
}

func encodeSchedule(s *ir.Schedule) *scheduleJSON {
	if s == nil {
		return nil
	}
	sj := &scheduleJSON{Name: s.Name, Groups: make([]groupJSON, len(s.Groups))}
	for i, grp := range s.Groups {
		gj := groupJSON{Units: grp.Units, Steps: make([]stepJSON, len(grp.Steps))}
		for j, st := range grp.Steps {
			gj.Steps[j] = stepJSON{Node: st.Node, Split: st.Split.String()}
		}
		sj.Groups[i] = gj
	}
	return sj
}

// decodeJSON decodes strictly: unknown fields and trailing data are errors,
// so a plan written by a different build with a changed structure is
// refused instead of being half understood.
func decodeJSON(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}

// decodeGraph rebuilds an ir.Graph from its section, bounds-checking every
// reference. The result is not yet verified (see verifyGraph).
func decodeGraph(data []byte) (*ir.Graph, error) {
	var gj graphJSON
	if err := decodeJSON(data, &gj); err != nil {
		return nil, err
	}
	g := &ir.Graph{Arch: gj.Arch, Params: gj.Params}
	nv := len(gj.Values)
	g.Values = make([]*ir.Value, nv)
	for i := range gj.Values {
		g.Values[i] = &ir.Value{ID: i}
	}
	val := func(id int, what string) (*ir.Value, error) {
		if id == -1 {
			return nil, nil
		}
		if id < 0 || id >= nv {
			return nil, fmt.Errorf("%s names value %d of %d", what, id, nv)
		}
		return g.Values[id], nil
	}
	for i, vj := range gj.Values {
		v := g.Values[i]
		v.Name, v.Source = vj.Name, vj.Source
		k, ok := parseKind(vj.Kind)
		if !ok {
			return nil, fmt.Errorf("value %d: unknown kind %q", i, vj.Kind)
		}
		v.Kind = k
		t, ok := quant.ParseType(vj.DType)
		if !ok {
			return nil, fmt.Errorf("value %d: unknown element type %q", i, vj.DType)
		}
		v.DType = t
		if len(vj.Shape) == 0 || len(vj.Shape) > maxRank {
			return nil, fmt.Errorf("value %d %q: rank %d (1 to %d allowed)", i, vj.Name, len(vj.Shape), maxRank)
		}
		v.Shape = make(ir.Shape, len(vj.Shape))
		for j, d := range vj.Shape {
			if d < 0 && ir.Dim(d) != ir.DimT && ir.Dim(d) != ir.DimR {
				return nil, fmt.Errorf("value %d %q: bad dimension %d", i, vj.Name, d)
			}
			v.Shape[j] = ir.Dim(d)
		}
		so, err := val(vj.StateOf, fmt.Sprintf("value %d StateOf", i))
		if err != nil {
			return nil, err
		}
		// A new state version always follows the value it versions, which
		// also rules out StateOf cycles.
		if so != nil && so.ID >= i {
			return nil, fmt.Errorf("value %d: StateOf names value %d, which does not precede it", i, so.ID)
		}
		v.StateOf = so
	}
	vals := func(ids []int, what string) ([]*ir.Value, error) {
		out := make([]*ir.Value, len(ids))
		for i, id := range ids {
			v, err := val(id, what)
			if err != nil {
				return nil, err
			}
			if v == nil {
				return nil, fmt.Errorf("%s names no value", what)
			}
			out[i] = v
		}
		return out, nil
	}
	g.Nodes = make([]*ir.Node, len(gj.Nodes))
	for i, nj := range gj.Nodes {
		op, ok := ir.ParseOp(nj.Op)
		if !ok {
			return nil, fmt.Errorf("node %d: unknown op %q", i, nj.Op)
		}
		n := &ir.Node{ID: i, Op: op, Name: nj.Name, Attrs: nj.Attrs, Kernel: nj.Kernel, Layer: nj.Layer, Group: nj.Group}
		var err error
		if n.Inputs, err = vals(nj.Inputs, fmt.Sprintf("node %d input", i)); err != nil {
			return nil, err
		}
		if len(nj.Outputs) != 1 {
			return nil, fmt.Errorf("node %d %s has %d outputs, want 1", i, op, len(nj.Outputs))
		}
		if n.Outputs, err = vals(nj.Outputs, fmt.Sprintf("node %d output", i)); err != nil {
			return nil, err
		}
		out := n.Outputs[0]
		if out.Producer != nil {
			return nil, fmt.Errorf("value %d produced by nodes %d and %d", out.ID, out.Producer.ID, i)
		}
		if out.Kind != ir.Activation && out.StateOf == nil {
			return nil, fmt.Errorf("node %d %s outputs %s value %d", i, op, out.Kind, out.ID)
		}
		out.Producer = n
		for _, ej := range nj.Epilogues {
			eop, ok := ir.ParseOp(ej.Op)
			if !ok {
				return nil, fmt.Errorf("node %d: unknown epilogue op %q", i, ej.Op)
			}
			arg, err := val(ej.Arg, fmt.Sprintf("node %d epilogue", i))
			if err != nil {
				return nil, err
			}
			ep := ir.Epilogue{Op: eop, Arg: arg, Attrs: ej.Attrs}
			if ej.Freqs != nil {
				if ep.Freqs, err = val(*ej.Freqs, fmt.Sprintf("node %d epilogue frequency factors", i)); err != nil {
					return nil, err
				}
			}
			n.Epilogues = append(n.Epilogues, ep)
		}
		g.Nodes[i] = n
	}
	var err error
	for _, p := range []struct {
		dst  **ir.Value
		id   int
		what string
	}{{&g.Tokens, gj.Tokens, "tokens"}, {&g.Positions, gj.Positions, "positions"}, {&g.OutIDs, gj.OutIDs, "out_ids"}, {&g.Logits, gj.Logits, "logits"}} {
		if *p.dst, err = val(p.id, p.what); err != nil {
			return nil, err
		}
	}
	if g.Prefill, err = decodeSchedule(gj.Prefill, len(g.Nodes)); err != nil {
		return nil, fmt.Errorf("prefill schedule: %w", err)
	}
	if g.Decode, err = decodeSchedule(gj.Decode, len(g.Nodes)); err != nil {
		return nil, fmt.Errorf("decode schedule: %w", err)
	}
	return g, nil
}

func decodeSchedule(sj *scheduleJSON, nodes int) (*ir.Schedule, error) {
	if sj == nil {
		return nil, nil
	}
	s := &ir.Schedule{Name: sj.Name, Groups: make([]ir.Group, len(sj.Groups))}
	for i, gj := range sj.Groups {
		grp := ir.Group{Units: gj.Units, Steps: make([]ir.Step, len(gj.Steps))}
		for j, st := range gj.Steps {
			sp, ok := parseSplit(st.Split)
			if !ok {
				return nil, fmt.Errorf("group %d step %d: unknown split %q", i, j, st.Split)
			}
			if st.Node < 0 || st.Node >= nodes {
				return nil, fmt.Errorf("group %d step %d names node %d of %d", i, j, st.Node, nodes)
			}
			grp.Steps[j] = ir.Step{Node: st.Node, Split: sp}
		}
		s.Groups[i] = grp
	}
	return s, nil
}

// verifyGraph runs ir.Verify (schedules included), turning a panic of the
// verifier on malformed input into an error.
func verifyGraph(g *ir.Graph) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("verifier failed on malformed graph: %v", r)
		}
	}()
	if g.Prefill == nil || g.Decode == nil {
		return fmt.Errorf("graph lacks its prefill or decode schedule (the group pass did not run)")
	}
	if g.Prefill.Name != "prefill" || g.Decode.Name != "decode" {
		return fmt.Errorf("schedules are named %q and %q, want prefill and decode", g.Prefill.Name, g.Decode.Name)
	}
	return ir.Verify(g)
}
