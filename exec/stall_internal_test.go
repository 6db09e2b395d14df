package exec

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minfer/minfer/quant"
)

// Workers that stall at random (as when the OS deschedules one while
// another process is busy) change who computes which chunk of a group,
// never the result, and so do decode passes run on fewer workers (the
// thread tuner's choice): the logits under stalls at 2 and 3 threads are
// the 1-thread logits bit for bit, prefill and decode.
func TestStallsKeepBits(t *testing.T) {
	toks := []int32{620, 894, 134, 864, 856, 848, 924, 819, 69, 813, 170, 805, 488, 954}
	evalAll := func(m *Model) []float32 {
		m.Reset()
		var out []float32
		o, err := m.Eval(toks[:9], []int32{0, 1, 2, 3, 4, 5, 6, 7, 8}, []int32{0, 4, 8})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, o...)
		for i := 9; i < len(toks); i++ {
			o, err := m.Eval(toks[i:i+1], []int32{int32(i)}, []int32{0})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, o...)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		kv   quant.Type
		fa   bool
	}{
		{"qwen3-synth-q4_k_m", quant.F32, false}, {"qwen2-synth-q8_0", quant.F32, false}, {"llama-synth-q4_0", quant.F32, false},
		{"qwen3-synth-q4_k_m", quant.F16, true}, // the default cache and attention
		{"qwen2-synth-q8_0", quant.Q8_0, true},  // flash attention over a q8_0 cache
	} {
		name := tc.name
		t.Run(fmt.Sprintf("%s/%s/fa=%v", name, tc.kv, tc.fa), func(t *testing.T) {
			g, mem, f := compileFixtureFA(t, name, tc.kv, tc.fa)
			one, err := New(g, mem, f, Config{Threads: 1})
			if err != nil {
				t.Fatal(err)
			}
			want := evalAll(one)
			one.Close()
			stalls := injectStalls(t, 5, 150*time.Microsecond)
			// and decode passes on a random number of the workers, as the
			// thread tuner may pick under load
			var picks [4]atomic.Int64
			tunerHook = func(max int) int {
				k := 1 + rand.IntN(max)
				picks[k].Add(1)
				return k
			}
			defer func() { tunerHook = nil }()
			for _, threads := range []int{2, 3} {
				m, err := New(g, mem, f, Config{Threads: threads})
				if err != nil {
					t.Fatal(err)
				}
				for rep := 0; rep < 3; rep++ {
					got := evalAll(m)
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							m.Close()
							t.Fatalf("-t %d rep %d: logit %d = %v under stalls, 1 thread %v", threads, rep, i, got[i], want[i])
						}
					}
				}
				m.Close()
			}
			t.Logf("%d stalls injected, decode passes on 1/2/3 workers %d/%d/%d times; every run bit-identical to 1 thread",
				stalls.Load(), picks[1].Load(), picks[2].Load(), picks[3].Load())
		})
	}
}

// Groups whose split kinds each form one phase hand out chunks; check the
// compiled schedules of a real model use them throughout.
func TestGroupsAreDynamic(t *testing.T) {
	g, mem, f := compileFixture(t, "qwen3-synth-q4_k_m", quant.F32)
	m, err := New(g, mem, f, Config{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for name, p := range m.progs {
		static := 0
		for _, grp := range p.groups {
			if !grp.dynamic {
				static++
			}
		}
		if static > 0 {
			t.Errorf("%s: %d of %d groups keep a fixed split", name, static, len(p.groups))
		}
	}
}

// injectStalls makes one in oneIn of the workers' stall points (stallHook)
// sleep up to max, as the OS descheduling a worker would, until the test
// ends; it returns the count of stalls.
func injectStalls(t *testing.T, oneIn int, max time.Duration) *atomic.Int64 {
	var stalls atomic.Int64
	stallHook = func(w int) {
		if rand.IntN(oneIn) == 0 {
			stalls.Add(1)
			time.Sleep(time.Duration(rand.Int64N(int64(max))))
		}
	}
	t.Cleanup(func() { stallHook = nil })
	return &stalls
}
