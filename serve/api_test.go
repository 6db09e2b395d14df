package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestErrors checks the OpenAI error shape and status of each refusal,
// with raw HTTP.
func TestErrors(t *testing.T) {
	cfg := fakeConfig(t, newFake(2, 64, 1024))
	cfg.MaxBodyBytes = 4096
	ts := startServer(t, cfg)
	keyed := fakeConfig(t, newFake(1, 64, 1024))
	keyed.APIKey = "sekrit"
	tk := startServer(t, keyed)
	long := strings.Repeat("hello world ", 40)
	cases := []struct {
		name       string
		srv        *testServer
		method     string
		path, body string
		hdr        []string
		status     int
		code       string
		msgHas     string
	}{
		{"malformed JSON", ts, "POST", "/v1/chat/completions", `{"messages": [`, nil, 400, "invalid_json", "not valid JSON"},
		{"trailing data", ts, "POST", "/v1/completions", `{"prompt": "a"} {}`, nil, 400, "invalid_json", "after the JSON"},
		{"wrong type", ts, "POST", "/v1/completions", `{"prompt": "a", "temperature": "hot"}`, nil, 400, "invalid_type", "temperature"},
		{"unknown model", ts, "POST", "/v1/chat/completions", `{"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}`, nil, 404, "model_not_found", `"fake"`},
		{"unknown model, get", ts, "GET", "/v1/models/gpt-4o", ``, nil, 404, "model_not_found", "gpt-4o"},
		{"prompt too long", ts, "POST", "/v1/completions", `{"prompt": "` + long + `"}`, nil, 400, "context_length_exceeded", "context holds 64 positions: at most 63 prompt tokens"},
		{"body too large", ts, "POST", "/v1/completions", `{"prompt": "` + strings.Repeat("x", 5000) + `"}`, nil, 413, "request_too_large", "4096 bytes"},
		{"n=2", ts, "POST", "/v1/chat/completions", `{"n": 2, "messages": [{"role": "user", "content": "hi"}]}`, nil, 400, "unsupported_value", "n=2"},
		{"temperature out of range", ts, "POST", "/v1/completions", `{"prompt": "a", "temperature": 3}`, nil, 400, "invalid_value", "temperature=3"},
		{"penalty out of range", ts, "POST", "/v1/completions", `{"prompt": "a", "presence_penalty": -2.5}`, nil, 400, "invalid_value", "presence_penalty"},
		{"max_tokens 0", ts, "POST", "/v1/completions", `{"prompt": "a", "max_tokens": 0}`, nil, 400, "invalid_value", "max_tokens=0"},
		{"stop of numbers", ts, "POST", "/v1/completions", `{"prompt": "a", "stop": [1]}`, nil, 400, "invalid_type", "stop"},
		{"token outside vocab", ts, "POST", "/v1/completions", `{"prompt": [1, 5000]}`, nil, 400, "invalid_value", "5000"},
		{"two prompts", ts, "POST", "/v1/completions", `{"prompt": ["a", "b"]}`, nil, 400, "unsupported_value", "2 prompts"},
		{"no prompt", ts, "POST", "/v1/completions", `{}`, nil, 400, "missing_field", "prompt"},
		{"no messages", ts, "POST", "/v1/chat/completions", `{}`, nil, 400, "missing_field", "messages"},
		{"bad messages", ts, "POST", "/v1/chat/completions", `{"messages": [{"content": "x"}]}`, nil, 400, "invalid_messages", "role"},
		{"logprobs", ts, "POST", "/v1/chat/completions", `{"logprobs": true, "messages": [{"role": "user", "content": "hi"}]}`, nil, 400, "unsupported_parameter", "logprobs"},
		{"json mode", ts, "POST", "/v1/chat/completions", `{"response_format": {"type": "json_object"}, "messages": [{"role": "user", "content": "hi"}]}`, nil, 400, "unsupported_parameter", "response_format"},
		{"echo", ts, "POST", "/v1/completions", `{"prompt": "a", "echo": true}`, nil, 400, "unsupported_parameter", "echo"},
		{"logit_bias id outside vocab", ts, "POST", "/v1/completions", `{"prompt": "a", "logit_bias": {"5000": -100}}`, nil, 400, "invalid_value", "token id 5000"},
		{"logit_bias out of range", ts, "POST", "/v1/completions", `{"prompt": "a", "logit_bias": {"7": -101}}`, nil, 400, "invalid_value", "from -100 to 100"},
		{"logit_bias text key", ts, "POST", "/v1/completions", `{"prompt": "a", "logit_bias": {"hello": 1}}`, nil, 400, "invalid_value", "not a token id"},
		{"logit_bias bad pair", ts, "POST", "/v1/completions", `{"prompt": "a", "logit_bias": [[1, 2, 3]]}`, nil, 400, "invalid_type", "logit_bias[0]"},
		{"logit_bias not a map", ts, "POST", "/v1/completions", `{"prompt": "a", "logit_bias": 3}`, nil, 400, "invalid_type", "logit_bias"},
		{"detokenize outside vocab", ts, "POST", "/detokenize", `{"tokens": [-1]}`, nil, 400, "invalid_value", "-1"},
		{"unknown path", ts, "GET", "/v2/nothing", ``, nil, 404, "not_found", "/v2/nothing"},
		{"wrong method", ts, "GET", "/v1/completions", ``, nil, 405, "method_not_allowed", "POST"},
		{"no key", tk, "GET", "/v1/models", ``, nil, 401, "invalid_api_key", "Authorization"},
		{"wrong key", tk, "POST", "/v1/completions", `{"prompt": "a"}`, []string{"Authorization", "Bearer nope"}, 401, "invalid_api_key", "API key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, hdr, body := c.srv.do(t, c.method, c.path, c.body, c.hdr...)
			if status != c.status {
				t.Fatalf("status %d, want %d: %s", status, c.status, body)
			}
			if ct := hdr.Get("Content-Type"); ct != "application/json" {
				t.Errorf("content type %q", ct)
			}
			var e struct {
				Error map[string]any `json:"error"`
			}
			if err := json.Unmarshal(body, &e); err != nil || e.Error == nil {
				t.Fatalf("not an OpenAI error object: %s", body)
			}
			for _, k := range []string{"message", "type", "code", "param"} {
				if _, ok := e.Error[k]; !ok {
					t.Errorf("error has no %q: %s", k, body)
				}
			}
			if e.Error["code"] != c.code || !strings.Contains(e.Error["message"].(string), c.msgHas) {
				t.Errorf("code %v message %q, want %s and %q", e.Error["code"], e.Error["message"], c.code, c.msgHas)
			}
		})
	}
	// The right key, and /health without one.
	if status, _, body := tk.do(t, "GET", "/v1/models", "", "Authorization", "Bearer sekrit"); status != 200 {
		t.Errorf("with the key: %d %s", status, body)
	}
	if status, _, body := tk.do(t, "GET", "/health", ""); status != 200 {
		t.Errorf("health without a key: %d %s", status, body)
	}
}

