package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/minfer/minfer/quant"
)

// Format constants.
const (
	// Magic is the first four bytes of every GGUF file.
	Magic = "GGUF"
	// DefaultAlignment is the tensor data alignment when general.alignment is absent.
	DefaultAlignment = 32
	// KeyAlignment is the metadata key that overrides the alignment.
	KeyAlignment = "general.alignment"
	// MaxDims is the largest number of tensor dimensions (GGML_MAX_DIMS).
	MaxDims = 4
	// MaxArrayDepth bounds the nesting of array values.
	MaxArrayDepth = 8
)

// Open maps the file at path read-only and parses it. The tensor data is not
// copied: TensorData returns slices of the mapping, valid until Close.
func Open(path string) (*File, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() < 0 || uint64(st.Size()) > math.MaxInt {
		return nil, &Error{File: path, Section: SectionHeader, Offset: -1, Msg: "file too large to map"}
	}
	data, unmap, err := mapFile(fd, int(st.Size()))
	if err != nil {
		return nil, fmt.Errorf("%s: mmap: %w", path, err)
	}
	f, err := Parse(data, path)
	if err != nil {
		if unmap != nil {
			_ = unmap()
		}
		return nil, err
	}
	f.unmap = unmap
	return f, nil
}

// Parse parses and validates an in-memory GGUF image. data is retained (not
// copied) and must not be modified while the File is in use. name is used in
// error messages and as File.Path.
func Parse(data []byte, name string) (*File, error) {
	d := &decoder{data: data, name: name, section: SectionHeader}
	f, err := d.parse()
	if err != nil {
		return nil, err
	}
	return f, nil
}

type decoder struct {
	data    []byte
	pos     uint64
	name    string
	section string
	key     string
	tensor  string
	mem     uint64 // estimated Go memory held by the decoded metadata
}

// Metadata memory bound: the decoded keys and values may hold at most
// metaSlack bytes plus metaPerByte bytes per file byte parsed so far. Every
// value type a real file uses costs less (a string 16 bytes of header plus
// its bytes for at least 8 file bytes plus its bytes, a nested array 24
// bytes for at least 12), so only hostile files — millions of tiny keys,
// of nested non-empty arrays — reach it, and they are refused naming the
// key instead of taking several times the file's size in memory.
var (
	metaSlack   uint64 = 16 << 20
	metaPerByte uint64 = 2
)

// preallocMax bounds the capacity reserved from a claimed count.
const preallocMax = 4096

// charge accounts n bytes of decoded metadata at the key being read.
func (d *decoder) charge(n uint64) error { return d.chargeAhead(n, 0) }

// chargeAhead is charge for a value whose ahead bytes (checked present) are
// about to be read.
func (d *decoder) chargeAhead(n, ahead uint64) error {
	d.mem += n
	if d.mem > metaSlack+metaPerByte*(d.pos+ahead) {
		return d.errAt(d.pos, "metadata would need more than %d MiB of memory by here (%d bytes of file read): refusing a file built to exhaust memory", d.mem>>20, d.pos)
	}
	return nil
}

// emptyArrays are the decoded values of zero-length arrays, one per element
// type, shared so that an array of empty arrays allocates nothing per
// element.
var emptyArrays = func() map[ValueType]any {
	m := map[ValueType]any{}
	for _, v := range []struct {
		t ValueType
		v any
	}{{TypeUint8, []uint8{}}, {TypeInt8, []int8{}}, {TypeUint16, []uint16{}}, {TypeInt16, []int16{}},
		{TypeUint32, []uint32{}}, {TypeInt32, []int32{}}, {TypeFloat32, []float32{}}, {TypeBool, []bool{}},
		{TypeString, []string{}}, {TypeUint64, []uint64{}}, {TypeInt64, []int64{}}, {TypeFloat64, []float64{}},
		{TypeArray, []Array{}}} {
		m[v.t] = v.v
	}
	return m
}()

func (d *decoder) errAt(off uint64, format string, args ...any) error {
	o := int64(-1)
	if off <= math.MaxInt64 {
		o = int64(off)
	}
	return &Error{File: d.name, Section: d.section, Key: d.key, Tensor: d.tensor, Offset: o, Msg: fmt.Sprintf(format, args...)}
}

