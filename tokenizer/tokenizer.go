package tokenizer

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Token attributes (llama.cpp's llama_token_attr bits that matter here).
const (
	attrUnknown     uint8 = 1 << 0
	attrUnused      uint8 = 1 << 1
	attrNormal      uint8 = 1 << 2
	attrControl     uint8 = 1 << 3
	attrUserDefined uint8 = 1 << 4
	attrByte        uint8 = 1 << 5
)

type modelKind int

const (
	kindSPM modelKind = iota
	kindBPE
)

// preTokenizer describes a BPE pre-tokenizer: the regex splitters applied in
// order, and the flags llama.cpp associates with it.
type preTokenizer struct {
	split        []splitter
	ignoreMerges bool // a pre-tokenized word that is a token is not merged
	cleanSpaces  bool // llama_detokenize removes spaces before punctuation
}

func lookupPre(name string) (preTokenizer, bool) {
	gpt2 := []splitter{splitGPT2}
	llama3 := []splitter{splitLlama3(3)}
	qwen2 := []splitter{splitLlama3(1)}
	starcoder := []splitter{splitDigit, splitGPT2}
	switch name {
	case "", "default":
		return preTokenizer{split: []splitter{splitPunct, splitGPT2, splitNumbers, splitThreeDigits}, cleanSpaces: true}, true
	case "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2":
		return preTokenizer{split: llama3, ignoreMerges: true, cleanSpaces: true}, true
	case "dbrx", "smaug-bpe":
		return preTokenizer{split: llama3, cleanSpaces: true}, true
	case "gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum",
		"exaone4", "mpt", "olmo", "jais", "jina-v1-en", "jina-v2-code", "roberta-bpe":
		return preTokenizer{split: gpt2, cleanSpaces: true}, true
	case "trillion", "granite-docling":
		return preTokenizer{split: gpt2}, true
	case "qwen2", "deepseek-r1-qwen", "kormo", "hunyuan", "grok-2":
		return preTokenizer{split: qwen2}, true
	case "stablelm2", "megrez":
		return preTokenizer{split: qwen2, cleanSpaces: true}, true
	case "starcoder", "refact", "codeshell", "exaone", "minerva-7b":
		return preTokenizer{split: starcoder, cleanSpaces: true}, true
	case "command-r", "smollm":
		return preTokenizer{split: starcoder}, true
	}
	return preTokenizer{}, false
}

type pairKey struct{ left, right string }

// Tokenizer converts between text and token ids exactly like llama.cpp.
// It is safe for concurrent use.
type Tokenizer struct {
	kind   modelKind
	pre    preTokenizer
	tokens []string
	scores []float32
	attrs  []uint8
	toID   map[string]int32
	ranks  map[pairKey]int32
	pieces []string // token_to_piece with special = true
	byteID [256]int32

	special []int32 // CONTROL / USER_DEFINED / UNKNOWN tokens, longest first
	eog     map[int32]bool

	bos, eos, unk, pad, eot, eom int32
	addBOS, addEOS               bool
	addSpacePrefix               bool
}

// New builds a tokenizer from a vocabulary. It fails for unknown model or
// pre-tokenizer names, malformed merges and inconsistent arrays.
func New(v *Vocab) (*Tokenizer, error) {
	if v == nil {
		return nil, errors.New("tokenizer: nil vocab")
	}
	t := &Tokenizer{
		tokens:         make([]string, len(v.Tokens)),
		attrs:          make([]uint8, len(v.Tokens)),
		toID:           make(map[string]int32, len(v.Tokens)),
		bos:            v.BOS,
		eos:            v.EOS,
		unk:            v.UNK,
		pad:            v.PAD,
		eot:            v.EOT,
		eom:            -1,
		addBOS:         v.AddBOS,
		addEOS:         v.AddEOS,
		addSpacePrefix: v.AddSpacePrefix,
	}
	switch v.Model {
	case "llama":
		t.kind = kindSPM
	case "gpt2":
		t.kind = kindBPE
		pre, ok := lookupPre(v.Pre)
		if !ok {
			return nil, fmt.Errorf("tokenizer: unsupported pre-tokenizer %q for model %q", v.Pre, v.Model)
		}
		t.pre = pre
	default:
		return nil, fmt.Errorf("tokenizer: unsupported tokenizer model %q", v.Model)
	}
	n := len(v.Tokens)
	if n == 0 {
		return nil, errors.New("tokenizer: empty vocabulary")
	}
	if v.Scores != nil && len(v.Scores) != n {
		return nil, fmt.Errorf("tokenizer: %d scores for %d tokens", len(v.Scores), n)
	}
	if v.Types != nil && len(v.Types) != n {
		return nil, fmt.Errorf("tokenizer: %d token types for %d tokens", len(v.Types), n)
	}
	t.scores = v.Scores
	if t.scores == nil {
		t.scores = make([]float32, n)
	}
	for i, s := range v.Tokens {
		if s == "" {
			s = "[EMPTY_" + strconv.Itoa(i) + "]"
		}
		t.tokens[i] = s
		t.toID[s] = int32(i) // a repeated text maps to its last id, as in llama.cpp
		t.attrs[i] = attrNormal
		if v.Types != nil {
			t.attrs[i] = typeToAttr(v.Types[i])
		}
	}
	for _, id := range []struct {
		name string
		id   int32
	}{{"bos", v.BOS}, {"eos", v.EOS}, {"unk", v.UNK}, {"pad", v.PAD}, {"eot", v.EOT}} {
		if id.id < -1 || int(id.id) >= n {
			return nil, fmt.Errorf("tokenizer: %s token id %d out of range [0,%d)", id.name, id.id, n)
		}
	}
	if t.kind == kindBPE {
		t.ranks = make(map[pairKey]int32, len(v.Merges))
		for i, m := range v.Merges {
			// llama.cpp splits at the first space after the first byte.
			p := -1
			if len(m) > 1 {
				p = strings.IndexByte(m[1:], ' ')
			}
			if p < 0 {
				return nil, fmt.Errorf("tokenizer: malformed merge %d %q: no separating space", i, m)
			}
			k := pairKey{m[:p+1], m[p+2:]}
			if _, dup := t.ranks[k]; !dup {
				t.ranks[k] = int32(i)
			}
		}
	}
	for b := 0; b < 256; b++ {
		t.byteID[b] = t.findByteToken(byte(b))
	}
	t.detectSpecial()
	t.pieces = make([]string, n)
	for i := range t.pieces {
		t.pieces[i] = t.computePiece(int32(i))
	}
	return t, nil
}

func typeToAttr(tt int32) uint8 {
	switch tt {
	case TypeUnknown:
		return attrUnknown
	case TypeUnused:
		return attrUnused
	case TypeNormal:
		return attrNormal
	case TypeControl:
		return attrControl
	case TypeUserDefined:
		return attrUserDefined
	case TypeByte:
		return attrByte
	}
	return 0
}

// findByteToken is llama.cpp's byte_to_token for SentencePiece vocabs:
// "<0xNN>", else the byte itself as a token, else (where llama.cpp would
// throw) the unknown token or -1. For BPE it is the byte-level symbol.
func (t *Tokenizer) findByteToken(b byte) int32 {
	if t.kind == kindBPE {
		if id, ok := t.toID[byteEncoded[b]]; ok {
			return id
		}
		return -1
	}
	if id, ok := t.toID[fmt.Sprintf("<0x%02X>", b)]; ok {
		return id
	}
	if id, ok := t.toID[string([]byte{b})]; ok {
		return id
	}
	return t.unk
}

// Texts llama.cpp uses to recognise special tokens that the metadata does not
// name (llama_vocab::impl::load).
var (
	eotTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
		"<|end_of_text|>", "<EOT>", "_<EOT>", "<｜end▁of▁sentence｜>", "<end_of_utterance>"}
	eomTexts    = []string{"<|eom_id|>"}
	fimPreTexts = []string{"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|code_prefix|>"}
	fimSufTexts = []string{"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>"}
	fimMidTexts = []string{"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>"}
	fimPadTexts = []string{"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>"}
	fimRepTexts = []string{"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}
	fimSepTexts = []string{"<|file_sep|>"}
	eogTexts    = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<end_of_turn>",
		"<|endoftext|>", "<|eom_id|>", "<EOT>", "_<EOT>", "<|end_of_text|>", "<end_of_utterance>"}
	alwaysRendered = []string{"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"}
)

