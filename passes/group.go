package passes

import (
	"fmt"

	"minfer/ir"
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
// For a llama-style layer this gives four barriers per decode token: after
// attention, after the attention output projection (+residual), after the
// SwiGLU, and after the down projection (+residual).
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

func chooseSplit(n *ir.Node, mode string) ir.Split {
	switch n.Op {
	case ir.OpGetRows:
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

func buildSchedule(g *ir.Graph, mode string) (*ir.Schedule, error) {
	s := &ir.Schedule{Name: mode}
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
		sp := chooseSplit(n, mode)
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
					return nil, fmt.Errorf("%s schedule: %s is computed redundantly in group %d but read by node #%d in group %d", mode, in, pg, n.ID, gi)
				}
			}
			if st.Split == ir.Redundant {
				groupOf[n.Outputs[0]] = gi
			}
		}
	}
	return s, nil
}
