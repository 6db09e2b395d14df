package gguf

import (
	"fmt"

	"github.com/minfer/minfer/tokenizer"
)

// Tokenizer metadata keys (llama.cpp's LLM_KV_TOKENIZER_*).
const (
	keyTokModel          = "tokenizer.ggml.model"
	keyTokPre            = "tokenizer.ggml.pre"
	keyTokTokens         = "tokenizer.ggml.tokens"
	keyTokScores         = "tokenizer.ggml.scores"
	keyTokTypes          = "tokenizer.ggml.token_type"
	keyTokMerges         = "tokenizer.ggml.merges"
	keyTokBOS            = "tokenizer.ggml.bos_token_id"
	keyTokEOS            = "tokenizer.ggml.eos_token_id"
	keyTokEOT            = "tokenizer.ggml.eot_token_id"
	keyTokUNK            = "tokenizer.ggml.unknown_token_id"
	keyTokPAD            = "tokenizer.ggml.padding_token_id"
	keyTokAddBOS         = "tokenizer.ggml.add_bos_token"
	keyTokAddEOS         = "tokenizer.ggml.add_eos_token"
	keyTokAddSpacePrefix = "tokenizer.ggml.add_space_prefix"
)

// LoadVocab reads the tokenizer.ggml.* metadata of f into a tokenizer.Vocab,
// applying llama.cpp's defaults (llama_vocab::impl::load) for absent keys:
//
//   - "llama" (SentencePiece): bos 1, eos 2, unk 0, add_bos true,
//     add_space_prefix true;
//   - "gpt2" (BPE): bos = eos = 11, no unk, add_bos false (true for the
//     Llama-3 family of pre-tokenizers, "tekken" and "chameleon"),
//     add_space_prefix false.
//
// Special-token ids present in the file but out of range keep the default,
// as in llama.cpp. The tokens and merges slices are shared with f.
func LoadVocab(f *File) (*tokenizer.Vocab, error) {
	v := &tokenizer.Vocab{BOS: -1, EOS: -1, UNK: -1, PAD: -1, EOT: -1}
	var err error
	if v.Model, err = f.String(keyTokModel); err != nil {
		return nil, fmt.Errorf("gguf: vocab: %w", err)
	}
	if f.Has(keyTokPre) {
		if v.Pre, err = f.String(keyTokPre); err != nil {
			return nil, fmt.Errorf("gguf: vocab: %w", err)
		}
	}
	switch v.Model {
	case "llama":
		v.BOS, v.EOS, v.UNK = 1, 2, 0
		v.AddBOS = true
		v.AddSpacePrefix = true
	case "gpt2":
		v.BOS, v.EOS = 11, 11
		switch v.Pre {
		case "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
			"tekken", "chameleon":
			v.AddBOS = true
		case "glm4", "chatglm-bpe":
			v.BOS = -1
		}
		if v.Merges, err = f.Strings(keyTokMerges); err != nil {
			return nil, fmt.Errorf("gguf: vocab: cannot read merges: %w", err)
		}
	default:
		return nil, fmt.Errorf("gguf: vocab: unsupported tokenizer model %q", v.Model)
	}

	if v.Tokens, err = f.Strings(keyTokTokens); err != nil {
		return nil, fmt.Errorf("gguf: vocab: %w", err)
	}
	n := len(v.Tokens)
	if f.Has(keyTokScores) {
		if v.Scores, err = f.Float32s(keyTokScores); err != nil {
			return nil, fmt.Errorf("gguf: vocab: %w", err)
		}
		if len(v.Scores) != n {
			return nil, fmt.Errorf("gguf: vocab: %d scores for %d tokens", len(v.Scores), n)
		}
	}
	if f.Has(keyTokTypes) {
		if v.Types, err = f.Int32s(keyTokTypes); err != nil {
			return nil, fmt.Errorf("gguf: vocab: %w", err)
		}
		if len(v.Types) != n {
			return nil, fmt.Errorf("gguf: vocab: %d token types for %d tokens", len(v.Types), n)
		}
	}

	for _, s := range []struct {
		key string
		id  *int32
	}{{keyTokBOS, &v.BOS}, {keyTokEOS, &v.EOS}, {keyTokEOT, &v.EOT}, {keyTokUNK, &v.UNK}, {keyTokPAD, &v.PAD}} {
		if !f.Has(s.key) {
			continue
		}
		id, err := f.Uint32(s.key)
		if err != nil {
			return nil, fmt.Errorf("gguf: vocab: %w", err)
		}
		if int64(id) < int64(n) {
			*s.id = int32(id)
		}
	}
	// A default id that does not exist in a (small) vocab means "absent".
	for _, id := range []*int32{&v.BOS, &v.EOS, &v.UNK} {
		if int(*id) >= n {
			*id = -1
		}
	}

	for _, b := range []struct {
		key string
		val *bool
	}{{keyTokAddBOS, &v.AddBOS}, {keyTokAddEOS, &v.AddEOS}, {keyTokAddSpacePrefix, &v.AddSpacePrefix}} {
		if !f.Has(b.key) {
			continue
		}
		if *b.val, err = f.Bool(b.key); err != nil {
			return nil, fmt.Errorf("gguf: vocab: %w", err)
		}
	}
	return v, nil
}