func (d *decoder) remaining() uint64 { return uint64(len(d.data)) - d.pos }

// need fails unless n more bytes are available.
func (d *decoder) need(n uint64, what string) error {
	if n > d.remaining() {
		return d.errAt(d.pos, "truncated: %s needs %d bytes, %d left in file", what, n, d.remaining())
	}
	return nil
}

func (d *decoder) u8(what string) (uint8, error) {
	if err := d.need(1, what); err != nil {
		return 0, err
	}
	v := d.data[d.pos]
	d.pos++
	return v, nil
}

func (d *decoder) u16(what string) (uint16, error) {
	if err := d.need(2, what); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint16(d.data[d.pos:])
	d.pos += 2
	return v, nil
}

func (d *decoder) u32(what string) (uint32, error) {
	if err := d.need(4, what); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint32(d.data[d.pos:])
	d.pos += 4
	return v, nil
}

func (d *decoder) u64(what string) (uint64, error) {
	if err := d.need(8, what); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint64(d.data[d.pos:])
	d.pos += 8
	return v, nil
}

func (d *decoder) str(what string) (string, error) { return d.strAt(what, -1) }

// withIndex is "key #3" for ("key #", 3), "element 3" for ("element", 3).
func withIndex(what string, i int) string {
	if strings.HasSuffix(what, "#") {
		return what + strconv.Itoa(i)
	}
	return what + " " + strconv.Itoa(i)
}

// strAt reads a string; idx >= 0 is appended to what in an error (formatted
// only then: a vocabulary has hundreds of thousands of strings).
func (d *decoder) strAt(what string, idx int) (string, error) {
	at := d.pos
	if d.remaining() < 8 {
		if idx >= 0 {
			what = withIndex(what, idx)
		}
		return "", d.need(8, what+" length")
	}
	n := binary.LittleEndian.Uint64(d.data[d.pos:])
	d.pos += 8
	if n > d.remaining() {
		if idx >= 0 {
			what = withIndex(what, idx)
		}
		return "", d.errAt(at, "%s length %d exceeds the %d bytes left in file", what, n, d.remaining())
	}
	s := string(d.data[d.pos : d.pos+n])
	d.pos += n
	return s, nil
}

// count reads an element count and checks that count*minSize bytes remain.
func (d *decoder) count(what string, minSize uint64) (int, error) {
	at := d.pos
	n, err := d.u64(what)
	if err != nil {
		return 0, err
	}
	hi, lo := bits.Mul64(n, minSize)
	if hi != 0 || lo > d.remaining() || n > math.MaxInt32 {
		return 0, d.errAt(at, "%s %d is impossible: needs at least %d bytes each, %d bytes left in file", what, n, minSize, d.remaining())
	}
	return int(n), nil
}