// detectSpecial reproduces llama.cpp's text-based detection of EOT/EOM/FIM
// and end-of-generation tokens (which also forces them to CONTROL), then
// builds the special-token list used by the partitioner. Where llama.cpp
// picks the first match in hash order, the lowest id is used here.
func (t *Tokenizer) detectSpecial() {
	// ids of the known texts, each text mapping to its (last) id
	find := func(texts []string) []int32 {
		var ids []int32
		for _, s := range texts {
			if id, ok := t.toID[s]; ok {
				ids = append(ids, id)
			}
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		return ids
	}
	forceControl := func(id int32) { t.attrs[id] = attrControl }
	detect := func(cur *int32, texts []string) {
		if *cur != -1 {
			return
		}
		if ids := find(texts); len(ids) > 0 {
			*cur = ids[0]
			forceControl(ids[0])
		}
	}
	detect(&t.eot, eotTexts)
	detect(&t.eom, eomTexts)
	var fimPre, fimSuf, fimMid, fimPad, fimRep, fimSep int32 = -1, -1, -1, -1, -1, -1
	detect(&fimPre, fimPreTexts)
	detect(&fimSuf, fimSufTexts)
	detect(&fimMid, fimMidTexts)
	detect(&fimPad, fimPadTexts)
	detect(&fimRep, fimRepTexts)
	detect(&fimSep, fimSepTexts)

	t.eog = map[int32]bool{}
	for _, id := range []int32{fimPad, fimRep, fimSep} {
		if id >= 0 {
			t.eog[id] = true
		}
	}
	for _, id := range find(eogTexts) {
		t.eog[id] = true
		forceControl(id)
	}
	for _, id := range find(alwaysRendered) {
		t.attrs[id] = attrUserDefined
	}
	for _, id := range []int32{t.eos, t.eot, t.eom} {
		if id >= 0 {
			t.eog[id] = true
		}
	}
	// o200k_harmony: with <|return|> and <|call|>, <|end|> is not EOG.
	var hasReturn, hasCall bool
	end := int32(-1)
	for id := range t.eog {
		switch t.tokens[id] {
		case "<|return|>":
			hasReturn = true
		case "<|call|>":
			hasCall = true
		case "<|end|>":
			end = id
		}
	}
	if hasReturn && hasCall && end >= 0 {
		delete(t.eog, end)
		t.attrs[end] = attrUserDefined
	}

	for id, a := range t.attrs {
		if a&(attrControl|attrUserDefined|attrUnknown) != 0 {
			t.special = append(t.special, int32(id))
		}
	}
	sort.SliceStable(t.special, func(i, j int) bool {
		return len(t.tokens[t.special[i]]) > len(t.tokens[t.special[j]])
	})
}

// computePiece is llama.cpp's token_to_piece with special = true.
func (t *Tokenizer) computePiece(id int32) string {
	a := t.attrs[id]
	text := t.tokens[id]
	if a&(attrUnknown|attrControl|attrUserDefined) != 0 {
		return text
	}
	switch t.kind {
	case kindSPM:
		if a&attrNormal != 0 {
			return strings.ReplaceAll(text, "\u2581", " ")
		}
		if a&attrByte != 0 {
			return string([]byte{tokenByte(text)})
		}
	case kindBPE:
		if a&attrNormal != 0 {
			return decodeByteLevel(text)
		}
	}
	return ""
}

// tokenByte parses the hex digits of a "<0xNN>" byte token the way
// strtol(text.substr(3, 2), 16) does.
func tokenByte(text string) byte {
	if len(text) <= 3 {
		return 0
	}
	h := text[3:]
	if len(h) > 2 {
		h = h[:2]
	}
	var v byte
	for i := 0; i < len(h); i++ {
		c := h[i]
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return v
		}
		v = v<<4 | d
	}
	return v
}

