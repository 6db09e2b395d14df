package serve

import (
	"fmt"

	"github.com/minfer/minfer/exec"
)

// ExecEngine is an Engine of one slot over a single-sequence exec.Model:
// a batch is one Seq, evaluated with Model.Eval.
type ExecEngine struct{ M *exec.Model }

// EvalSeqs evaluates the one sequence of slot 0.
func (e ExecEngine) EvalSeqs(seqs []Seq) ([][]float32, error) {
	if len(seqs) != 1 || seqs[0].Slot != 0 {
		return nil, fmt.Errorf("serve: the exec engine has one slot, got a batch of %d sequences", len(seqs))
	}
	s := seqs[0]
	lg, err := e.M.Eval(s.Tokens, s.Positions, []int32{int32(len(s.Tokens) - 1)})
	if err != nil || !s.Logits {
		return [][]float32{nil}, err
	}
	return [][]float32{lg}, nil
}

// Slots is 1.
func (e ExecEngine) Slots() int { return 1 }

// SlotContext is the model's context.
func (e ExecEngine) SlotContext() int { return e.M.Graph().Params.NCtx }

// TruncateSlot truncates the model's KV cache.
func (e ExecEngine) TruncateSlot(slot, n int) error { return e.M.Truncate(n) }
