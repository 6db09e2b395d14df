// Package tokenizer implements llama.cpp's text tokenizers for GGUF models:
// SentencePiece-style ("llama") and byte-level BPE ("gpt2") vocabularies with
// the GPT-2, Llama-3 and Qwen2 pre-tokenizers, special-token parsing and
// detokenization. Its output is meant to be identical to llama.cpp's
// llama_tokenize / llama_token_to_piece / llama_detokenize.
//
// The package does not read GGUF files: a Vocab is filled by a loader (for
// example frontends/gguf.LoadVocab) or from a compiled plan.
package tokenizer

// Token types as stored in tokenizer.ggml.token_type (llama.cpp's
// llama_token_type).
const (
	TypeUndefined   int32 = 0
	TypeNormal      int32 = 1
	TypeUnknown     int32 = 2
	TypeControl     int32 = 3
	TypeUserDefined int32 = 4
	TypeUnused      int32 = 5
	TypeByte        int32 = 6
)

// Vocab is the tokenizer description found in a model's tokenizer.ggml.*
// metadata, with llama.cpp's defaults already applied for absent keys.
type Vocab struct {
	// Model is tokenizer.ggml.model: "llama" (SentencePiece) or "gpt2"
	// (byte-level BPE).
	Model string
	// Pre is tokenizer.ggml.pre, the BPE pre-tokenizer: "default" (or ""),
	// "llama-bpe" (Llama-3), "qwen2", "gpt-2", ... Ignored for "llama".
	Pre string
	// Tokens holds the token texts, indexed by id.
	Tokens []string
	// Scores holds the SentencePiece scores; nil means all zero.
	Scores []float32
	// Types holds the token types (TypeNormal, ...); nil means all normal.
	Types []int32
	// Merges holds the BPE merges "left right" in rank order.
	Merges []string
	// Special token ids, -1 when absent.
	BOS, EOS, UNK, PAD, EOT int32
	// AddBOS and AddEOS say whether Encode with addSpecial adds BOS / EOS.
	AddBOS, AddEOS bool
	// AddSpacePrefix is tokenizer.ggml.add_space_prefix: SentencePiece
	// prepends a space to text that starts the input or follows a special
	// token, and detokenization strips one leading space again.
	AddSpacePrefix bool
}
