package gguf

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/minfer/minfer/quant"
)

// Raw GGUF encoding helpers for hand-made (possibly invalid) images.

func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
func le64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
func gstr(s string) []byte { return append(le64(uint64(len(s))), s...) }
func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

type rawKV struct {
	key string
	typ uint32
	val []byte // encoded value, without the type tag
}

type rawTensor struct {
	name string
	nd   int // dimension count written; -1 means len(dims)
	dims []uint64
	typ  uint32
	off  uint64
}

// rawImage describes a GGUF image field by field so that tests can break
// any one of them.
type rawImage struct {
	magic     string
	version   uint32
	nTensors  *uint64 // nil: len(tensors)
	nKV       *uint64 // nil: len(kvs)
	kvs       []rawKV
	tensors   []rawTensor
	align     int // padding of the tensor-info section
	dataBytes int
	trailer   []byte // raw bytes appended after the header counts instead of KVs/tensors
}

func u64p(v uint64) *uint64 { return &v }

// baseRaw is a valid image: three KVs, tensors w (F32 8x2 at 0) and n (F32 8
// at 64), data section of 96 bytes ending exactly at EOF.
func baseRaw() rawImage {
	return rawImage{
		magic:   "GGUF",
		version: 3,
		kvs: []rawKV{
			{"general.architecture", 8, gstr("llama")},
			{"llama.block_count", 4, le32(2)},
			{"tokenizer.ggml.tokens", 9, cat(le32(8), le64(2), gstr("a"), gstr("b"))},
		},
		tensors: []rawTensor{
			{name: "w", nd: -1, dims: []uint64{8, 2}, typ: 0, off: 0},
			{name: "n", nd: -1, dims: []uint64{8}, typ: 0, off: 64},
		},
		align:     32,
		dataBytes: 96,
	}
}

// bytes encodes r; pos maps "kv:<key>", "tensor:<name>" and "data" to their
// offsets.
func (r rawImage) bytes() ([]byte, map[string]int) {
	pos := map[string]int{}
	b := []byte(r.magic)
	b = append(b, le32(r.version)...)
	nt, nk := uint64(len(r.tensors)), uint64(len(r.kvs))
	if r.nTensors != nil {
		nt = *r.nTensors
	}
	if r.nKV != nil {
		nk = *r.nKV
	}
	b = append(b, le64(nt)...)
	b = append(b, le64(nk)...)
	if r.trailer != nil {
		return append(b, r.trailer...), pos
	}
	for _, kv := range r.kvs {
		pos["kv:"+kv.key] = len(b)
		b = append(b, gstr(kv.key)...)
		b = append(b, le32(kv.typ)...)
		b = append(b, kv.val...)
	}
	for _, t := range r.tensors {
		pos["tensor:"+t.name] = len(b)
		b = append(b, gstr(t.name)...)
		nd := t.nd
		if nd < 0 {
			nd = len(t.dims)
		}
		b = append(b, le32(uint32(nd))...)
		for _, d := range t.dims {
			b = append(b, le64(d)...)
		}
		b = append(b, le32(t.typ)...)
		b = append(b, le64(t.off)...)
	}
	for len(b)%r.align != 0 {
		b = append(b, 0)
	}
	pos["data"] = len(b)
	return append(b, make([]byte, r.dataBytes)...), pos
}

type brokenCase struct {
	name string
	mod  func(r *rawImage)
	raw  func() []byte // instead of mod: the whole image
	want []string      // fragments of the error message
	// wantOff, if set, returns the offset the error must report.
	wantOff func(pos map[string]int) int
}

