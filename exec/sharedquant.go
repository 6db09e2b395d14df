package exec

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/minfer/minfer/backends/cpu"
)

// A mat-mul reads its input quantized to the vec-dot type of its weights
// (Q8_0, Q8_K, Q8_1). For a single row or a few (decode) every worker
// quantizes all of them itself: that costs less than meeting the other
// workers. For a prompt's rows that duplicate work grows with the thread
// count (each of W workers converts all M rows, so W·M rows for M rows of
// input), so when the input is one shared buffer and has at least
// sharedQuantMinRows rows the workers convert it together, once per group
// run, into a shared buffer: each takes chunks of rows until none are left,
// then waits for the chunks the others took, and every mat-mul of the
// group that reads the same input with the same vec-dot type uses the
// result. Which worker converts a row does not change its bits (the
// quantizers work row by row), so the output stays the same for any thread
// count and any timing.

// sharedQuantMinRows is the fewest input rows converted together.
const sharedQuantMinRows = 32

// sharedQuantRowsPerChunk is the fewest rows a conversion chunk holds.
const sharedQuantRowsPerChunk = 8

// sharedQuant is one shared conversion buffer. The binder gives each
// (input, vec-dot type) read by a group's mat-muls its own; a buffer is
// reused by later groups (the barrier between groups orders the uses).
type sharedQuant struct {
	key  atomic.Int64 // the group run whose rows buf holds, or is being filled with
	next atomic.Int64 // chunks taken in that run
	done atomic.Int64 // chunks written in that run
	mu   sync.Mutex   // serializes the reset at the start of a run
	buf  []byte
}

// groupKey identifies one run of group gi within the current pass: the
// same for every worker taking part, different for every run.
func (m *Model) groupKey(gi int) int64 { return m.passSeq<<20 | int64(gi) }

// fill makes s hold the M rows of x (K wide) converted by k for the
// current group run (key): the calling worker converts chunks of rows
// until none are left, then waits until the other workers' chunks are
// written. It returns early, with the rows unfinished, if a worker faulted
// (the call is then failing anyway).
func (m *Model) fill(wk *worker, s *sharedQuant, k *cpu.MatMul, x []float32, K, M int) {
	key := wk.gkey
	if s.key.Load() != key {
		s.mu.Lock()
		if s.key.Load() != key {
			s.next.Store(0)
			s.done.Store(0)
			s.key.Store(key)
		}
		s.mu.Unlock()
	}
	nc := int64(min(M/sharedQuantRowsPerChunk, chunksPerWorker*m.nw))
	for {
		c := s.next.Load()
		if c >= nc {
			break
		}
		if s.next.CompareAndSwap(c, c+1) {
			if stallHook != nil {
				stallHook(wk.id) // tests: a worker descheduled holding a chunk
			}
			r0, r1 := part(M, int(c), int(nc))
			k.QuantizeRows(x, K, r0, r1, s.buf)
			s.done.Add(1)
		}
	}
	for i := 0; s.done.Load() < nc; i++ {
		if m.fault.Load() != nil {
			return
		}
		if i >= spinsBeforeYield {
			runtime.Gosched()
		}
	}
}
