package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/minfer/minfer/internal/fixtures"
)

// startServe runs `minfer serve` in-process on a loopback port and returns
// its base URL; the server is shut down (and awaited) at cleanup.
func startServe(t *testing.T, c ServeCmd) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	c.ctx, c.ready = ctx, func(a string) { addr <- a }
	if !testing.Verbose() {
		c.logw = io.Discard
	}
	if c.Addr == "" {
		c.Addr = "127.0.0.1:0"
	}
	for k, v := range map[*string]string{&c.KVType: "f32", &c.LogFormat: "text"} {
		if *k == "" {
			*k = v
		}
	}
	if c.Queue == 0 {
		c.Queue = 32
	}
	if c.PrefillChunk == 0 {
		c.PrefillChunk = 128
	}
	if c.NPredict == 0 {
		c.NPredict = -1
	}
	if c.MaxBody == 0 {
		c.MaxBody = 8 << 20
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = 30 * time.Second
	}
	if c.ShutdownGrace == 0 {
		c.ShutdownGrace = 5 * time.Second
	}
	go func() { done <- c.Run() }()
	var url string
	select {
	case a := <-addr:
		url = "http://" + a
	case err := <-done:
		cancel()
		t.Fatalf("minfer serve: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("minfer serve: %v", err)
		}
	})
	return url
}

// openaiPrefix is an npm prefix holding the official openai package,
// installed once into the user's cache directory ($MINFER_OPENAI_NPM
// overrides it). Without node and npm the test is skipped, except under
// CI=true, where it fails.
func openaiPrefix(t *testing.T) string {
	t.Helper()
	ci := os.Getenv("CI") == "true"
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if ci {
				t.Fatalf("%s not found: the OpenAI client test needs Node.js and npm (.ci/run installs them)", tool)
			}
			t.Skipf("%s not found: the OpenAI client test needs Node.js and npm", tool)
		}
	}
	dir := os.Getenv("MINFER_OPENAI_NPM")
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		dir = filepath.Join(cache, "minfer", "openai-npm")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai", "package.json")); err == nil {
		return dir
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "npm", "install", "--prefix", dir, "--no-audit", "--no-fund", "openai@6").CombinedOutput()
	if err != nil {
		if ci {
			t.Fatalf("npm install openai: %v\n%s", err, out)
		}
		t.Skipf("npm install openai failed (offline?): %v\n%s", err, out)
	}
	return dir
}