// decodeByteLevel maps GPT-2 byte-level text back to bytes (llama.cpp's
// llama_decode_text, including its "[UNK_BYTE_0x..]" marker for characters
// outside the byte alphabet).
func decodeByteLevel(text string) string {
	cpts := decodeCpts(text, nil)
	out := make([]byte, 0, len(text))
	var buf []byte
	for _, c := range cpts {
		if b, ok := runeToByte[c]; ok {
			out = append(out, b)
			continue
		}
		buf = appendCpt(buf[:0], c)
		out = append(out, "[UNK_BYTE_0x"...)
		for _, x := range buf {
			out = append(out, fmt.Sprintf("%02x", x)...)
		}
		out = append(out, text...)
		out = append(out, ']')
	}
	return string(out)
}

// MaxTokenBytes returns the length in bytes of the longest token text. No
// token covers more input bytes than its text has, so a text longer than
// n*MaxTokenBytes() encodes to more than n tokens.
func (t *Tokenizer) MaxTokenBytes() int {
	n := 1
	for _, s := range t.tokens {
		n = max(n, len(s))
	}
	return n
}

// NVocab returns the number of tokens.
func (t *Tokenizer) NVocab() int { return len(t.tokens) }

// BOS returns the beginning-of-sequence token id, or -1.
func (t *Tokenizer) BOS() int32 { return t.bos }

// EOS returns the end-of-sequence token id, or -1.
func (t *Tokenizer) EOS() int32 { return t.eos }

// EOT returns the end-of-turn token id (given or detected by text), or -1.
func (t *Tokenizer) EOT() int32 { return t.eot }

// PAD returns the padding token id, or -1.
func (t *Tokenizer) PAD() int32 { return t.pad }

// UNK returns the unknown token id, or -1.
func (t *Tokenizer) UNK() int32 { return t.unk }

// AddBOS reports whether Encode with addSpecial prepends BOS.
func (t *Tokenizer) AddBOS() bool { return t.addBOS }

// AddEOS reports whether Encode with addSpecial appends EOS.
func (t *Tokenizer) AddEOS() bool { return t.addEOS }

