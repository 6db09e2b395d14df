package plan

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/minfer/minfer/tokenizer"
)

// The tokenizer section holds a tokenizer.Vocab in a compact form, because
// its arrays are large (Qwen2: 151936 tokens, 151387 merges) and JSON would
// cost tens of milliseconds to decode:
//
//	u32 n, then n bytes: JSON of the Vocab with Tokens, Scores, Types and
//	    Merges left out (every scalar field, under its Go name)
//	string array Tokens, f32 array Scores, i32 array Types, string array Merges
//
// An array starts with a u32 count, 0xFFFFFFFF meaning nil. A string array
// of n strings continues with n u32 byte lengths and then the bytes of all
// strings back to back; a number array with n little-endian 4-byte values.

const nilArray = math.MaxUint32

// vocabScalars is tokenizer.Vocab without its arrays.
type vocabScalars tokenizer.Vocab

func encodeVocab(v *tokenizer.Vocab) ([]byte, error) {
	s := vocabScalars(*v)
	s.Tokens, s.Scores, s.Types, s.Merges = nil, nil, nil, nil
	js, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var b []byte
	b = binary.LittleEndian.AppendUint32(b, uint32(len(js)))
	b = append(b, js...)
	b = appendStrings(b, v.Tokens)
	if v.Scores == nil {
		b = binary.LittleEndian.AppendUint32(b, nilArray)
	} else {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(v.Scores)))
		for _, f := range v.Scores {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
		}
	}
	if v.Types == nil {
		b = binary.LittleEndian.AppendUint32(b, nilArray)
	} else {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(v.Types)))
		for _, t := range v.Types {
			b = binary.LittleEndian.AppendUint32(b, uint32(t))
		}
	}
	return appendStrings(b, v.Merges), nil
}

func appendStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return binary.LittleEndian.AppendUint32(b, nilArray)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(ss)))
	for _, s := range ss {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
	}
	for _, s := range ss {
		b = append(b, s...)
	}
	return b
}

// reader reads little-endian values from a section, failing (never
// panicking) when the data runs out.
type reader struct {
	b   []byte
	off int
}

func (r *reader) u32(what string) (uint32, error) {
	if len(r.b)-r.off < 4 {
		return 0, fmt.Errorf("truncated at offset %d reading %s", r.off, what)
	}
	x := binary.LittleEndian.Uint32(r.b[r.off:])
	r.off += 4
	return x, nil
}

func (r *reader) bytes(n uint64, what string) ([]byte, error) {
	if uint64(len(r.b)-r.off) < n {
		return nil, fmt.Errorf("truncated at offset %d reading %s (%d bytes)", r.off, what, n)
	}
	b := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return b, nil
}

// count reads an array length and checks that elemSize bytes per element
// remain, so a hostile count cannot cause a huge allocation.
func (r *reader) count(what string, elemSize uint64) (n int, isNil bool, err error) {
	c, err := r.u32(what + " count")
	if err != nil {
		return 0, false, err
	}
	if c == nilArray {
		return 0, true, nil
	}
	if uint64(c)*elemSize > uint64(len(r.b)-r.off) {
		return 0, false, fmt.Errorf("%s: %d entries do not fit in the %d bytes left", what, c, len(r.b)-r.off)
	}
	return int(c), false, nil
}

func (r *reader) strings(what string) ([]string, error) {
	n, isNil, err := r.count(what, 4)
	if err != nil || isNil {
		return nil, err
	}
	lens, _ := r.bytes(uint64(n)*4, what+" lengths")
	var total uint64
	for i := range n {
		total += uint64(binary.LittleEndian.Uint32(lens[4*i:]))
	}
	blob, err := r.bytes(total, what+" text")
	if err != nil {
		return nil, err
	}
	// One allocation for all the text; the strings are slices of it.
	all := string(blob)
	out := make([]string, n)
	off := 0
	for i := range out {
		l := int(binary.LittleEndian.Uint32(lens[4*i:]))
		out[i] = all[off : off+l]
		off += l
	}
	return out, nil
}

func (r *reader) words(what string) ([]uint32, bool, error) {
	n, isNil, err := r.count(what, 4)
	if err != nil || isNil {
		return nil, isNil, err
	}
	b, _ := r.bytes(uint64(n)*4, what)
	out := make([]uint32, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return out, false, nil
}

func decodeVocab(data []byte) (*tokenizer.Vocab, error) {
	r := &reader{b: data}
	n, err := r.u32("scalar fields length")
	if err != nil {
		return nil, err
	}
	js, err := r.bytes(uint64(n), "scalar fields")
	if err != nil {
		return nil, err
	}
	var s vocabScalars
	if err := decodeJSON(js, &s); err != nil {
		return nil, fmt.Errorf("scalar fields: %w", err)
	}
	if s.Tokens != nil || s.Scores != nil || s.Types != nil || s.Merges != nil {
		return nil, fmt.Errorf("scalar fields carry an array")
	}
	v := (*tokenizer.Vocab)(&s)
	if v.Tokens, err = r.strings("tokens"); err != nil {
		return nil, err
	}
	scores, isNil, err := r.words("scores")
	if err != nil {
		return nil, err
	}
	if !isNil {
		v.Scores = make([]float32, len(scores))
		for i, w := range scores {
			v.Scores[i] = math.Float32frombits(w)
		}
	}
	types, isNil, err := r.words("types")
	if err != nil {
		return nil, err
	}
	if !isNil {
		v.Types = make([]int32, len(types))
		for i, w := range types {
			v.Types[i] = int32(w)
		}
	}
	if v.Merges, err = r.strings("merges"); err != nil {
		return nil, err
	}
	if r.off != len(data) {
		return nil, fmt.Errorf("%d bytes after the merges", len(data)-r.off)
	}
	return v, checkVocab(v)
}

// checkVocab checks what a loader must guarantee: parallel arrays of the
// token count and special ids that are tokens or -1.
func checkVocab(v *tokenizer.Vocab) error {
	n := len(v.Tokens)
	if v.Scores != nil && len(v.Scores) != n {
		return fmt.Errorf("%d scores for %d tokens", len(v.Scores), n)
	}
	if v.Types != nil && len(v.Types) != n {
		return fmt.Errorf("%d token types for %d tokens", len(v.Types), n)
	}
	for _, sp := range []struct {
		name string
		id   int32
	}{{"bos", v.BOS}, {"eos", v.EOS}, {"unk", v.UNK}, {"pad", v.PAD}, {"eot", v.EOT}} {
		if sp.id < -1 || int64(sp.id) >= int64(n) {
			return fmt.Errorf("%s token id %d out of range (%d tokens)", sp.name, sp.id, n)
		}
	}
	return nil
}