func (d *decoder) parse() (*File, error) {
	f := &File{Path: d.name, Alignment: DefaultAlignment}
	if err := d.need(4, "magic"); err != nil {
		return nil, err
	}
	magic := string(d.data[:4])
	if magic != Magic {
		if magic == "FUGG" {
			return nil, d.errAt(0, "byte-swapped magic %q: big-endian GGUF files are not supported", magic)
		}
		return nil, d.errAt(0, "bad magic %q, want %q: not a GGUF file", magic, Magic)
	}
	d.pos = 4
	ver, err := d.u32("version")
	if err != nil {
		return nil, err
	}
	switch {
	case ver == 2 || ver == 3:
	case ver == 1:
		return nil, d.errAt(4, "GGUF version 1 is not supported (obsolete format; re-convert the model with a current llama.cpp)")
	case ver&0xffff == 0 && bits.ReverseBytes32(ver) <= 3:
		return nil, d.errAt(4, "version %#x looks byte-swapped: big-endian GGUF files are not supported", ver)
	default:
		return nil, d.errAt(4, "unsupported GGUF version %d (supported: 2, 3)", ver)
	}
	f.Version = ver

	// Each tensor info takes at least name length 8 + n_dims 4 + one dim 8 +
	// type 4 + offset 8 = 32 bytes; each KV at least key length 8 + type 4 +
	// a 1-byte value = 13 bytes.
	nTensors, err := d.count("tensor count", 32)
	if err != nil {
		return nil, err
	}
	nKV, err := d.count("metadata key/value count", 13)
	if err != nil {
		return nil, err
	}

	d.section = SectionMetadata
	// Counts are claims: preallocate for a real file's, grow past that as
	// the entries are actually read (and charged).
	f.KV = make([]KV, 0, min(nKV, preallocMax))
	f.kvIndex = make(map[string]int, min(nKV, preallocMax))
	f.kvOff = make([]int64, 0, min(nKV, preallocMax))
	for i := 0; i < nKV; i++ {
		d.key = ""
		at := d.pos
		key, err := d.strAt("key #", i)
		if err != nil {
			return nil, err
		}
		d.key = key
		// The KV, its index entry and offset, and the key's bytes.
		if err := d.charge(96 + uint64(len(key))); err != nil {
			return nil, err
		}
		if _, dup := f.kvIndex[key]; dup {
			return nil, d.errAt(at, "duplicate key")
		}
		typAt := d.pos
		t, err := d.u32("value type")
		if err != nil {
			return nil, err
		}
		v, err := d.value(ValueType(t), typAt, 0)
		if err != nil {
			return nil, err
		}
		f.kvIndex[key] = len(f.KV)
		f.kvOff = append(f.kvOff, int64(at))
		f.KV = append(f.KV, KV{Key: key, Value: v})
	}
	d.key = ""

	if _, ok := f.kvIndex[KeyAlignment]; ok {
		a, err := f.Uint32(KeyAlignment)
		if err != nil {
			return nil, err
		}
		if a == 0 || a&(a-1) != 0 {
			return nil, f.keyErr(KeyAlignment, "alignment %d is not a non-zero power of two", a)
		}
		f.Alignment = uint64(a)
	}

	d.section = SectionTensorInfo
	f.Tensors = make([]TensorInfo, 0, min(nTensors, preallocMax))
	f.tIndex = make(map[string]int, min(nTensors, preallocMax))
	for i := 0; i < nTensors; i++ {
		d.tensor = ""
		at := d.pos
		name, err := d.str(fmt.Sprintf("tensor #%d name", i))
		if err != nil {
			return nil, err
		}
		// The TensorInfo, its dimensions, index entry and name.
		if err := d.charge(160 + uint64(len(name))); err != nil {
			return nil, err
		}
		d.tensor = name
		if name == "" {
			d.tensor = fmt.Sprintf("#%d", i)
		}
		if _, dup := f.tIndex[name]; dup {
			return nil, d.errAt(at, "duplicate tensor name")
		}
		t, err := d.tensorInfo(name)
		if err != nil {
			return nil, err
		}
		f.tIndex[name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, t)
	}
	d.tensor = ""

	// The data section starts at the next multiple of the alignment.
	end := d.pos
	f.DataOffset = alignUp(end, f.Alignment)
	d.section = SectionTensorData
	if len(f.Tensors) > 0 && f.DataOffset > uint64(len(d.data)) {
		return nil, d.errAt(end, "data section at offset %d (aligned to %d) is beyond end of file (%d bytes)", f.DataOffset, f.Alignment, len(d.data))
	}
	if err := d.checkData(f); err != nil {
		return nil, err
	}
	f.data = d.data
	return f, nil
}

func alignUp(x, a uint64) uint64 {
	r := x % a
	if r == 0 {
		return x
	}
	return x + (a - r) // callers ensure x is at most len(data), so no overflow
}

