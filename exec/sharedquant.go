package exec

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

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
// result. A worker that waits too long for another's chunk (descheduled)
// converts all rows alone instead, for that group run. Which worker
// converts a row does not change its bits (the quantizers work row by
// row), so the output stays the same for any thread count and any timing.

// sharedQuantMinRows is the fewest input rows converted together.
const sharedQuantMinRows = 32

// sharedQuantRowsPerChunk is the fewest rows a conversion chunk holds.
const sharedQuantRowsPerChunk = 8

// sharedQuant is one shared conversion buffer. The binder gives each
// (input, vec-dot type) read by a group's mat-muls its own; a buffer is
// reused by later groups (the barrier between groups orders the uses).
type sharedQuant struct {
	key  atomic.Int64 // the group run whose rows buf holds, or is being filled with
	work sharedWork   // its chunks of rows
	mu   sync.Mutex   // serializes the reset at the start of a run
	buf  []byte
}

// sharedWork hands out the chunks of one piece of work shared by the
// workers that reach it.
type sharedWork struct {
	next atomic.Int64 // chunks taken
	done atomic.Int64 // chunks finished
}

func (w *sharedWork) reset() {
	w.next.Store(0)
	w.done.Store(0)
}

// run does chunks of the nc of w (do(c)) until none are left, then waits
// until the other workers have finished the ones they took, and reports
// whether they did. It gives up waiting (false) after sharedWaitBudget,
// or at once if a worker faulted (the call is then failing anyway): a
// worker the OS descheduled while it held a chunk (another process busy on
// the machine) would otherwise hold up every other one, where converting
// alone, as before the sharing, holds up none.
func (m *Model) run(wk *worker, w *sharedWork, nc int64, do func(c int64)) bool {
	var own time.Duration
	n := 0
	for {
		c := w.next.Load()
		if c >= nc {
			break
		}
		if w.next.CompareAndSwap(c, c+1) {
			if stallHook != nil {
				stallHook(wk.id) // tests: a worker descheduled holding a chunk
			}
			t0 := time.Now()
			do(c)
			own += time.Since(t0)
			n++
			w.done.Add(1)
		}
	}
	if w.done.Load() >= nc {
		return true
	}
	budget := sharedWaitBudget(own, n)
	start := time.Now()
	for i := 0; w.done.Load() < nc; i++ {
		if m.fault.Load() != nil {
			return false
		}
		if i >= spinsBeforeYield {
			if time.Since(start) > budget {
				return false
			}
			runtime.Gosched()
		}
	}
	return true
}

// sharedWaitBudget is how long a worker waits for the chunks other workers
// took: four times its own chunks' mean time (what a running worker needs
// to finish one), between 50 µs and 1 ms (an OS time slice is a few ms);
// 200 µs if it took none.
func sharedWaitBudget(own time.Duration, n int) time.Duration {
	if n == 0 {
		return 200 * time.Microsecond
	}
	return min(max(4*own/time.Duration(n), 50*time.Microsecond), time.Millisecond)
}

// groupKey identifies one run of group gi within the current pass: the
// same for every worker taking part, different for every run.
func (m *Model) groupKey(gi int) int64 { return m.passSeq<<20 | int64(gi) }

// fill makes s hold the M rows of x (K wide) converted by k for the
// current group run, converting chunks of rows with the other workers that
// reach it (run); false if it gave up waiting for theirs.
func (m *Model) fill(wk *worker, s *sharedQuant, k *cpu.MatMul, x []float32, K, M int) bool {
	if key := wk.gkey; s.key.Load() != key {
		s.mu.Lock()
		if s.key.Load() != key {
			s.work.reset()
			s.key.Store(key)
		}
		s.mu.Unlock()
	}
	nc := int64(min(M/sharedQuantRowsPerChunk, chunksPerWorker*m.nw))
	return m.run(wk, &s.work, nc, func(c int64) {
		r0, r1 := part(M, int(c), int(nc))
		k.QuantizeRows(x, K, r0, r1, s.buf)
	})
}

// What the GEMMs derive from the converted rows before their tiles run
// (the AVX2 legacy GEMMs' repacked block, the AVX2 K-quant GEMMs' pair
// copies: cpu.ActCache) is built the same way, together, when the rows are
// a shared buffer's: each worker's cache of the shared rows has an
// actSharer, which hands the block's tiles out in chunks.

// sharedBlock is one derived block of one group run.
type sharedBlock struct {
	key      any   // the cache's name for the block
	run      int64 // the group run (groupKey) it was made for
	buf, dst []byte
	nc       int64 // chunks of tiles
	work     sharedWork
}

// sharedBlocks holds the derived blocks of the current group run; entries
// of earlier runs are reused (the barrier between groups orders the uses).
type sharedBlocks struct {
	mu   sync.Mutex
	ents []*sharedBlock
}

// actSharer is worker wk's cpu.ActSharer.
type actSharer struct {
	m  *Model
	wk *worker
}

// Share implements cpu.ActSharer.
func (a *actSharer) Share(key any, n, tiles int, fill func(dst []byte, t0, t1 int)) []byte {
	m, wk := a.m, a.wk
	sb := &m.blocks
	sb.mu.Lock()
	var e *sharedBlock
	for _, x := range sb.ents {
		if x.run == wk.gkey && x.key == key {
			e = x
			break
		}
	}
	if e == nil {
		for _, x := range sb.ents {
			if x.run != wk.gkey {
				e = x
				break
			}
		}
		if e == nil {
			e = &sharedBlock{}
			sb.ents = append(sb.ents, e)
		}
		if cap(e.buf) < n+63 {
			e.buf = make([]byte, n+63)
		}
		e.buf = e.buf[:cap(e.buf)]
		o := int(-uintptr(unsafe.Pointer(unsafe.SliceData(e.buf))) & 63)
		e.key, e.run, e.dst = key, wk.gkey, e.buf[o:o+n]
		e.nc = int64(min(tiles, chunksPerWorker*m.nw))
		e.work.reset()
	}
	sb.mu.Unlock()
	if !m.run(wk, &e.work, e.nc, func(c int64) {
		t0, t1 := part(tiles, int(c), int(e.nc))
		fill(e.dst, t0, t1)
	}) {
		return nil // the caller builds the block alone
	}
	return e.dst
}
