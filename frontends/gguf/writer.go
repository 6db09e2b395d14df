package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/minfer/minfer/internal/safefile"
	"github.com/minfer/minfer/quant"
)

// Writer builds a GGUF version 3 file in llama.cpp's layout: header, metadata
// key/values, tensor infos, zero padding to the alignment, then the tensor
// data in the order added, each tensor padded to the alignment.
//
// The alignment is general.alignment if that key was added (any integer type
// holding a power of two), else 32.
type Writer struct {
	kvs     []KV
	kvIdx   map[string]int
	tensors []wtensor
	tIdx    map[string]bool
	err     error // first AddKV error, reported by WriteTo
}

type wtensor struct {
	info TensorInfo
	data []byte
	fill func(io.Writer) error // streamed data (AddTensorFunc), nil for data
}

// NewWriter returns an empty Writer.
func NewWriter() *Writer {
	return &Writer{kvIdx: map[string]int{}, tIdx: map[string]bool{}}
}

// AddKV sets a metadata value. Adding an existing key replaces its value in
// place (the key keeps its first position). value is one of the Go natives
// uint8, int8, uint16, int16, uint32, int32, float32, bool, string, uint64,
// int64, float64, an Array, or for convenience a slice of one of those
// scalar types ([]string, []float32, []int32, []uint32, ...) or []Array,
// which is stored as an Array. Any other type (including plain int) makes
// WriteTo fail with an error naming the key.
func (w *Writer) AddKV(key string, value any) {
	v, err := normalizeValue(value, 0)
	if err != nil {
		if w.err == nil {
			w.err = fmt.Errorf("gguf writer: key %q: %w", key, err)
		}
		return
	}
	if i, ok := w.kvIdx[key]; ok {
		w.kvs[i].Value = v
		return
	}
	w.kvIdx[key] = len(w.kvs)
	w.kvs = append(w.kvs, KV{Key: key, Value: v})
}

// normalizeValue maps convenience slices to Array and checks that v (and
// every nested array) is encodable.
func normalizeValue(v any, depth int) (any, error) {
	if _, ok := valueTypeOf(v); ok {
		if a, ok := v.(Array); ok {
			return a, checkArray(a, depth+1)
		}
		return v, nil
	}
	if et, ok := sliceElemType(v); ok {
		a := Array{Elem: et, Values: v}
		return a, checkArray(a, depth+1)
	}
	return nil, fmt.Errorf("unsupported value type %T", v)
}

// sliceElemType maps a typed slice to its GGUF element type.
func sliceElemType(v any) (ValueType, bool) {
	switch v.(type) {
	case []uint8:
		return TypeUint8, true
	case []int8:
		return TypeInt8, true
	case []uint16:
		return TypeUint16, true
	case []int16:
		return TypeInt16, true
	case []uint32:
		return TypeUint32, true
	case []int32:
		return TypeInt32, true
	case []float32:
		return TypeFloat32, true
	case []bool:
		return TypeBool, true
	case []string:
		return TypeString, true
	case []uint64:
		return TypeUint64, true
	case []int64:
		return TypeInt64, true
	case []float64:
		return TypeFloat64, true
	case []Array:
		return TypeArray, true
	}
	return 0, false
}

