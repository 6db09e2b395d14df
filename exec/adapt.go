package exec

import "time"

// Decode on a machine where another process keeps a core busy: with as
// many workers as cores, the OS time-slices one of them against the other
// process, and every group of the pass waits at its barrier for the worker
// that is off its core — each descheduling costs a whole time slice, group
// after group. One worker fewer runs on the cores the other process leaves
// free and is then faster (on the 2-core machine of docs/PERFORMANCE.md,
// Qwen3-0.6B decode at -t 2 kept 39% of its quiet speed under such load,
// while -t 1 keeps 57%).
//
// threadTuner measures instead of guessing: decode passes run on cur
// workers; now and then one pass (a probe) runs on one worker fewer, or a
// few on one more, and cur moves to the probe's count when the probe was
// clearly faster. A probe that loses doubles the interval to the next one
// (32 passes up to 1024), so a quiet machine pays one slower pass in
// hundreds; a run of passes much slower than the recent ones (load that
// just appeared) probes at once. Which workers compute which chunk never
// changes a result (chunks.go), so the output is the same bits whatever the
// tuner picks.
type threadTuner struct {
	max      int  // workers of the pool
	fixed    bool // always max
	cur      int  // workers of the decode passes
	base     float64
	passes   int // passes at cur since the last probe
	interval int // passes between probes
	slow     int // consecutive passes ≥ slowFactor·base
	down     bool

	probeK, probeLeft int
	probeSum          float64
	probeN            int

	lastT    int
	switches int
}

const (
	tuneMinInterval = 32
	tuneMaxInterval = 1024
	tuneWin         = 0.9  // a probe must take < 0.9× the current mean to win
	slowFactor      = 1.25 // a pass this much slower than the mean counts as slow
	slowTrigger     = 3    // slow passes in a row that start a probe at once
	probeUpPasses   = 3    // passes of a probe with one worker more
	probeDownPasses = 1    // passes of a probe with one worker fewer
)

func newThreadTuner(workers int, fixed bool) threadTuner {
	return threadTuner{max: workers, fixed: fixed || workers <= 1, cur: workers, interval: tuneMinInterval}
}

// tunerHook, when set (by tests only), replaces the tuner's choice.
var tunerHook func(max int) int

// pick returns the number of workers for the next decode pass.
func (t *threadTuner) pick() int {
	if tunerHook != nil {
		return tunerHook(t.max)
	}
	if t.fixed {
		return t.max
	}
	if t.probeK != 0 {
		return t.probeK
	}
	if t.base > 0 && (t.passes >= t.interval || t.slow >= slowTrigger) {
		// alternate down and up probes where both are possible
		down := t.cur > 1 && (t.cur == t.max || !t.down)
		t.down = down
		if down {
			t.probeK, t.probeLeft = t.cur-1, probeDownPasses
		} else {
			t.probeK, t.probeLeft = t.cur+1, probeUpPasses
		}
		t.probeSum, t.probeN = 0, 0
		return t.probeK
	}
	return t.cur
}

// record takes the wall time el of a decode pass of T token rows run on k
// workers. Passes of a different T than the last restart the measurement
// (their costs are not comparable).
func (t *threadTuner) record(k int, el time.Duration, T int) {
	if t.fixed {
		return
	}
	s := el.Seconds()
	if T != t.lastT {
		t.lastT, t.base, t.passes, t.slow, t.probeK = T, 0, 0, 0, 0
		if k == t.cur {
			t.base = s
		}
		return
	}
	if t.probeK != 0 && k == t.probeK {
		t.probeSum += s
		t.probeN++
		if t.probeLeft--; t.probeLeft > 0 {
			return
		}
		mean := t.probeSum / float64(t.probeN)
		if mean < tuneWin*t.base {
			t.cur, t.base = t.probeK, mean
			t.switches++
			t.interval = tuneMinInterval
		} else {
			t.interval = min(2*t.interval, tuneMaxInterval)
		}
		t.probeK, t.passes, t.slow = 0, 0, 0
		return
	}
	if k != t.cur {
		return
	}
	t.passes++
	if t.base == 0 {
		t.base = s
		return
	}
	if s >= slowFactor*t.base {
		t.slow++
	} else {
		t.slow = 0
	}
	t.base += (s - t.base) / 8
}
