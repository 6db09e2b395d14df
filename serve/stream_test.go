package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestStreamMatchesNonStream: a request streamed gives the text, finish
// reason and usage of the same request answered at once, and the same
// seed gives the same text again.
func TestStreamMatchesNonStream(t *testing.T) {
	ts := startServer(t, fakeConfig(t, newFake(2, 512, 1024)))
	for _, path := range []string{"/v1/chat/completions", "/v1/completions"} {
		for _, seed := range []int{1, 2, 3, 4, 5} {
			req := map[string]any{"seed": seed, "max_tokens": 30, "temperature": 1.0, "stream_options": map[string]any{"include_usage": true}}
			if strings.Contains(path, "chat") {
				req["messages"] = []map[string]string{{"role": "user", "content": "hello there"}}
			} else {
				req["prompt"] = "hello there"
			}
			a, err := ts.complete(context.Background(), path, req, 0)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := ts.complete(context.Background(), path, req, 0)
			req["stream"] = true
			b, err := ts.complete(context.Background(), path, req, 0)
			if err != nil {
				t.Fatal(err)
			}
			if a != b || a != again || a.Compl == 0 || a.Prompt == 0 {
				t.Errorf("%s seed %d: non-stream %+v, again %+v, stream %+v", path, seed, a, again, b)
			}
		}
	}
}

// TestStreamShape checks the chunks of a chat stream: the role first,
// content deltas, a last chunk with an empty delta and the finish reason,
// a usage chunk with no choices, then [DONE]; usage is null before.
func TestStreamShape(t *testing.T) {
	ts := startServer(t, fakeConfig(t, newFake(1, 512, 1024)))
	body := `{"model": "fake", "stream": true, "stream_options": {"include_usage": true}, "max_tokens": 5, "seed": 7,
		"messages": [{"role": "user", "content": "hi"}]}`
	resp, err := http.Post(ts.url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			events = append(events, d)
		}
	}
	if len(events) < 4 || events[len(events)-1] != "[DONE]" {
		t.Fatalf("events %q", events)
	}
	var chunks []map[string]any
	for _, e := range events[:len(events)-1] {
		var m map[string]any
		if err := json.Unmarshal([]byte(e), &m); err != nil {
			t.Fatal(err)
		}
		if m["object"] != "chat.completion.chunk" || m["model"] != "fake" || !strings.HasPrefix(m["id"].(string), "chatcmpl-") {
			t.Errorf("chunk header %s", e)
		}
		chunks = append(chunks, m)
	}
	choice := func(m map[string]any) map[string]any { return m["choices"].([]any)[0].(map[string]any) }
	if d := choice(chunks[0])["delta"].(map[string]any); d["role"] != "assistant" {
		t.Errorf("first chunk %v", chunks[0])
	}
	last, usageChunk := chunks[len(chunks)-2], chunks[len(chunks)-1]
	if c := choice(last); c["finish_reason"] != "length" || len(c["delta"].(map[string]any)) != 0 {
		t.Errorf("last chunk %v", last)
	}
	for _, m := range chunks[:len(chunks)-1] {
		if u, ok := m["usage"]; !ok || u != nil {
			t.Errorf("usage %v before the usage chunk", u)
		}
	}
	u, _ := usageChunk["usage"].(map[string]any)
	if len(usageChunk["choices"].([]any)) != 0 || u == nil || u["completion_tokens"] != 5.0 {
		t.Errorf("usage chunk %v", usageChunk)
	}
}

