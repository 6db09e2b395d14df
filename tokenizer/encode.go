package tokenizer

import (
	"strings"
	"sync"
)

// Scratch buffers reused across Encode calls.
var (
	spmPool = sync.Pool{New: func() any { return new(spmState) }}
	bpePool = sync.Pool{New: func() any { return new(bpeState) }}
)

// fragment is a piece of the input: raw text (id < 0) or a special token.
type fragment struct {
	text string
	id   int32
}

// partition splits text around special tokens like llama.cpp's
// tokenizer_st_partition: for each special token, longest first, every
// occurrence in the remaining raw fragments becomes a token fragment.
// Control and unknown tokens are only recognised with parseSpecial;
// user-defined tokens always are.
func (t *Tokenizer) partition(text string, parseSpecial bool) []fragment {
	if text == "" {
		return nil
	}
	frags := []fragment{{text: text, id: -1}}
	for _, id := range t.special {
		if !parseSpecial && t.attrs[id]&(attrControl|attrUnknown) != 0 {
			continue
		}
		tok := t.tokens[id]
		if !strings.Contains(text, tok) {
			continue
		}
		var next []fragment
		for _, f := range frags {
			if f.id >= 0 {
				next = append(next, f)
				continue
			}
			s := f.text
			for {
				i := strings.Index(s, tok)
				if i < 0 {
					break
				}
				if i > 0 {
					next = append(next, fragment{text: s[:i], id: -1})
				}
				next = append(next, fragment{id: id})
				s = s[i+len(tok):]
			}
			if s != "" {
				next = append(next, fragment{text: s, id: -1})
			}
		}
		frags = next
	}
	return frags
}

// Encode tokenizes text like llama.cpp's llama_tokenize. addSpecial adds BOS
// and/or EOS as the vocabulary asks; parseSpecial lets control tokens written
// in the text (such as "<|im_start|>") be recognised as such.
func (t *Tokenizer) Encode(text string, addSpecial, parseSpecial bool) []int32 {
	var out []int32
	frags := t.partition(text, parseSpecial)
	if addSpecial && t.addBOS && t.bos >= 0 {
		out = append(out, t.bos)
	}
	switch t.kind {
	case kindSPM:
		s := spmPool.Get().(*spmState)
		defer spmPool.Put(s)
		prevSpecial := true
		for _, f := range frags {
			if f.id >= 0 {
				out = append(out, f.id)
				prevSpecial = true
				continue
			}
			txt := f.text
			if t.addSpacePrefix && prevSpecial {
				txt = " " + txt
			}
			out = t.spmEncode(s, strings.ReplaceAll(txt, " ", "\u2581"), out)
			prevSpecial = false
		}
	case kindBPE:
		s := bpePool.Get().(*bpeState)
		defer bpePool.Put(s)
		for _, f := range frags {
			if f.id >= 0 {
				out = append(out, f.id)
				continue
			}
			out = t.bpeEncode(s, f.text, out)
		}
	}
	if addSpecial && t.addEOS && t.eos >= 0 {
		out = append(out, t.eos)
	}
	return out
}

// symbol is one node of the doubly linked list of pieces being merged.
type symbol struct {
	start, n   int
	prev, next int
}

// ---- SentencePiece (llm_tokenizer_spm) ----

type spmBigram struct {
	left, right int
	score       float32
	size        int
}

// spmBefore orders the SPM queue: highest score first, then leftmost.
func spmBefore(a, b *spmBigram) bool {
	return a.score > b.score || (a.score == b.score && a.left < b.left)
}

type spmState struct {
	syms []symbol
	heap []spmBigram
}

func (t *Tokenizer) spmTryBigram(s *spmState, text string, left, right int) {
	if left < 0 || right < 0 {
		return
	}
	l := s.syms[left]
	sub := text[l.start : l.start+l.n+s.syms[right].n]
	id, ok := t.toID[sub]
	if !ok {
		return
	}
	s.heap = heapPush(s.heap, spmBigram{left: left, right: right, score: t.scores[id], size: len(sub)}, spmBefore)
}