func checkArray(a Array, depth int) error {
	if depth > MaxArrayDepth {
		return fmt.Errorf("arrays nested deeper than %d", MaxArrayDepth)
	}
	et, ok := sliceElemType(a.Values)
	if !ok || et != a.Elem {
		return fmt.Errorf("array Elem %s does not match Values of type %T", a.Elem, a.Values)
	}
	if inner, ok := a.Values.([]Array); ok {
		for i := range inner {
			if err := checkArray(inner[i], depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// AddTensor appends a tensor. dims are in ggml order (dims[0] contiguous);
// data must hold exactly the bytes of the tensor in type typ. The data is
// retained, not copied, until WriteTo.
func (w *Writer) AddTensor(name string, typ quant.Type, dims []uint64, data []byte) error {
	size, err := w.addInfo(name, typ, dims)
	if err != nil {
		return err
	}
	if uint64(len(data)) != size {
		delete(w.tIdx, name)
		return fmt.Errorf("gguf writer: tensor %q: %d bytes of data, want %d for %s %v", name, len(data), size, typ, dims)
	}
	w.tensors = append(w.tensors, wtensor{info: w.pendingInfo(name, typ, dims, size), data: data})
	return nil
}

// AddTensorFunc appends a tensor whose data is not held by the Writer:
// WriteTo calls fill, once and in tensor order, to write exactly the
// tensor's bytes (its size follows from typ and dims) to the given writer.
// So a file of any size is written with no more memory than fill uses:
// the header (which holds every tensor's offset) is known before any data
// exists. WriteTo fails if fill writes another number of bytes.
func (w *Writer) AddTensorFunc(name string, typ quant.Type, dims []uint64, fill func(io.Writer) error) error {
	size, err := w.addInfo(name, typ, dims)
	if err != nil {
		return err
	}
	w.tensors = append(w.tensors, wtensor{info: w.pendingInfo(name, typ, dims, size), fill: fill})
	return nil
}

func (w *Writer) pendingInfo(name string, typ quant.Type, dims []uint64, size uint64) TensorInfo {
	return TensorInfo{Name: name, Dims: append([]uint64(nil), dims...), Type: typ, Size: size}
}

// addInfo checks a new tensor's name, type and shape, reserves the name and
// returns the data size in bytes.
func (w *Writer) addInfo(name string, typ quant.Type, dims []uint64) (uint64, error) {
	fail := func(format string, args ...any) (uint64, error) {
		return 0, fmt.Errorf("gguf writer: tensor %q: %s", name, fmt.Sprintf(format, args...))
	}
	if w.tIdx[name] {
		return fail("duplicate tensor name")
	}
	if !typ.HasLayout() || typ.PlanOnly() {
		return fail("unknown ggml type %d", uint32(typ))
	}
	if len(dims) == 0 || len(dims) > MaxDims {
		return fail("%d dimensions, want 1..%d", len(dims), MaxDims)
	}
	elems := uint64(1)
	for i, d := range dims {
		if d == 0 {
			return fail("dimension %d is zero", i)
		}
		if d > math.MaxInt64/elems {
			return fail("element count overflows")
		}
		elems *= d
	}
	bs, ts := uint64(typ.BlockSize()), uint64(typ.TypeSize())
	if dims[0]%bs != 0 {
		return fail("row length %d is not a multiple of the %s block size %d", dims[0], typ, bs)
	}
	if elems/bs > math.MaxInt64/ts {
		return fail("byte size overflows")
	}
	w.tIdx[name] = true
	return elems / bs * ts, nil
}

// alignment returns the alignment the file will use.
func (w *Writer) alignment() (uint64, error) {
	i, ok := w.kvIdx[KeyAlignment]
	if !ok {
		return DefaultAlignment, nil
	}
	_, u, neg, isInt := asInteger(w.kvs[i].Value)
	if !isInt || neg || u == 0 || u > math.MaxUint32 || u&(u-1) != 0 {
		return 0, fmt.Errorf("gguf writer: %s = %v is not a power of two uint32", KeyAlignment, w.kvs[i].Value)
	}
	return u, nil
}

// countingWriter tracks bytes written and the first error.
type countingWriter struct {
	w   *bufio.Writer
	n   int64
	err error
	buf [8]byte
}

func (c *countingWriter) write(p []byte) {
	if c.err != nil {
		return
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
}

// Write makes the countingWriter an io.Writer for AddTensorFunc's fill.
// After an earlier error it writes nothing and returns that error.
func (c *countingWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n0 := c.n
	c.write(p)
	return int(c.n - n0), c.err
}

func (c *countingWriter) u8(v uint8) { c.buf[0] = v; c.write(c.buf[:1]) }
func (c *countingWriter) u16(v uint16) {
	binary.LittleEndian.PutUint16(c.buf[:], v)
	c.write(c.buf[:2])
}
func (c *countingWriter) u32(v uint32) {
	binary.LittleEndian.PutUint32(c.buf[:], v)
	c.write(c.buf[:4])
}
func (c *countingWriter) u64(v uint64) {
	binary.LittleEndian.PutUint64(c.buf[:], v)
	c.write(c.buf[:8])
}
func (c *countingWriter) str(s string) {
	c.u64(uint64(len(s)))
	if c.err == nil {
		n, err := c.w.WriteString(s)
		c.n += int64(n)
		c.err = err
	}
}

var zeros [256]byte

func (c *countingWriter) pad(align uint64) {
	for r := alignUp(uint64(c.n), align) - uint64(c.n); r > 0; {
		k := min(r, uint64(len(zeros)))
		c.write(zeros[:k])
		r -= k
	}
}

func boolByte(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// scalar writes a non-array value without its type tag.
func (c *countingWriter) scalar(v any) {
	switch x := v.(type) {
	case uint8:
		c.u8(x)
	case int8:
		c.u8(uint8(x))
	case uint16:
		c.u16(x)
	case int16:
		c.u16(uint16(x))
	case uint32:
		c.u32(x)
	case int32:
		c.u32(uint32(x))
	case float32:
		c.u32(math.Float32bits(x))
	case bool:
		c.u8(boolByte(x))
	case string:
		c.str(x)
	case uint64:
		c.u64(x)
	case int64:
		c.u64(uint64(x))
	case float64:
		c.u64(math.Float64bits(x))
	case Array:
		c.array(x)
	}
}

// array writes element type, count and elements.
func (c *countingWriter) array(a Array) {
	c.u32(uint32(a.Elem))
	n := a.Len()
	c.u64(uint64(n))
	switch x := a.Values.(type) {
	case []uint8:
		c.write(x)
	case []Array:
		for _, e := range x {
			c.array(e)
		}
	default:
		for i := 0; i < n; i++ {
			c.scalar(indexValue(a.Values, i))
		}
	}
}

// WriteTo writes the GGUF image to out and returns the number of bytes
// written.
func (w *Writer) WriteTo(out io.Writer) (int64, error) {
	if w.err != nil {
		return 0, w.err
	}
	align, err := w.alignment()
	if err != nil {
		return 0, err
	}
	c := &countingWriter{w: bufio.NewWriterSize(out, 1<<16)}
	c.write([]byte(Magic))
	c.u32(3)
	c.u64(uint64(len(w.tensors)))
	c.u64(uint64(len(w.kvs)))
	for _, kv := range w.kvs {
		c.str(kv.Key)
		t, _ := valueTypeOf(kv.Value)
		c.u32(uint32(t))
		c.scalar(kv.Value)
	}
	off := uint64(0)
	for i := range w.tensors {
		t := &w.tensors[i].info
		t.Offset = off
		c.str(t.Name)
		c.u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			c.u64(d)
		}
		c.u32(uint32(t.Type))
		c.u64(t.Offset)
		off = alignUp(off+t.Size, align)
	}
	c.pad(align)
	for i := range w.tensors {
		t := &w.tensors[i]
		if t.fill == nil {
			c.write(t.data)
		} else if c.err == nil {
			start := c.n
			if err := t.fill(c); err != nil {
				c.err = fmt.Errorf("gguf writer: tensor %q: %w", t.info.Name, err)
			} else if c.err == nil && uint64(c.n-start) != t.info.Size {
				c.err = fmt.Errorf("gguf writer: tensor %q: wrote %d bytes of data, want %d", t.info.Name, c.n-start, t.info.Size)
			}
		}
		c.pad(align)
	}
	if c.err == nil {
		c.err = c.w.Flush()
	}
	return c.n, c.err
}

// WriteFile writes the GGUF image to path through internal/safefile: a
// temporary file renamed into place when complete, so an error or an
// interrupt leaves an existing file as it was.
func (w *Writer) WriteFile(path string) error {
	return safefile.Write(path, func(out io.Writer) error {
		_, err := w.WriteTo(out)
		return err
	})
}
