package serve

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// metrics are the server's counters, written out in the Prometheus text
// exposition format (version 0.0.4) by /metrics.
type metrics struct {
	start time.Time

	promptTokens, generated   atomic.Int64
	cachedTokens              atomic.Int64
	queued, slotsBusy         atomic.Int64
	slotsTotal                atomic.Int64
	engineErrors, panics      atomic.Int64
	streamsCancelled, rejects atomic.Int64

	mu       sync.Mutex
	requests map[[2]string]int64 // endpoint, status code
	ttft     histogram
	steps    int64
	stepSeqs int64 // sequences over all steps: stepSeqs/steps is the mean batch
	stepSecs float64
	// generated tokens per second of the last rateWindow seconds, a ring
	// indexed by Unix second.
	perSec    [rateWindow]int64
	perSecAt  [rateWindow]int64
	queueSize int
}

const rateWindow = 10

// ttftBuckets are the upper bounds, in seconds, of the time-to-first-token
// histogram.
var ttftBuckets = []float64{0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

type histogram struct {
	counts []int64 // per bucket (not cumulative), last is +Inf
	sum    float64
	n      int64
}

func newMetrics() *metrics {
	return &metrics{start: time.Now(), requests: map[[2]string]int64{}, ttft: histogram{counts: make([]int64, len(ttftBuckets)+1)}}
}

func (m *metrics) request(endpoint string, code int) {
	m.mu.Lock()
	m.requests[[2]string{endpoint, strconv.Itoa(code)}]++
	m.mu.Unlock()
}

func (m *metrics) observeTTFT(d time.Duration) {
	s := d.Seconds()
	m.mu.Lock()
	i, _ := slices.BinarySearch(ttftBuckets, s)
	m.ttft.counts[i]++
	m.ttft.sum += s
	m.ttft.n++
	m.mu.Unlock()
}

func (m *metrics) stepDone(d time.Duration, seqs int) {
	m.mu.Lock()
	m.steps++
	m.stepSeqs += int64(seqs)
	m.stepSecs += d.Seconds()
	m.mu.Unlock()
}

// addGenerated counts n generated tokens now.
func (m *metrics) addGenerated(n int64) {
	m.generated.Add(n)
	now := time.Now().Unix()
	m.mu.Lock()
	k := now % rateWindow
	if m.perSecAt[k] != now {
		m.perSecAt[k], m.perSec[k] = now, 0
	}
	m.perSec[k] += n
	m.mu.Unlock()
}

// rate is the generated tokens per second over the last full rateWindow
// seconds (or since start).
func (m *metrics) rate(now time.Time) float64 {
	sec := now.Unix()
	var n int64
	for k := range rateWindow {
		if at := m.perSecAt[k]; at < sec && at >= sec-rateWindow {
			n += m.perSec[k]
		}
	}
	span := min(float64(rateWindow), now.Sub(m.start).Seconds())
	if span < 1 {
		return 0
	}
	return float64(n) / span
}

// write writes the exposition.
func (m *metrics) write(w io.Writer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	metric := func(name, typ, help string) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	metric("minfer_requests_total", "counter", "HTTP requests by endpoint and status code.")
	keys := make([][2]string, 0, len(m.requests))
	for k := range m.requests {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int {
		if a[0] != b[0] {
			return cmpStr(a[0], b[0])
		}
		return cmpStr(a[1], b[1])
	})
	for _, k := range keys {
		fmt.Fprintf(w, "minfer_requests_total{endpoint=%q,code=%q} %d\n", k[0], k[1], m.requests[k])
	}
	one := func(name, typ, help string, v any) {
		metric(name, typ, help)
		fmt.Fprintf(w, "%s %v\n", name, v)
	}
	one("minfer_prompt_tokens_total", "counter", "Prompt tokens of admitted generations.", m.promptTokens.Load())
	one("minfer_prompt_tokens_cached_total", "counter", "Prompt tokens not evaluated: a slot's cache held them from the request before.", m.cachedTokens.Load())
	one("minfer_generated_tokens_total", "counter", "Tokens generated.", m.generated.Load())
	one("minfer_generated_tokens_per_second", "gauge", fmt.Sprintf("Tokens generated per second over the last %d seconds.", rateWindow), strconv.FormatFloat(m.rate(time.Now()), 'f', 3, 64))
	one("minfer_queue_depth", "gauge", "Requests waiting for a slot.", m.queued.Load())
	one("minfer_queue_capacity", "gauge", "Requests that may wait for a slot before 503.", m.queueSize)
	one("minfer_slots_busy", "gauge", "Slots generating or prefilling.", m.slotsBusy.Load())
	one("minfer_slots_total", "gauge", "KV-cache slots.", m.slotsTotal.Load())
	one("minfer_requests_rejected_total", "counter", "Requests refused with 503 because the queue was full.", m.rejects.Load())
	one("minfer_requests_cancelled_total", "counter", "Generations ended by the client going away.", m.streamsCancelled.Load())
	one("minfer_engine_errors_total", "counter", "Failed evaluations.", m.engineErrors.Load())
	one("minfer_handler_panics_total", "counter", "Recovered handler panics.", m.panics.Load())
	one("minfer_steps_total", "counter", "Batched evaluations.", m.steps)
	one("minfer_step_sequences_total", "counter", "Sequences over all batched evaluations (divided by minfer_steps_total: the mean batch).", m.stepSeqs)
	one("minfer_step_seconds_total", "counter", "Time spent in batched evaluations.", strconv.FormatFloat(m.stepSecs, 'f', 6, 64))
	metric("minfer_time_to_first_token_seconds", "histogram", "From the request's arrival to its first sampled token (queueing and prefill included).")
	var cum int64
	for i, b := range ttftBuckets {
		cum += m.ttft.counts[i]
		fmt.Fprintf(w, "minfer_time_to_first_token_seconds_bucket{le=%q} %d\n", strconv.FormatFloat(b, 'g', -1, 64), cum)
	}
	cum += m.ttft.counts[len(ttftBuckets)]
	fmt.Fprintf(w, "minfer_time_to_first_token_seconds_bucket{le=\"+Inf\"} %d\n", cum)
	fmt.Fprintf(w, "minfer_time_to_first_token_seconds_sum %s\nminfer_time_to_first_token_seconds_count %d\n", strconv.FormatFloat(m.ttft.sum, 'f', 6, 64), m.ttft.n)
	one("minfer_uptime_seconds", "gauge", "Seconds since the server started.", strconv.FormatFloat(time.Since(m.start).Seconds(), 'f', 1, 64))
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