// TestServeOpenAIClient drives `minfer serve` on the synthetic Qwen2 model
// with the official openai npm package (serve/testdata/e2e/openai.mjs):
// models, chat and completions whole and streamed, usage, an abandoned
// stream, and the 404/400/401 errors as the client's typed errors.
func TestServeOpenAIClient(t *testing.T) {
	prefix := openaiPrefix(t)
	model := fixtures.Path(t, "models", "qwen2-synth-q4_k_m.gguf")
	url := startServe(t, ServeCmd{Model: model, APIKey: "test-key", TemplateFlags: TemplateFlags{ChatTemplate: "chatml"}})
	script, _ := filepath.Abs(filepath.Join("..", "..", "serve", "testdata", "e2e", "openai.mjs"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.Env = append(os.Environ(), "OPENAI_PREFIX="+prefix, "BASE_URL="+url+"/v1", "MODEL=qwen2-synth-q4_k_m", "API_KEY=test-key")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "ok\n") {
		t.Fatalf("node openai.mjs: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// TestServeExecConcurrent: concurrent clients on the compiled executor
// (one slot: the others queue) each get the completion the same request
// gets alone, with the slot's cache reused between requests that share a
// prefix (the prompts repeat a phrase) — the executor's KV rows are the
// same whether a position was prefilled in a chunk or decoded.
func TestServeExecConcurrent(t *testing.T) {
	model := fixtures.Path(t, "models", "qwen2-synth-q4_k_m.gguf")
	// Each request alone on a one-slot server, then all at once on a
	// four-slot one that decodes them together (exec.Model.EvalSeqs).
	url1 := startServe(t, ServeCmd{Model: model, Threads: 2, Parallel: 1, PrefillChunk: 8, CachePrompt: true, TemplateFlags: TemplateFlags{ChatTemplate: "chatml"}})
	url := startServe(t, ServeCmd{Model: model, Threads: 2, Parallel: 4, PrefillChunk: 8, CachePrompt: true, TemplateFlags: TemplateFlags{ChatTemplate: "chatml"}})
	type result struct{ text, finish string }
	post := func(url, path string, req map[string]any) (result, error) {
		b, _ := json.Marshal(req)
		resp, err := http.Post(url+path, "application/json", bytes.NewReader(b))
		if err != nil {
			return result{}, err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			return result{}, fmt.Errorf("%d %s", resp.StatusCode, body)
		}
		if req["stream"] == true {
			var r result
			for _, line := range strings.Split(string(body), "\n") {
				d, ok := strings.CutPrefix(line, "data: ")
				if !ok || d == "[DONE]" {
					continue
				}
				var c struct {
					Choices []struct {
						Text         string `json:"text"`
						Delta        struct{ Content string }
						FinishReason *string `json:"finish_reason"`
					}
				}
				if err := json.Unmarshal([]byte(d), &c); err != nil {
					return r, err
				}
				for _, ch := range c.Choices {
					r.text += ch.Text + ch.Delta.Content
					if ch.FinishReason != nil {
						r.finish = *ch.FinishReason
					}
				}
			}
			return r, nil
		}
		var c struct {
			Choices []struct {
				Text         string
				Message      struct{ Content string }
				FinishReason string `json:"finish_reason"`
			}
		}
		if err := json.Unmarshal(body, &c); err != nil || len(c.Choices) != 1 {
			return result{}, fmt.Errorf("%s: %v", body, err)
		}
		return result{c.Choices[0].Text + c.Choices[0].Message.Content, c.Choices[0].FinishReason}, nil
	}
	type job struct {
		path string
		req  map[string]any
	}
	var jobs []job
	for i := range 12 {
		req := map[string]any{"seed": i, "max_tokens": 6 + i%5, "stream": i%2 == 0, "temperature": 0.8}
		path := "/v1/completions"
		if i%3 == 0 {
			path = "/v1/chat/completions"
			req["messages"] = []map[string]string{{"role": "user", "content": strings.Repeat("tell me more ", 1+i)}}
		} else {
			req["prompt"] = strings.Repeat("once upon a time ", 1+i)
		}
		jobs = append(jobs, job{path, req})
	}
	want := make([]result, len(jobs))
	for i, j := range jobs {
		r, err := post(url1, j.path, j.req)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = r
	}
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := post(url, j.path, j.req)
			if err != nil {
				t.Error(err)
			} else if r != want[i] {
				t.Errorf("request %d among others: %+v, alone %+v", i, r, want[i])
			}
		}()
	}
	wg.Wait()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// The four-slot server decoded requests together: more sequences
	// than steps.
	var steps, seqs int64
	for _, line := range strings.Split(string(m), "\n") {
		fmt.Sscanf(line, "minfer_steps_total %d", &steps)
		fmt.Sscanf(line, "minfer_step_sequences_total %d", &seqs)
	}
	if steps == 0 || seqs <= steps {
		t.Errorf("four slots: %d sequences in %d steps, want batches of more than one", seqs, steps)
	}
	t.Logf("four slots: %d sequences in %d steps", seqs, steps)
	i := bytes.Index(m, []byte("\nminfer_prompt_tokens_cached_total "))
	if i < 0 || bytes.HasPrefix(m[i+1:], []byte("minfer_prompt_tokens_cached_total 0\n")) {
		t.Errorf("no prompt tokens reused:\n%s", m)
	} else {
		t.Logf("%s", bytes.SplitN(m[i+1:], []byte("\n"), 2)[0])
	}
	http.DefaultClient.CloseIdleConnections()
}

// TestBenchServe runs minfer bench-serve against minfer serve: every
// request generates exactly -n tokens (ignore_eos), one row per client
// count.
func TestBenchServe(t *testing.T) {
	model := fixtures.Path(t, "models", "qwen2-synth-q4_k_m.gguf")
	url := startServe(t, ServeCmd{Model: model, Threads: 1, CachePrompt: true})
	out := capture(t, (&BenchServeCmd{URL: url, Concurrency: "1,3", NPredict: 5, PromptWords: 8, Requests: 2, Label: "minfer", Output: "jsonl"}).Run)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("output:\n%s", out)
	}
	for i, line := range lines {
		var row benchRow
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatal(err)
		}
		n := []int{1, 3}[i]
		if row.Concurrency != n || row.Requests != 2*n || row.Generated != 5*2*n || row.TokPerSec <= 0 || row.TTFTMedian <= 0 {
			t.Errorf("row %+v", row)
		}
	}
}

// TestBenchServeBanInvalidUTF8: --ban-invalid-utf8 bans exactly the
// tokens whose piece alone is not valid UTF-8, and minfer serve takes the
// logit_bias of every request.
func TestBenchServeBanInvalidUTF8(t *testing.T) {
	model := fixtures.Path(t, "models", "qwen2-synth-q4_k_m.gguf")
	tok, err := loadTokenizer(model)
	if err != nil {
		t.Fatal(err)
	}
	bias := invalidUTF8Bias(tok)
	if len(bias) == 0 || len(bias) >= tok.NVocab() {
		t.Fatalf("%d of %d tokens banned", len(bias), tok.NVocab())
	}
	for id := int32(0); id < int32(tok.NVocab()); id++ {
		_, banned := bias[strconv.Itoa(int(id))]
		if banned == utf8.ValidString(tok.TokenPiece(id)) {
			t.Fatalf("token %d (%q): banned %v", id, tok.TokenPiece(id), banned)
		}
	}
	t.Logf("%d of %d tokens are not valid UTF-8 alone", len(bias), tok.NVocab())
	url := startServe(t, ServeCmd{Model: model, Threads: 1})
	out := capture(t, (&BenchServeCmd{URL: url, Concurrency: "2", NPredict: 4, PromptWords: 4, Requests: 1, Label: "minfer", Output: "jsonl", BanInvalid: model}).Run)
	var row benchRow
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &row); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if row.Generated != 8 {
		t.Errorf("row %+v", row)
	}
}
