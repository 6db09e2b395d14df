package exec

import (
	"fmt"
)

// Several sequences in one forward pass.
//
// A plan compiled with --slots N holds N KV regions ("slots") of n_ctx
// positions each, slot k at cache rows k·n_ctx … k·n_ctx+n_ctx-1 of every
// layer's K and V caches. EvalSeqs concatenates the token rows of several
// sequences into one batch: every mat-mul is one GEMM over all the rows
// (the weights are read once for all sequences), a KV write stores each
// row at its slot's row for its position, and attention runs once per
// sequence over its own slot only, with the arithmetic the sequence would
// get alone (see the attention binder). Every other op is row-local, and
// the kernels compute a row the same way whatever the other rows (the
// GEMMs are bit-identical to the row dots), so each sequence's logits are
// bit-identical to evaluating it alone.

// Seq is one sequence's share of a batched step.
type Seq struct {
	// Slot is the KV region to read and write: 0 <= Slot < Slots().
	Slot int
	// Tokens are the tokens to append for this sequence (a prompt chunk or
	// one decode token).
	Tokens []int32
	// Positions are their positions in the sequence: consecutive, the
	// first equal to SlotFilled(Slot).
	Positions []int32
	// Logits asks for the logits of the last token of this Seq.
	Logits bool
}

// multiState holds EvalSeqs' buffers, reused from call to call.
type multiState struct {
	tokens, pos, kvRow, outIDs []int32
	next                       []int       // per Seq: tokens already run
	out                        [][]float32 // per slot: its logits buffer
	res                        [][]float32
	// inArena marks the results (by Seq) that are still the pass's logits
	// rows in the arena, not yet copied into their slot's buffer.
	inArena []bool
}

// Slots is the number of KV regions (sequences) in the plan.
func (m *Model) Slots() int { return len(m.filled) }

// SlotContext is the number of positions each slot holds (n_ctx).
func (m *Model) SlotContext() int { return m.nctx }

// SlotFilled is the number of positions slot holds (0 for a slot out of
// range).
func (m *Model) SlotFilled(slot int) int {
	if slot < 0 || slot >= len(m.filled) {
		return 0
	}
	return m.filled[slot]
}

// TruncateSlot keeps the first n positions of a slot and forgets the rest:
// its next Seq continues at position n; n = 0 frees the slot for a new
// sequence. Nothing is cleared (see Reset).
func (m *Model) TruncateSlot(slot, n int) error {
	if slot < 0 || slot >= len(m.filled) {
		return fmt.Errorf("slot %d out of range: the plan has %d slot(s) (0..%d)", slot, len(m.filled), len(m.filled)-1)
	}
	if n < 0 || n > m.filled[slot] {
		return fmt.Errorf("truncate slot %d to %d positions: it holds %d", slot, n, m.filled[slot])
	}
	m.filled[slot] = n
	return nil
}

// checkSeqs validates a batch of sequences before anything runs.
func (m *Model) checkSeqs(seqs []Seq) error {
	if len(seqs) == 0 {
		return fmt.Errorf("no sequences")
	}
	p := m.g.Params
	for i, s := range seqs {
		if s.Slot < 0 || s.Slot >= len(m.filled) {
			return fmt.Errorf("seq %d: slot %d out of range: the plan has %d slot(s) (0..%d; compile with --slots for more)", i, s.Slot, len(m.filled), len(m.filled)-1)
		}
		for j := 0; j < i; j++ {
			if seqs[j].Slot == s.Slot {
				return fmt.Errorf("seq %d: slot %d is already used by seq %d of this step", i, s.Slot, j)
			}
		}
		T := len(s.Tokens)
		if T == 0 {
			return fmt.Errorf("seq %d (slot %d): no tokens", i, s.Slot)
		}
		if len(s.Positions) != T {
			return fmt.Errorf("seq %d (slot %d): %d positions for %d tokens", i, s.Slot, len(s.Positions), T)
		}
		f := m.filled[s.Slot]
		if int(s.Positions[0]) != f {
			return fmt.Errorf("seq %d (slot %d): first position %d, but the slot holds %d positions: a sequence continues at its slot's filled length (TruncateSlot to go back)", i, s.Slot, s.Positions[0], f)
		}
		if last := f + T - 1; last >= m.nctx {
			return fmt.Errorf("seq %d (slot %d): positions %d..%d go beyond the slot's context of %d positions (0..%d)", i, s.Slot, f, last, m.nctx, m.nctx-1)
		}
		if err := p.CheckBatch(f, s.Tokens, s.Positions, nil); err != nil {
			return fmt.Errorf("seq %d (slot %d): %w", i, s.Slot, err)
		}
	}
	return nil
}

