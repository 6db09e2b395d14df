// Package gguf reads and writes GGUF model files (versions 2 and 3), the
// container format of llama.cpp / ggml.
//
// A File is a validated, read-only view of a GGUF image: metadata key/values
// decoded to Go values, tensor descriptors, and zero-copy access to the tensor
// data through a read-only memory mapping (Open) or a caller-owned byte slice
// (Parse). Every structural property a consumer relies on (counts, string
// lengths, tensor shapes, types, offsets, alignment, overlap) is checked when
// the file is opened, so later accessors cannot fail on a corrupt file and
// never panic on hostile input.
package gguf

import (
	"fmt"
	"math"
	"strconv"

	"github.com/minfer/minfer/quant"
)

// ValueType is the type tag of a GGUF metadata value (gguf_type in ggml).
type ValueType uint32

// GGUF metadata value types, numbered as in the file format. (The struct
// holding a decoded array is named Array, so the tags carry a Type prefix.)
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

var valueTypeNames = [...]string{
	"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool",
	"string", "array", "uint64", "int64", "float64",
}

// Valid reports whether t is one of the thirteen GGUF value types.
func (t ValueType) Valid() bool { return t <= TypeFloat64 }

// String returns the lower-case name of t ("uint32", "string", "array"), or
// "type(N)" for an unknown tag.
func (t ValueType) String() string {
	if t.Valid() {
		return valueTypeNames[t]
	}
	return "type(" + strconv.FormatUint(uint64(t), 10) + ")"
}

// minSize is the smallest number of bytes one value of type t occupies in a
// file (used to bound counts by the bytes remaining before allocating).
func (t ValueType) minSize() uint64 {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64, TypeString:
		return 8
	case TypeArray:
		return 12
	}
	return 1
}

// Array is a decoded GGUF array value. Values holds a typed slice matching
// Elem: []uint8, []int8, []uint16, []int16, []uint32, []int32, []float32,
// []bool, []string, []uint64, []int64, []float64, or []Array for nested arrays.
type Array struct {
	Elem   ValueType
	Values any
}

// Len returns the number of elements of a.
func (a Array) Len() int { return sliceLen(a.Values) }

// KV is one metadata key/value pair, in file order.
type KV struct {
	Key   string
	Value any
}

// TensorInfo describes one tensor of a GGUF file.
type TensorInfo struct {
	Name   string
	Dims   []uint64   // ggml order: Dims[0] = ne0, the contiguous dimension
	Type   quant.Type // ggml element type
	Offset uint64     // relative to the start of the data section, as in the file
	Size   uint64     // bytes, computed from Dims and Type
}

