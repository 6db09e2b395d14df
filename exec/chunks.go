package exec

import (
	"sync/atomic"

	"github.com/minfer/minfer/ir"
)

// Work inside a fused group is handed out in chunks that workers take as
// they become free, not split once into one fixed share per worker: a
// worker the OS deschedules (another process busy on the machine) then
// holds up the group by one chunk, not by its whole share, because the
// others take the rest. Which worker computes a chunk never changes its
// arithmetic — every output element (a column of a mat-mul, a KV head of
// attention, a token row) is computed the same way whoever computes it and
// whatever range it is computed in — so the output stays bit-identical for
// any thread count and any timing.

// chunksPerWorker is how many chunks each worker's share of a split phase
// is cut into: enough for a free worker to take over most of a stalled
// one's share, few enough that the per-chunk calls cost little.
const chunksPerWorker = 4

// phaseKind is what a phase of a group runs.
type phaseKind uint8

const (
	phaseSeq  phaseKind = iota // redundant and single steps, in order
	phaseCols                  // split-by-columns steps, chunked over the group's units
	phaseRows                  // split-by-rows steps, chunked over each step's rows
)

// phase is a run of consecutive steps of one kind. The steps of a cols or
// rows phase run chunk by chunk: a worker that takes a chunk runs every
// step of the phase on it, in order, which is what lets a step read the
// same columns (rows) of an earlier step of the phase without a barrier.
type phase struct {
	kind  phaseKind
	steps []int
	next  []paddedCounter // per worker region: its next chunk (reset before each run)
}

// paddedCounter is a chunk counter on a cache line of its own.
type paddedCounter struct {
	atomic.Int64
	_ [56]byte
}

// planPhases cuts a group's steps into phases. Chunks may be taken by any
// worker only if each split kind forms a single phase (a later phase of the
// same kind could read an earlier one's columns, which would then have to
// come from the same worker); otherwise the group keeps the fixed split
// (dynamic false).
func planPhases(grp *group) (phases []phase, dynamic bool) {
	seen := map[phaseKind]bool{}
	dynamic = true
	for si, st := range grp.steps {
		k := phaseSeq
		switch st.split {
		case ir.SplitCols:
			k = phaseCols
		case ir.SplitRows:
			k = phaseRows
		}
		if n := len(phases); n > 0 && phases[n-1].kind == k {
			phases[n-1].steps = append(phases[n-1].steps, si)
			continue
		}
		if k != phaseSeq && seen[k] {
			dynamic = false
		}
		seen[k] = true
		phases = append(phases, phase{kind: k, steps: []int{si}})
	}
	return phases, dynamic
}

// stallHook, when set (by tests only), runs before a worker takes each
// chunk: tests make workers stall at random to prove the output does not
// depend on who computes what.
var stallHook func(worker int)

// takeChunk returns the next chunk for worker w of a phase cut into W
// regions of k chunks (region v = chunks v·k … v·k+k-1, worker v's share):
// first the chunks of its own region in order, so on a quiet machine each
// worker streams through the same contiguous share as with a fixed split,
// then, once that is done, the chunks still untaken in the other regions.
// ok is false when every chunk has been taken.
func takeChunk(next []paddedCounter, w, W, k int) (c int, ok bool) {
	for i := 0; i < W; i++ {
		v := (w + i) % W
		if stallHook != nil {
			stallHook(w)
		}
		if j := int(next[v].Add(1) - 1); j < k {
			return v*k + j, true
		}
	}
	return 0, false
}

// runPhases runs worker wk's part of a group whose phases take chunks.
func (m *Model) runPhases(grp *group, wk *worker) {
	W := m.nw
	k := chunksPerWorker
	C := W * k
	for pi := range grp.phases {
		ph := &grp.phases[pi]
		switch ph.kind {
		case phaseSeq:
			for _, si := range ph.steps {
				st := &grp.steps[si]
				if st.split == ir.Redundant || wk.id == 0 {
					st.run(wk, 0, st.rows())
				}
			}
		case phaseCols:
			n := grp.units
			for {
				c, ok := takeChunk(ph.next, wk.id, W, k)
				if !ok {
					break
				}
				if lo, hi := part(n, c, C); lo < hi {
					for _, si := range ph.steps {
						grp.steps[si].run(wk, lo, hi)
					}
				}
			}
		case phaseRows:
			for {
				c, ok := takeChunk(ph.next, wk.id, W, k)
				if !ok {
					break
				}
				for _, si := range ph.steps {
					st := &grp.steps[si]
					if lo, hi := part(st.rows(), c, C); lo < hi {
						st.run(wk, lo, hi)
					}
				}
			}
		}
	}
}

// resetChunks readies every phase counter of p for a run of W workers.
func (p *program) resetChunks(W int) {
	for gi := range p.groups {
		for pi := range p.groups[gi].phases {
			ph := &p.groups[gi].phases[pi]
			if cap(ph.next) < W {
				ph.next = make([]paddedCounter, W)
			}
			// a pass on fewer workers (the thread tuner) reuses the counters
			ph.next = ph.next[:W]
			for i := range ph.next {
				ph.next[i].Store(0)
			}
		}
	}
}
