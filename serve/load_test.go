package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// spec is one generation request of the load test.
type spec struct {
	path       string
	req        map[string]any
	disconnect int // abandon the stream after this many chunks (0: read it all)
}

// loadSpecs are the load test's requests: client c's k-th. Chat and
// completions, streamed and not, greedy and sampled, with and without stop
// strings, prompts shorter and longer than the prefill chunk; every
// seventh stream is abandoned after two chunks.
func loadSpecs(clients, each int) [][]spec {
	words := strings.Fields("the quick brown fox jumps over a lazy dog while seven wizards quietly hex jolly pigs")
	out := make([][]spec, clients)
	for c := range clients {
		for k := range each {
			i := c*each + k
			n := 1 + (i*7)%40
			var p strings.Builder
			for w := range n {
				p.WriteString(words[(i+w)%len(words)])
				p.WriteByte(' ')
			}
			req := map[string]any{"seed": 1000 + i, "max_tokens": 4 + (i*5)%37, "stream": (c+k)%2 == 0}
			if i%3 == 0 {
				req["temperature"] = 0
			} else {
				req["temperature"] = 0.9
				req["top_p"] = 0.9
			}
			if i%4 == 1 {
				req["stop"] = []string{"e", "zz"}
			}
			if i%5 == 2 {
				req["presence_penalty"] = 0.5
				req["frequency_penalty"] = 0.3
			}
			sp := spec{path: "/v1/completions"}
			if i%2 == 0 {
				sp.path = "/v1/chat/completions"
				req["messages"] = []map[string]string{{"role": "system", "content": "be brief"}, {"role": "user", "content": p.String()}}
				req["stream_options"] = map[string]any{"include_usage": true}
			} else {
				req["prompt"] = p.String()
			}
			if req["stream"] == true && i%7 == 3 {
				sp.disconnect = 2
			}
			sp.req = req
			out[c] = append(out[c], sp)
		}
	}
	return out
}

// TestLoad: 16 concurrent clients × 10 requests on a 4-slot engine, mixed
// streamed and not, some abandoned midway: no errors, each completion the
// same as the request served alone, every slot freed, and no goroutine
// left once the server is shut down.
func TestLoad(t *testing.T) {
	const clients, each = 16, 10
	base := runtime.NumGoroutine()
	specs := loadSpecs(clients, each)

	// Every request alone, one at a time, on a server of its own.
	alone := startServer(t, fakeConfig(t, newFake(4, 512, 1024)))
	want := map[string]outcome{}
	for _, cs := range specs {
		for _, sp := range cs {
			if sp.disconnect > 0 {
				continue
			}
			o, err := alone.complete(context.Background(), sp.path, sp.req, 0)
			if err != nil {
				t.Fatalf("alone %v: %v", sp.req, err)
			}
			want[key(sp)] = o
		}
	}
	alone.stop()

	f := newFake(4, 512, 1024)
	f.delay = 200 * time.Microsecond // let the clients overlap
	ts := startServer(t, fakeConfig(t, f))
	var wg sync.WaitGroup
	errs := make(chan error, clients*each)
	stops := map[string]int{}
	var mu sync.Mutex
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, sp := range specs[c] {
				o, err := ts.complete(context.Background(), sp.path, sp.req, sp.disconnect)
				if sp.disconnect > 0 {
					if err != errAbandoned && err != nil {
						errs <- fmt.Errorf("client %d abandoning %v: %v", c, sp.req, err)
					}
					continue
				}
				if err != nil {
					errs <- fmt.Errorf("client %d %v: %v", c, sp.req, err)
					continue
				}
				if w := want[key(sp)]; o != w {
					errs <- fmt.Errorf("client %d %s %v:\n got %+v\nwant %+v (alone)", c, sp.path, sp.req, o, w)
				}
				mu.Lock()
				stops[o.Finish]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	waitFor(t, func() bool { return ts.sched.busy() == 0 })
	checkHeld(t, ts.Server, f)
	_, _, m := ts.do(t, "GET", "/metrics", "")
	for _, line := range []string{"minfer_slots_busy 0\n", "minfer_queue_depth 0\n", "minfer_slots_total 4\n"} {
		if !strings.Contains(string(m), line) {
			t.Errorf("metrics lack %q", line)
		}
	}
	f.mu.Lock()
	t.Logf("%d steps, %d with a prompt chunk and decode tokens together, at most %d sequences per step, prompt chunks ≤ %d; finish reasons %v",
		f.calls, f.mixed, f.maxSeqs, f.maxChunk, stops)
	if f.maxSeqs < 4 || f.mixed == 0 || f.maxChunk != 16 {
		t.Errorf("no continuous batching: at most %d sequences per step, %d mixed steps, chunks ≤ %d", f.maxSeqs, f.mixed, f.maxChunk)
	}
	f.mu.Unlock()
	if stops["stop"] == 0 || stops["length"] == 0 {
		t.Errorf("finish reasons %v: want both stop and length", stops)
	}
	ts.stop()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines after shutdown, %d before:\n%s", n, base, buf[:runtime.Stack(buf, true)])
	}
}