// TestLogitBias: a large bias on one token makes greedy decoding repeat
// it, in OpenAI's object form and llama-server's array form; false bans.
func TestLogitBias(t *testing.T) {
	ts := startServer(t, fakeConfig(t, newFake(1, 64, 1024)))
	_, _, body := ts.do(t, "POST", "/detokenize", `{"tokens": [72]}`)
	var d struct{ Content string }
	if err := json.Unmarshal(body, &d); err != nil || d.Content == "" {
		t.Fatalf("detokenize: %s", body)
	}
	text := func(req string) string {
		status, _, body := ts.do(t, "POST", "/v1/completions", req)
		if status != 200 {
			t.Fatalf("%d %s", status, body)
		}
		var v struct{ Choices []struct{ Text string } }
		if err := json.Unmarshal(body, &v); err != nil || len(v.Choices) != 1 {
			t.Fatalf("%s", body)
		}
		return v.Choices[0].Text
	}
	want := strings.Repeat(d.Content, 5)
	for _, lb := range []string{`{"72": 100}`, `[[72, 100]]`} {
		if got := text(`{"prompt": "a b", "temperature": 0, "max_tokens": 5, "ignore_eos": true, "logit_bias": ` + lb + `}`); got != want {
			t.Errorf("logit_bias %s: %q, want %q", lb, got, want)
		}
	}
	// false bans: of two raised tokens, the banned one never comes
	_, _, body = ts.do(t, "POST", "/detokenize", `{"tokens": [73]}`)
	var d73 struct{ Content string }
	if err := json.Unmarshal(body, &d73); err != nil || d73.Content == "" || d73.Content == d.Content {
		t.Fatalf("detokenize: %s", body)
	}
	if got := text(`{"prompt": "a b", "temperature": 0, "max_tokens": 4, "ignore_eos": true, "logit_bias": [[72, false], [73, 100]]}`); got != strings.Repeat(d73.Content, 4) {
		t.Errorf("72 banned, 73 raised: %q", got)
	}
}