func brokenCases() []brokenCase {
	at := func(k string, d int) func(map[string]int) int {
		return func(p map[string]int) int { return p[k] + d }
	}
	kv := func(i int, key string, typ uint32, val []byte) func(r *rawImage) {
		return func(r *rawImage) { r.kvs[i] = rawKV{key, typ, val} }
	}
	nest := func(depth int) []byte { // depth arrays nested, innermost empty uint8
		v := cat(le32(0), le64(0))
		for i := 1; i < depth; i++ {
			v = cat(le32(9), le64(1), v)
		}
		return v
	}
	const tensorW = 8 + 1 // offset of the dimension count in tensor "w"'s info
	return []brokenCase{
		{name: "empty file", raw: func() []byte { return nil }, want: []string{"header", "truncated", "magic"}},
		{name: "bad magic", mod: func(r *rawImage) { r.magic = "GGML" }, want: []string{"header at offset 0", `bad magic "GGML"`}},
		{name: "big-endian magic", mod: func(r *rawImage) { r.magic = "FUGG" }, want: []string{"big-endian"}},
		{name: "version 1", mod: func(r *rawImage) { r.version = 1 }, want: []string{"header at offset 4", "version 1 is not supported"}},
		{name: "version 99", mod: func(r *rawImage) { r.version = 99 }, want: []string{"header at offset 4", "unsupported GGUF version 99"}},
		{name: "big-endian version", mod: func(r *rawImage) { r.version = 0x03000000 }, want: []string{"header at offset 4", "big-endian"}},
		{name: "huge tensor count", mod: func(r *rawImage) { r.nTensors = u64p(1 << 60) }, want: []string{"header at offset 8", "tensor count 1152921504606846976 is impossible"}},
		{name: "tensor count too big for file", mod: func(r *rawImage) { r.nTensors = u64p(100) }, want: []string{"header at offset 8", "tensor count 100"}},
		{name: "huge kv count", mod: func(r *rawImage) { r.nKV = u64p(math64) }, want: []string{"header at offset 16", "key/value count"}},
		{name: "kv count larger than present", mod: func(r *rawImage) { r.nKV = u64p(4); r.tensors = nil; r.align = 1; r.dataBytes = 0 },
			want: []string{"metadata at offset", "truncated: key #3 length needs 8 bytes"}},
		{name: "huge key length", mod: func(r *rawImage) {
			r.nTensors = u64p(0)
			r.nKV = u64p(1)
			r.trailer = cat(le64(1<<62), []byte("abcdefghijklmnopqrstuvwxyz"))
		},
			want: []string{"metadata at offset 24", "key #0 length 4611686018427387904 exceeds"}},
		{name: "huge string value length", mod: kv(0, "general.architecture", 8, cat(le64(1<<40), []byte("llama"))),
			want: []string{`metadata key "general.architecture"`, "string value length 1099511627776 exceeds"}},
		{name: "huge array length", mod: kv(2, "tokenizer.ggml.tokens", 9, cat(le32(8), le64(1<<33), gstr("a"))),
			want: []string{`metadata key "tokenizer.ggml.tokens"`, "array length 8589934592 is impossible"}},
		{name: "huge u64 array length", mod: kv(2, "tokenizer.ggml.tokens", 9, cat(le32(10), le64(1<<61), le64(0))),
			want: []string{`key "tokenizer.ggml.tokens"`, "array length"}},
		{name: "huge string in array", mod: kv(2, "tokenizer.ggml.tokens", 9, cat(le32(8), le64(2), gstr("a"), le64(1<<50))),
			want: []string{`key "tokenizer.ggml.tokens"`, "string array element 1 length"}},
		{name: "nested array too deep", mod: kv(2, "deep", 9, nest(MaxArrayDepth+1)),
			want: []string{`key "deep"`, "nested deeper than 8"}},
		{name: "unknown value type", mod: kv(1, "llama.block_count", 13, le32(2)),
			want: []string{`key "llama.block_count"`, "unknown value type 13"}, wantOff: at("kv:llama.block_count", 8+17)},
		{name: "unknown array element type", mod: kv(2, "arr", 9, cat(le32(77), le64(0))),
			want: []string{`key "arr"`, "unknown array element type 77"}},
		{name: "bool value 2", mod: kv(1, "flag", 7, []byte{2}), want: []string{`key "flag"`, "bool value 2"}},
		{name: "duplicate key", mod: kv(1, "general.architecture", 8, gstr("x")),
			want: []string{`metadata key "general.architecture"`, "duplicate key"}, wantOff: at("kv:general.architecture", 0)},
		{name: "alignment 0", mod: kv(1, "general.alignment", 4, le32(0)), want: []string{`key "general.alignment"`, "alignment 0 is not a non-zero power of two"}, wantOff: at("kv:general.alignment", 0)},
		{name: "alignment 3", mod: kv(1, "general.alignment", 4, le32(3)), want: []string{`key "general.alignment"`, "alignment 3"}},
		{name: "alignment wrong type", mod: kv(1, "general.alignment", 8, gstr("32")), want: []string{`key "general.alignment"`, "want an integer"}},
		{name: "unknown ggml type", mod: func(r *rawImage) { r.tensors[0].typ = 4 },
			want: []string{`tensor info "w"`, "unknown ggml type 4"}, wantOff: at("tensor:w", tensorW+4+16)},
		{name: "ggml type beyond table", mod: func(r *rawImage) { r.tensors[1].typ = 1000 }, want: []string{`tensor info "n"`, "unknown ggml type 1000"}},
		// minfer's plan-only Q5_0x4 id is not a GGUF type
		{name: "plan-only type", mod: func(r *rawImage) { r.tensors[1].typ = uint32(quant.Q5_0x4) }, want: []string{`tensor info "n"`, "unknown ggml type 65542"}},
		{name: "too many dims", mod: func(r *rawImage) { r.tensors[0].nd = 5 },
			want: []string{`tensor info "w"`, "has 5 dimensions, want 1..4"}, wantOff: at("tensor:w", tensorW)},
		{name: "zero dims", mod: func(r *rawImage) { r.tensors[0].nd = 0 }, want: []string{`tensor info "w"`, "has 0 dimensions"}},
		{name: "huge dim count", mod: func(r *rawImage) { r.tensors[0].nd = 0x7fffffff }, want: []string{`tensor info "w"`, "2147483647 dimensions"}},
		{name: "zero dim", mod: func(r *rawImage) { r.tensors[0].dims = []uint64{8, 0} },
			want: []string{`tensor info "w"`, "dimension 1 is zero"}, wantOff: at("tensor:w", tensorW+4+8)},
		{name: "dims product overflow", mod: func(r *rawImage) { r.tensors[0].dims = []uint64{1 << 32, 1 << 32, 1 << 32} },
			want: []string{`tensor info "w"`, "element count overflows int64 at dimension 1 = 4294967296 (dims [4294967296 4294967296])"}},
		// Issue 13 item 14: the dimension that overflows is shown, not 0.
		{name: "dims product over int64", mod: func(r *rawImage) { r.tensors[0].dims = []uint64{1 << 32, 1 << 31} },
			want: []string{`tensor info "w"`, "at dimension 1 = 2147483648 (dims [4294967296 2147483648])"}},
		{name: "IQ4_XS is readable", mod: func(r *rawImage) { r.tensors[0].typ = 23; r.tensors[0].dims = []uint64{100, 2} },
			want: []string{`tensor info "w"`, "row length 100 is not a multiple of the iq4_xs block size 256"}},
		{name: "byte size overflow", mod: func(r *rawImage) { r.tensors[0].dims = []uint64{1 << 31, 1 << 30} },
			want: []string{`tensor info "w"`, "byte size overflows"}},
		{name: "row not a multiple of block size", mod: func(r *rawImage) { r.tensors[0].typ = 8; r.tensors[0].dims = []uint64{33, 2} },
			want: []string{`tensor info "w"`, "row length 33 is not a multiple of the q8_0 block size 32"}},
		{name: "duplicate tensor", mod: func(r *rawImage) { r.tensors[1].name = "w" },
			want: []string{`tensor info "w"`, "duplicate tensor name"}},
		{name: "tensor data beyond EOF", mod: func(r *rawImage) { r.tensors[1].off = 96 },
			want: []string{`tensor data "n"`, "extends beyond end of file"}, wantOff: at("data", 96)},
		{name: "tensor data straddles EOF", mod: func(r *rawImage) { r.dataBytes = 90 },
			want: []string{`tensor data "n"`, "beyond end of file"}},
		{name: "tensor offset wraps", mod: func(r *rawImage) { r.tensors[1].off = ^uint64(0) - 31 },
			want: []string{`tensor data "n"`, "beyond end of file"}},
		{name: "overlapping tensors", mod: func(r *rawImage) { r.tensors[1].off = 32 },
			want: []string{`tensor data "n"`, `overlaps tensor "w"`}, wantOff: at("data", 32)},
		{name: "misaligned offset", mod: func(r *rawImage) { r.tensors[1].off = 68 },
			want: []string{`tensor data "n"`, "data offset 68 is not a multiple of the alignment 32"}},
		{name: "misaligned with custom alignment", mod: func(r *rawImage) {
			r.kvs[1] = rawKV{"general.alignment", 4, le32(128)}
			r.align = 128
			r.tensors[1].off = 64
			r.dataBytes = 200
		}, want: []string{`tensor data "n"`, "not a multiple of the alignment 128"}},
		{name: "data section beyond EOF", mod: func(r *rawImage) { r.align = 1; r.dataBytes = 0 },
			want: []string{"tensor data", "beyond end of file"}},
	}
}

