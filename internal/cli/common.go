// Package cli implements the minfer and minferc commands (kong command
// structs), wiring the frontends, compiler, plan format and executors.
package cli

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/minfer/minfer/frontends/gguf"
	"github.com/minfer/minfer/internal/safefile"
	"github.com/minfer/minfer/plan"
	"github.com/minfer/minfer/sample"
	"github.com/minfer/minfer/tokenizer"
)

// isTerminal reports whether f is a terminal (for progress bars).
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// progressBar returns a progress callback drawing a bar on stderr when it
// is a terminal, and nothing otherwise.
func progressBar(label string) func(done, total int64) {
	if !isTerminal(os.Stderr) {
		return nil
	}
	last := -1
	return func(done, total int64) {
		if total <= 0 {
			return
		}
		pct := int(100 * done / total)
		if pct == last {
			return
		}
		last = pct
		const width = 30
		n := pct * width / 100
		fmt.Fprintf(os.Stderr, "\r%s [%s%s] %3d%% %s/%s", label, strings.Repeat("#", n), strings.Repeat(".", width-n), pct, mib(done), mib(total))
		if done >= total {
			fmt.Fprintln(os.Stderr)
		}
	}
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// fileKind sniffs a model path: "gguf", "plan" or an error naming the file.
func fileKind(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	head := make([]byte, 8)
	if _, err := io.ReadFull(f, head); err != nil {
		return "", fmt.Errorf("%s: too short to be a GGUF or plan file", path)
	}
	switch {
	case bytes.HasPrefix(head, []byte(gguf.Magic)):
		return "gguf", nil
	case bytes.Equal(head, []byte(plan.Magic)):
		return "plan", nil
	}
	return "", fmt.Errorf("%s: neither a GGUF file nor a minfer plan (magic %q)", path, head[:4])
}

// loadTokenizer builds the tokenizer of a GGUF model or plan file.
func loadTokenizer(path string) (*tokenizer.Tokenizer, error) {
	kind, err := fileKind(path)
	if err != nil {
		return nil, err
	}
	var v *tokenizer.Vocab
	if kind == "gguf" {
		f, err := gguf.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if v, err = gguf.LoadVocab(f); err != nil {
			return nil, err
		}
	} else {
		l, err := openPlan(path, plan.OpenOptions{SkipWeightChecksum: true, SkipSourceHash: true})
		if err != nil {
			return nil, err
		}
		defer l.Close()
		if l.Vocab == nil {
			return nil, fmt.Errorf("%s: the plan has no tokenizer", path)
		}
		v = l.Vocab
	}
	return tokenizer.New(v)
}

// SamplingFlags are the sampler options shared by exec and run.
type SamplingFlags struct {
	Temp          *float32 `help:"Temperature (0: greedy). Default 0.8." name:"temp"`
	TopK          *int     `help:"Top-k (0: off). Default 40." name:"top-k"`
	TopP          *float32 `help:"Top-p (1: off). Default 0.95." name:"top-p"`
	MinP          *float32 `help:"Min-p (0: off). Default 0.05." name:"min-p"`
	RepeatPenalty *float32 `help:"Repetition penalty (1: off)." name:"repeat-penalty"`
	RepeatLastN   *int     `help:"Tokens the penalties look back at (-1: all)." name:"repeat-last-n"`
	Seed          *int64   `help:"Sampling seed (fixed by default, so runs repeat; -1: a random seed, printed so the run can be repeated)."`
}

// seed resolves --seed: -1 draws a random seed and prints it on stderr so
// the run can be repeated; other negative values are refused.
func (s SamplingFlags) seed(stderr io.Writer) (seed uint64, set bool, err error) {
	if s.Seed == nil {
		return 0, false, nil
	}
	switch v := *s.Seed; {
	case v == -1:
		seed = rand.Uint64() >> 1 // representable as --seed
		fmt.Fprintf(stderr, "seed: %d (--seed %d repeats this run)\n", seed, seed)
		return seed, true, nil
	case v < 0:
		return 0, false, fmt.Errorf("--seed %d: give a seed, or -1 for a random one", v)
	default:
		return uint64(v), true, nil
	}
}

// params applies the flags over defaults.
func (s SamplingFlags) params(def sample.Params, stderr io.Writer) (sample.Params, error) {
	p := def
	if s.Temp != nil {
		p.Temperature = *s.Temp
	}
	if s.TopK != nil {
		p.TopK = *s.TopK
	}
	if s.TopP != nil {
		p.TopP = *s.TopP
	}
	if s.MinP != nil {
		p.MinP = *s.MinP
	}
	if s.RepeatPenalty != nil {
		p.RepeatPenalty = *s.RepeatPenalty
	}
	if s.RepeatLastN != nil {
		p.RepeatLastN = *s.RepeatLastN
	}
	seed, set, err := s.seed(stderr)
	if err != nil {
		return p, err
	}
	if set {
		p.Seed = seed
	}
	return p, nil
}

// parseIDs reads "1,2,3" or "1 2 3".
func parseIDs(s string) ([]int32, error) {
	f := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' })
	ids := make([]int32, 0, len(f))
	for _, x := range f {
		v, err := strconv.ParseInt(x, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("token id %q: %v", x, err)
		}
		ids = append(ids, int32(v))
	}
	return ids, nil
}

// maxTextBytes bounds a text file read without a context to bound it
// (tokenize --file).
const maxTextBytes = 64 << 20

// readText reads a text input: "-" is standard input, anything else must be
// a regular file (a device such as /dev/zero or a FIFO would never end).
// At most limit bytes are read; a longer input is an error naming the file
// and why (what names the limit).
func readText(path string, limit int64, why string) (string, error) {
	var r io.Reader
	name := path
	if path == "-" {
		r, name = os.Stdin, "standard input"
	} else {
		// Stat before opening: opening a FIFO blocks until a writer comes.
		if st, err := os.Stat(path); err != nil {
			return "", err
		} else if !st.Mode().IsRegular() {
			return "", fmt.Errorf("%s is %s, not a regular file: give a file, or - for standard input", path, safefile.Kind(st.Mode()))
		}
		f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
		if err != nil {
			return "", err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return "", err
		}
		if !st.Mode().IsRegular() {
			return "", fmt.Errorf("%s is %s, not a regular file: give a file, or - for standard input", path, safefile.Kind(st.Mode()))
		}
		if st.Size() > limit {
			return "", fmt.Errorf("%s has %d bytes, more than %d: %s", path, st.Size(), limit, why)
		}
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", name, err)
	}
	if int64(len(b)) > limit {
		return "", fmt.Errorf("%s has more than %d bytes: %s", name, limit, why)
	}
	return string(b), nil
}
