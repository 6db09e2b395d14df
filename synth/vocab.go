package synth

import (
	"fmt"
	"strings"

	"github.com/minfer/minfer/frontends/gguf"
)

// kv is one metadata key/value in the order it is written.
type kv struct {
	key   string
	value any
}

// Token types of tokenizer.ggml.token_type (llama_token_type).
const (
	tokNormal      int32 = 1
	tokUnknown     int32 = 2
	tokControl     int32 = 3
	tokUserDefined int32 = 4
	tokUnused      int32 = 5
	tokByte        int32 = 6
)

// vocab is the tokenizer.* metadata of a model and its token count.
type vocab struct {
	kvs []kv
	n   int
}

// chatML is the ChatML prompt format of the Qwen models, written as
// tokenizer.chat_template for the synthetic qwen vocabularies.
const chatML = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"

// synthVocab makes a valid vocabulary of exactly p.NVocab tokens: a
// SentencePiece one for llama, a byte-level BPE one (Qwen style) otherwise.
func synthVocab(p Preset) (vocab, error) {
	if p.Arch == "llama" {
		return spmVocab(p.NVocab)
	}
	return bpeVocab(p.NVocab)
}

// vocabAlphabet is the character set the synthetic pieces are built from.
const vocabAlphabet = "etaoinshrdlcumwfgypbvkjxqzETAOINSHRDLCUMWFGYPBVKJXQZ0123456789.,"

// grow extends seeds breadth-first: each generated string (seeds first) is
// extended by every symbol, in order, until n strings beyond the seeds exist.
// It returns, per new string, the index of its left part (into seeds+new)
// and of the symbol appended.
func grow(seeds, symbols []string, n int) (strs []string, left, right []int) {
	strs = append([]string(nil), seeds...)
	seen := make(map[string]bool, len(seeds)+n)
	for _, s := range seeds {
		seen[s] = true
	}
	for i := 0; len(strs)-len(seeds) < n && i < len(strs); i++ {
		for j, sym := range symbols {
			c := strs[i] + sym
			if seen[c] {
				continue
			}
			seen[c] = true
			strs = append(strs, c)
			left = append(left, i)
			right = append(right, j)
			if len(strs)-len(seeds) == n {
				break
			}
		}
	}
	return strs, left, right
}

// spmVocab is a SentencePiece-style vocabulary laid out like LLaMA's:
// <unk> = 0, <s> = 1, </s> = 2, the byte tokens <0x00>..<0xFF> = 3..258,
// then normal pieces with decreasing scores.
func spmVocab(n int) (vocab, error) {
	const fixed = 3 + 256
	if n < fixed+1 {
		return vocab{}, fmt.Errorf("synth: a llama vocabulary needs at least %d tokens, preset has %d", fixed+1, n)
	}
	tokens := make([]string, 0, n)
	scores := make([]float32, 0, n)
	types := make([]int32, 0, n)
	add := func(s string, score float32, typ int32) {
		tokens = append(tokens, s)
		scores = append(scores, score)
		types = append(types, typ)
	}
	add("<unk>", 0, tokUnknown)
	add("<s>", 0, tokControl)
	add("</s>", 0, tokControl)
	for b := 0; b < 256; b++ {
		add(fmt.Sprintf("<0x%02X>", b), 0, tokByte)
	}
	const space = "\u2581" // SentencePiece's visible space
	var symbols []string
	for _, c := range vocabAlphabet {
		symbols = append(symbols, string(c))
	}
	seeds := append([]string{space}, symbols...)
	for _, s := range symbols {
		seeds = append(seeds, space+s)
	}
	var pieces []string
	if need := n - fixed; need <= len(seeds) {
		pieces = seeds[:need]
	} else {
		pieces, _, _ = grow(seeds, symbols, need-len(seeds))
	}
	for i, s := range pieces {
		add(s, -float32(i), tokNormal)
	}
	if len(tokens) != n {
		return vocab{}, fmt.Errorf("synth: could only make %d of %d llama tokens", len(tokens), n)
	}
	return vocab{n: n, kvs: []kv{
		{"tokenizer.ggml.model", "llama"},
		{"tokenizer.ggml.pre", "default"},
		{"tokenizer.ggml.tokens", tokens},
		{"tokenizer.ggml.scores", scores},
		{"tokenizer.ggml.token_type", types},
		{"tokenizer.ggml.bos_token_id", uint32(1)},
		{"tokenizer.ggml.eos_token_id", uint32(2)},
		{"tokenizer.ggml.unknown_token_id", uint32(0)},
		{"tokenizer.ggml.add_bos_token", true},
		{"tokenizer.ggml.add_eos_token", false},
	}}, nil
}

