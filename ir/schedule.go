package ir

import "fmt"

// Split says how the work of one scheduled node is divided among the
// workers of its fused group.
type Split uint8

// Splits.
const (
	// Redundant: every worker computes the whole output into its own private
	// scratch (cheap ops whose output every worker needs, e.g. the RMSNorm in
	// front of a row-split mat-mul: recomputing it saves a barrier).
	Redundant Split = iota
	// SplitCols: the output's columns are divided into the group's Units; a
	// worker computes its units' columns for every token row. Nodes in one
	// group that split by columns share the unit partition, so a node may
	// read another's output in the same group without a barrier.
	SplitCols
	// SplitRows: the token rows are divided among the workers.
	SplitRows
	// Single: worker 0 does it all (tiny ops, copies).
	Single
)

// String formats the Split for errors and dumps.
func (s Split) String() string {
	switch s {
	case Redundant:
		return "redundant"
	case SplitCols:
		return "cols"
	case SplitRows:
		return "rows"
	case Single:
		return "single"
	}
	return fmt.Sprintf("split(%d)", uint8(s))
}

// Step is one node's place in a group.
type Step struct {
	Node  int   // index into Graph.Nodes
	Split Split // how workers share it
}

// Group is a set of steps that workers run back to back with no barrier in
// between; the group ends in exactly one pool barrier.
type Group struct {
	Steps []Step
	// Units is the number of partition units for SplitCols steps (e.g. KV
	// heads, or blocks of output columns). Each SplitCols step's width is a
	// multiple of Units: a unit is Width/Units columns of that step.
	Units int
}

// Schedule is an execution order of a graph's nodes as fused groups.
type Schedule struct {
	Name   string // "prefill" or "decode"
	Groups []Group
}

// Barriers is the number of pool barriers one run of the schedule pays:
// one between consecutive groups (the last group ends in the pool's join,
// where the caller waits for the workers to finish).
func (s *Schedule) Barriers() int { return max(0, len(s.Groups)-1) }

// LocalRead reports whether node n, scheduled with split cs, may read its
// input v produced in the same group with split ps, i.e. with no barrier in
// between: every worker then finds the part of v it needs in what it
// computed itself.
func LocalRead(ps, cs Split, n *Node, v *Value) bool {
	return ps == Redundant ||
		(ps == SplitCols && cs == SplitCols && colLocal(n, v)) ||
		(ps == SplitRows && cs == SplitRows && rowLocal(n, v)) ||
		(ps == Single && cs == Single)
}

// colLocal reports whether node n, split by columns, needs only the same
// unit's columns of its input v (so producer and consumer may share a group).
func colLocal(n *Node, v *Value) bool {
	switch n.Op {
	case OpAdd, OpMul, OpSwiGLU, OpSiLU, OpRope, OpKVWrite:
		return true
	case OpRMSNorm, OpRMSNormMul:
		return n.Attrs.GroupSize > 0 && n.Inputs[0] == v
	case OpAttention:
		return true // by KV head: q, k and v columns of the same heads
	case OpMatMul:
		// Only epilogue operands are column-local; the input is reduced over.
		return v != n.Inputs[0] && v != n.Inputs[1]
	}
	return false
}

// rowLocal reports whether node n, split by token rows, needs only the same
// rows of its input v.
func rowLocal(n *Node, v *Value) bool {
	switch n.Op {
	case OpAttention, OpGetRows:
		return false
	case OpMatMul:
		return v != n.Inputs[1]
	}
	return true
}

// VerifySchedule checks that s schedules every node of g exactly once, in an
// order that respects dataflow, and that a node reading a value produced in
// its own group (no barrier in between) can do so under both splits: the
// producer is redundant, or both split the same way and the consumer only
// needs the producer's part of the value.
func VerifySchedule(g *Graph, s *Schedule) error {
	if s == nil {
		return nil
	}
	seen := make([]bool, len(g.Nodes))
	doneGroup := make(map[*Value]int) // value -> group that produced it
	producedBy := make(map[*Value]Split)
	for gi, grp := range s.Groups {
		if len(grp.Steps) == 0 {
			return fmt.Errorf("%s schedule: group %d is empty", s.Name, gi)
		}
		for _, st := range grp.Steps {
			if st.Node < 0 || st.Node >= len(g.Nodes) {
				return fmt.Errorf("%s schedule: group %d names node %d of %d", s.Name, gi, st.Node, len(g.Nodes))
			}
			if seen[st.Node] {
				return fmt.Errorf("%s schedule: node #%d scheduled twice", s.Name, st.Node)
			}
			seen[st.Node] = true
			n := g.Nodes[st.Node]
			if st.Split == SplitCols {
				if grp.Units <= 0 || n.Outputs[0].Shape.Cols()%grp.Units != 0 {
					return fmt.Errorf("%s schedule: node #%d %s width %d is not a multiple of group %d's %d units", s.Name, n.ID, n.Op, n.Outputs[0].Shape.Cols(), gi, grp.Units)
				}
			}
			for _, in := range n.Inputs {
				if in.Producer == nil {
					continue
				}
				pg, ok := doneGroup[in]
				if !ok {
					return fmt.Errorf("%s schedule: node #%d %s reads %s before it is computed", s.Name, n.ID, n.Op, in)
				}
				ps := producedBy[in]
				if pg != gi {
					if ps == Redundant {
						return fmt.Errorf("%s schedule: node #%d %s in group %d reads %s, which group %d computed redundantly into worker-private scratch (only readable inside that group)", s.Name, n.ID, n.Op, gi, in, pg)
					}
					continue
				}
				if !LocalRead(ps, st.Split, n, in) {
					return fmt.Errorf("%s schedule: group %d: node #%d %s (%s) reads %s produced in the same group (%s) without a barrier", s.Name, gi, n.ID, n.Op, st.Split, in, ps)
				}
			}
			doneGroup[n.Outputs[0]] = gi
			producedBy[n.Outputs[0]] = st.Split
		}
	}
	for i, ok := range seen {
		if !ok {
			return fmt.Errorf("%s schedule: node #%d %s is not scheduled", s.Name, i, g.Nodes[i].Op)
		}
	}
	return nil
}
