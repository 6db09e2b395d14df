// Package serve is minfer's OpenAI-compatible HTTP server: the
// /v1/chat/completions and /v1/completions endpoints (streamed as
// server-sent events or not), llama-server's /apply-template, /tokenize and
// /detokenize, /health and Prometheus /metrics, over a scheduler that
// batches the requests of several KV-cache slots into one forward pass per
// step (continuous batching).
//
// The server runs on an Engine: a model with one or more slots, each with
// its own KV cache, that evaluates a batch of per-slot token runs in one
// call. exec_engine.go adapts today's single-sequence exec.Model as an
// Engine with one slot.
package serve

// Seq is one slot's share of a batched evaluation: Tokens at Positions
// that continue the slot's KV cache. With Logits set, the logits of the
// last token are returned.
type Seq struct {
	Slot      int
	Tokens    []int32
	Positions []int32
	Logits    bool
}

// Engine evaluates batches of sequences, each in its own KV-cache slot.
type Engine interface {
	// EvalSeqs runs one forward pass over all seqs (at most one per slot)
	// and returns, per Seq, the logits of its last token ([n_vocab]) or
	// nil when Logits is false. Each sequence's logits are those it would
	// get evaluated alone. The slices may be the engine's own buffers,
	// valid until the next call.
	EvalSeqs(seqs []Seq) ([][]float32, error)
	// Slots is the number of KV-cache slots.
	Slots() int
	// SlotContext is the positions each slot holds.
	SlotContext() int
	// TruncateSlot keeps the first n positions of a slot's cache (0: empty).
	TruncateSlot(slot, n int) error
}
