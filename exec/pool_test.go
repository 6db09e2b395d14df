package exec

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestPoolRunsEveryWorker(t *testing.T) {
	for _, n := range []int{1, 2, 3, 8} {
		p := NewPool(n)
		var hits [8]atomic.Int32
		for round := 0; round < 100; round++ {
			p.Run(func(w int) { hits[w].Add(1) })
		}
		for w := 0; w < n; w++ {
			if got := hits[w].Load(); got != 100 {
				t.Errorf("n=%d worker %d ran %d times", n, w, got)
			}
		}
		p.Close()
	}
}

// TestBarrierOrders checks that no worker passes a barrier before every
// worker has finished the phase in front of it.
func TestBarrierOrders(t *testing.T) {
	const n, phases = 4, 200
	p := NewPool(n)
	defer p.Close()
	var counter atomic.Int64
	var bad atomic.Int32
	p.Run(func(w int) {
		for ph := 0; ph < phases; ph++ {
			counter.Add(1)
			p.Barrier()
			if c := counter.Load(); c < int64(n*(ph+1)) {
				bad.Add(1)
			}
			p.Barrier()
		}
	})
	if bad.Load() != 0 {
		t.Fatalf("%d workers passed a barrier early", bad.Load())
	}
	if got := p.Barriers(); got != 2*phases {
		t.Fatalf("counted %d barrier rounds, want %d", got, 2*phases)
	}
}

// TestPoolParksAndWakes leaves the pool idle long enough for its workers
// to park, then checks a new job still reaches all of them.
func TestPoolParksAndWakes(t *testing.T) {
	p := NewPool(3)
	defer p.Close()
	p.Run(func(int) {})
	time.Sleep(200 * time.Millisecond)
	var hits atomic.Int32
	done := make(chan struct{})
	go func() { p.Run(func(int) { hits.Add(1) }); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("parked workers never woke")
	}
	if hits.Load() != 3 {
		t.Fatalf("%d workers ran", hits.Load())
	}
}

func BenchmarkBarrier(b *testing.B) {
	p := NewPool(2)
	defer p.Close()
	b.ResetTimer()
	p.Run(func(w int) {
		for i := 0; i < b.N; i++ {
			p.Barrier()
		}
	})
}

// TestPoolRunN runs jobs on a changing number of workers: each run reaches
// exactly the first k, and its barriers wait for those k only.
func TestPoolRunN(t *testing.T) {
	const n = 4
	p := NewPool(n)
	defer p.Close()
	ks := []int{4, 1, 2, 3, 2, 4, 1, 1, 3, 4, 2}
	var rounds int64
	for rep := 0; rep < 20; rep++ {
		for _, k := range ks {
			var hits [n]atomic.Int32
			var counter atomic.Int64
			var bad atomic.Int32
			p.RunN(k, func(w int) {
				hits[w].Add(1)
				for ph := 0; ph < 5; ph++ {
					counter.Add(1)
					p.Barrier()
					if c := counter.Load(); c < int64(k*(ph+1)) {
						bad.Add(1)
					}
					p.Barrier()
				}
			})
			rounds += 10
			for w := 0; w < n; w++ {
				want := int32(0)
				if w < k {
					want = 1
				}
				if got := hits[w].Load(); got != want {
					t.Fatalf("RunN(%d): worker %d ran %d times", k, w, got)
				}
			}
			if bad.Load() != 0 {
				t.Fatalf("RunN(%d): %d workers passed a barrier early", k, bad.Load())
			}
		}
		if rep == 10 {
			time.Sleep(50 * time.Millisecond) // let the workers park
		}
	}
	if got := p.Barriers(); got != rounds {
		t.Fatalf("counted %d barrier rounds, want %d", got, rounds)
	}
}
