//go:build unix

package plan

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestMapFileHugePages: the MINFER_HUGEPAGES=1 copy holds the same bytes
// as the plain mapping.
func TestMapFileHugePages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.bin")
	want := make([]byte, 3<<20+123)
	for i := range want {
		want[i] = byte(i * 7)
	}
	if err := os.WriteFile(path, want, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, env := range []string{"0", "1"} {
		t.Setenv("MINFER_HUGEPAGES", env)
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		got, unmap, err := mapFile(f, len(want))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("MINFER_HUGEPAGES=%s: mapped bytes differ from the file", env)
		}
		if err := unmap(); err != nil {
			t.Error(err)
		}
		f.Close()
	}
}
