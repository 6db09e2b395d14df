// Package promptcache saves the KV cache state after a prompt, with the
// prompt's tokens, so that a later run (minfer exec or chat with
// --prompt-cache FILE) reuses the longest prefix its own prompt shares with
// the saved one instead of prefilling it again.
//
// File layout (little-endian):
//
//	"MINFPCCH"           8-byte magic
//	u32 version (1), u32 reserved (0)
//	u32 n, n bytes       the plan's identity (Owner.ID)
//	u32 n, n bytes       the plan's name, for messages (Owner.Name)
//	u32 n, n bytes       the KV layout (exec.Model.KVLayout)
//	u32 n, n × i32       the tokens
//	u64 n, n bytes       the KV state of those positions (exec.Model.SaveKV)
//	u32                  CRC-32C of everything before it
//
// A file is loaded only if it is whole (sizes agree with the file's, the
// checksum matches), belongs to the same plan (identity) and fits the
// cache (layout, byte count, token count and ids); anything else is
// refused with an error and nothing is loaded. Files are written through
// internal/safefile — a temporary file renamed over the target once
// complete — so an interrupted run never leaves a partial cache.
package promptcache

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/minfer/minfer/internal/safefile"
)

// Magic starts every prompt cache file.
const Magic = "MINFPCCH"

const version = 1

// Owner identifies the plan a cache belongs to.
type Owner struct {
	// ID must be equal for the cache to load: it changes whenever the
	// plan's computation or cache layout can (compile time, source hash,
	// context size, KV type).
	ID string
	// Name is how messages call the plan (its path).
	Name string
}

// Model is what a prompt cache saves and restores (*exec.Model).
type Model interface {
	KVLayout() string
	KVBytes(n int) int64
	SaveKV(w io.Writer, n int) error
	LoadKV(r io.Reader, n, stored int) error
	Filled() int
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Save writes the first len(tokens) positions of m's cache and the tokens
// to path (atomically; never over one of inputs).
func Save(path string, o Owner, m Model, tokens []int32, inputs ...string) error {
	n := len(tokens)
	if n > m.Filled() {
		return fmt.Errorf("prompt cache %s: %d tokens but the KV cache holds %d", path, n, m.Filled())
	}
	return safefile.Write(path, func(w io.Writer) error {
		h := crc32.New(castagnoli)
		mw := io.MultiWriter(w, h)
		var b []byte
		b = append(b, Magic...)
		b = binary.LittleEndian.AppendUint32(b, version)
		b = binary.LittleEndian.AppendUint32(b, 0)
		for _, s := range []string{o.ID, o.Name, m.KVLayout()} {
			b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
			b = append(b, s...)
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(n))
		for _, t := range tokens {
			b = binary.LittleEndian.AppendUint32(b, uint32(t))
		}
		b = binary.LittleEndian.AppendUint64(b, uint64(m.KVBytes(n)))
		if _, err := mw.Write(b); err != nil {
			return err
		}
		if err := m.SaveKV(mw, n); err != nil {
			return err
		}
		return binary.Write(w, binary.LittleEndian, h.Sum32())
	}, inputs...)
}

// ErrNotExist is returned (wrapped) by Load when the file does not exist:
// the first run with --prompt-cache.
var ErrNotExist = os.ErrNotExist

// File is a checked prompt cache: its tokens, and the KV state Restore
// loads.
type File struct {
	Path   string
	Tokens []int32
	kv     []byte
}

// Open reads and checks a prompt cache for the plan o and the model m
// (vocabulary size nvocab, context nctx).
func Open(path string, o Owner, m Model, nvocab, nctx int) (*File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("prompt cache %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("prompt cache %s: not a regular file", path)
	}
	// The largest valid cache: a full context and generous strings.
	limit := m.KVBytes(nctx) + int64(nctx)*4 + 1<<20
	if st.Size() > limit {
		return nil, fmt.Errorf("prompt cache %s: %d bytes, more than a cache of this plan can be (%d): not a prompt cache of this plan", path, st.Size(), limit)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("prompt cache %s: %w", path, err)
	}
	f, err := parse(data, o, m, nvocab, nctx)
	if err != nil {
		return nil, fmt.Errorf("prompt cache %s: %w", path, err)
	}
	f.Path = path
	return f, nil
}

var errShort = errors.New("truncated or corrupt (shorter than its contents say)")

func parse(data []byte, o Owner, m Model, nvocab, nctx int) (*File, error) {
	if len(data) < len(Magic)+8+4 || string(data[:len(Magic)]) != Magic {
		return nil, errors.New("not a minfer prompt cache (bad magic)")
	}
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	le := binary.LittleEndian
	if v := le.Uint32(data[8:]); v != version {
		return nil, fmt.Errorf("version %d, this minfer reads version %d", v, version)
	}
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, errors.New("checksum mismatch (corrupt or incomplete file); delete it")
	}
	r := bytes.NewReader(body[16:])
	str := func() (string, error) {
		var n uint32
		if err := binary.Read(r, le, &n); err != nil || int64(n) > int64(r.Len()) {
			return "", errShort
		}
		b := make([]byte, n)
		io.ReadFull(r, b)
		return string(b), nil
	}
	id, err := str()
	if err != nil {
		return nil, err
	}
	name, err := str()
	if err != nil {
		return nil, err
	}
	layout, err := str()
	if err != nil {
		return nil, err
	}
	if id != o.ID {
		return nil, fmt.Errorf("made for another plan (%s: %s), not %s (%s): refusing it; delete the file or give another --prompt-cache", name, id, o.Name, o.ID)
	}
	if layout != m.KVLayout() {
		return nil, fmt.Errorf("KV layout %q differs from this plan's %q: refusing it", layout, m.KVLayout())
	}
	var n uint32
	if err := binary.Read(r, le, &n); err != nil || int64(n)*4 > int64(r.Len()) {
		return nil, errShort
	}
	if int(n) > nctx {
		return nil, fmt.Errorf("%d tokens, more than the context's %d", n, nctx)
	}
	f := &File{Tokens: make([]int32, n)}
	if err := binary.Read(r, le, f.Tokens); err != nil {
		return nil, errShort
	}
	for i, t := range f.Tokens {
		if t < 0 || int(t) >= nvocab {
			return nil, fmt.Errorf("token %d: id %d outside the vocabulary", i, t)
		}
	}
	var kvn uint64
	if err := binary.Read(r, le, &kvn); err != nil {
		return nil, errShort
	}
	if want := m.KVBytes(int(n)); kvn != uint64(want) || int64(r.Len()) != want {
		return nil, fmt.Errorf("KV state of %d bytes (%d in the file) for %d tokens, want %d: corrupt", kvn, r.Len(), n, want)
	}
	f.kv = body[len(body)-r.Len():]
	return f, nil
}

// Restore loads the first k positions of the cache into m (k ≤
// len(f.Tokens)); the next Eval continues at position k.
func (f *File) Restore(m Model, k int) error {
	if k < 0 || k > len(f.Tokens) {
		return fmt.Errorf("prompt cache %s: restore %d of %d positions", f.Path, k, len(f.Tokens))
	}
	return m.LoadKV(bytes.NewReader(f.kv), k, len(f.Tokens))
}