// TestPanicRecovered: a handler panic answers 500 in OpenAI's shape, is
// counted, and the server goes on serving.
func TestPanicRecovered(t *testing.T) {
	ts := startServer(t, fakeConfig(t, newFake(1, 64, 1024)))
	ts.routes["/boom"] = map[string]http.HandlerFunc{"GET": func(http.ResponseWriter, *http.Request) { panic("boom") }}
	status, _, body := ts.do(t, "GET", "/boom", "")
	if status != 500 || !strings.Contains(string(body), `"internal_error"`) {
		t.Fatalf("%d %s", status, body)
	}
	if status, _, _ := ts.do(t, "GET", "/health", ""); status != 200 {
		t.Fatalf("after a panic: health %d", status)
	}
	_, _, m := ts.do(t, "GET", "/metrics", "")
	if !strings.Contains(string(m), "minfer_handler_panics_total 1\n") {
		t.Errorf("panic not counted:\n%s", m)
	}
}

// TestEnginePanic: a panicking engine fails the requests of that step with
// 500 and /health turns 503; the scheduler survives.
func TestEnginePanic(t *testing.T) {
	ts := startServer(t, fakeConfig(t, panicEngine{newFake(1, 64, 1024)}))
	_, err := ts.complete(context.Background(), "/v1/completions", map[string]any{"prompt": "hi", "max_tokens": 3}, 0)
	var he *httpError
	if !errors.As(err, &he) || he.status != 500 || !strings.Contains(he.body, "engine panic") {
		t.Fatalf("got %v", err)
	}
	if status, _, body := ts.do(t, "GET", "/health", ""); status != 503 || !strings.Contains(string(body), "engine panic") {
		t.Fatalf("health %d %s", status, body)
	}
}

type panicEngine struct{ *fakeEngine }

func (panicEngine) EvalSeqs([]Seq) ([][]float32, error) { panic("kaput") }

// TestQueueFull: with every slot busy and no queue, a request is refused
// with 503 and Retry-After.
func TestQueueFull(t *testing.T) {
	f := newFake(1, 256, 1024)
	f.delay = 5 * time.Millisecond
	f.noEOG = true
	cfg := fakeConfig(t, f)
	cfg.Queue = 0
	ts := startServer(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan error, 1)
	go func() {
		_, err := ts.complete(ctx, "/v1/completions", map[string]any{"prompt": "hi", "max_tokens": 200, "stream": true}, 0)
		started <- err
	}()
	waitFor(t, func() bool { return ts.sched.busy() == 1 })
	status, hdr, body := ts.do(t, "POST", "/v1/completions", `{"prompt": "hi", "max_tokens": 2}`)
	if status != 503 || hdr.Get("Retry-After") == "" || !strings.Contains(string(body), `"server_busy"`) {
		t.Fatalf("%d Retry-After %q %s", status, hdr.Get("Retry-After"), body)
	}
	cancel()
	<-started
	waitFor(t, func() bool { return ts.sched.busy() == 0 })
}

