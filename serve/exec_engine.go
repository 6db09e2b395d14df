package serve

import "github.com/minfer/minfer/exec"

// ExecEngine is the Engine over a compiled exec.Model: one slot per KV
// region of the plan (minferc compile --slots N), a batch evaluated in one
// forward pass with Model.EvalSeqs, each sequence bit-identical to running
// alone.
type ExecEngine struct {
	M   *exec.Model
	buf []exec.Seq
}

// EvalSeqs evaluates every Seq of the batch in one forward pass.
func (e *ExecEngine) EvalSeqs(seqs []Seq) ([][]float32, error) {
	e.buf = e.buf[:0]
	for _, s := range seqs {
		e.buf = append(e.buf, exec.Seq{Slot: s.Slot, Tokens: s.Tokens, Positions: s.Positions, Logits: s.Logits})
	}
	return e.M.EvalSeqs(e.buf)
}

// Slots is the plan's number of KV slots.
func (e *ExecEngine) Slots() int { return e.M.Slots() }

// SlotContext is the positions each slot holds.
func (e *ExecEngine) SlotContext() int { return e.M.SlotContext() }

// TruncateSlot forgets a slot's positions from n on.
func (e *ExecEngine) TruncateSlot(slot, n int) error { return e.M.TruncateSlot(slot, n) }
