package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/minfer/minfer/tokenizer"
)

// BenchServeCmd is `minfer bench-serve`: a load generator for an
// OpenAI-compatible server (minfer serve, llama-server, ...). For each
// concurrency it runs that many clients, each sending streamed completion
// requests back to back, and reports the aggregate generated tokens per
// second and the time to first token.
type BenchServeCmd struct {
	URL         string `help:"Server base URL." default:"http://127.0.0.1:8080"`
	Model       string `help:"Model name to send (default: the first of GET /v1/models)."`
	Concurrency string `short:"c" help:"Comma-separated client counts." default:"1,4,8"`
	NPredict    int    `short:"n" help:"Tokens generated per request (ignore_eos, so every request generates exactly this)." default:"128" name:"n-predict"`
	PromptWords int    `short:"p" help:"Words in each prompt (distinct per request, so no server can reuse a cached prompt)." default:"32" name:"prompt-words"`
	Requests    int    `short:"r" help:"Requests per client at each concurrency." default:"2"`
	APIKey      string `help:"Bearer key to send." name:"api-key" env:"MINFER_API_KEY"`
	Label       string `help:"Label for the first column (e.g. the server's name)." default:"server"`
	Output      string `short:"o" help:"Output: md or jsonl." default:"md" enum:"md,jsonl"`
	BanInvalid  string `help:"Load the tokenizer of this GGUF or plan and send a logit_bias of -100 for every token whose text is not valid UTF-8 on its own, so that random-weight models stream text (llama-server's output parser answers 500 to invalid UTF-8). Every server gets the same requests." name:"ban-invalid-utf8" type:"existingfile"`

	bias map[string]int // the logit_bias sent, from BanInvalid
}

// benchRow is one concurrency's result.
type benchRow struct {
	Label       string  `json:"label"`
	Concurrency int     `json:"concurrency"`
	Requests    int     `json:"requests"`
	Generated   int     `json:"generated_tokens"`
	WallSeconds float64 `json:"wall_s"`
	TokPerSec   float64 `json:"aggregate_tok_s"`
	TTFTMedian  float64 `json:"ttft_median_ms"`
	TTFTP90     float64 `json:"ttft_p90_ms"`
	PerClient   float64 `json:"per_request_decode_tok_s"`
}

// invalidUTF8Bias is the logit_bias (-100) of every token whose text alone
// is not valid UTF-8.
func invalidUTF8Bias(tok *tokenizer.Tokenizer) map[string]int {
	bias := map[string]int{}
	for id := int32(0); id < int32(tok.NVocab()); id++ {
		if !utf8.ValidString(tok.TokenPiece(id)) {
			bias[strconv.Itoa(int(id))] = -100
		}
	}
	return bias
}

// Run measures each concurrency in turn.
func (c *BenchServeCmd) Run() error {
	var levels []int
	for _, f := range strings.Split(c.Concurrency, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 1024 {
			return fmt.Errorf("-c %q: give client counts from 1 to 1024, comma-separated", c.Concurrency)
		}
		levels = append(levels, n)
	}
	if c.NPredict < 1 || c.Requests < 1 || c.PromptWords < 1 {
		return fmt.Errorf("-n, -r and -p must be at least 1")
	}
	if c.BanInvalid != "" {
		tok, err := loadTokenizer(c.BanInvalid)
		if err != nil {
			return err
		}
		c.bias = invalidUTF8Bias(tok)
		fmt.Fprintf(os.Stderr, "bench-serve: logit_bias -100 on %d of %d tokens (text not valid UTF-8 alone)\n", len(c.bias), tok.NVocab())
	}
	// A connection per request: a server that closes idle keep-alive
	// connections (llama-server after 5 s) would otherwise race a reused
	// one, and a POST is not retried.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	if c.Model == "" {
		m, err := c.firstModel(client)
		if err != nil {
			return err
		}
		c.Model = m
	}
	// One request to warm up (page in the weights, first allocations).
	if _, _, _, err := c.one(client, 0, 1<<20); err != nil {
		return err
	}
	if c.Output == "md" {
		fmt.Printf("| %s | clients | requests | generated | wall s | aggregate tok/s | per-request decode tok/s | TTFT median ms | TTFT p90 ms |\n|---|---|---|---|---|---|---|---|---|\n", "server")
	}
	for _, n := range levels {
		row, err := c.level(client, n)
		if err != nil {
			return err
		}
		switch c.Output {
		case "jsonl":
			b, _ := json.Marshal(row)
			fmt.Println(string(b))
		default:
			fmt.Printf("| %s | %d | %d | %d | %.2f | %.1f | %.1f | %.0f | %.0f |\n", row.Label, row.Concurrency, row.Requests, row.Generated,
				row.WallSeconds, row.TokPerSec, row.PerClient, row.TTFTMedian, row.TTFTP90)
		}
	}
	return nil
}

