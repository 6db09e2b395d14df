package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/minfer/minfer/alloc"
)

// OpenOptions tune how much of a plan is verified at load. The zero value
// verifies everything, which is the safe default.
type OpenOptions struct {
	// SkipWeightChecksum skips the CRC-32C of the weights section (Embed
	// mode), which reads every weight byte once at load.
	SkipWeightChecksum bool
	// SkipSourceHash checks only the size of a referenced source GGUF (Ref
	// mode), not its SHA-256, which reads the whole file at load.
	SkipSourceHash bool
}

// LoadStats says where load time went.
type LoadStats struct {
	Checksums       time.Duration // CRC-32C of the sections other than weights
	WeightsChecksum time.Duration // CRC-32C of the weights section (parallel, overlapping decode and validation)
	WeightsWait     time.Duration // time Parse waited for it after its other work
	Decode          time.Duration // decoding the sections
	Validate        time.Duration // graph, memory plan and weights index checks
	SourceHash      time.Duration // SHA-256 of a referenced source GGUF
	WeightBytes     int64         // bytes of weights
}

// Loaded is an opened plan: the decoded Plan plus the mapped file its
// weights live in. Close releases the mapping; the slices WeightBytes
// returned must not be used after it.
type Loaded struct {
	*Plan
	// Index lists the weights by tensor name.
	Index map[string]WeightEntry
	Stats LoadStats

	data    []byte // the plan image
	weights []byte // the weights section (Embed) or the source image (Ref)
	unmap   []func() error
}

// WeightBytes returns the bytes of the named tensor, from the plan's
// weights section (Embed) or the source GGUF (Ref). The slice aliases the
// read-only file mapping: it must not be written to, nor used after Close.
// A Loaded from Parse in Ref mode has no source attached and returns an
// error.
func (l *Loaded) WeightBytes(name string) ([]byte, error) {
	e, ok := l.Index[name]
	if !ok {
		return nil, fmt.Errorf("plan.bin: no weight tensor %q", name)
	}
	if l.weights == nil && e.Size > 0 {
		return nil, fmt.Errorf("plan.bin: weight tensor %q is in source GGUF %s, which is not open", name, l.Source.Path)
	}
	if e.Offset < 0 || e.Size < 0 || e.Offset > int64(len(l.weights)) || int64(len(l.weights))-e.Offset < e.Size {
		return nil, fmt.Errorf("plan.bin: weight tensor %q lies outside its file", name)
	}
	return l.weights[e.Offset : e.Offset+e.Size : e.Offset+e.Size], nil
}

// Close unmaps the plan file (and the source GGUF in Ref mode).
func (l *Loaded) Close() error {
	var errs []error
	for _, u := range l.unmap {
		errs = append(errs, u())
	}
	l.unmap, l.data, l.weights = nil, nil, nil
	return errors.Join(errs...)
}

// Open loads the plan at path with full verification; see OpenWith.
func Open(path string) (*Loaded, error) { return OpenWith(path, OpenOptions{}) }

// OpenWith maps the plan at path read-only and parses it (see Parse), then
// checks it against this machine: the architecture and every CPU feature
// its kernels require must be present. In Ref mode it maps the source GGUF
// and refuses it unless its size and SHA-256 (unless o.SkipSourceHash) are
// the ones recorded at compile time.
func OpenWith(path string, o OpenOptions) (*Loaded, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("plan.bin: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("plan.bin: %w", err)
	}
	if st.Size() > int64(^uint(0)>>1) {
		return nil, fmt.Errorf("plan.bin: %s is too large to map", path)
	}
	data, unmap, err := mapFile(f, int(st.Size()))
	if err != nil {
		return nil, fmt.Errorf("plan.bin: mapping %s: %w", path, err)
	}
	l, err := Parse(data, o)
	if err != nil {
		return nil, errors.Join(err, unmap())
	}
	l.unmap = append(l.unmap, unmap)
	err = CheckCPU(l.CPU)
	if err == nil && l.Mode == Ref {
		err = l.openSource(o)
	}
	if err != nil {
		return nil, errors.Join(err, l.Close())
	}
	return l, nil
}