// spmEncode tokenizes one escaped text fragment: greedy merging of the best
// scoring adjacent pair, then byte fallback for pieces that are not tokens.
func (t *Tokenizer) spmEncode(s *spmState, text string, out []int32) []int32 {
	s.syms = s.syms[:0]
	s.heap = s.heap[:0]
	for off := 0; off < len(text); {
		n := min(utf8Len(text[off]), len(text)-off)
		idx := len(s.syms)
		next := idx + 1
		if off+n == len(text) {
			next = -1
		}
		s.syms = append(s.syms, symbol{start: off, n: n, prev: idx - 1, next: next})
		off += n
	}
	for i := 1; i < len(s.syms); i++ {
		t.spmTryBigram(s, text, i-1, i)
	}
	for len(s.heap) > 0 {
		var b spmBigram
		b, s.heap = heapPop(s.heap, spmBefore)
		l, r := &s.syms[b.left], &s.syms[b.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != b.size {
			continue
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			s.syms[r.next].prev = b.left
		}
		t.spmTryBigram(s, text, l.prev, b.left)
		t.spmTryBigram(s, text, b.left, l.next)
	}
	if len(s.syms) == 0 {
		return out
	}
	for i := 0; i != -1; i = s.syms[i].next {
		sym := s.syms[i]
		piece := text[sym.start : sym.start+sym.n]
		if id, ok := t.toID[piece]; ok {
			out = append(out, id)
			continue
		}
		// Every merged piece is a token, so only single characters fall back.
		for j := 0; j < len(piece); j++ {
			if id := t.byteID[piece[j]]; id >= 0 {
				out = append(out, id)
			}
		}
	}
	return out
}

// ---- byte-level BPE (llm_tokenizer_bpe) ----

type bpeBigram struct {
	left, right int
	rank        int32
	size        int
}

// bpeBefore orders the BPE queue: lowest merge rank first, then leftmost.
func bpeBefore(a, b *bpeBigram) bool {
	return a.rank < b.rank || (a.rank == b.rank && a.left < b.left)
}

type bpeState struct {
	cpts   []rune
	chunks []int
	tmp    []int
	word   []byte
	syms   []symbol
	heap   []bpeBigram
}

// preTokenize splits raw text into the pre-tokenizer's words, each already
// mapped to GPT-2 byte-level characters, and calls fn for each.
func (t *Tokenizer) preTokenize(s *bpeState, text string, fn func(word string)) {
	s.cpts = decodeCpts(text, s.cpts)
	s.chunks = append(s.chunks[:0], len(s.cpts))
	for _, split := range t.pre.split {
		s.tmp = split(s.cpts, s.chunks, s.tmp[:0])
		s.chunks, s.tmp = s.tmp, s.chunks
	}
	// Encode all words into one buffer and convert it to a string once.
	var enc [4]byte
	s.word = s.word[:0]
	s.tmp = s.tmp[:0]
	start := 0
	for _, n := range s.chunks {
		for _, c := range s.cpts[start : start+n] {
			for _, b := range appendCpt(enc[:0], c) {
				s.word = append(s.word, byteEncoded[b]...)
			}
		}
		start += n
		s.tmp = append(s.tmp, len(s.word))
	}
	all := string(s.word)
	prev := 0
	for _, end := range s.tmp {
		fn(all[prev:end])
		prev = end
	}
}

func (t *Tokenizer) bpeTryBigram(s *bpeState, word string, left, right int) {
	if left < 0 || right < 0 {
		return
	}
	l, r := s.syms[left], s.syms[right]
	rank, ok := t.ranks[pairKey{word[l.start : l.start+l.n], word[r.start : r.start+r.n]}]
	if !ok {
		return
	}
	s.heap = heapPush(s.heap, bpeBigram{left: left, right: right, rank: rank, size: l.n + r.n}, bpeBefore)
}

func (t *Tokenizer) bpeEncode(s *bpeState, text string, out []int32) []int32 {
	t.preTokenize(s, text, func(word string) {
		if t.pre.ignoreMerges {
			if id, ok := t.toID[word]; ok {
				out = append(out, id)
				return
			}
		}
		s.syms = s.syms[:0]
		s.heap = s.heap[:0]
		for off := 0; off < len(word); {
			n := min(utf8Len(word[off]), len(word)-off)
			idx := len(s.syms)
			next := idx + 1
			if off+n == len(word) {
				next = -1
			}
			s.syms = append(s.syms, symbol{start: off, n: n, prev: idx - 1, next: next})
			off += n
		}
		for i := 1; i < len(s.syms); i++ {
			t.bpeTryBigram(s, word, i-1, i)
		}
		for len(s.heap) > 0 {
			var b bpeBigram
			b, s.heap = heapPop(s.heap, bpeBefore)
			l, r := &s.syms[b.left], &s.syms[b.right]
			// The pair is outdated if either side changed since it was queued.
			if l.n == 0 || r.n == 0 || l.n+r.n != b.size {
				continue
			}
			l.n += r.n
			r.n = 0
			l.next = r.next
			if r.next >= 0 {
				s.syms[r.next].prev = b.left
			}
			t.bpeTryBigram(s, word, l.prev, b.left)
			t.bpeTryBigram(s, word, b.left, l.next)
		}
		for _, sym := range s.syms {
			if sym.n == 0 {
				continue
			}
			piece := word[sym.start : sym.start+sym.n]
			if id, ok := t.toID[piece]; ok {
				out = append(out, id)
				continue
			}
			for j := 0; j < len(piece); j++ {
				if id, ok := t.toID[piece[j:j+1]]; ok {
					out = append(out, id)
				}
			}
		}
	})
	return out
}

// heapPush adds x to the binary heap h ordered by before (the first
// element is the one before all others) and returns the heap.
func heapPush[T any](h []T, x T, before func(a, b *T) bool) []T {
	h = append(h, x)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !before(&h[i], &h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	return h
}

// heapPop removes and returns the first element of the non-empty heap h.
func heapPop[T any](h []T, before func(a, b *T) bool) (T, []T) {
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	i := 0
	for {
		l := 2*i + 1
		if l >= len(h) {
			break
		}
		m := l
		if r := l + 1; r < len(h) && before(&h[r], &h[l]) {
			m = r
		}
		if !before(&h[m], &h[i]) {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	return top, h
}