// TestPrefillBatch: prompts waiting together are prefilled in the same
// step, chunk by chunk, within the prefill batch; each completion is still
// the one the request gets alone.
func TestPrefillBatch(t *testing.T) {
	var reqs []map[string]any
	for i := range 4 {
		var p strings.Builder
		for w := range 40 + 3*i {
			fmt.Fprintf(&p, "w%d ", (w*7+i)%50)
		}
		reqs = append(reqs, map[string]any{"prompt": p.String(), "max_tokens": 6, "seed": 7 + i, "temperature": 0.7})
	}
	alone := startServer(t, fakeConfig(t, newFake(4, 512, 1024)))
	var want []outcome
	for _, r := range reqs {
		o, err := alone.complete(context.Background(), "/v1/completions", r, 0)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, o)
	}
	alone.stop()
	for _, batch := range []int{16, 40, 512} {
		f := newFake(4, 512, 1024)
		f.delay = 20 * time.Millisecond // the requests arrive within the first step
		cfg := fakeConfig(t, f)         // chunks of 16
		cfg.PrefillBatch = batch
		ts := startServer(t, cfg)
		var wg sync.WaitGroup
		got := make([]outcome, len(reqs))
		errs := make([]error, len(reqs))
		for i, r := range reqs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i], errs[i] = ts.complete(context.Background(), "/v1/completions", r, 0)
			}()
		}
		wg.Wait()
		for i := range reqs {
			if errs[i] != nil {
				t.Fatalf("batch %d, request %d: %v", batch, i, errs[i])
			}
			if got[i] != want[i] {
				t.Errorf("batch %d, request %d: %+v, alone %+v", batch, i, got[i], want[i])
			}
		}
		f.mu.Lock()
		t.Logf("prefill batch %d: %d steps, at most %d prompt chunks (%d tokens) in one", batch, f.calls, f.maxPre, f.maxPreTok)
		// Whole chunks of 16 join while they fit; a prompt's last chunk
		// may be shorter, so a batch of 40 can hold 16+16+4.
		lo, hi := min(4, batch/16), min(4, batch/4)
		if f.maxPre < lo || f.maxPre > hi || f.maxPreTok > batch || f.maxChunk != 16 {
			t.Errorf("prefill batch %d: at most %d prompt chunks (%d tokens) per step, chunks ≤ %d; want %d..%d chunks of ≤ 16", batch, f.maxPre, f.maxPreTok, f.maxChunk, lo, hi)
		}
		f.mu.Unlock()
		ts.stop()
	}
}

func key(sp spec) string {
	b, _ := json.Marshal(sp.req)
	return sp.path + string(b)
}

// checkHeld: with no request running, each slot's cache holds exactly the
// positions the scheduler believes it holds (what the next request may
// reuse).
func checkHeld(t *testing.T, s *Server, f *fakeEngine) {
	t.Helper()
	s.sched.mu.Lock()
	defer s.sched.mu.Unlock()
	for slot, n := range f.filled() {
		if h := len(s.sched.held[slot]); n != h {
			t.Errorf("slot %d holds %d positions, the scheduler thinks %d", slot, n, h)
		}
	}
}