func (d *decoder) tensorInfo(name string) (TensorInfo, error) {
	t := TensorInfo{Name: name}
	ndAt := d.pos
	nd, err := d.u32("dimension count")
	if err != nil {
		return t, err
	}
	if nd == 0 || nd > MaxDims {
		return t, d.errAt(ndAt, "has %d dimensions, want 1..%d", nd, MaxDims)
	}
	if err := d.need(uint64(nd)*8, "dimensions"); err != nil {
		return t, err
	}
	t.Dims = make([]uint64, nd)
	elems := uint64(1)
	for j := range t.Dims {
		dimAt := d.pos
		v, _ := d.u64("dimension")
		if v == 0 {
			return t, d.errAt(dimAt, "dimension %d is zero", j)
		}
		t.Dims[j] = v
		var hi uint64
		hi, elems = bits.Mul64(elems, v)
		if hi != 0 || elems > math.MaxInt64 {
			return t, d.errAt(dimAt, "element count overflows int64 at dimension %d = %d (dims %v)", j, v, t.Dims[:j+1])
		}
	}
	typAt := d.pos
	typ, err := d.u32("type")
	if err != nil {
		return t, err
	}
	t.Type = quant.Type(typ)
	if !t.Type.HasLayout() || t.Type.PlanOnly() {
		return t, d.errAt(typAt, "unknown ggml type %d", typ)
	}
	bs, ts := uint64(t.Type.BlockSize()), uint64(t.Type.TypeSize())
	if t.Dims[0]%bs != 0 {
		return t, d.errAt(typAt, "row length %d is not a multiple of the %s block size %d", t.Dims[0], t.Type, bs)
	}
	hi, size := bits.Mul64(elems/bs, ts)
	if hi != 0 || size > math.MaxInt64 {
		return t, d.errAt(typAt, "byte size overflows (dims %v, type %s)", t.Dims, t.Type)
	}
	t.Size = size
	t.Offset, err = d.u64("offset")
	if err != nil {
		return t, err
	}
	return t, nil
}

// checkData validates every tensor's placement: aligned, inside the file,
// no overlaps.
func (d *decoder) checkData(f *File) error {
	avail := uint64(len(d.data)) - min(f.DataOffset, uint64(len(d.data)))
	order := make([]int, len(f.Tensors))
	for i := range f.Tensors {
		t := &f.Tensors[i]
		d.tensor = t.Name
		order[i] = i
		if t.Offset%f.Alignment != 0 {
			return d.errAt(f.DataOffset+t.Offset, "data offset %d is not a multiple of the alignment %d", t.Offset, f.Alignment)
		}
		if t.Offset > avail || t.Size > avail-t.Offset {
			return d.errAt(f.DataOffset+t.Offset, "data [%d, +%d) relative to the data section at %d extends beyond end of file (%d bytes)", t.Offset, t.Size, f.DataOffset, len(d.data))
		}
	}
	sort.Slice(order, func(a, b int) bool { return f.Tensors[order[a]].Offset < f.Tensors[order[b]].Offset })
	for k := 1; k < len(order); k++ {
		p, q := &f.Tensors[order[k-1]], &f.Tensors[order[k]]
		if p.Offset+p.Size > q.Offset {
			d.tensor = q.Name
			return d.errAt(f.DataOffset+q.Offset, "data [%d, +%d) overlaps tensor %q [%d, +%d)", q.Offset, q.Size, p.Name, p.Offset, p.Size)
		}
	}
	d.tensor = ""
	return nil
}

// value decodes one value of type t; typAt is the offset of its type tag.
func (d *decoder) value(t ValueType, typAt uint64, depth int) (any, error) {
	switch t {
	case TypeUint8:
		return d.u8("uint8 value")
	case TypeInt8:
		v, err := d.u8("int8 value")
		return int8(v), err
	case TypeUint16:
		return d.u16("uint16 value")
	case TypeInt16:
		v, err := d.u16("int16 value")
		return int16(v), err
	case TypeUint32:
		return d.u32("uint32 value")
	case TypeInt32:
		v, err := d.u32("int32 value")
		return int32(v), err
	case TypeFloat32:
		v, err := d.u32("float32 value")
		return math.Float32frombits(v), err
	case TypeBool:
		at := d.pos
		v, err := d.u8("bool value")
		if err != nil {
			return nil, err
		}
		if v > 1 {
			return nil, d.errAt(at, "bool value %d is not 0 or 1", v)
		}
		return v == 1, nil
	case TypeString:
		v, err := d.str("string value")
		if err == nil {
			err = d.charge(16 + uint64(len(v)))
		}
		return v, err
	case TypeUint64:
		return d.u64("uint64 value")
	case TypeInt64:
		v, err := d.u64("int64 value")
		return int64(v), err
	case TypeFloat64:
		v, err := d.u64("float64 value")
		return math.Float64frombits(v), err
	case TypeArray:
		a, err := d.array(typAt, depth+1)
		if err != nil {
			return nil, err
		}
		return a, nil
	}
	return nil, d.errAt(typAt, "unknown value type %d", uint32(t))
}

