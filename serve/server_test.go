package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/minfer/minfer/sample"
)

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func defaultsForTest() sample.Params { return sample.DefaultParams() }

// testServer runs a Server on a loopback port through Serve.
type testServer struct {
	*Server
	url    string
	cancel context.CancelFunc
	done   chan error
	client *http.Client
}

func startServer(t testing.TB, cfg Config) *testServer {
	t.Helper()
	return startServerGrace(t, cfg, 5*time.Second)
}

// startServerGrace is startServer with the shutdown grace period given.
func startServerGrace(t testing.TB, cfg Config, grace time.Duration) *testServer {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testServer{Server: s, url: "http://" + ln.Addr().String(), cancel: cancel, done: make(chan error, 1),
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}}}
	go func() { ts.done <- s.Serve(ctx, ln, grace) }()
	t.Cleanup(ts.stop)
	return ts
}

// stop shuts the server down and waits for Serve to return.
func (ts *testServer) stop() {
	if ts.cancel == nil {
		return
	}
	ts.cancel()
	<-ts.done
	ts.cancel = nil
	ts.client.CloseIdleConnections()
}

// do sends a request and returns the status, headers and body.
func (ts *testServer) do(t testing.TB, method, path, body string, hdr ...string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, ts.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := ts.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// outcome is what a client saw of a generation.
type outcome struct {
	Text          string
	Finish        string
	Prompt, Compl int
}

// complete runs a chat or text completion, streamed or not, and returns the
// text, finish reason and usage. With stopAfter > 0 a stream is abandoned
// after that many content chunks (the client disconnects).
func (ts *testServer) complete(ctx context.Context, path string, req map[string]any, stopAfter int) (outcome, error) {
	var o outcome
	b, _ := json.Marshal(req)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hr, _ := http.NewRequestWithContext(ctx, "POST", ts.url+path, bytes.NewReader(b))
	hr.Header.Set("Content-Type", "application/json")
	resp, err := ts.client.Do(hr)
	if err != nil {
		return o, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		body, _ := io.ReadAll(resp.Body)
		return o, &httpError{resp.StatusCode, string(body)}
	}
	chatAPI := strings.Contains(path, "chat")
	type choice struct {
		Text    string `json:"text"`
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
		Delta struct {
			Role    string  `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	}
	type body struct {
		Object  string   `json:"object"`
		Choices []choice `json:"choices"`
		Usage   *usage   `json:"usage"`
		Error   any      `json:"error"`
	}
	stream, _ := req["stream"].(bool)
	if !stream {
		var v body
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			return o, err
		}
		if len(v.Choices) != 1 || v.Usage == nil {
			return o, errorf("response without one choice and usage: %+v", v)
		}
		c := v.Choices[0]
		o.Text = c.Text
		if chatAPI {
			o.Text = c.Message.Content
		}
		if c.FinishReason != nil {
			o.Finish = *c.FinishReason
		}
		o.Prompt, o.Compl = v.Usage.PromptTokens, v.Usage.CompletionTokens
		if v.Usage.TotalTokens != o.Prompt+o.Compl {
			return o, errorf("usage total %d", v.Usage.TotalTokens)
		}
		return o, nil
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		return o, errorf("stream content type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	chunks, done := 0, false
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, ":") { // SSE comments: keep-alives
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			return o, errorf("stream line %q", line)
		}
		if done {
			return o, errorf("data after [DONE]: %q", line)
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var v body
		if err := json.Unmarshal([]byte(data), &v); err != nil {
			return o, err
		}
		if v.Error != nil {
			return o, errorf("stream error: %s", data)
		}
		if len(v.Choices) == 0 {
			if v.Usage == nil {
				return o, errorf("chunk without choices or usage: %s", data)
			}
			o.Prompt, o.Compl = v.Usage.PromptTokens, v.Usage.CompletionTokens
			continue
		}
		c := v.Choices[0]
		if chatAPI {
			if v.Object != "chat.completion.chunk" {
				return o, errorf("object %q", v.Object)
			}
			if c.Delta.Content != nil {
				o.Text += *c.Delta.Content
			}
		} else {
			o.Text += c.Text
		}
		if c.FinishReason != nil {
			o.Finish = *c.FinishReason
		} else if chatAPI && c.Delta.Content != nil && *c.Delta.Content != "" || !chatAPI && c.Text != "" {
			chunks++
			if stopAfter > 0 && chunks >= stopAfter {
				return o, errAbandoned
			}
		}
	}
	if err := sc.Err(); err != nil {
		return o, err
	}
	if !done {
		return o, errorf("stream ended without [DONE]")
	}
	return o, nil
}

type httpError struct {
	status int
	body   string
}

func (e *httpError) Error() string { return http.StatusText(e.status) + ": " + e.body }

type strError string

func (e strError) Error() string { return string(e) }

var errAbandoned = strError("abandoned by the client")

func errorf(format string, a ...any) error {
	return strError(strings.TrimSpace(fmt.Sprintf(format, a...)))
}