// Elements returns the number of elements of t (product of Dims).
func (t *TensorInfo) Elements() uint64 {
	n := uint64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// File is a parsed, validated GGUF image.
type File struct {
	Path       string
	Version    uint32
	KV         []KV         // in file order
	Tensors    []TensorInfo // in file order
	Alignment  uint64
	DataOffset uint64 // absolute file offset of the tensor data section

	data    []byte
	unmap   func() error
	kvIndex map[string]int
	kvOff   []int64 // file offset of each KV (its key length field)
	tIndex  map[string]int
}

// Error is the error type of this package: a problem with a GGUF file,
// located by section, key or tensor, and byte offset.
type Error struct {
	File    string // file path or the name given to Parse
	Section string // "header", "metadata", "tensor info" or "tensor data"
	Key     string // metadata key, if any
	Tensor  string // tensor name, if any
	Offset  int64  // byte offset in the file, or -1 when not applicable
	Msg     string
}

// Error formats e as `file: section key "k" at offset N: msg`.
func (e *Error) Error() string {
	s := e.File + ": " + e.Section
	switch {
	case e.Key != "":
		s += " key " + strconv.Quote(e.Key)
	case e.Tensor != "":
		s += " " + strconv.Quote(e.Tensor)
	}
	if e.Offset >= 0 {
		s += " at offset " + strconv.FormatInt(e.Offset, 10)
	}
	return s + ": " + e.Msg
}

// Section names used in Error.Section.
const (
	SectionHeader     = "header"
	SectionMetadata   = "metadata"
	SectionTensorInfo = "tensor info"
	SectionTensorData = "tensor data"
)

// Close releases the memory mapping of a File returned by Open. Slices from
// TensorData and Bytes must not be used afterwards. Close is a no-op for a
// File from Parse and is safe to call more than once.
func (f *File) Close() error {
	if f.unmap == nil {
		return nil
	}
	u := f.unmap
	f.unmap = nil
	f.data = nil
	return u()
}

// Bytes returns the whole file image (for hashing). It aliases the mapping.
func (f *File) Bytes() []byte { return f.data }

// Get returns the decoded value of a metadata key.
func (f *File) Get(key string) (any, bool) {
	i, ok := f.kvIndex[key]
	if !ok {
		return nil, false
	}
	return f.KV[i].Value, true
}

// Has reports whether key is present.
func (f *File) Has(key string) bool { _, ok := f.kvIndex[key]; return ok }

// Tensor returns the descriptor of the named tensor.
func (f *File) Tensor(name string) (*TensorInfo, bool) {
	i, ok := f.tIndex[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// TensorData returns the bytes of t, a slice of the mapping (no copy). The
// range was validated at open; t must come from f. It returns nil if t lies
// outside the image (a TensorInfo not from f) or after Close.
func (f *File) TensorData(t *TensorInfo) []byte {
	start := f.DataOffset + t.Offset
	if start < f.DataOffset || t.Size > uint64(len(f.data)) || start > uint64(len(f.data))-t.Size {
		return nil
	}
	return f.data[start : start+t.Size : start+t.Size]
}

// Arch returns general.architecture.
func (f *File) Arch() (string, error) { return f.String("general.architecture") }

// ArchKey returns "<arch>.<suffix>", e.g. ArchKey("block_count") =
// "llama.block_count". Without general.architecture it returns ".<suffix>",
// which no file holds, so the accessor it is passed to reports that key missing.
func (f *File) ArchKey(suffix string) string {
	a, _ := f.Arch()
	return a + "." + suffix
}

// keyErr reports a problem with a metadata key, at the key's file offset if
// it is present.
func (f *File) keyErr(key, format string, args ...any) error {
	off := int64(-1)
	if i, ok := f.kvIndex[key]; ok && i < len(f.kvOff) {
		off = f.kvOff[i]
	}
	return &Error{File: f.Path, Section: SectionMetadata, Key: key, Offset: off, Msg: fmt.Sprintf(format, args...)}
}

func (f *File) lookup(key string) (any, error) {
	v, ok := f.Get(key)
	if !ok {
		return nil, f.keyErr(key, "missing")
	}
	return v, nil
}

// typeName describes the GGUF type of a decoded value for error messages.
func typeName(v any) string {
	if a, ok := v.(Array); ok {
		return "array of " + a.Elem.String()
	}
	if t, ok := valueTypeOf(v); ok {
		return t.String()
	}
	return fmt.Sprintf("%T", v)
}

// String returns the string value of key.
func (f *File) String(key string) (string, error) {
	v, err := f.lookup(key)
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", f.keyErr(key, "is %s, want string", typeName(v))
	}
	return s, nil
}

// Bool returns the bool value of key.
func (f *File) Bool(key string) (bool, error) {
	v, err := f.lookup(key)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, f.keyErr(key, "is %s, want bool", typeName(v))
	}
	return b, nil
}

// asInt64 converts any integer value to int64 / uint64 with a sign flag.
// neg is true when the value is negative (then u is meaningless).
func asInteger(v any) (i int64, u uint64, neg, ok bool) {
	switch x := v.(type) {
	case uint8:
		return int64(x), uint64(x), false, true
	case uint16:
		return int64(x), uint64(x), false, true
	case uint32:
		return int64(x), uint64(x), false, true
	case uint64:
		return int64(x), x, false, true
	case int8:
		return int64(x), uint64(x), x < 0, true
	case int16:
		return int64(x), uint64(x), x < 0, true
	case int32:
		return int64(x), uint64(x), x < 0, true
	case int64:
		return x, uint64(x), x < 0, true
	}
	return 0, 0, false, false
}

func (f *File) integer(key string, lo int64, hi uint64) (int64, uint64, error) {
	v, err := f.lookup(key)
	if err != nil {
		return 0, 0, err
	}
	i, u, neg, ok := asInteger(v)
	if !ok {
		return 0, 0, f.keyErr(key, "is %s, want an integer", typeName(v))
	}
	if neg {
		if i < lo {
			return 0, 0, f.keyErr(key, "value %d out of range", i)
		}
		return i, 0, nil
	}
	if u > hi {
		return 0, 0, f.keyErr(key, "value %d out of range", u)
	}
	return int64(u), u, nil
}

// Uint32 returns the value of key, which may be of any integer type whose
// value fits in a uint32.
func (f *File) Uint32(key string) (uint32, error) {
	_, u, err := f.integer(key, 0, math.MaxUint32)
	return uint32(u), err
}

// Uint64 returns the value of key, which may be of any non-negative integer
// value.
func (f *File) Uint64(key string) (uint64, error) {
	_, u, err := f.integer(key, 0, math.MaxUint64)
	return u, err
}

// Int returns the value of key, which may be of any integer type whose value
// fits in an int.
func (f *File) Int(key string) (int, error) {
	i, _, err := f.integer(key, math.MinInt, math.MaxInt)
	return int(i), err
}

// Float32 returns the value of key, which may be a float32 or a float64; a
// NaN, an infinity or a float64 beyond float32's range is an error naming
// the key.
func (f *File) Float32(key string) (float32, error) {
	v, err := f.lookup(key)
	if err != nil {
		return 0, err
	}
	var x float32
	switch y := v.(type) {
	case float32:
		x = y
	case float64:
		x = float32(y)
	default:
		return 0, f.keyErr(key, "is %s, want float32", typeName(v))
	}
	if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
		return 0, f.keyErr(key, "is %v: a hyper-parameter must be a finite float32", v)
	}
	return x, nil
}

