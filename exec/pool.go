package exec

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// spinsBeforeYield is how long a waiting worker spins before it starts
// yielding its thread: spinning alone collapses when another process is
// busy on the same cores (measured: 10–880 µs per barrier round), spinning
// ~16K times then runtime.Gosched() does not.
const spinsBeforeYield = 1 << 14

// yieldsBeforePark is how many Gosched rounds an idle worker makes before it
// parks on a condition variable (so an idle executor burns no CPU).
const yieldsBeforePark = 1 << 12

// Pool is a persistent set of workers. Run hands one job to all of them
// (RunN to the first k); inside a job workers meet at Barrier. Worker 0 is
// the calling goroutine.
type Pool struct {
	n   int
	job func(w int)

	// state publishes a new job: its generation (incremented per job)
	// times 65536 plus the number of workers taking part, in one word so a
	// worker reads the two together.
	state  atomic.Uint64
	active atomic.Int64 // workers (other than 0) still inside the job
	closed atomic.Bool

	mu       sync.Mutex
	cond     *sync.Cond
	sleepers int

	bar barrier
	// Barriers counts Barrier rounds completed since the pool started.
	barriers atomic.Int64
	// waitNs sums the nanoseconds workers spent waiting inside jobs: at
	// Barrier for a later worker, and worker 0 at the end of RunN for the
	// others to finish (spinning, yielding or parked alike).
	waitNs atomic.Int64
}

// NewPool starts a pool of n workers (n-1 goroutines plus the caller).
func NewPool(n int) *Pool {
	n = max(1, min(n, maxPoolWorkers))
	p := &Pool{n: n}
	p.cond = sync.NewCond(&p.mu)
	p.bar.n.Store(int32(n))
	p.bar.cond = sync.NewCond(&p.bar.mu)
	for w := 1; w < n; w++ {
		go p.worker(w)
	}
	return p
}

// Size is the number of workers.
func (p *Pool) Size() int { return p.n }

// maxPoolWorkers bounds the pool size so the worker count fits state's
// low byte.
const maxPoolWorkers = 1<<16 - 1

func (p *Pool) worker(w int) {
	var seen uint64
	idle := false // the last job left this worker out: park at once
	for {
		st := p.wait(seen>>16, idle)
		if p.closed.Load() {
			return
		}
		seen = st
		if int(st&0xffff) <= w {
			idle = true
			continue
		}
		idle = false
		p.job(w)
		p.active.Add(-1)
	}
}

// wait returns the state of the next job after generation seen: spinning,
// then yielding, then parking (a worker the last job left out parks at
// once, so it takes no CPU from the workers that run).
func (p *Pool) wait(seen uint64, park bool) uint64 {
	if !park {
		for i := 0; i < spinsBeforeYield; i++ {
			if st := p.state.Load(); st>>16 != seen || p.closed.Load() {
				return st
			}
		}
		for i := 0; i < yieldsBeforePark; i++ {
			if st := p.state.Load(); st>>16 != seen || p.closed.Load() {
				return st
			}
			runtime.Gosched()
		}
	}
	p.mu.Lock()
	p.sleepers++
	for p.state.Load()>>16 == seen && !p.closed.Load() {
		p.cond.Wait()
	}
	p.sleepers--
	st := p.state.Load()
	p.mu.Unlock()
	return st
}

// Run executes f(w) on every worker w in [0, Size()) and returns when all
// have finished. Only one Run may be in progress at a time.
func (p *Pool) Run(f func(w int)) { p.RunN(p.n, f) }

// RunN executes f(w) on the workers w in [0, k) only (k is clamped to
// 1..Size()) and returns when they have finished; Barrier then waits for
// those k. The others stay parked. Only one Run may be in progress at a time.
func (p *Pool) RunN(k int, f func(w int)) {
	k = max(1, min(k, p.n))
	if k == 1 {
		p.bar.n.Store(1)
		f(0)
		return
	}
	p.job = f
	p.bar.n.Store(int32(k))
	p.active.Store(int64(k - 1))
	gen := p.state.Load()>>16 + 1
	p.state.Store(gen<<16 | uint64(k))
	p.mu.Lock()
	if p.sleepers > 0 {
		p.cond.Broadcast()
	}
	p.mu.Unlock()
	f(0)
	if p.active.Load() == 0 {
		return
	}
	t0 := time.Now()
	for i := 0; p.active.Load() != 0; i++ {
		if i > spinsBeforeYield {
			runtime.Gosched()
		}
	}
	p.waitNs.Add(int64(time.Since(t0)))
}

// Barrier blocks worker w until every worker of the current job reaches it.
func (p *Pool) Barrier() {
	// The last worker to arrive counts the round, once.
	if p.bar.n.Load() == 1 || p.bar.wait(&p.waitNs) {
		p.barriers.Add(1)
	}
}

// Waited returns the worker time spent waiting inside jobs so far (at
// barriers, and for the last worker at the end of each RunN): on a
// compute-bound job, the part of the workers' CPU time that is not work.
func (p *Pool) Waited() time.Duration { return time.Duration(p.waitNs.Load()) }

// Barriers returns the number of barrier rounds completed so far.
func (p *Pool) Barriers() int64 { return p.barriers.Load() }

// Close stops the workers.
func (p *Pool) Close() {
	p.closed.Store(true)
	p.mu.Lock()
	p.cond.Broadcast()
	p.mu.Unlock()
}

// barrier is a sense-reversing barrier that spins, then yields, then
// parks. Parking matters on a busy machine: when another process keeps a
// core busy, one of the workers is off-CPU at times, and a waiter that
// spun or yielded would keep its core while the worker everyone waits for
// queues for the other one; a parked waiter hands its core back to the OS,
// which can then run the late worker at once.
type barrier struct {
	n     atomic.Int32 // workers taking part (set by RunN between jobs)
	count atomic.Int32
	phase atomic.Uint32

	sleepers atomic.Int32
	mu       sync.Mutex
	cond     *sync.Cond
}

// yieldsBeforeParkBarrier is how many Gosched rounds a barrier waiter makes
// after spinning before it parks.
const yieldsBeforeParkBarrier = 2048

// wait blocks until every worker has arrived; it reports whether the
// caller was the last to arrive. A caller that waits adds the time it
// waited to *waited.
func (b *barrier) wait(waited *atomic.Int64) bool {
	ph := b.phase.Load()
	if b.count.Add(1) == b.n.Load() {
		b.count.Store(0)
		b.phase.Add(1)
		if b.sleepers.Load() > 0 {
			b.mu.Lock()
			b.cond.Broadcast()
			b.mu.Unlock()
		}
		return true
	}
	t0 := time.Now()
	defer func() { waited.Add(int64(time.Since(t0))) }()
	for i := 0; i < spinsBeforeYield; i++ {
		if b.phase.Load() != ph {
			return false
		}
	}
	for i := 0; i < yieldsBeforeParkBarrier; i++ {
		if b.phase.Load() != ph {
			return false
		}
		runtime.Gosched()
	}
	b.mu.Lock()
	b.sleepers.Add(1)
	for b.phase.Load() == ph {
		b.cond.Wait()
	}
	b.sleepers.Add(-1)
	b.mu.Unlock()
	return false
}