// EvalSeqs runs all seqs in one forward pass: their token rows are
// concatenated, every mat-mul is one GEMM over all rows, and the attention
// of each row reads only its own slot's KV region. It returns one logits
// slice per Seq (n_vocab floats; nil when Logits is false), valid until the
// next call of EvalSeqs or Eval (a step of one pass, every decode step,
// returns the pass's logits rows in place, uncopied). Each sequence's logits are bit-identical to evaluating it alone
// (Eval on a fresh one-slot model fed the same Tokens per call), for any mix
// of sequences and any thread count.
//
// A batch larger than the plan's (more token rows than --max-batch, or more
// sequences asking for logits than a pass returns) runs as several passes:
// a Seq longer than the batch is cut into chunks of the batch size, as Eval
// cuts it, and each pass takes whole chunks of as many sequences as fit,
// in order. Nothing runs when any Seq is invalid (slot out of range or used
// twice, positions not continuing the slot or beyond its context, tokens
// outside the vocabulary).
func (m *Model) EvalSeqs(seqs []Seq) ([][]float32, error) {
	if m.broken != nil {
		return nil, m.broken
	}
	if err := m.checkSeqs(seqs); err != nil {
		return nil, err
	}
	ms := &m.multi
	nv := m.g.Params.NVocab
	if ms.out == nil {
		ms.out = make([][]float32, len(m.filled))
		ms.tokens = make([]int32, 0, m.maxTokens)
		ms.pos = make([]int32, 0, m.maxTokens)
		ms.kvRow = make([]int32, 0, m.maxTokens)
		ms.outIDs = make([]int32, 0, m.maxOut)
	}
	ms.next = ms.next[:0]
	for range seqs {
		ms.next = append(ms.next, 0)
	}
	ms.res, ms.inArena = ms.res[:0], ms.inArena[:0]
	for range seqs {
		ms.res = append(ms.res, nil)
		ms.inArena = append(ms.inArena, false)
	}
	chunk := m.maxTokens
	for {
		// One pass: the next chunk of every unfinished sequence that fits.
		tokens, pos, kvRow, outIDs := ms.tokens[:0], ms.pos[:0], ms.kvRow[:0], ms.outIDs[:0]
		m.seqs = m.seqs[:0]
		for i, s := range seqs {
			done := ms.next[i]
			if done == len(s.Tokens) {
				continue
			}
			n := min(chunk, len(s.Tokens)-done)
			last := done+n == len(s.Tokens)
			wantLg := s.Logits && last
			if len(tokens)+n > m.maxTokens || (wantLg && len(outIDs) >= m.maxOut) {
				continue // next pass
			}
			r0 := len(tokens)
			tokens = append(tokens, s.Tokens[done:done+n]...)
			base := int32(s.Slot * m.nctx)
			for _, p := range s.Positions[done : done+n] {
				pos = append(pos, p)
				kvRow = append(kvRow, base+p)
			}
			if wantLg {
				outIDs = append(outIDs, int32(len(tokens)-1))
			}
			m.seqs = append(m.seqs, seqRun{r0: r0, r1: len(tokens), slot: s.Slot})
		}
		if len(m.seqs) == 0 {
			break
		}
		drop := len(outIDs) == 0
		if drop {
			// The graph always computes at least one row of logits; ask
			// for the last and drop it.
			outIDs = append(outIDs, int32(len(tokens)-1))
		}
		m.kvRow = kvRow
		// Results of the last pass are rows of the arena's logits, which
		// this pass overwrites: only now copy them out (a step that fits
		// one pass, every decode step, never copies its logits).
		for i, in := range ms.inArena {
			if !in {
				continue
			}
			sl := seqs[i].Slot
			if ms.out[sl] == nil {
				ms.out[sl] = make([]float32, nv)
			}
			copy(ms.out[sl], ms.res[i])
			ms.res[i], ms.inArena[i] = ms.out[sl], false
		}
		lg, err := m.pass(tokens, pos, outIDs)
		if err != nil {
			return nil, err
		}
		k := 0
		for i, s := range seqs {
			done := ms.next[i]
			if done == len(s.Tokens) {
				continue
			}
			var in bool
			for _, sq := range m.seqs {
				if sq.slot == s.Slot {
					in = true
					ms.next[i] = done + (sq.r1 - sq.r0)
					break
				}
			}
			if in && !drop && s.Logits && ms.next[i] == len(s.Tokens) {
				ms.res[i], ms.inArena[i] = lg[k*nv:(k+1)*nv:(k+1)*nv], true
				k++
			}
		}
		ms.tokens, ms.pos, ms.kvRow, ms.outIDs = tokens, pos, kvRow, outIDs
	}
	return ms.res, nil
}