// TestStopStrings: the text ends before the first stop string, even when
// it spans tokens, and finish_reason is "stop".
func TestStopStrings(t *testing.T) {
	ts := startServer(t, fakeConfig(t, newFake(1, 512, 1024)))
	checked := 0
	for seed := 1; seed <= 40 && checked < 8; seed++ {
		req := map[string]any{"prompt": "once", "seed": seed, "max_tokens": 40, "temperature": 1.0}
		full, err := ts.complete(context.Background(), "/v1/completions", req, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(full.Text) < 12 {
			continue
		}
		// A stop string from the middle of the text: 3 bytes, likely
		// across two tokens.
		at := len(full.Text) / 2
		stop := full.Text[at : at+3]
		first := strings.Index(full.Text, stop)
		for _, stream := range []bool{false, true} {
			req["stop"] = []string{"\x00never", stop}
			req["stream"] = stream
			o, err := ts.complete(context.Background(), "/v1/completions", req, 0)
			if err != nil {
				t.Fatal(err)
			}
			if o.Text != full.Text[:first] || o.Finish != "stop" {
				t.Errorf("seed %d stop %q stream %v: %q (%s), want %q", seed, stop, stream, o.Text, o.Finish, full.Text[:first])
			}
		}
		delete(req, "stop")
		delete(req, "stream")
		checked++
	}
	if checked < 8 {
		t.Fatalf("only %d texts long enough", checked)
	}
}

// TestUtilityEndpoints: /tokenize, /detokenize, /apply-template,
// /v1/models, /health and /metrics.
func TestUtilityEndpoints(t *testing.T) {
	ts := startServer(t, fakeConfig(t, newFake(2, 512, 1024)))
	getJSON := func(method, path, body string) map[string]any {
		t.Helper()
		status, _, b := ts.do(t, method, path, body)
		if status != 200 {
			t.Fatalf("%s %s: %d %s", method, path, status, b)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	toks := getJSON("POST", "/tokenize", `{"content": "hello world"}`)["tokens"].([]any)
	ids, _ := json.Marshal(toks)
	if got := getJSON("POST", "/detokenize", `{"tokens": `+string(ids)+`}`)["content"]; got != "hello world" {
		t.Errorf("detokenize(tokenize) = %q", got)
	}
	pieces := getJSON("POST", "/tokenize", `{"content": "hello world", "with_pieces": true}`)["tokens"].([]any)
	var joined string
	for _, p := range pieces {
		joined += p.(map[string]any)["piece"].(string)
	}
	if len(pieces) != len(toks) || joined != "hello world" {
		t.Errorf("pieces %v", pieces)
	}
	prompt := getJSON("POST", "/apply-template", `{"messages": [{"role": "user", "content": "hi"}]}`)["prompt"]
	if prompt != "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n" {
		t.Errorf("apply-template: %q", prompt)
	}
	models := getJSON("GET", "/v1/models", "")
	if d := models["data"].([]any); len(d) != 1 || d[0].(map[string]any)["id"] != "fake" {
		t.Errorf("models %v", models)
	}
	if m := getJSON("GET", "/v1/models/fake", ""); m["id"] != "fake" {
		t.Errorf("model %v", m)
	}
	if h := getJSON("GET", "/health", ""); h["status"] != "ok" || h["slots_idle"] != 2.0 {
		t.Errorf("health %v", h)
	}
	ts.complete(context.Background(), "/v1/completions", map[string]any{"prompt": "hi", "max_tokens": 3}, 0)
	_, hdr, m := ts.do(t, "GET", "/metrics", "")
	if !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Errorf("metrics content type %q", hdr.Get("Content-Type"))
	}
	// Every sample line belongs to a family declared with TYPE; the
	// histogram's buckets are cumulative and end at +Inf = count.
	typed := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(m)), "\n") {
		if f, ok := strings.CutPrefix(line, "# TYPE "); ok {
			typed[strings.Fields(f)[0]] = true
			continue
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		name := strings.FieldsFunc(line, func(r rune) bool { return r == '{' || r == ' ' })[0]
		fam := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
		if !typed[fam] && !typed[name] {
			t.Errorf("metric line without TYPE: %q", line)
		}
	}
	for _, want := range []string{
		`minfer_requests_total{endpoint="/v1/completions",code="200"} 1`,
		"minfer_generated_tokens_total 3",
		`minfer_time_to_first_token_seconds_bucket{le="+Inf"} 1`,
		"minfer_time_to_first_token_seconds_count 1",
		"minfer_prompt_tokens_total ",
		"minfer_generated_tokens_per_second ",
	} {
		if !strings.Contains(string(m), want) {
			t.Errorf("metrics lack %q:\n%s", want, m)
		}
	}
}

// TestGracefulShutdown: on shutdown, /health turns 503, a stream in flight
// finishes within the grace period, and one that would outlast it is ended
// with an error event; Serve returns.
func TestGracefulShutdown(t *testing.T) {
	f := newFake(2, 4096, 1024)
	f.delay = time.Millisecond
	f.noEOG = true
	ts := startServerGrace(t, fakeConfig(t, f), time.Second)
	short := make(chan error, 1)
	long := make(chan error, 1)
	go func() {
		_, err := ts.complete(context.Background(), "/v1/completions", map[string]any{"prompt": "a", "max_tokens": 100, "stream": true, "temperature": 0}, 0)
		short <- err
	}()
	go func() {
		o, err := ts.complete(context.Background(), "/v1/completions", map[string]any{"prompt": "b", "max_tokens": 4000, "stream": true, "temperature": 0}, 0)
		t.Logf("long: %d tokens, %s", o.Compl, o.Finish)
		long <- err
	}()
	waitFor(t, func() bool { return ts.sched.busy() == 2 })
	ts.Drain()
	if status, _, _ := ts.do(t, "GET", "/health", ""); status != 503 {
		t.Errorf("draining: health %d", status)
	}
	if status, hdr, body := ts.do(t, "POST", "/v1/completions", `{"prompt": "c"}`); status != 503 || hdr.Get("Retry-After") == "" {
		t.Errorf("draining: a new request got %d %s", status, body)
	}
	// Serve with a grace period the short stream fits in and the long one
	// does not (100 steps vs 4000, at ≥ 1 ms each, in 1 s).
	ctxStop := ts.cancel
	ts.cancel = nil
	ctxStop()
	if err := <-short; err != nil {
		t.Errorf("the short stream: %v", err)
	}
	if err := <-long; err == nil || !strings.Contains(err.Error(), "shutting_down") {
		t.Errorf("the long stream: %v, want a shutting_down error event", err)
	}
	select {
	case <-ts.done:
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
}

// TestCachePrompt: the second turn of a conversation reuses the slot's
// cache of the first (prompt and answer) and prefills only the rest, with
// the same answer as without the cache; cache_prompt=false opts out.
func TestCachePrompt(t *testing.T) {
	f := newFake(2, 1024, 1024)
	cached := startServer(t, fakeConfig(t, f))
	cfg := fakeConfig(t, newFake(2, 1024, 1024))
	cfg.CachePrompt = false
	plain := startServer(t, cfg)
	turn1 := []map[string]string{{"role": "user", "content": "hello there, how are you today?"}}
	req := map[string]any{"messages": turn1, "max_tokens": 20, "seed": 5}
	a1, err := cached.complete(context.Background(), "/v1/chat/completions", req, 0)
	if err != nil {
		t.Fatal(err)
	}
	turn2 := append(turn1, map[string]string{"role": "assistant", "content": a1.Text}, map[string]string{"role": "user", "content": "and then?"})
	req2 := map[string]any{"messages": turn2, "max_tokens": 20, "seed": 6}
	before := cached.metrics.cachedTokens.Load()
	a2, err := cached.complete(context.Background(), "/v1/chat/completions", req2, 0)
	if err != nil {
		t.Fatal(err)
	}
	reused := cached.metrics.cachedTokens.Load() - before
	if reused < int64(a1.Prompt) {
		t.Errorf("the second turn reused %d tokens; the first turn's prompt alone is %d", reused, a1.Prompt)
	}
	want, err := plain.complete(context.Background(), "/v1/chat/completions", req2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if a2 != want {
		t.Errorf("with the cache %+v, without %+v", a2, want)
	}
	if plain.metrics.cachedTokens.Load() != 0 {
		t.Error("a server without prompt caching reused tokens")
	}
	req2["cache_prompt"] = false
	before = cached.metrics.cachedTokens.Load()
	if _, err := cached.complete(context.Background(), "/v1/chat/completions", req2, 0); err != nil {
		t.Fatal(err)
	}
	if n := cached.metrics.cachedTokens.Load() - before; n != 0 {
		t.Errorf("cache_prompt=false reused %d tokens", n)
	}
	t.Logf("turn 2: %d prompt tokens, %d reused", a2.Prompt, reused)
}

// TestKeepAlive: a stream waiting in the queue gets its headers at once
// and SSE comments while it waits.
func TestKeepAlive(t *testing.T) {
	defer func(d time.Duration) { keepAlive = d }(keepAlive)
	keepAlive = 20 * time.Millisecond
	f := newFake(1, 1024, 1024)
	f.noEOG = true
	f.delay = time.Millisecond
	ts := startServer(t, fakeConfig(t, f))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := make(chan error, 1)
	go func() {
		_, err := ts.complete(ctx, "/v1/completions", map[string]any{"prompt": "a", "max_tokens": 300, "stream": true}, 0)
		first <- err
	}()
	waitFor(t, func() bool { return ts.sched.busy() == 1 })
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.url+"/v1/completions", strings.NewReader(`{"prompt": "b", "max_tokens": 2, "stream": true}`))
	resp, err := ts.client.Do(req) // returns with the headers, while queued
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	comments := 0
	for sc.Scan() && comments < 3 {
		if sc.Text() == ": keep-alive" {
			comments++
		}
	}
	if comments < 3 || ts.sched.busy() != 1 {
		t.Fatalf("%d keep-alive comments while queued", comments)
	}
	cancel()
	<-first
}
