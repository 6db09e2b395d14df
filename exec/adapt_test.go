package exec

import (
	"testing"
	"time"
)

// TestThreadTuner drives the tuner with made-up pass times: the per-pass
// time of each worker count in each phase of a run, as on a 2-worker
// machine that is quiet, then has a core taken by another process, then is
// quiet again.
func TestThreadTuner(t *testing.T) {
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	for _, tc := range []struct {
		name    string
		workers int
		phases  []map[int]float64 // per phase: ms per pass for each k
		passes  int               // per phase
		want    []int             // cur at the end of each phase
		maxCost float64           // bound on the quiet phase's mean pass time over the best
	}{
		{"quiet", 2, []map[int]float64{{1: 18, 2: 10}}, 2000, []int{2}, 1.01},
		{"busy then quiet", 2, []map[int]float64{{1: 18, 2: 10}, {1: 18, 2: 26}, {1: 18, 2: 10}}, 600, []int{2, 1, 2}, 0},
		{"four workers, one core taken", 4, []map[int]float64{{1: 40, 2: 21, 3: 15, 4: 11}, {1: 40, 2: 21, 3: 15, 4: 30}}, 600, []int{4, 3}, 0},
		{"one worker", 1, []map[int]float64{{1: 18}}, 100, []int{1}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tu := newThreadTuner(tc.workers, false)
			for i, ph := range tc.phases {
				var total, best float64
				best = 1e9
				for _, v := range ph {
					best = min(best, v)
				}
				for p := 0; p < tc.passes; p++ {
					k := tu.pick()
					if k < 1 || k > tc.workers {
						t.Fatalf("picked %d workers of %d", k, tc.workers)
					}
					total += ph[k]
					tu.record(k, ms(ph[k]), 1)
				}
				if tu.cur != tc.want[i] {
					t.Errorf("phase %d: settled on %d workers, want %d", i, tu.cur, tc.want[i])
				}
				if tc.maxCost > 0 && i == 0 {
					if cost := total / float64(tc.passes) / best; cost > tc.maxCost {
						t.Errorf("phase %d: mean pass %.3f× the best count's (probes cost too much)", i, cost)
					}
				}
			}
		})
	}
}

// TestThreadTunerFixed: a fixed tuner never leaves the full count.
func TestThreadTunerFixed(t *testing.T) {
	tu := newThreadTuner(2, true)
	for p := 0; p < 500; p++ {
		k := tu.pick()
		if k != 2 {
			t.Fatalf("fixed tuner picked %d", k)
		}
		tu.record(k, time.Duration(100-p%90)*time.Millisecond, 1)
	}
}
