// Package generate is the text-generation loop shared by every executor:
// tokenize the prompt, prefill it, then sample and decode one token at a
// time, streaming each piece as it is produced. It also dumps teacher-forced
// logits for comparisons with llama.cpp.
package generate

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/minfer/minfer/sample"
	"github.com/minfer/minfer/tokenizer"
)

// Model is an executor: the reference interpreter or the compiled one.
// The logits Eval returns may be the executor's own buffer, valid only
// until its next Eval.
type Model interface {
	Eval(tokens, positions, outIDs []int32) ([]float32, error)
	Reset()
}

// Options control one generation.
type Options struct {
	// NPredict is the number of tokens to generate (-1: until end of
	// generation or a full context).
	NPredict int
	// NCtx is the model's KV cache size in positions.
	NCtx int
	// Batch is the prompt chunk size handed to Eval (0: whole prompt).
	Batch    int
	Sampling sample.Params
	// ParseSpecial lets the prompt contain control tokens as text.
	ParseSpecial bool
	// IgnoreEOS keeps generating past end-of-generation tokens.
	IgnoreEOS bool
	// Out receives the generated text as it is produced (may be nil).
	Out io.Writer
	// Keep is how many leading prompt tokens the model's cache already
	// holds (a chat's earlier turns, a prompt cache): they are not
	// prefilled and the cache is not reset. 0 starts a new sequence.
	Keep int
	// AfterPrefill, if set, is called once the prompt is in the cache.
	AfterPrefill func() error
	// Stop, if set, is polled before each token; true ends the generation
	// ("interrupted").
	Stop func() bool
}

// Result describes a finished generation.
type Result struct {
	Prompt      []int32
	Generated   []int32
	PrefillTime time.Duration
	DecodeTime  time.Duration
	// Stop is why generation ended: "eog", "n_predict", "context" or
	// "interrupted" (Options.Stop).
	Stop string
}

// PrefillRate and DecodeRate are tokens per second.
func (r *Result) PrefillRate() float64 { return rate(len(r.Prompt), r.PrefillTime) }

// DecodeRate is generated tokens per second, excluding the first (sampled
// from the prefill's logits).
func (r *Result) DecodeRate() float64 { return rate(max(0, len(r.Generated)-1), r.DecodeTime) }

func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// Run generates text after prompt.
func Run(m Model, tok *tokenizer.Tokenizer, prompt string, o Options) (*Result, error) {
	ids := tok.Encode(prompt, true, o.ParseSpecial)
	if len(ids) == 0 {
		return nil, fmt.Errorf("the prompt is empty after tokenization; give some text")
	}
	return RunTokens(m, tok, ids, o)
}

// RunTokens generates after an already tokenized prompt.
func RunTokens(m Model, tok *tokenizer.Tokenizer, ids []int32, o Options) (*Result, error) {
	if len(ids) >= o.NCtx {
		return nil, fmt.Errorf("the prompt is %d tokens but the context holds %d: shorten it or compile with a larger --n-ctx", len(ids), o.NCtx)
	}
	s, err := sample.New(o.Sampling, tok.NVocab())
	if err != nil {
		return nil, err
	}
	if o.Keep < 0 || o.Keep >= len(ids) {
		return nil, fmt.Errorf("keep %d of %d prompt tokens: at least the last must be evaluated", o.Keep, len(ids))
	}
	if o.Keep == 0 {
		m.Reset()
	}
	res := &Result{Prompt: ids}
	batch := o.Batch
	if batch <= 0 {
		batch = len(ids)
	}
	start := time.Now()
	var logits []float32
	for i := o.Keep; i < len(ids); i += batch {
		end := min(len(ids), i+batch)
		logits, err = m.Eval(ids[i:end], positions(i, end), []int32{int32(end - i - 1)})
		if err != nil {
			return nil, err
		}
	}
	res.PrefillTime = time.Since(start)
	if o.AfterPrefill != nil {
		if err := o.AfterPrefill(); err != nil {
			return nil, err
		}
	}
	for _, t := range ids {
		s.Accept(t)
	}
	var w *bufio.Writer
	if o.Out != nil {
		w = bufio.NewWriter(o.Out)
		defer w.Flush()
	}
	pos := len(ids)
	start = time.Now()
	for n := 0; o.NPredict < 0 || n < o.NPredict; n++ {
		if o.Stop != nil && o.Stop() {
			res.Stop = "interrupted"
			break
		}
		next := s.Sample(logits)
		if tok.IsEOG(next) && !o.IgnoreEOS {
			res.Stop = "eog"
			break
		}
		s.Accept(next)
		res.Generated = append(res.Generated, next)
		if w != nil {
			w.WriteString(tok.TokenPiece(next))
			w.Flush()
		}
		if pos >= o.NCtx {
			res.Stop = "context"
			break
		}
		if o.NPredict >= 0 && n == o.NPredict-1 {
			break
		}
		logits, err = m.Eval([]int32{next}, []int32{int32(pos)}, []int32{0})
		if err != nil {
			return nil, err
		}
		pos++
	}
	res.DecodeTime = time.Since(start)
	if res.Stop == "" {
		res.Stop = "n_predict"
	}
	return res, nil
}

func positions(a, b int) []int32 {
	p := make([]int32, b-a)
	for i := range p {
		p[i] = int32(a + i)
	}
	return p
}

// DumpLogits evaluates tokens teacher-forced in chunks of batch (1: one
// token per call, the decode path through the KV cache) with logits for
// every position, and writes them as float32 little-endian
// [len(tokens)][n_vocab].
func DumpLogits(m Model, tokens []int32, batch, nCtx int, out io.Writer) error {
	if len(tokens) == 0 {
		return fmt.Errorf("no tokens to evaluate")
	}
	if len(tokens) > nCtx {
		return fmt.Errorf("%d tokens but the context holds %d", len(tokens), nCtx)
	}
	if batch <= 0 {
		batch = len(tokens)
	}
	m.Reset()
	w := bufio.NewWriter(out)
	buf := make([]byte, 4)
	for i := 0; i < len(tokens); i += batch {
		end := min(len(tokens), i+batch)
		lg, err := m.Eval(tokens[i:end], positions(i, end), positions(0, end-i))
		if err != nil {
			return err
		}
		for _, v := range lg {
			binary.LittleEndian.PutUint32(buf, math.Float32bits(v))
			if _, err := w.Write(buf); err != nil {
				return err
			}
		}
	}
	return w.Flush()
}
