package passes

import (
	"fmt"

	"github.com/minfer/minfer/ir"
)

// Schedule modes.
const (
	modeDecode  = "decode"
	modePrefill = "prefill"
)

// group builds the decode and prefill schedules. Nodes are taken in graph
// order and appended to the current fused group as long as every input
// produced inside the group can be read without a barrier under the chosen
// splits (ir.LocalRead); otherwise the group is closed (one pool barrier)
// and a new one started. Split choices:
//   - mat-muls split by output columns; their epilogues, bias/rope/kv-write
//     and per-head norms follow on the same columns, and attention splits by
//     KV head, so Q/K/V projection, RoPE, cache write and attention for a
//     worker's heads run back to back with no barrier;
//   - whole-row RMSNorms feeding mat-muls are computed redundantly by every
//     worker in decode (one token: cheaper than a barrier) and split by token
//     rows in prefill (a barrier is cheap next to T rows of work);
//   - row selections (embedding lookup, output rows) split by rows.
//
// For a llama-style layer this gives four groups per decode token: up to
// attention, the attention output projection (+residual), the norm and
// gate/up projections with SwiGLU, and the down projection (+residual); plus
// one for the output head. The last group ends in the pool's join, so a
// decode token pays 4 barriers per layer.
func group(g *ir.Graph, _ *Options) error {
	for _, n := range g.Nodes {
		n.Group = -1
	}
	dec, err := buildSchedule(g, modeDecode)
	if err != nil {
		return err
	}
	pre, err := buildSchedule(g, modePrefill)
	if err != nil {
		return err
	}
	g.Decode, g.Prefill = dec, pre
	// Node.Group records the decode grouping (what dump-graph draws).
	for gi, grp := range dec.Groups {
		for _, st := range grp.Steps {
			g.Nodes[st.Node].Group = gi
		}
	}
	if err := ir.VerifySchedule(g, dec); err != nil {
		return err
	}
	return ir.VerifySchedule(g, pre)
}

// headBound reports whether a column split of n must keep whole KV heads
// together.
func headBound(n *ir.Node) bool {
	switch n.Op {
	case ir.OpAttention, ir.OpRope, ir.OpKVWrite:
		return true
	case ir.OpRMSNorm, ir.OpRMSNormMul:
		return n.Attrs.GroupSize > 0
	case ir.OpMatMul:
		for _, e := range n.Epilogues {
			if e.Op == ir.OpRope {
				return true
			}
		}
	}
	return false
}

// redundantOK reports whether every reader of n's result is a whole-row
// norm or a mat-mul (input or epilogue operand): readers the grouping keeps
// in n's group.
func redundantOK(n *ir.Node, cons map[*ir.Value][]*ir.Node) bool {
	rs := cons[n.Outputs[0]]
	if len(rs) == 0 {
		return false
	}
	for _, r := range rs {
		switch {
		case r.Op == ir.OpMatMul && r.Inputs[1] != n.Outputs[0]:
		case (r.Op == ir.OpRMSNorm || r.Op == ir.OpRMSNormMul) && r.Attrs.GroupSize == 0:
		default:
			return false
		}
	}
	return true
}

func chooseSplit(n *ir.Node, mode string, cons map[*ir.Value][]*ir.Node, forceRows map[*ir.Node]bool) ir.Split {
	switch n.Op {
	case ir.OpGetRows:
		// In decode a lookup read only by the norm or mat-muls of its own
		// group is computed redundantly (one row), so it needs no barrier of
		// its own; in prefill lookups split by rows.
		if mode == modeDecode && !forceRows[n] && redundantOK(n, cons) {
			return ir.Redundant
		}
		return ir.SplitRows
	case ir.OpRMSNorm, ir.OpRMSNormMul:
		if n.Attrs.GroupSize > 0 {
			return ir.SplitCols
		}
		if mode == modeDecode {
			return ir.Redundant
		}
		return ir.SplitRows
	case ir.OpSoftmax:
		return ir.SplitRows
	}
	return ir.SplitCols
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// unitCount is how many column units n's output may be cut into.
func unitCount(g *ir.Graph, n *ir.Node) int {
	if headBound(n) {
		return g.Params.NHeadKV
	}
	w := n.Outputs[0].Shape.Cols()
	// Blocks of 16 columns keep each worker's rows of a weight contiguous
	// and its output writes off other workers' cache lines.
	for _, b := range []int{16, 8, 4, 2} {
		if w%b == 0 {
			return w / b
		}
	}
	return w
}

// buildSchedule groups the nodes for one mode. A lookup chosen to run
// redundantly whose result turns out to be read in a later group is demoted
// to a row split and the grouping redone.
func buildSchedule(g *ir.Graph, mode string) (*ir.Schedule, error) {
	forceRows := make(map[*ir.Node]bool)
	for {
		s, bad := tryGroups(g, mode, forceRows)
		if bad == nil {
			return s, nil
		}
		if bad.Op != ir.OpGetRows || forceRows[bad] {
			return nil, fmt.Errorf("%s schedule: %s is computed redundantly but read outside its group", mode, bad.Outputs[0])
		}
		forceRows[bad] = true
	}
}

// tryGroups builds a schedule; it returns the producer of a redundant value
// read outside its group, if any.
func tryGroups(g *ir.Graph, mode string, forceRows map[*ir.Node]bool) (*ir.Schedule, *ir.Node) {
	s := &ir.Schedule{Name: mode}
	cons := g.Consumers()
	var cur ir.Group
	where := make(map[*ir.Value]ir.Split) // split of values produced in cur
	closeGroup := func() {
		if len(cur.Steps) > 0 {
			if cur.Units == 0 {
				cur.Units = 1
			}
			s.Groups = append(s.Groups, cur)
		}
		cur = ir.Group{}
		clear(where)
	}
	for i, n := range g.Nodes {
		sp := chooseSplit(n, mode, cons, forceRows)
		fits := true
		for _, in := range n.Inputs {
			if ps, ok := where[in]; ok && !ir.LocalRead(ps, sp, n, in) {
				fits = false
				break
			}
		}
		if !fits {
			closeGroup()
		}
		if sp == ir.SplitCols {
			cur.Units = gcd(cur.Units, unitCount(g, n))
		}
		cur.Steps = append(cur.Steps, ir.Step{Node: i, Split: sp})
		where[n.Outputs[0]] = sp
	}
	closeGroup()
	// A redundant (worker-private) result must be consumed in its own group.
	groupOf := make(map[*ir.Value]int)
	for gi, grp := range s.Groups {
		for _, st := range grp.Steps {
			n := g.Nodes[st.Node]
			for _, in := range n.Inputs {
				if pg, ok := groupOf[in]; ok && pg != gi {
					return nil, in.Producer
				}
			}
			if st.Split == ir.Redundant {
				groupOf[n.Outputs[0]] = gi
			}
		}
	}
	return s, nil
}