func (d *decoder) array(typAt uint64, depth int) (Array, error) {
	if depth > MaxArrayDepth {
		return Array{}, d.errAt(typAt, "arrays nested deeper than %d", MaxArrayDepth)
	}
	etAt := d.pos
	et32, err := d.u32("array element type")
	if err != nil {
		return Array{}, err
	}
	et := ValueType(et32)
	if !et.Valid() {
		return Array{}, d.errAt(etAt, "unknown array element type %d", et32)
	}
	n, err := d.count("array length", et.minSize())
	if err != nil {
		return Array{}, err
	}
	a := Array{Elem: et}
	if n == 0 {
		a.Values = emptyArrays[et]
		return a, nil
	}
	// The boxed slice header and the elements (strings and nested arrays
	// are charged as they are read).
	elem := et.minSize()
	switch et {
	case TypeString:
		elem = 16
	case TypeArray:
		elem = 24
	}
	if err := d.chargeAhead(24+uint64(n)*elem, uint64(n)*et.minSize()); err != nil {
		return Array{}, err
	}
	p := d.data[d.pos:]
	// Fixed-size element bytes are known to be present (count checked n*size).
	switch et {
	case TypeUint8:
		v := make([]uint8, n)
		copy(v, p)
		a.Values = v
	case TypeInt8:
		v := make([]int8, n)
		for i := range v {
			v[i] = int8(p[i])
		}
		a.Values = v
	case TypeBool:
		v := make([]bool, n)
		for i := range v {
			if p[i] > 1 {
				return Array{}, d.errAt(d.pos+uint64(i), "bool array element %d has value %d, not 0 or 1", i, p[i])
			}
			v[i] = p[i] == 1
		}
		a.Values = v
	case TypeUint16:
		v := make([]uint16, n)
		for i := range v {
			v[i] = binary.LittleEndian.Uint16(p[2*i:])
		}
		a.Values = v
	case TypeInt16:
		v := make([]int16, n)
		for i := range v {
			v[i] = int16(binary.LittleEndian.Uint16(p[2*i:]))
		}
		a.Values = v
	case TypeUint32:
		v := make([]uint32, n)
		for i := range v {
			v[i] = binary.LittleEndian.Uint32(p[4*i:])
		}
		a.Values = v
	case TypeInt32:
		v := make([]int32, n)
		for i := range v {
			v[i] = int32(binary.LittleEndian.Uint32(p[4*i:]))
		}
		a.Values = v
	case TypeFloat32:
		v := make([]float32, n)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(p[4*i:]))
		}
		a.Values = v
	case TypeUint64:
		v := make([]uint64, n)
		for i := range v {
			v[i] = binary.LittleEndian.Uint64(p[8*i:])
		}
		a.Values = v
	case TypeInt64:
		v := make([]int64, n)
		for i := range v {
			v[i] = int64(binary.LittleEndian.Uint64(p[8*i:]))
		}
		a.Values = v
	case TypeFloat64:
		v := make([]float64, n)
		for i := range v {
			v[i] = math.Float64frombits(binary.LittleEndian.Uint64(p[8*i:]))
		}
		a.Values = v
	case TypeString:
		v := make([]string, n)
		for i := range v {
			s, err := d.strAt("string array element", i)
			if err != nil {
				return Array{}, err
			}
			if len(s) > 0 {
				if err := d.charge(uint64(len(s))); err != nil {
					return Array{}, err
				}
			}
			v[i] = s
		}
		a.Values = v
		return a, nil
	case TypeArray:
		v := make([]Array, n)
		for i := range v {
			at := d.pos
			x, err := d.array(at, depth+1)
			if err != nil {
				return Array{}, err
			}
			v[i] = x
		}
		a.Values = v
		return a, nil
	}
	d.pos += uint64(n) * et.minSize()
	return a, nil
}