func (f *File) array(key string) (Array, error) {
	v, err := f.lookup(key)
	if err != nil {
		return Array{}, err
	}
	a, ok := v.(Array)
	if !ok {
		return Array{}, f.keyErr(key, "is %s, want an array", typeName(v))
	}
	return a, nil
}

// Array returns the array value of key.
func (f *File) Array(key string) (Array, error) { return f.array(key) }

// Strings returns the array-of-strings value of key. The slice is shared with
// the File; do not modify it.
func (f *File) Strings(key string) ([]string, error) {
	a, err := f.array(key)
	if err != nil {
		return nil, err
	}
	s, ok := a.Values.([]string)
	if !ok {
		return nil, f.keyErr(key, "is %s, want array of string", typeName(a))
	}
	return s, nil
}

// Float32s returns the array value of key as float32s: an array of float32
// (shared with the File; do not modify) or of float64 (converted).
func (f *File) Float32s(key string) ([]float32, error) {
	a, err := f.array(key)
	if err != nil {
		return nil, err
	}
	switch x := a.Values.(type) {
	case []float32:
		return x, nil
	case []float64:
		out := make([]float32, len(x))
		for i, v := range x {
			out[i] = float32(v)
		}
		return out, nil
	}
	return nil, f.keyErr(key, "is %s, want array of float32", typeName(a))
}

// Int32s returns the array value of key as int32s: an array of int32 (shared
// with the File; do not modify) or of any other integer type whose values all
// fit in an int32 (converted).
func (f *File) Int32s(key string) ([]int32, error) {
	a, err := f.array(key)
	if err != nil {
		return nil, err
	}
	if x, ok := a.Values.([]int32); ok {
		return x, nil
	}
	n := a.Len()
	switch a.Elem {
	case TypeUint8, TypeInt8, TypeUint16, TypeInt16, TypeUint32, TypeUint64, TypeInt64:
	default:
		return nil, f.keyErr(key, "is %s, want array of int32", typeName(a))
	}
	out := make([]int32, n)
	for i := 0; i < n; i++ {
		iv, u, neg, _ := asInteger(indexValue(a.Values, i))
		if (neg && iv < math.MinInt32) || (!neg && u > math.MaxInt32) {
			return nil, f.keyErr(key, "element %d out of int32 range", i)
		}
		out[i] = int32(iv)
	}
	return out, nil
}

// valueTypeOf returns the GGUF type of a decoded scalar or Array.
func valueTypeOf(v any) (ValueType, bool) {
	switch v.(type) {
	case uint8:
		return TypeUint8, true
	case int8:
		return TypeInt8, true
	case uint16:
		return TypeUint16, true
	case int16:
		return TypeInt16, true
	case uint32:
		return TypeUint32, true
	case int32:
		return TypeInt32, true
	case float32:
		return TypeFloat32, true
	case bool:
		return TypeBool, true
	case string:
		return TypeString, true
	case Array:
		return TypeArray, true
	case uint64:
		return TypeUint64, true
	case int64:
		return TypeInt64, true
	case float64:
		return TypeFloat64, true
	}
	return 0, false
}

func sliceLen(v any) int {
	switch x := v.(type) {
	case []uint8:
		return len(x)
	case []int8:
		return len(x)
	case []uint16:
		return len(x)
	case []int16:
		return len(x)
	case []uint32:
		return len(x)
	case []int32:
		return len(x)
	case []float32:
		return len(x)
	case []bool:
		return len(x)
	case []string:
		return len(x)
	case []uint64:
		return len(x)
	case []int64:
		return len(x)
	case []float64:
		return len(x)
	case []Array:
		return len(x)
	}
	return 0
}

func indexValue(v any, i int) any {
	switch x := v.(type) {
	case []uint8:
		return x[i]
	case []int8:
		return x[i]
	case []uint16:
		return x[i]
	case []int16:
		return x[i]
	case []uint32:
		return x[i]
	case []int32:
		return x[i]
	case []float32:
		return x[i]
	case []bool:
		return x[i]
	case []string:
		return x[i]
	case []uint64:
		return x[i]
	case []int64:
		return x[i]
	case []float64:
		return x[i]
	case []Array:
		return x[i]
	}
	return nil
}
