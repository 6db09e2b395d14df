package serve

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
)

// fuzzPaths are the endpoints FuzzAPI posts to (the fuzzer picks one).
var fuzzPaths = []string{"/v1/chat/completions", "/v1/completions", "/tokenize", "/detokenize", "/apply-template"}

// FuzzAPI posts arbitrary bodies to the JSON endpoints of a server on the
// fake engine: every answer must be a success or a client error (no 5xx)
// and no handler may panic (the server would recover and count it).
// Generations are short (max_tokens defaults to 4 here) so a valid body
// costs little.
//
//	go test ./serve -run '^$' -fuzz FuzzAPI -fuzztime 60s
func FuzzAPI(f *testing.F) {
	seeds := []struct {
		path uint8 // index into fuzzPaths
		body string
	}{
		{0, `{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3, "stream": true, "stream_options": {"include_usage": true}}`},
		{0, `{"messages": [{"role": "system", "content": [{"type": "text", "text": "s"}]}, {"role": "user", "content": "u"}], "stop": ["a", "b"], "seed": 7, "temperature": 0.7, "top_p": 0.9}`},
		{0, `{"messages": [{"role": "user", "content": "hi"}], "chat_template_kwargs": {"enable_thinking": false}, "tools": [{"type": "function", "function": {"name": "f"}}]}`},
		{1, `{"prompt": "hello", "max_tokens": 2, "logit_bias": {"7": -100}, "frequency_penalty": 1, "presence_penalty": -1}`},
		{1, `{"prompt": [1, 2, 3], "logit_bias": [[1, 5]], "stop": "x", "stream": true}`},
		{2, `{"content": "hello world", "add_special": true, "with_pieces": true}`},
		{3, `{"tokens": [1, 2, 300]}`},
		{4, `{"messages": [{"role": "user", "content": "hi"}]}`},
	}
	for _, sd := range seeds {
		f.Add(sd.path, []byte(sd.body))
	}
	cfg := fakeConfig(f, newFake(2, 64, 1024))
	cfg.MaxTokens = 4
	cfg.MaxBodyBytes = 1 << 16
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := New(cfg)
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	h := s.Handler()
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		path := fuzzPaths[int(which)%len(fuzzPaths)]
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		before := s.metrics.panics.Load()
		h.ServeHTTP(rec, req)
		if n := s.metrics.panics.Load(); n != before {
			t.Fatalf("%s %q: the handler panicked", path, body)
		}
		if rec.Code >= 500 {
			t.Fatalf("%s %q: status %d: %s", path, body, rec.Code, rec.Body.Bytes())
		}
	})
}
