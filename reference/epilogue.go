package reference

import "github.com/minfer/minfer/ir"

// epilogues applies a fused node's epilogues to its output, in order, with
// the same arithmetic as the standalone ops they replaced.
func (e *env) epilogues(n *ir.Node, y []float32) []float32 {
	for _, ep := range n.Epilogues {
		switch ep.Op {
		case ir.OpAdd:
			y = add(y, e.floats(ep.Arg))
		case ir.OpRope:
			var freqs []float32
			if ep.Freqs != nil {
				freqs = e.floats(ep.Freqs)
			}
			y = rope(y, e.i[ep.Arg], freqs, ep.Attrs)
		}
	}
	return y
}
