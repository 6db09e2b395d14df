package cli

import (
	"bytes"
	"testing"
)

// TestProgressWriter: synth's write progress stops the elapsed-time display
// once, at the first byte, and reports every byte written against the
// file's size.
func TestProgressWriter(t *testing.T) {
	var buf bytes.Buffer
	firsts := 0
	var seen [][2]int64
	pw := &progressWriter{w: &buf, total: 10, first: func() { firsts++ }, prog: func(d, n int64) { seen = append(seen, [2]int64{d, n}) }}
	for _, s := range []string{"abc", "defg", "hij"} {
		if _, err := pw.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if firsts != 1 || buf.String() != "abcdefghij" || len(seen) != 3 || seen[2] != [2]int64{10, 10} || seen[0] != [2]int64{3, 10} {
		t.Fatalf("first called %d times, wrote %q, progress %v", firsts, buf.String(), seen)
	}
	elapsed("not a terminal")() // draws nothing off a terminal; stop returns
}
