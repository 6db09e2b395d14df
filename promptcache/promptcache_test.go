package promptcache

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeModel is a KV cache of two regions with 3 and 5 bytes per position.
type fakeModel struct {
	regions [2][]byte
	filled  int
	layout  string
}

var rows = [2]int{3, 5}

func newFake(nctx int, seed byte) *fakeModel {
	m := &fakeModel{layout: "fake 3+5"}
	for r := range m.regions {
		m.regions[r] = make([]byte, nctx*rows[r])
		for i := range m.regions[r] {
			m.regions[r][i] = seed + byte(i*7+r)
		}
	}
	return m
}

func (m *fakeModel) KVLayout() string    { return m.layout }
func (m *fakeModel) KVBytes(n int) int64 { return int64(n * (rows[0] + rows[1])) }
func (m *fakeModel) Filled() int         { return m.filled }
func (m *fakeModel) SaveKV(w io.Writer, n int) error {
	for r := range m.regions {
		w.Write(m.regions[r][:n*rows[r]])
	}
	return nil
}
func (m *fakeModel) LoadKV(rd io.Reader, n, stored int) error {
	for r := range m.regions {
		if _, err := io.ReadFull(rd, m.regions[r][:n*rows[r]]); err != nil {
			return err
		}
		io.CopyN(io.Discard, rd, int64((stored-n)*rows[r]))
	}
	m.filled = n
	return nil
}

// TestRoundTripAndRefusals: a saved cache loads whole or as a prefix with
// the saved bytes; every truncation, every single bit flip, another
// owner, another layout, a token outside the vocabulary is refused.
func TestRoundTripAndRefusals(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c")
	owner := Owner{ID: "plan A", Name: "a.plan"}
	src := newFake(16, 1)
	src.filled = 10
	toks := []int32{5, 6, 7, 8, 9, 10, 11, 12, 13, 14}
	if err := Save(path, owner, src, toks); err != nil {
		t.Fatal(err)
	}
	if err := Save(path, owner, src, append(toks, 1)); err == nil {
		t.Fatal("saving more tokens than the cache holds: no error")
	}
	for _, k := range []int{10, 4, 0} {
		dst := newFake(16, 100)
		f, err := Open(path, owner, dst, 100, 16)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(f.Tokens) != fmt.Sprint(toks) {
			t.Fatalf("tokens %v", f.Tokens)
		}
		if err := f.Restore(dst, k); err != nil {
			t.Fatal(err)
		}
		for r := range dst.regions {
			if !bytes.Equal(dst.regions[r][:k*rows[r]], src.regions[r][:k*rows[r]]) {
				t.Fatalf("k=%d region %d differs", k, r)
			}
		}
		if dst.filled != k {
			t.Fatalf("filled %d, want %d", dst.filled, k)
		}
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	refused := func(what string, data []byte, o Owner, m *fakeModel, nvocab int, want string) {
		t.Helper()
		p := filepath.Join(dir, "bad")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Open(p, o, m, nvocab, 16)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: error %v, want %q", what, err, want)
		}
	}
	for n := 0; n < len(good); n++ {
		refused(fmt.Sprintf("truncated to %d", n), good[:n], owner, newFake(16, 0), 100, "prompt cache")
	}
	for i := range good {
		for bit := range 8 {
			b := bytes.Clone(good)
			b[i] ^= 1 << bit
			refused(fmt.Sprintf("bit %d of byte %d", bit, i), b, owner, newFake(16, 0), 100, "prompt cache")
		}
	}
	refused("another plan", good, Owner{ID: "plan B", Name: "b.plan"}, newFake(16, 0), 100, "made for another plan (a.plan")
	other := newFake(16, 0)
	other.layout = "fake 3+6"
	refused("another layout", good, owner, other, 100, "KV layout")
	refused("small vocabulary", good, owner, newFake(16, 0), 10, "outside the vocabulary")
	if _, err := Open(path, owner, newFake(8, 0), 100, 8); err == nil {
		t.Fatal("a cache of 10 tokens loaded into a context of 8")
	}
	if _, err := Open(filepath.Join(dir, "none"), owner, newFake(16, 0), 100, 16); !os.IsNotExist(unwrapAll(err)) {
		t.Fatalf("missing file: %v", err)
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}