func (c *BenchServeCmd) firstModel(client *http.Client) (string, error) {
	req, _ := http.NewRequest("GET", strings.TrimSuffix(c.URL, "/")+"/v1/models", nil)
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var v struct{ Data []struct{ ID string } }
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || len(v.Data) == 0 {
		return "", fmt.Errorf("GET /v1/models: no model listed (%v); give --model", err)
	}
	return v.Data[0].ID, nil
}

func (c *BenchServeCmd) level(client *http.Client, n int) (benchRow, error) {
	row := benchRow{Label: c.Label, Concurrency: n}
	var mu sync.Mutex
	var ttfts []float64
	var decodeRates []float64
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for k := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range c.Requests {
				gen, ttft, total, err := c.one(client, n, k*c.Requests+r)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if err == nil {
					row.Requests++
					row.Generated += gen
					ttfts = append(ttfts, ttft.Seconds()*1000)
					if gen > 1 && total > ttft {
						decodeRates = append(decodeRates, float64(gen-1)/(total-ttft).Seconds())
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return row, firstErr
	}
	row.WallSeconds = time.Since(start).Seconds()
	row.TokPerSec = float64(row.Generated) / row.WallSeconds
	slices.Sort(ttfts)
	row.TTFTMedian = quantile(ttfts, 0.5)
	row.TTFTP90 = quantile(ttfts, 0.9)
	slices.Sort(decodeRates)
	row.PerClient = quantile(decodeRates, 0.5)
	return row, nil
}

func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

var benchWords = strings.Fields("the history of the river valley begins with small farming villages that traded grain salt and wool along the water and over the hills to the coast where ships carried goods to distant ports")

// one sends one streamed completion and returns the tokens generated, the
// time to the first token and the total time.
func (c *BenchServeCmd) one(client *http.Client, level, i int) (int, time.Duration, time.Duration, error) {
	var p strings.Builder
	fmt.Fprintf(&p, "Request %d of client group %d.", i, level)
	for w := range c.PromptWords {
		p.WriteByte(' ')
		p.WriteString(benchWords[(i+w)%len(benchWords)])
	}
	req := map[string]any{
		"model": c.Model, "prompt": p.String(), "max_tokens": c.NPredict, "ignore_eos": true, "temperature": 0,
		"stream": true, "stream_options": map[string]any{"include_usage": true}, "seed": i,
	}
	if c.bias != nil {
		req["logit_bias"] = c.bias
	}
	body, _ := json.Marshal(req)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	hr, _ := http.NewRequestWithContext(ctx, "POST", strings.TrimSuffix(c.URL, "/")+"/v1/completions", bytes.NewReader(body))
	hr.Header.Set("Content-Type", "application/json")
	if c.APIKey != "" {
		hr.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	t0 := time.Now()
	resp, err := client.Do(hr)
	if err != nil {
		return 0, 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return 0, 0, 0, fmt.Errorf("POST /v1/completions: %s: %s", resp.Status, b)
	}
	var ttft time.Duration
	chunks, usageTokens := 0, -1
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		d, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || d == "[DONE]" {
			continue
		}
		var v struct {
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
			Error any `json:"error"`
		}
		if err := json.Unmarshal([]byte(d), &v); err != nil {
			return 0, 0, 0, fmt.Errorf("stream: %v: %s", err, d)
		}
		if v.Error != nil {
			return 0, 0, 0, fmt.Errorf("stream error: %s", d)
		}
		if v.Usage != nil {
			usageTokens = v.Usage.CompletionTokens
		}
		for _, ch := range v.Choices {
			if ch.Text != "" {
				if chunks == 0 {
					ttft = time.Since(t0)
				}
				chunks++
			}
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, 0, err
	}
	if usageTokens >= 0 {
		chunks = usageTokens
	}
	return chunks, ttft, time.Since(t0), nil
}
