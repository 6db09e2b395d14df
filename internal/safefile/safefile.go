// Package safefile writes command outputs safely: never over an input,
// never half-written, never left behind by an error or an interrupt.
//
// Create opens a temporary file beside the target (mode 0666 minus the
// umask, like any build output); Commit syncs it and renames it onto the
// target, Abort removes it. The target must be a new path or a regular
// file: a character device or a named pipe (/dev/null, /dev/stdout, a FIFO)
// is written through instead, and anything else (a directory, a socket, a
// block device) is refused, so a rename never replaces a device node. A
// target that is one of the inputs (the same file, also through symbolic
// or hard links) is refused.
//
// Every temporary file and directory this package hands out is registered
// until it is committed or removed. HandleInterrupts (called once by a
// command's main) removes them all on SIGINT or SIGTERM and exits with
// status 130; a second signal exits at once.
package safefile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
)

// registry holds the paths this process created and must remove if it is
// interrupted. mu also orders a Commit's rename against the interrupt
// cleanup: either the rename completed (the output is whole) or the
// temporary file is removed and no rename follows.
var (
	mu       sync.Mutex
	pending  = map[string]bool{} // path -> is a directory
	exiting  bool
	exitFunc = os.Exit
)

func register(path string, dir bool) {
	mu.Lock()
	pending[path] = dir
	mu.Unlock()
}

func unregister(path string) {
	mu.Lock()
	delete(pending, path)
	mu.Unlock()
}

// Cleanup removes every registered temporary file and directory. It is what
// an interrupt runs; tests call it directly.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	cleanupLocked()
}

func cleanupLocked() {
	for p, dir := range pending {
		if dir {
			os.RemoveAll(p)
		} else {
			os.Remove(p)
		}
		delete(pending, p)
	}
}

// HandleInterrupts installs the SIGINT/SIGTERM handler: the first signal
// removes what this run created (registered temporary files and
// directories) and exits with status 130; a second signal, arriving while
// the first is being handled, exits with status 130 at once. name prefixes
// the message printed on stderr.
func HandleInterrupts(name string) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-ch
		go func() {
			<-ch
			exitFunc(130)
		}()
		fmt.Fprintf(os.Stderr, "\n%s: %v: stopping, removing unfinished outputs\n", name, sig)
		mu.Lock()
		exiting = true
		cleanupLocked()
		exitFunc(130) // with mu held: no Commit renames after this
	}()
}

// TempDir creates a temporary directory (os.MkdirTemp) that an interrupt
// removes. The caller removes it with RemoveDir when done.
func TempDir(dir, pattern string) (string, error) {
	d, err := os.MkdirTemp(dir, pattern)
	if err != nil {
		return "", err
	}
	register(d, true)
	return d, nil
}

// RemoveDir removes a directory made by TempDir.
func RemoveDir(d string) error {
	unregister(d)
	return os.RemoveAll(d)
}

// CheckTarget refuses an output path that is one of inputs (same file,
// following links) or that exists and is neither a regular file, a
// character device nor a named pipe. It is what Create checks first;
// commands call it early to refuse before any work is done.
func CheckTarget(path string, inputs ...string) error {
	if path == "" {
		return fmt.Errorf("no output path")
	}
	st, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		// A rename would replace a dangling link itself, not create the
		// file it names: refuse, the user meant the link's target.
		if lst, lerr := os.Lstat(path); lerr == nil && lst.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("output %s is a dangling symbolic link", path)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("output %s: %w", path, err)
	}
	for _, in := range inputs {
		if in == "" {
			continue
		}
		ist, err := os.Stat(in)
		if err != nil {
			continue
		}
		if os.SameFile(st, ist) {
			return fmt.Errorf("output %s is the input %s: refusing to overwrite it", path, in)
		}
	}
	m := st.Mode()
	switch {
	case m.IsRegular(), m&os.ModeCharDevice != 0, m&os.ModeNamedPipe != 0:
		return nil
	case m.IsDir():
		return fmt.Errorf("output %s is a directory", path)
	}
	return fmt.Errorf("output %s is %s, not a regular file: refusing to replace it", path, Kind(m))
}

// Kind names the kind of file a mode describes, for messages: "a regular
// file", "a directory", "a character device", ...
func Kind(m os.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&os.ModeSymlink != 0:
		return "a symbolic link"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a block device"
	}
	return "of unknown kind " + m.Type().String()
}

// File is an output being written. It is an io.Writer (and io.WriterAt
// when the target is a regular file or new path).
type File struct {
	*os.File
	target  string
	tmp     string // "" when writing through to a device or pipe
	done    bool
	through bool
}

// Create starts writing the output path. See the package comment for the
// rules; inputs are the paths the command reads.
func Create(path string, inputs ...string) (*File, error) {
	if err := CheckTarget(path, inputs...); err != nil {
		return nil, err
	}
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		return &File{File: f, target: path, through: true}, nil
	}
	// A symbolic link to a regular file: replace its target, not the link.
	real := path
	if r, err := filepath.EvalSymlinks(path); err == nil {
		real = r
	}
	dir, base := filepath.Split(real)
	if dir == "" {
		dir = "."
	}
	for range 100 {
		var rnd [6]byte
		if _, err := rand.Read(rnd[:]); err != nil {
			return nil, err
		}
		tmp := filepath.Join(dir, "."+base+"."+hex.EncodeToString(rnd[:])+".tmp")
		mu.Lock()
		if exiting {
			mu.Unlock()
			select {} // the interrupt handler is exiting the process
		}
		f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if err == nil {
			pending[tmp] = false
		}
		mu.Unlock()
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("output %s: %w", path, err)
		}
		return &File{File: f, target: real, tmp: tmp}, nil
	}
	return nil, fmt.Errorf("output %s: cannot create a temporary file beside it", path)
}

// Through reports whether the output is written straight to a device or
// pipe (no temporary file, no rename).
func (f *File) Through() bool { return f.through }

// Commit finishes the output: sync, close, rename onto the target. After
// an error the temporary file is removed.
func (f *File) Commit() error {
	if f.done {
		return fmt.Errorf("output %s: already finished", f.target)
	}
	f.done = true
	if f.through {
		return f.File.Close()
	}
	err := f.File.Sync()
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	mu.Lock()
	defer mu.Unlock()
	if err == nil {
		err = os.Rename(f.tmp, f.target)
	}
	if err != nil {
		os.Remove(f.tmp)
	}
	delete(pending, f.tmp)
	if err != nil {
		return fmt.Errorf("output %s: %w", f.target, err)
	}
	return nil
}

// Abort discards the output: the temporary file is removed and the target
// left as it was. It does nothing after Commit, so `defer f.Abort()` is the
// usual pattern.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.File.Close()
	if !f.through {
		os.Remove(f.tmp)
		unregister(f.tmp)
	}
}

// Write writes the output path in one go: w is called with the temporary
// file and the result committed only if it returns nil.
func Write(path string, w func(io.Writer) error, inputs ...string) error {
	f, err := Create(path, inputs...)
	if err != nil {
		return err
	}
	defer f.Abort()
	if err := w(f); err != nil {
		return err
	}
	return f.Commit()
}
