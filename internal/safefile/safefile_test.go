package safefile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func writeString(s string) func(io.Writer) error {
	return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
}

// TestRefusesInputAsOutput (issue 13 item 5): the input itself, a symbolic
// link to it and a hard link to it are refused, and the input is unchanged.
func TestRefusesInputAsOutput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "m.gguf")
	write(t, in, "weights")
	sym := filepath.Join(dir, "sym.gguf")
	hard := filepath.Join(dir, "hard.gguf")
	if err := os.Symlink("m.gguf", sym); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(in, hard); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{in, sym, hard, filepath.Join(dir, ".", "m.gguf")} {
		err := Write(out, writeString("plan"), in)
		if err == nil || !strings.Contains(err.Error(), "is the input") {
			t.Errorf("output %s: err = %v, want a refusal naming the input", out, err)
		}
	}
	if got := read(t, in); got != "weights" {
		t.Fatalf("input now holds %q", got)
	}
	if n := len(entries(t, dir)); n != 3 {
		t.Fatalf("directory holds %v", entries(t, dir))
	}
}

// TestNonRegularTargets (issue 13 item 6): a character device is written
// through, never replaced by a regular file; a FIFO is written through; a
// directory is refused; a symbolic link to a regular file keeps the link
// and replaces its target.
func TestNonRegularTargets(t *testing.T) {
	if err := Write(os.DevNull, writeString("plan")); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(os.DevNull)
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("%s is no longer a character device: %v %v", os.DevNull, st.Mode(), err)
	}
	if ents, _ := filepath.Glob("/dev/.null.*.tmp"); len(ents) > 0 {
		t.Fatalf("left %v", ents)
	}

	dir := t.TempDir()
	if err := Write(dir, writeString("x")); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("directory target: err = %v", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	got := make(chan string)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(f)
		f.Close()
		got <- string(b)
	}()
	if err := Write(fifo, writeString("through")); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "through" {
		t.Fatalf("FIFO read %q", s)
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("FIFO replaced: %v %v", st.Mode(), err)
	}

	real := filepath.Join(dir, "real")
	link := filepath.Join(dir, "link")
	write(t, real, "old")
	if err := os.Symlink("real", link); err != nil {
		t.Fatal(err)
	}
	if err := Write(link, writeString("new")); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("link replaced: %v", err)
	}
	if s := read(t, real); s != "new" {
		t.Fatalf("link target holds %q", s)
	}
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink("nowhere/x", dangling); err != nil {
		t.Fatal(err)
	}
	if err := Write(dangling, writeString("x")); err == nil {
		t.Errorf("dangling link target accepted")
	}
}

// TestErrorKeepsOldOutput (issue 13 items 7, 8): an error while writing
// leaves the old file byte for byte and no temporary file; an interrupt
// cleanup removes unfinished files and registered directories.
func TestErrorKeepsOldOutput(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "old.f32")
	write(t, out, "old")
	boom := errors.New("boom")
	err := Write(out, func(w io.Writer) error {
		io.WriteString(w, "half")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if s := read(t, out); s != "old" {
		t.Fatalf("old output now %q", s)
	}
	if e := entries(t, dir); len(e) != 1 {
		t.Fatalf("left %v", e)
	}

	f, err := Create(out)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(f, "half")
	d, err := TempDir(dir, "work-")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(d, "x"), "x")
	Cleanup() // what SIGINT runs
	if e := entries(t, dir); len(e) != 1 || read(t, out) != "old" {
		t.Fatalf("after cleanup: %v, output %q", e, read(t, out))
	}
	f.Abort()
}

// TestMode (issue 13 item 17): outputs get 0666 minus the umask, as any
// file a build writes.
func TestMode(t *testing.T) {
	old := syscall.Umask(0o027)
	defer syscall.Umask(old)
	dir := t.TempDir()
	out := filepath.Join(dir, "plan.bin")
	if err := Write(out, writeString("x")); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != 0o640 {
		t.Fatalf("mode %v, want 0640 (0666 minus umask 027)", got)
	}
}
