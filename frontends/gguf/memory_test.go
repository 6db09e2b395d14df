package gguf

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"
)

// hostileImage is a GGUF image with no tensors whose metadata is n copies
// of unit after a header naming one array KV of element type elem (or,
// with elem 0, n KVs each made by unit).
func hostileImage(key string, elem uint32, n int, unit []byte) []byte {
	var b bytes.Buffer
	b.WriteString("GGUF")
	b.Write(le32(3))
	b.Write(le64(0)) // tensors
	if elem == 0 {
		b.Write(le64(uint64(n)))
	} else {
		b.Write(le64(1))
		b.Write(gstr(key))
		b.Write(le32(9)) // array
		b.Write(le32(elem))
		b.Write(le64(uint64(n)))
	}
	for range n {
		b.Write(unit)
	}
	return b.Bytes()
}

// allocated returns the bytes allocated by f (it runs alone).
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestMetadataMemoryBounded (issue 13 item 16): metadata made of millions
// of empty arrays or empty strings is parsed in at most about twice the
// file's size (it took 5-6x), and metadata that would take more — millions
// of tiny keys, of one-element nested arrays — is refused naming the key
// where it happened.
func TestMetadataMemoryBounded(t *testing.T) {
	const n = 1 << 20
	emptyArray := cat(le32(0), le64(0))          // uint8[0]
	emptyString := le64(0)                       // ""
	oneElem := cat(le32(0), le64(1), []byte{7})  // uint8[1]
	tinyKV := cat(gstr("k"), le32(0), []byte{1}) // k: uint8
	for _, c := range []struct {
		name string
		img  []byte
		want string // "" = parses
	}{
		{"empty arrays", hostileImage("nest", 9, n, emptyArray), ""},
		{"empty strings", hostileImage("strs", 8, n, emptyString), ""},
		{"one-element arrays", hostileImage("nest1", 9, n, oneElem), `key "nest1"`},
		{"tiny keys", hostileImage("", 0, n, tinyKV), "duplicate key"},
	} {
		var err error
		t0 := time.Now()
		got := allocated(func() { _, err = Parse(c.img, "hostile.gguf") })
		t.Logf("%s: %d bytes, allocated %.2fx, %v", c.name, len(c.img), float64(got)/float64(len(c.img)), time.Since(t0))
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			if limit := uint64(len(c.img))*5/2 + 1<<20; got > limit {
				t.Errorf("%s: parsing %d bytes allocated %d (%.1fx), want at most %.1fx", c.name, len(c.img), got, float64(got)/float64(len(c.img)), 2.5)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
	// Distinct tiny keys: refused for memory, naming the key reached.
	var b bytes.Buffer
	b.WriteString("GGUF")
	b.Write(le32(3))
	b.Write(le64(0))
	b.Write(le64(n))
	for i := range n {
		k := []byte("k0000000")
		for j := 7; j > 0; j-- {
			k[j] = byte('0' + (i>>(3*(7-j)))&7)
		}
		b.Write(cat(gstr(string(k)), le32(0), []byte{1}))
	}
	_, err := Parse(b.Bytes(), "keys.gguf")
	if err == nil || !strings.Contains(err.Error(), "metadata would need more than") || !strings.Contains(err.Error(), `key "k`) {
		t.Errorf("tiny keys: err = %v", err)
	}
}