// TestQueueForgetsLeavers: a queued request whose client leaves gives its
// place in the queue to the next one at once.
func TestQueueForgetsLeavers(t *testing.T) {
	f := newFake(1, 256, 1024)
	f.delay = 2 * time.Millisecond
	f.noEOG = true
	cfg := fakeConfig(t, f)
	cfg.Queue = 1
	ts := startServer(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := make(chan error, 2)
	go func() {
		_, err := ts.complete(ctx, "/v1/completions", map[string]any{"prompt": "hi", "max_tokens": 200, "stream": true}, 0)
		res <- err
	}()
	waitFor(t, func() bool { return ts.sched.busy() == 1 })
	qctx, qcancel := context.WithCancel(context.Background())
	go func() {
		_, err := ts.complete(qctx, "/v1/completions", map[string]any{"prompt": "queued", "max_tokens": 2}, 0)
		res <- err
	}()
	waitFor(t, func() bool { return ts.metrics.queued.Load() == 1 })
	qcancel()
	if err := <-res; err == nil {
		t.Fatal("the abandoned request succeeded")
	}
	// The scheduler drops it at its next step: the queue's one place is
	// free again although the slot is still busy.
	waitFor(t, func() bool {
		ts.sched.mu.Lock()
		defer ts.sched.mu.Unlock()
		return len(ts.sched.waiting) == 0
	})
	if ts.sched.busy() != 1 {
		t.Fatal("the long request ended too soon for the test")
	}
	o, err := ts.complete(context.Background(), "/v1/completions", map[string]any{"prompt": "next", "max_tokens": 2}, 0)
	if err != nil || o.Compl != 2 {
		t.Fatalf("the next request: %+v %v", o, err)
	}
	cancel()
	<-res
}

// TestDisconnectFreesSlot: a client that goes away mid-stream frees its
// slot at the next step, and the slot serves the next request.
func TestDisconnectFreesSlot(t *testing.T) {
	f := newFake(1, 4096, 1024)
	f.delay = 2 * time.Millisecond
	f.noEOG = true
	ts := startServer(t, fakeConfig(t, f))
	_, err := ts.complete(context.Background(), "/v1/chat/completions", map[string]any{
		"messages": []map[string]string{{"role": "user", "content": "tell me a long story"}}, "max_tokens": 3000, "stream": true, "seed": 1}, 2)
	if err != errAbandoned {
		t.Fatalf("stream: %v", err)
	}
	t0 := time.Now()
	waitFor(t, func() bool { return ts.sched.busy() == 0 })
	if d := time.Since(t0); d > time.Second {
		t.Errorf("slot freed %v after the disconnect", d)
	}
	checkHeld(t, ts.Server, f)
	o, err := ts.complete(context.Background(), "/v1/completions", map[string]any{"prompt": "again", "max_tokens": 4, "seed": 2}, 0)
	if err != nil || o.Compl == 0 {
		t.Fatalf("next request: %+v %v", o, err)
	}
	_, _, m := ts.do(t, "GET", "/metrics", "")
	if !strings.Contains(string(m), "minfer_requests_cancelled_total 1\n") {
		t.Errorf("cancellation not counted:\n%s", m)
	}
}

func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSlowClientCutOff: a client that stops reading a stream is cut off
// once a write has waited the write timeout, and its slot is freed. Small
// socket buffers on both sides make the writes block soon.
func TestSlowClientCutOff(t *testing.T) {
	f := newFake(1, 1<<17, 1024)
	f.noEOG = true
	f.delay = 100 * time.Microsecond // 120000 tokens: over 12 s
	cfg := fakeConfig(t, f)
	cfg.WriteTimeout = 200 * time.Millisecond
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, smallBuffers{ln}, time.Second) }()
	defer func() { cancel(); <-done }()

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.(*net.TCPConn).SetReadBuffer(2048)
	body := `{"prompt": "a", "max_tokens": 120000, "stream": true, "temperature": 0}`
	fmt.Fprintf(conn, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	// Read nothing: the socket buffers fill, a write times out.
	waitFor(t, func() bool { return s.sched.busy() == 1 })
	t0 := time.Now()
	for s.sched.busy() != 0 {
		if time.Since(t0) > 60*time.Second {
			t.Fatal("the slot of a client that reads nothing was not freed in 60 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := s.metrics.streamsCancelled.Load(); n != 1 {
		t.Errorf("%d cancellations counted", n)
	}
	if n := s.metrics.generated.Load(); n >= 120000 {
		t.Error("the generation ran to its end")
	}
	t.Logf("cut off after %v, %d tokens", time.Since(t0), s.metrics.generated.Load())
}

// smallBuffers gives accepted connections a small send buffer.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(2048)
	}
	return c, err
}
