package plan

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// File layout constants (docs/PLAN-FORMAT.md).
const (
	headerSize     = 64
	entrySize      = 64
	nameSize       = 24
	sectionAlign   = 64   // every section starts at a multiple of this
	weightsAlign   = 4096 // the weights section starts on a page boundary
	tensorAlign    = 64   // every embedded tensor starts at a multiple of this
	maxSections    = 64
	flagRequired   = 1 // a reader that does not know the section must refuse the plan
	knownFlagsMask = flagRequired
)

// Section names, in file order.
const (
	secGraph        = "graph"
	secMemory       = "memory"
	secTokenizer    = "tokenizer"
	secSampling     = "sampling"
	secOptions      = "options"
	secCPU          = "cpu"
	secSource       = "source"
	secWeightsIndex = "weights.index"
	secChatTemplate = "chat_template" // optional: the model's Jinja chat template
	secWeights      = "weights"
)

// castagnoli is the CRC-32C table (hardware accelerated on amd64 and arm64).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// header is the fixed 64-byte start of the file.
type header struct {
	Version     uint32
	NSections   uint32
	FileSize    uint64
	TableOffset uint64
	TableCRC    uint32
}

// entry is one row of the section table.
type entry struct {
	Name   string
	Offset uint64
	Size   uint64
	CRC    uint32
	Flags  uint32
}

// end is the first byte after the section, or false if it overflows.
func (e entry) end() (uint64, bool) {
	end := e.Offset + e.Size
	return end, end >= e.Offset
}

func putHeader(b []byte, h header) {
	copy(b[0:8], Magic)
	le := binary.LittleEndian
	le.PutUint32(b[8:], h.Version)
	le.PutUint32(b[12:], h.NSections)
	le.PutUint64(b[16:], h.FileSize)
	le.PutUint64(b[24:], h.TableOffset)
	le.PutUint32(b[32:], h.TableCRC)
	le.PutUint32(b[36:], crc(b[0:36]))
	clear(b[40:headerSize])
}

func putEntry(b []byte, e entry) {
	clear(b[:entrySize])
	copy(b[0:nameSize], e.Name)
	le := binary.LittleEndian
	le.PutUint64(b[24:], e.Offset)
	le.PutUint64(b[32:], e.Size)
	le.PutUint32(b[40:], e.CRC)
	le.PutUint32(b[44:], e.Flags)
}

// readHeader checks the magic, the version (before anything else, so that
// any future layout still gets the version message), the header checksum
// and the section table's bounds and checksum, and returns the table.
func readHeader(data []byte) (header, []entry, error) {
	var h header
	if len(data) < 8 || string(data[:8]) != Magic {
		if len(data) < 8 && string(data) == Magic[:len(data)] {
			return h, nil, fmt.Errorf("plan.bin: truncated: %d bytes, shorter than the header", len(data))
		}
		return h, nil, fmt.Errorf("plan.bin: not a minfer plan (bad magic %q, want %q)", prefix(data, 8), Magic)
	}
	if len(data) < 12 {
		return h, nil, fmt.Errorf("plan.bin: truncated: %d bytes, shorter than the header", len(data))
	}
	le := binary.LittleEndian
	h.Version = le.Uint32(data[8:])
	if h.Version != FormatVersion {
		return h, nil, fmt.Errorf("plan.bin: format version %d, this minfer reads version %d — recompile with minferc compile", h.Version, FormatVersion)
	}
	if len(data) < headerSize {
		return h, nil, fmt.Errorf("plan.bin: truncated: %d bytes, shorter than the %d-byte header", len(data), headerSize)
	}
	if got, want := crc(data[0:36]), le.Uint32(data[36:]); got != want {
		return h, nil, fmt.Errorf("plan.bin: header checksum mismatch (corrupt file)")
	}
	h.NSections = le.Uint32(data[12:])
	h.FileSize = le.Uint64(data[16:])
	h.TableOffset = le.Uint64(data[24:])
	h.TableCRC = le.Uint32(data[32:])
	size := uint64(len(data))
	if h.NSections == 0 || h.NSections > maxSections {
		return h, nil, fmt.Errorf("plan.bin: %d sections (1 to %d allowed; corrupt file)", h.NSections, maxSections)
	}
	tableSize := uint64(h.NSections) * entrySize
	if h.TableOffset < headerSize || h.TableOffset > size || size-h.TableOffset < tableSize {
		return h, nil, fmt.Errorf("plan.bin: truncated: section table at offset %d size %d beyond file size %d", h.TableOffset, tableSize, size)
	}
	table := data[h.TableOffset : h.TableOffset+tableSize]
	if crc(table) != h.TableCRC {
		return h, nil, fmt.Errorf("plan.bin: section table checksum mismatch (corrupt file)")
	}
	entries := make([]entry, h.NSections)
	seen := make(map[string]bool)
	for i := range entries {
		b := table[i*entrySize:]
		name, err := entryName(b[:nameSize])
		if err != nil {
			return h, nil, fmt.Errorf("plan.bin: section %d: %v", i, err)
		}
		e := entry{Name: name, Offset: le.Uint64(b[24:]), Size: le.Uint64(b[32:]), CRC: le.Uint32(b[40:]), Flags: le.Uint32(b[44:])}
		if seen[name] {
			return h, nil, fmt.Errorf("plan.bin: section %s listed twice", name)
		}
		seen[name] = true
		if end, ok := e.end(); !ok || end > size {
			return h, nil, fmt.Errorf("plan.bin: truncated: section %s at offset %d size %d beyond file size %d", name, e.Offset, e.Size, size)
		}
		if e.Offset < h.TableOffset+tableSize {
			return h, nil, fmt.Errorf("plan.bin: section %s at offset %d overlaps the header or section table (corrupt file)", name, e.Offset)
		}
		entries[i] = e
	}
	if h.FileSize != size {
		if h.FileSize > size {
			return h, nil, fmt.Errorf("plan.bin: truncated: header says %d bytes, file has %d", h.FileSize, size)
		}
		return h, nil, fmt.Errorf("plan.bin: %d bytes after the %d the header declares (corrupt file)", size-h.FileSize, h.FileSize)
	}
	return h, entries, nil
}

// entryName decodes a NUL-padded section name.
func entryName(b []byte) (string, error) {
	n := 0
	for n < len(b) && b[n] != 0 {
		c := b[n]
		if c < 0x21 || c > 0x7e {
			return "", fmt.Errorf("bad section name %q", prefix(b, nameSize))
		}
		n++
	}
	for _, c := range b[n:] {
		if c != 0 {
			return "", fmt.Errorf("bad section name %q", prefix(b, nameSize))
		}
	}
	if n == 0 {
		return "", fmt.Errorf("empty section name")
	}
	return string(b[:n]), nil
}

func prefix(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

func alignUp(n, a uint64) uint64 { return (n + a - 1) / a * a }
