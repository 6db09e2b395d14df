package exec

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// spinsBeforeYield is how long a waiting worker spins before it starts
// yielding its thread: spinning alone collapses when another process is
// busy on the same cores (measured: 10–880 µs per barrier round), spinning
// ~16K times then runtime.Gosched() does not.
const spinsBeforeYield = 1 << 14

// yieldsBeforePark is how many Gosched rounds an idle worker makes before it
// parks on a condition variable (so an idle executor burns no CPU).
const yieldsBeforePark = 1 << 12

// Pool is a persistent set of workers. Run hands one job to all of them;
// inside a job workers meet at Barrier. Worker 0 is the calling goroutine.
type Pool struct {
	n   int
	job func(w int)

	gen    atomic.Uint64 // incremented to publish a new job
	active atomic.Int64  // workers (other than 0) still inside the job
	closed atomic.Bool

	mu       sync.Mutex
	cond     *sync.Cond
	sleepers int

	bar barrier
	// Barriers counts Barrier rounds completed since the pool started.
	barriers atomic.Int64
}

// NewPool starts a pool of n workers (n-1 goroutines plus the caller).
func NewPool(n int) *Pool {
	if n < 1 {
		n = 1
	}
	p := &Pool{n: n}
	p.cond = sync.NewCond(&p.mu)
	p.bar.n = int32(n)
	p.bar.cond = sync.NewCond(&p.bar.mu)
	for w := 1; w < n; w++ {
		go p.worker(w)
	}
	return p
}

// Size is the number of workers.
func (p *Pool) Size() int { return p.n }

func (p *Pool) worker(w int) {
	var seen uint64
	for {
		g := p.wait(seen)
		if p.closed.Load() {
			return
		}
		seen = g
		p.job(w)
		p.active.Add(-1)
	}
}

// wait returns the next job generation after seen, spinning, then yielding,
// then parking.
func (p *Pool) wait(seen uint64) uint64 {
	for i := 0; i < spinsBeforeYield; i++ {
		if g := p.gen.Load(); g != seen || p.closed.Load() {
			return g
		}
	}
	for i := 0; i < yieldsBeforePark; i++ {
		if g := p.gen.Load(); g != seen || p.closed.Load() {
			return g
		}
		runtime.Gosched()
	}
	p.mu.Lock()
	p.sleepers++
	for p.gen.Load() == seen && !p.closed.Load() {
		p.cond.Wait()
	}
	p.sleepers--
	g := p.gen.Load()
	p.mu.Unlock()
	return g
}

// Run executes f(w) on every worker w in [0, Size()) and returns when all
// have finished. Only one Run may be in progress at a time.
func (p *Pool) Run(f func(w int)) {
	if p.n == 1 {
		f(0)
		return
	}
	p.job = f
	p.active.Store(int64(p.n - 1))
	p.gen.Add(1)
	p.mu.Lock()
	if p.sleepers > 0 {
		p.cond.Broadcast()
	}
	p.mu.Unlock()
	f(0)
	for i := 0; p.active.Load() != 0; i++ {
		if i > spinsBeforeYield {
			runtime.Gosched()
		}
	}
}

// Barrier blocks worker w until every worker of the current job reaches it.
func (p *Pool) Barrier() {
	if p.n > 1 {
		p.bar.wait()
	}
	// Every worker passes; count each round once.
	p.barriers.Add(1)
}

// Barriers returns the number of barrier rounds completed so far (a round is
// counted once per worker that passed it; divide by Size for rounds).
func (p *Pool) Barriers() int64 { return p.barriers.Load() / int64(p.n) }

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
	n     int32
	count atomic.Int32
	phase atomic.Uint32

	sleepers atomic.Int32
	mu       sync.Mutex
	cond     *sync.Cond
}

// yieldsBeforeParkBarrier is how many Gosched rounds a barrier waiter makes
// after spinning before it parks.
const yieldsBeforeParkBarrier = 2048

func (b *barrier) wait() {
	ph := b.phase.Load()
	if b.count.Add(1) == b.n {
		b.count.Store(0)
		b.phase.Add(1)
		if b.sleepers.Load() > 0 {
			b.mu.Lock()
			b.cond.Broadcast()
			b.mu.Unlock()
		}
		return
	}
	for i := 0; i < spinsBeforeYield; i++ {
		if b.phase.Load() != ph {
			return
		}
	}
	for i := 0; i < yieldsBeforeParkBarrier; i++ {
		if b.phase.Load() != ph {
			return
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
}
