package serve

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/minfer/minfer/chat"
	"github.com/minfer/minfer/frontends/gguf"
	"github.com/minfer/minfer/internal/fixtures"
	"github.com/minfer/minfer/tokenizer"
)

// fakeEngine is a multi-slot Engine whose logits are a hash of the slot's
// whole token history: deterministic, different per sequence, and the same
// whatever else is in the batch — the property the real engine promises.
// It checks every call as the real one would (one Seq per slot, positions
// continuing the slot) and counts what the scheduler asked of it.
type fakeEngine struct {
	nslots, nctx, nvocab int
	eog                  []int32 // end-of-generation tokens: all made unlikely, but for one now and then
	delay                time.Duration
	noEOG                bool // never end a generation (for long ones)

	mu        sync.Mutex
	hist      [][]uint64 // per slot: rolling hash after each position
	calls     int
	mixed     int // calls with both a prompt chunk and decode tokens
	maxSeqs   int
	maxChunk  int
	maxPre    int   // most prompt chunks in one call
	maxPreTok int   // most prompt tokens in one call
	truncates []int // slots truncated, in order
	out       [][]float32
}

func newFake(slots, nctx, nvocab int) *fakeEngine {
	return &fakeEngine{nslots: slots, nctx: nctx, nvocab: nvocab, hist: make([][]uint64, slots)}
}

func mix(h uint64) uint64 {
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	return h ^ h>>31
}

func (f *fakeEngine) EvalSeqs(seqs []Seq) ([][]float32, error) {
	if f.delay > 0 {
		time.Sleep(f.delay)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.maxSeqs = max(f.maxSeqs, len(seqs))
	seen := map[int]bool{}
	prefill, decode := false, false
	npre, ntok := 0, 0
	for len(f.out) < len(seqs) {
		f.out = append(f.out, make([]float32, f.nvocab))
	}
	res := make([][]float32, len(seqs))
	for k, s := range seqs {
		if s.Slot < 0 || s.Slot >= f.nslots || seen[s.Slot] {
			return nil, fmt.Errorf("fake: slot %d twice or out of range", s.Slot)
		}
		seen[s.Slot] = true
		if len(s.Tokens) == 0 || len(s.Tokens) != len(s.Positions) {
			return nil, fmt.Errorf("fake: %d tokens, %d positions", len(s.Tokens), len(s.Positions))
		}
		if len(s.Tokens) > 1 {
			prefill = true
			f.maxChunk = max(f.maxChunk, len(s.Tokens))
			npre, ntok = npre+1, ntok+len(s.Tokens)
		} else {
			decode = true
		}
		h := f.hist[s.Slot]
		for i, t := range s.Tokens {
			if int(s.Positions[i]) != len(h) {
				return nil, fmt.Errorf("fake: slot %d holds %d positions, got position %d", s.Slot, len(h), s.Positions[i])
			}
			if len(h) >= f.nctx {
				return nil, fmt.Errorf("fake: slot %d is full", s.Slot)
			}
			if t < 0 || int(t) >= f.nvocab {
				return nil, fmt.Errorf("fake: token %d", t)
			}
			prev := uint64(0x1234)
			if len(h) > 0 {
				prev = h[len(h)-1]
			}
			h = append(h, mix(prev^uint64(t)*0x9e3779b97f4a7c15))
		}
		f.hist[s.Slot] = h
		if !s.Logits {
			continue
		}
		lg := f.out[k]
		last := h[len(h)-1]
		for i := range lg {
			lg[i] = float32(mix(last^uint64(i))>>52) / 256 // 0..16
		}
		for _, e := range f.eog {
			lg[e] = -40
		}
		if last%11 == 0 && !f.noEOG && len(f.eog) > 0 {
			lg[f.eog[0]] = 40 // end the generation now and then
		}
		res[k] = lg
	}
	if prefill && decode {
		f.mixed++
	}
	f.maxPre, f.maxPreTok = max(f.maxPre, npre), max(f.maxPreTok, ntok)
	return res, nil
}

func (f *fakeEngine) Slots() int       { return f.nslots }
func (f *fakeEngine) SlotContext() int { return f.nctx }

func (f *fakeEngine) TruncateSlot(slot, n int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if slot < 0 || slot >= f.nslots || n < 0 || n > len(f.hist[slot]) {
		return fmt.Errorf("fake: truncate slot %d to %d", slot, n)
	}
	f.hist[slot] = f.hist[slot][:n]
	f.truncates = append(f.truncates, slot)
	return nil
}

// filled is the positions each slot holds.
func (f *fakeEngine) filled() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := make([]int, f.nslots)
	for i, h := range f.hist {
		n[i] = len(h)
	}
	return n
}

// testTokenizer is the small BPE vocabulary of the synthetic Qwen2 fixture
// (1024 tokens, in the repository).
func testTokenizer(t testing.TB) *tokenizer.Tokenizer {
	t.Helper()
	f, err := gguf.Open(fixtures.Path(t, "models", "qwen2-synth-q4_k_m.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, err := gguf.LoadVocab(f)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.New(v)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// fakeConfig is a server config over a fake engine with the ChatML
// template.
func fakeConfig(t testing.TB, eng Engine) Config {
	tok := testTokenizer(t)
	tmpl, err := chat.Parse(chat.ChatML)
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := eng.(*fakeEngine); ok {
		f.eog = nil
		for id := int32(0); id < int32(tok.NVocab()); id++ {
			if tok.IsEOG(id) {
				f.eog = append(f.eog, id)
			}
		}
	}
	return Config{Engine: eng, Tokenizer: tok, Template: tmpl, ModelID: "fake", Defaults: defaultsForTest(), Queue: 64, PrefillChunk: 16, CachePrompt: true,
		Logger: discardLogger()}
}