// IsEOG reports whether id ends generation (EOS, EOT, EOM and the tokens
// llama.cpp recognises by text, such as <|im_end|> or <|endoftext|>).
func (t *Tokenizer) IsEOG(id int32) bool { return t.eog[id] }

// IsControl reports whether id is a control token (rendered only on request).
func (t *Tokenizer) IsControl(id int32) bool {
	return t.valid(id) && t.attrs[id]&attrControl != 0
}

// TokenText returns the raw vocabulary text of id ("" if out of range).
func (t *Tokenizer) TokenText(id int32) string {
	if !t.valid(id) {
		return ""
	}
	return t.tokens[id]
}

// TokenID returns the id of a token text.
func (t *Tokenizer) TokenID(text string) (int32, bool) {
	id, ok := t.toID[text]
	return id, ok
}

func (t *Tokenizer) valid(id int32) bool { return id >= 0 && int(id) < len(t.tokens) }

// Piece returns the bytes of one token as llama.cpp's llama_token_to_piece
// (lstrip 0): control and unknown tokens are empty unless special is set.
// Out-of-range ids give "".
func (t *Tokenizer) Piece(id int32, special bool) string {
	if !t.valid(id) {
		return ""
	}
	if !special && t.attrs[id]&(attrUnknown|attrControl) != 0 {
		return ""
	}
	return t.pieces[id]
}

// TokenPiece returns the bytes of one token for streaming output; control
// tokens give "" (use Piece to render them).
func (t *Tokenizer) TokenPiece(id int32) string { return t.Piece(id, false) }

// Decode concatenates the token pieces (control tokens omitted) and, for
// vocabularies with AddSpacePrefix, drops one leading space of the first
// piece: llama_detokenize(remove_special=false, unparse_special=false)
// without its clean-up of spaces before punctuation, so that
// Decode(Encode(x)) == x for byte-level BPE.
func (t *Tokenizer) Decode(ids []int32) string { return t.decode(ids, false, false, false) }

// DecodeSpecial is Decode with control tokens rendered as their text.
func (t *Tokenizer) DecodeSpecial(ids []int32) string { return t.decode(ids, false, true, false) }

// Detokenize is exactly llama.cpp's llama_detokenize: removeSpecial drops a
// leading BOS / trailing EOS when the vocab adds them, unparseSpecial renders
// control tokens, and vocabularies with clean_spaces (gpt-2, llama-bpe, ...)
// get their spaces before ? ! . , and some contractions removed.
func (t *Tokenizer) Detokenize(ids []int32, removeSpecial, unparseSpecial bool) string {
	return t.decode(ids, removeSpecial, unparseSpecial, t.pre.cleanSpaces)
}

func (t *Tokenizer) decode(ids []int32, removeSpecial, unparseSpecial, clean bool) string {
	removeSpace := t.addSpacePrefix
	if removeSpecial && t.addBOS && len(ids) > 0 && ids[0] == t.bos {
		removeSpace = false
		ids = ids[1:]
	}
	if removeSpecial && t.addEOS && len(ids) > 0 && ids[len(ids)-1] == t.eos {
		ids = ids[:len(ids)-1]
	}
	var out []byte
	for _, id := range ids {
		p := t.Piece(id, unparseSpecial)
		if removeSpace && len(p) > 0 && p[0] == ' ' {
			p = p[1:]
		}
		removeSpace = false
		out = append(out, p...)
	}
	if clean {
		out = cleanSpaces(out)
	}
	return string(out)
}

// cleanSpaces is the three-pass clean-up of llama_detokenize, done in place
// with the same index arithmetic.
func cleanSpaces(text []byte) []byte {
	// first pass: " ?", " !", " .", " ,"
	total1 := len(text)
	total := 0
	if total1 > 0 {
		total = 1
	}
	for i := 1; i < total1; i++ {
		x := text[i]
		if text[i-1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',') {
			total--
		}
		text[total] = x
		total++
	}
	// second pass: a single apostrophe between spaces
	total2 := total
	if total2 > 0 {
		total = 1
	}
	for i := 1; i < total2; i++ {
		x := text[i]
		if x == '\'' && i+1 < total2 && text[i-1] == ' ' && text[i+1] == ' ' {
			total--
			i++
			text[i] = 0
		}
		text[total] = x
		total++
	}
	// third pass: " 's", " 'm", " 're", " 've"
	total3 := total
	if total3 > 0 {
		total = 1
	}
	for i := 1; i < total3; i++ {
		x := text[i]
		if text[i-1] == ' ' && x == '\'' && i+1 < total3 {
			x1 := text[i+1]
			if x1 == 's' || x1 == 'm' {
				total--
			} else if x1 != 't' && x1 != 'd' && i+2 < total3 {
				x2 := text[i+2]
				if (x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e') {
					total--
				}
			}
		}
		text[total] = x
		total++
	}
	return text[:total]
}