// openSource maps the referenced GGUF and checks it is the one compiled.
func (l *Loaded) openSource(o OpenOptions) error {
	s := l.Source
	f, err := os.Open(s.Path)
	if err != nil {
		return fmt.Errorf("plan.bin: weights are referenced in source GGUF %s, which cannot be opened (%v) — restore it or recompile with --weights embed", s.Path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("plan.bin: source GGUF %s: %w", s.Path, err)
	}
	if st.Size() != s.Size {
		return fmt.Errorf("plan.bin: source GGUF %s changed since compile (size %d, was %d) — recompile with minferc compile", s.Path, st.Size(), s.Size)
	}
	data, unmap, err := mapFile(f, int(st.Size()))
	if err != nil {
		return fmt.Errorf("plan.bin: mapping source GGUF %s: %w", s.Path, err)
	}
	l.unmap = append(l.unmap, unmap)
	if !o.SkipSourceHash {
		t := time.Now()
		sum := sha256.Sum256(data)
		l.Stats.SourceHash = time.Since(t)
		if got := hex.EncodeToString(sum[:]); got != s.SHA256 {
			return fmt.Errorf("plan.bin: source GGUF %s changed since compile (sha256 %s, was %s) — recompile with minferc compile", s.Path, got, s.SHA256)
		}
	}
	l.weights = data
	return nil
}

// knownSections are the sections this version reads, in file order.
var knownSections = []string{secGraph, secMemory, secTokenizer, secSampling, secOptions, secCPU, secSource, secWeightsIndex, secChatTemplate, secWeights}

// Parse decodes and validates a plan image held in memory: magic, version,
// header and section table checksums, bounds of every section, the CRC-32C
// of every section (of weights unless o.SkipWeightChecksum: computed in
// parallel chunks, see crcParallel, while the rest is checked), then each
// section's content: the graph (rebuilt and checked with ir.Verify,
// schedules included), the memory plans (alloc.Plan.ValidateSchedule), the
// vocabulary, the sampling defaults, the options and the weights index
// (every tensor the graph reads, of the right type and size, inside the
// weights section or the source file). It does not check the CPU or open a
// referenced source GGUF; Open does. The returned Loaded's WeightBytes
// slices alias data.
func Parse(data []byte, o OpenOptions) (*Loaded, error) {
	_, entries, err := readHeader(data)
	if err != nil {
		return nil, err
	}
	secs := make(map[string][]byte, len(entries))
	l := &Loaded{Plan: &Plan{}, data: data}
	// The weights checksum runs on its own goroutines (crcParallel) while
	// the other sections are decoded and validated on this one; it is
	// waited for before Parse returns, on every path (the caller may unmap
	// data as soon as Parse returns).
	var (
		weightsWG  sync.WaitGroup
		weightsOK  bool
		weightsCRC time.Duration
	)
	defer weightsWG.Wait()
	t := time.Now()
	for _, e := range entries {
		known := false
		for _, k := range knownSections {
			known = known || k == e.Name
		}
		if e.Flags&^knownFlagsMask != 0 {
			return nil, fmt.Errorf("plan.bin: section %s has flags %#x unknown to this minfer — recompile with minferc compile", e.Name, e.Flags)
		}
		if !known {
			if e.Flags&flagRequired != 0 {
				return nil, fmt.Errorf("plan.bin: required section %s is unknown to this minfer (written by a newer minferc?) — recompile with minferc compile", e.Name)
			}
			continue
		}
		b := data[e.Offset : e.Offset+e.Size]
		if e.Name == secWeights {
			if e.Offset%weightsAlign != 0 {
				return nil, fmt.Errorf("plan.bin: section weights at offset %d is not %d-byte aligned (corrupt file)", e.Offset, weightsAlign)
			}
			l.Stats.WeightBytes = int64(e.Size)
			if o.SkipWeightChecksum {
				secs[e.Name] = b
				continue
			}
			weightsWG.Add(1)
			go func(b []byte, want uint32) {
				defer weightsWG.Done()
				tw := time.Now()
				weightsOK = crcParallel(b) == want
				weightsCRC = time.Since(tw)
			}(b, e.CRC)
			secs[e.Name] = b
			continue
		}
		if crc(b) != e.CRC {
			return nil, fmt.Errorf("plan.bin: section %s checksum mismatch (corrupt file)", e.Name)
		}
		secs[e.Name] = b
	}
	l.Stats.Checksums = time.Since(t)
	for _, name := range []string{secGraph, secMemory, secSampling, secOptions, secCPU, secSource, secWeightsIndex} {
		if _, ok := secs[name]; !ok {
			return nil, fmt.Errorf("plan.bin: section %s is missing (corrupt file)", name)
		}
	}

	t = time.Now()
	p := l.Plan
	dec := func(name string, f func([]byte) error) error {
		if b, ok := secs[name]; ok {
			if err := f(b); err != nil {
				return fmt.Errorf("plan.bin: section %s: %w", name, err)
			}
		}
		return nil
	}
	var idx indexJSON
	steps := []struct {
		name string
		f    func([]byte) error
	}{
		{secGraph, func(b []byte) (err error) { p.Graph, err = decodeGraph(b); return }},
		{secMemory, func(b []byte) error {
			p.Memory = map[string]*alloc.Plan{}
			return decodeJSON(b, &p.Memory)
		}},
		{secTokenizer, func(b []byte) (err error) { p.Vocab, err = decodeVocab(b); return }},
		{secSampling, func(b []byte) error { return decodeJSON(b, &p.Sampling) }},
		{secOptions, func(b []byte) error { return decodeJSON(b, &p.Options) }},
		{secCPU, func(b []byte) error { return decodeJSON(b, &p.CPU) }},
		{secSource, func(b []byte) error { return decodeJSON(b, &p.Source) }},
		{secChatTemplate, func(b []byte) error {
			if !utf8.Valid(b) {
				return fmt.Errorf("not valid UTF-8")
			}
			p.ChatTemplate = string(b)
			return nil
		}},
		{secWeightsIndex, func(b []byte) (err error) {
			if err = decodeJSON(b, &idx); err != nil {
				return err
			}
			p.Mode, err = ParseWeights(idx.Mode)
			return err
		}},
	}
	for _, s := range steps {
		if err := dec(s.name, s.f); err != nil {
			return nil, err
		}
	}
	l.Stats.Decode = time.Since(t)

	t = time.Now()
	if err := validate(p); err != nil {
		return nil, fmt.Errorf("plan.bin: %w", err)
	}
	ws, hasWeights := secs[secWeights]
	limit := int64(len(ws))
	switch {
	case p.Mode == Embed && !hasWeights:
		return nil, fmt.Errorf("plan.bin: section weights is missing (corrupt file)")
	case p.Mode == Ref && hasWeights:
		return nil, fmt.Errorf("plan.bin: weights are referenced in the source GGUF, but the plan also has a weights section (corrupt file)")
	case p.Mode == Ref:
		limit = p.Source.Size
	}
	if l.Index, err = checkIndex(p.Graph, p.Mode, idx.Tensors, limit); err != nil {
		return nil, fmt.Errorf("plan.bin: section %s: %w", secWeightsIndex, err)
	}
	if p.Mode == Embed {
		l.weights = ws
	}
	l.Stats.Validate = time.Since(t)
	if hasWeights && !o.SkipWeightChecksum {
		tw := time.Now()
		weightsWG.Wait()
		l.Stats.WeightsWait = time.Since(tw)
		l.Stats.WeightsChecksum = weightsCRC
		if !weightsOK {
			return nil, fmt.Errorf("plan.bin: section weights checksum mismatch (corrupt file)")
		}
	}
	return l, nil
}