// byteSymbols returns GPT-2's byte-level alphabet in the order byte-level BPE
// vocabularies (GPT-2, Qwen) number it: the printable bytes '!'..'~',
// '¡'..'¬', '®'..'ÿ' stand for themselves, the other 68 bytes map to U+0100
// upwards in byte order. The result holds the symbol strings in id order.
func byteSymbols() []string {
	printable := func(b int) bool {
		return b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE && b <= 0xFF
	}
	out := make([]string, 0, 256)
	for b := 0; b < 256; b++ {
		if printable(b) {
			out = append(out, string(rune(b)))
		}
	}
	next := 0
	for b := 0; b < 256; b++ {
		if !printable(b) {
			out = append(out, string(rune(256+next)))
			next++
		}
	}
	return out
}

// bpeVocab is a byte-level BPE vocabulary laid out like the qwen2-synth
// fixtures: the 256 byte symbols, merged tokens (each with its merge, in rank
// order), then <|endoftext|> (bos and padding), <|im_start|> and <|im_end|>
// (eos) as control tokens.
func bpeVocab(n int) (vocab, error) {
	specials := []string{"<|endoftext|>", "<|im_start|>", "<|im_end|>"}
	bytes := byteSymbols()
	fixed := len(bytes) + len(specials)
	if n < fixed {
		return vocab{}, fmt.Errorf("synth: a byte-level BPE vocabulary needs at least %d tokens, preset has %d", fixed, n)
	}
	// Merged tokens are strings over the alphabet and 'Ġ' (the byte-level
	// symbol of a space), built breadth-first: each is an existing token plus
	// one symbol, so every merge names two tokens that exist.
	var symbols []string
	symbols = append(symbols, "\u0120")
	for _, c := range vocabAlphabet {
		symbols = append(symbols, string(c))
	}
	strs, left, right := grow(symbols, symbols, n-fixed)
	merged := strs[len(symbols):]
	if len(merged) != n-fixed {
		return vocab{}, fmt.Errorf("synth: could only make %d of %d merged tokens", len(merged), n-fixed)
	}
	tokens := make([]string, 0, n)
	types := make([]int32, 0, n)
	tokens = append(tokens, bytes...)
	for range bytes {
		types = append(types, tokNormal)
	}
	merges := make([]string, len(merged))
	for i, s := range merged {
		tokens = append(tokens, s)
		types = append(types, tokNormal)
		merges[i] = strs[left[i]] + " " + symbols[right[i]]
	}
	for _, s := range specials {
		tokens = append(tokens, s)
		types = append(types, tokControl)
	}
	bos := uint32(n - 3)
	return vocab{n: n, kvs: []kv{
		{"tokenizer.ggml.model", "gpt2"},
		{"tokenizer.ggml.pre", "qwen2"},
		{"tokenizer.ggml.tokens", tokens},
		{"tokenizer.ggml.token_type", types},
		{"tokenizer.ggml.merges", merges},
		{"tokenizer.ggml.bos_token_id", bos},
		{"tokenizer.ggml.padding_token_id", bos},
		{"tokenizer.ggml.eos_token_id", uint32(n - 1)},
		{"tokenizer.ggml.add_bos_token", false},
		{"tokenizer.chat_template", chatML},
	}}, nil
}

// loadVocab copies every tokenizer.* key of the GGUF file at path, in file
// order. The vocabulary size is the length of tokenizer.ggml.tokens.
func loadVocab(path string) (vocab, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return vocab{}, fmt.Errorf("synth: vocab: %w", err)
	}
	defer f.Close()
	tokens, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil {
		return vocab{}, fmt.Errorf("synth: vocab: %w", err)
	}
	var v vocab
	v.n = len(tokens)
	for _, e := range f.KV {
		if !strings.HasPrefix(e.Key, "tokenizer.") {
			continue
		}
		// The reader decodes values into fresh Go memory, so they outlive f.
		v.kvs = append(v.kvs, kv{e.Key, e.Value})
	}
	return v, nil
}
