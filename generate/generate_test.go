package generate_test

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/minfer/minfer/frontends/gguf"
	"github.com/minfer/minfer/generate"
	"github.com/minfer/minfer/internal/fixtures"
	"github.com/minfer/minfer/reference"
	"github.com/minfer/minfer/sample"
	"github.com/minfer/minfer/tokenizer"
)

func load(t *testing.T) (*reference.Model, *tokenizer.Tokenizer, int) {
	t.Helper()
	f, err := gguf.Open(fixtures.Path(t, "models", "qwen2-synth-q8_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	g, err := gguf.BuildGraph(f)
	if err != nil {
		t.Fatal(err)
	}
	m, err := reference.New(g, f)
	if err != nil {
		t.Fatal(err)
	}
	v, err := gguf.LoadVocab(f)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.New(v)
	if err != nil {
		t.Fatal(err)
	}
	return m, tok, g.Params.NCtx
}

func greedy() sample.Params {
	p := sample.DefaultParams()
	p.Temperature = 0
	return p
}

// TestGreedyMatchesArgmax checks the loop end to end: with greedy sampling
// each generated token is the argmax of the logits of the sequence so far,
// recomputed from scratch with one batch.
func TestGreedyMatchesArgmax(t *testing.T) {
	m, tok, nctx := load(t)
	var out bytes.Buffer
	res, err := generate.Run(m, tok, "hello world", generate.Options{NPredict: 6, NCtx: nctx, Sampling: greedy(), IgnoreEOS: true, Out: &out})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Generated) != 6 || res.Stop != "n_predict" {
		t.Fatalf("generated %d tokens, stop %q", len(res.Generated), res.Stop)
	}
	seq := append(append([]int32(nil), res.Prompt...), res.Generated...)
	for i := range res.Generated {
		n := len(res.Prompt) + i
		m.Reset()
		pos := make([]int32, n)
		for j := range pos {
			pos[j] = int32(j)
		}
		lg, err := m.Eval(seq[:n], pos, []int32{int32(n - 1)})
		if err != nil {
			t.Fatal(err)
		}
		best := 0
		for j := range lg {
			if lg[j] > lg[best] {
				best = j
			}
		}
		if int32(best) != seq[n] {
			t.Fatalf("token %d: generated %d, argmax %d", i, seq[n], best)
		}
	}
	var want strings.Builder
	for _, id := range res.Generated {
		want.WriteString(tok.TokenPiece(id))
	}
	if out.String() != want.String() {
		t.Fatalf("streamed %q, want %q", out.String(), want.String())
	}
}

func TestPromptTooLong(t *testing.T) {
	m, tok, nctx := load(t)
	_, err := generate.Run(m, tok, strings.Repeat("hello world ", nctx), generate.Options{NPredict: 1, NCtx: nctx, Sampling: greedy()})
	if err == nil || !strings.Contains(err.Error(), "context holds") {
		t.Fatalf("err = %v", err)
	}
}

func TestStopsAtFullContext(t *testing.T) {
	m, tok, _ := load(t)
	res, err := generate.Run(m, tok, "hello world", generate.Options{NPredict: -1, NCtx: 12, Sampling: greedy(), IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stop != "context" || len(res.Prompt)+len(res.Generated) != 13 {
		t.Fatalf("stop %q after %d+%d tokens", res.Stop, len(res.Prompt), len(res.Generated))
	}
}

func TestDumpLogitsBatchesAgree(t *testing.T) {
	m, _, nctx := load(t)
	toks := []int32{611, 947, 2, 585, 672, 200, 64}
	var a, b bytes.Buffer
	if err := generate.DumpLogits(m, toks, 0, nctx, &a); err != nil {
		t.Fatal(err)
	}
	if err := generate.DumpLogits(m, toks, 3, nctx, &b); err != nil {
		t.Fatal(err)
	}
	if a.Len() != len(toks)*1024*4 || b.Len() != a.Len() {
		t.Fatalf("sizes %d %d", a.Len(), b.Len())
	}
	fa, fb := fixtures.F32s(a.Bytes()), fixtures.F32s(b.Bytes())
	for i := range fa {
		if d := math.Abs(float64(fa[i] - fb[i])); d > 0.2 {
			t.Fatalf("logit %d: batch %g vs chunked %g", i, fa[i], fb[i])
		}
	}
	if err := generate.DumpLogits(m, make([]int32, nctx+1), 0, nctx, &a); err == nil {
		t.Fatal("more tokens than the context accepted")
	}
}
