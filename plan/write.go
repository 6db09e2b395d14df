package plan

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"time"
	"unsafe"

	"github.com/minfer/minfer/internal/safefile"
	"github.com/minfer/minfer/quant"
)

// indexJSON is the weights.index section.
type indexJSON struct {
	Mode    string // "embed" or "ref"
	Tensors []WeightEntry
}

// section is one section to write: its bytes, or for the weights section
// the tensors to stream.
type section struct {
	name  string
	data  []byte
	align uint64
	entry entry
}

// HashSource returns the SourceRef (path, size, SHA-256) of a file.
func HashSource(path string) (SourceRef, error) {
	f, err := os.Open(path)
	if err != nil {
		return SourceRef{}, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return SourceRef{}, fmt.Errorf("hashing %s: %w", path, err)
	}
	return SourceRef{Path: path, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// Write writes p to path as a plan.bin, taking the weight bytes from src. In
// Embed mode every tensor the graph reads is copied into the file; in Ref
// mode only its offset in the source GGUF is recorded (src must then be a
// WeightOffsetSource or expose its mapped image with Bytes() []byte), and
// p.Source's size and SHA-256 are computed from p.Source.Path when unset.
// If p.Options.Compiled is zero it is set to the current time.
//
// p is validated as Open would validate it, so the compiler cannot write a
// plan the executor refuses. The file is written under a temporary name in
// the same directory, synced and renamed into place (internal/safefile): a
// crash or an interrupt never leaves a partial plan.bin, and the path may
// not be the source GGUF. progress, if not nil, is called as weight bytes are
// written (done, total).
func Write(path string, p *Plan, src WeightSource, progress func(done, total int64)) (err error) {
	if p.Mode == Ref && (p.Source.Size == 0 || p.Source.SHA256 == "") && p.Source.Path != "" {
		ref, err := HashSource(p.Source.Path)
		if err != nil {
			return fmt.Errorf("plan: source GGUF: %w", err)
		}
		p.Source.Size, p.Source.SHA256 = ref.Size, ref.SHA256
	}
	if p.Options.Compiled.IsZero() {
		p.Options.Compiled = time.Now().UTC().Truncate(time.Second)
	}
	if err := validate(p); err != nil {
		return fmt.Errorf("plan: refusing to write an invalid plan: %w", err)
	}
	specs, err := weightSpecs(p.Graph)
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	if img, ok := src.(interface{ Bytes() []byte }); ok && p.Mode == Ref {
		if n := int64(len(img.Bytes())); n != p.Source.Size {
			return fmt.Errorf("plan: the weight source image has %d bytes, but source %s has %d", n, p.Source.Path, p.Source.Size)
		}
	}
	// Fetch every tensor up front: sizes are checked before anything is
	// written, and Ref mode needs the offsets for the index.
	blobs := make([][]byte, len(specs))
	idx := indexJSON{Mode: p.Mode.String(), Tensors: make([]WeightEntry, len(specs))}
	var weightsSize int64
	for i, s := range specs {
		b, err := src.WeightBytes(s.name)
		if err != nil {
			return fmt.Errorf("plan: weight %q: %w", s.name, err)
		}
		if int64(len(b)) != s.size {
			return fmt.Errorf("plan: weight %q: source has %d bytes, the graph's %s shape needs %d", s.name, len(b), s.typ, s.size)
		}
		if s.typ.PlanOnly() && p.Mode == Ref {
			return fmt.Errorf("plan: weight %q: %s weights are rewritten by the compiler and cannot be referenced in the source GGUF (embed them)", s.name, s.typ)
		}
		blobs[i] = b
		e := WeightEntry{Name: s.name, Type: s.typ.String(), Size: s.size}
		if p.Mode == Embed {
			weightsSize = int64(alignUp(uint64(weightsSize), tensorAlign))
			e.Offset = weightsSize
			weightsSize += s.size
		} else {
			if e.Offset, err = sourceOffset(src, s.name, b); err != nil {
				return fmt.Errorf("plan: weights ref: %w", err)
			}
			if e.Offset+e.Size > p.Source.Size {
				return fmt.Errorf("plan: weight %q at offset %d size %d is beyond the %d bytes of %s", s.name, e.Offset, e.Size, p.Source.Size, p.Source.Path)
			}
		}
		idx.Tensors[i] = e
	}

	var secs []*section
	add := func(name string, enc func() ([]byte, error)) error {
		data, err := enc()
		if err != nil {
			return fmt.Errorf("plan: encoding section %s: %w", name, err)
		}
		secs = append(secs, &section{name: name, data: data, align: sectionAlign})
		return nil
	}
	jsonOf := func(v any) func() ([]byte, error) { return func() ([]byte, error) { return json.Marshal(v) } }
	encs := []struct {
		name string
		enc  func() ([]byte, error)
	}{
		{secGraph, func() ([]byte, error) { return encodeGraph(p.Graph) }},
		{secMemory, jsonOf(p.Memory)},
		{secTokenizer, func() ([]byte, error) { return encodeVocab(p.Vocab) }},
		{secSampling, jsonOf(p.Sampling)},
		{secOptions, jsonOf(p.Options)},
		{secCPU, jsonOf(p.CPU)},
		{secSource, jsonOf(p.Source)},
		{secWeightsIndex, jsonOf(idx)},
	}
	for _, e := range encs {
		if e.name == secTokenizer && p.Vocab == nil {
			continue
		}
		if err := add(e.name, e.enc); err != nil {
			return err
		}
	}
	if p.ChatTemplate != "" {
		if err := add(secChatTemplate, func() ([]byte, error) { return []byte(p.ChatTemplate), nil }); err != nil {
			return err
		}
	}
	nsec := len(secs)
	if p.Mode == Embed {
		nsec++
	}

	// Lay the sections out after the header and table.
	off := uint64(headerSize + nsec*entrySize)
	for _, s := range secs {
		off = alignUp(off, s.align)
		flags := uint32(flagRequired)
		if s.name == secChatTemplate {
			flags = 0 // optional: a reader without chat support skips it
		}
		s.entry = entry{Name: s.name, Offset: off, Size: uint64(len(s.data)), CRC: crc(s.data), Flags: flags}
		off += uint64(len(s.data))
	}
	var wentry entry
	if p.Mode == Embed {
		off = alignUp(off, weightsAlign)
		wentry = entry{Name: secWeights, Offset: off, Size: uint64(weightsSize), Flags: flagRequired}
		off += uint64(weightsSize)
	}
	fileSize := off

	tmp, err := safefile.Create(path, p.Source.Path)
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	defer tmp.Abort()
	w := &offsetWriter{w: bufio.NewWriterSize(tmp, 1<<20)}
	if err := w.pad(uint64(headerSize + nsec*entrySize)); err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	for _, s := range secs {
		if err := w.pad(s.entry.Offset); err != nil {
			return fmt.Errorf("plan: %w", err)
		}
		if _, err := w.Write(s.data); err != nil {
			return fmt.Errorf("plan: %w", err)
		}
	}
	if p.Mode == Embed {
		if err := w.pad(wentry.Offset); err != nil {
			return fmt.Errorf("plan: %w", err)
		}
		var sum uint32
		var done int64
		for i, b := range blobs {
			if quant.Unpacked(specs[i].typ) != 0 {
				// the source holds plain rows (the pack-weights pass changed
				// only the type): written packed, a group of rows at a time
				packed := make([]byte, len(b))
				if err := quant.Pack(specs[i].typ, packed, b, int(specs[i].k)); err != nil {
					return fmt.Errorf("plan: weight %q: %w", specs[i].name, err)
				}
				b = packed
			}
			start := wentry.Offset + uint64(idx.Tensors[i].Offset)
			pad := start - w.off
			if err := w.pad(start); err != nil {
				return fmt.Errorf("plan: %w", err)
			}
			sum = crc32.Update(sum, castagnoli, zeros[:pad])
			// Write in chunks so progress moves on large tensors.
			for len(b) > 0 {
				n := min(len(b), 16<<20)
				if _, err := w.Write(b[:n]); err != nil {
					return fmt.Errorf("plan: %w", err)
				}
				sum = crc32.Update(sum, castagnoli, b[:n])
				b = b[n:]
				done += int64(n)
				if progress != nil {
					progress(done, weightsSize)
				}
			}
		}
		wentry.CRC = sum
	}
	if w.off != fileSize {
		return fmt.Errorf("plan: internal error: wrote %d bytes, laid out %d", w.off, fileSize)
	}
	if err := w.w.Flush(); err != nil {
		return fmt.Errorf("plan: %w", err)
	}

	// Header and section table, now that every checksum is known.
	head := make([]byte, headerSize+nsec*entrySize)
	for i, s := range secs {
		putEntry(head[headerSize+i*entrySize:], s.entry)
	}
	if p.Mode == Embed {
		putEntry(head[headerSize+len(secs)*entrySize:], wentry)
	}
	putHeader(head, header{Version: FormatVersion, NSections: uint32(nsec), FileSize: fileSize, TableOffset: headerSize, TableCRC: crc(head[headerSize:])})
	if _, err := tmp.WriteAt(head, 0); err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	if err := tmp.Commit(); err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	if !tmp.Through() {
		dropPageCache(path)
	}
	return nil
}

// zeros is padding: no gap is longer than the page alignment.
var zeros = make([]byte, weightsAlign)

// offsetWriter counts the bytes written and pads with zeros to an offset.
type offsetWriter struct {
	w   *bufio.Writer
	off uint64
}

func (o *offsetWriter) Write(b []byte) (int, error) {
	n, err := o.w.Write(b)
	o.off += uint64(n)
	return n, err
}

func (o *offsetWriter) pad(to uint64) error {
	if to < o.off || to-o.off > uint64(len(zeros)) {
		return fmt.Errorf("internal error: padding from %d to %d", o.off, to)
	}
	_, err := o.Write(zeros[:to-o.off])
	return err
}

// sourceOffset finds where tensor name, whose bytes are b, lies in the
// source file.
func sourceOffset(src WeightSource, name string, b []byte) (int64, error) {
	if s, ok := src.(WeightOffsetSource); ok {
		return s.WeightOffset(name)
	}
	img, ok := src.(interface{ Bytes() []byte })
	if !ok {
		return 0, fmt.Errorf("the weight source (%T) cannot tell where tensor %q lies in its file", src, name)
	}
	all := img.Bytes()
	if len(b) == 0 {
		return 0, fmt.Errorf("tensor %q is empty", name)
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(all)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if p < base || p-base > uintptr(len(all)) || uintptr(len(all))-(p-base) < uintptr(len(b)) {
		return 0, fmt.Errorf("tensor %q does not lie inside the source image", name)
	}
	return int64(p - base), nil
}
