package exec

import (
	"runtime"
	"sync"
	"sync/atomic"
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

// What the GEMMs derive from the converted rows before their tiles run
// (the AVX2 legacy GEMMs' repacked block, the AVX2 K-quant GEMMs' pair
// copies: cpu.ActCache) is built the same way, together, when the rows are
// a shared buffer's: each worker's cache of the shared rows has an
// actSharer, which hands the block's tiles out in chunks.

// sharedBlock is one derived block of one group run.
type sharedBlock struct {
	key        any   // the cache's name for the block
	run        int64 // the group run (groupKey) it was made for
	buf, dst   []byte
	nc         int64 // chunks of tiles
	next, done atomic.Int64
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
		e.next.Store(0)
		e.done.Store(0)
	}
	sb.mu.Unlock()
	for {
		c := e.next.Load()
		if c >= e.nc {
			break
		}
		if e.next.CompareAndSwap(c, c+1) {
			if stallHook != nil {
				stallHook(wk.id)
			}
			t0, t1 := part(tiles, int(c), int(e.nc))
			fill(e.dst, t0, t1)
			e.done.Add(1)
		}
	}
	for i := 0; e.done.Load() < e.nc; i++ {
		if m.fault.Load() != nil {
			break
		}
		if i >= spinsBeforeYield {
			runtime.Gosched()
		}
	}
	return e.dst
}