const math64 = ^uint64(0)

func brokenImage(t testing.TB, c brokenCase) ([]byte, map[string]int) {
	if c.raw != nil {
		return c.raw(), nil
	}
	r := baseRaw()
	c.mod(&r)
	return r.bytes()
}

func TestBaseRawValid(t *testing.T) {
	img, _ := baseRaw().bytes()
	f, err := Parse(img, "base.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Tensors) != 2 || len(f.KV) != 3 || len(f.TensorData(&f.Tensors[1])) != 32 {
		t.Fatalf("unexpected parse: %+v", f)
	}
}

func TestBrokenFiles(t *testing.T) {
	for _, c := range brokenCases() {
		t.Run(c.name, func(t *testing.T) {
			img, pos := brokenImage(t, c)
			f, err := Parse(img, "broken.gguf")
			if err == nil {
				t.Fatalf("parsed: %d KVs, %d tensors", len(f.KV), len(f.Tensors))
			}
			var ge *Error
			if !errors.As(err, &ge) {
				t.Fatalf("error %T is not *gguf.Error: %v", err, err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "broken.gguf: ") {
				t.Errorf("error does not start with the file name: %s", msg)
			}
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
			if c.wantOff != nil {
				if want := c.wantOff(pos); ge.Offset != int64(want) {
					t.Errorf("error offset %d, want %d (%s)", ge.Offset, want, msg)
				}
			}
		})
	}
}

// TestTruncated cuts valid images at every length: each prefix must be
// refused with a *gguf.Error (both images end exactly at their last tensor's
// data, so no prefix is a valid file).
func TestTruncated(t *testing.T) {
	base, _ := baseRaw().bytes()
	for name, img := range map[string][]byte{"raw": base, "sample": writeBytes(t, sampleWriter(t))} {
		if _, err := Parse(img, name); err != nil {
			t.Fatalf("%s: full image: %v", name, err)
		}
		for n := 0; n < len(img); n++ {
			_, err := Parse(img[:n:n], name)
			var ge *Error
			if err == nil || !errors.As(err, &ge) {
				t.Fatalf("%s truncated at %d: err = %v", name, n, err)
			}
			if ge.Section != SectionTensorData && ge.Offset > int64(n) {
				t.Errorf("%s truncated at %d: error offset %d beyond end: %v", name, n, ge.Offset, err)
			}
		}
	}
}

// TestNestedDepthLimit accepts arrays nested exactly MaxArrayDepth deep.
func TestNestedDepthLimit(t *testing.T) {
	v := cat(le32(0), le64(1), []byte{42})
	for i := 1; i < MaxArrayDepth; i++ {
		v = cat(le32(9), le64(1), v)
	}
	r := baseRaw()
	r.kvs[2] = rawKV{"deep", 9, v}
	img, _ := r.bytes()
	f, err := Parse(img, "deep.gguf")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := f.Get("deep")
	for i := 1; i < MaxArrayDepth; i++ {
		a = a.(Array).Values.([]Array)[0]
	}
	if got := a.(Array).Values.([]uint8); len(got) != 1 || got[0] != 42 {
		t.Errorf("innermost = %v", got)
	}
}

// TestVersion2 accepts a GGUF v2 image (same encoding as v3 for little-endian files).
func TestVersion2(t *testing.T) {
	r := baseRaw()
	r.version = 2
	img, _ := r.bytes()
	f, err := Parse(img, "v2.gguf")
	if err != nil || f.Version != 2 {
		t.Fatalf("v2: %v", err)
	}
}

// TestNoTensorsUnpadded accepts a metadata-only file whose end is not padded
// to the alignment (as older llama.cpp vocab files are).
func TestNoTensorsUnpadded(t *testing.T) {
	r := baseRaw()
	r.tensors = nil
	r.align = 1
	r.dataBytes = 0
	img, _ := r.bytes()
	if len(img)%32 == 0 {
		t.Fatalf("test image of %d bytes is accidentally aligned", len(img))
	}
	f, err := Parse(img, "vocab.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if f.DataOffset%32 != 0 || f.DataOffset < uint64(len(img)) {
		t.Errorf("data offset %d for %d-byte image", f.DataOffset, len(img))
	}
}
