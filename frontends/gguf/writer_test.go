package gguf

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/minfer/minfer/internal/fixtures"
	"github.com/minfer/minfer/quant"
)

// sampleWriter builds a small image exercising every value type, nested and
// empty arrays, and tensors of several ggml types.
func sampleWriter(t testing.TB) *Writer {
	w := NewWriter()
	w.AddKV("general.architecture", "llama")
	w.AddKV("general.name", "sample ünïcode")
	w.AddKV("u8", uint8(200))
	w.AddKV("i8", int8(-100))
	w.AddKV("u16", uint16(60000))
	w.AddKV("i16", int16(-30000))
	w.AddKV("llama.block_count", uint32(2))
	w.AddKV("i32", int32(-2000000000))
	w.AddKV("f32", float32(1e-5))
	w.AddKV("t", true)
	w.AddKV("f", false)
	w.AddKV("u64", uint64(math.MaxUint64))
	w.AddKV("i64", int64(math.MinInt64))
	w.AddKV("f64", math.Pi)
	w.AddKV("empty.string", "")
	w.AddKV("tokens", []string{"<s>", "", "a b", "\x00\xff"})
	w.AddKV("scores", []float32{0, -1.5, 3})
	w.AddKV("types", []int32{1, 3, -4})
	w.AddKV("ids", []uint32{7, 8})
	w.AddKV("bytes", []uint8{1, 2, 3})
	w.AddKV("i8s", []int8{-1})
	w.AddKV("u16s", []uint16{1, 65535})
	w.AddKV("i16s", []int16{-2})
	w.AddKV("u64s", []uint64{1 << 40})
	w.AddKV("i64s", []int64{-1 << 40})
	w.AddKV("f64s", []float64{0.25})
	w.AddKV("bools", []bool{true, false, true})
	w.AddKV("empty", []string{})
	w.AddKV("nested", []Array{
		{Elem: TypeInt32, Values: []int32{1, 2}},
		{Elem: TypeString, Values: []string{"x"}},
		{Elem: TypeArray, Values: []Array{{Elem: TypeUint8, Values: []uint8{9}}}},
	})
	add := func(name string, typ quant.Type, dims ...uint64) {
		n := uint64(1)
		for _, d := range dims {
			n *= d
		}
		size := n / uint64(typ.BlockSize()) * uint64(typ.TypeSize())
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(i*7 + len(name))
		}
		if err := w.AddTensor(name, typ, dims, data); err != nil {
			t.Fatal(err)
		}
	}
	add("a.f32", quant.F32, 5)
	add("b.q8_0", quant.Q8_0, 64, 3)
	add("c.q4_k", quant.Q4_K, 256, 1, 2, 1)
	add("d.f16", quant.F16, 16) // 32 bytes: the image ends exactly at its data end
	return w
}

func writeBytes(t testing.TB, w *Writer) []byte {
	var buf bytes.Buffer
	n, err := w.WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Fatalf("WriteTo returned %d, wrote %d", n, buf.Len())
	}
	return buf.Bytes()
}

func TestWriterRoundTrip(t *testing.T) {
	w := sampleWriter(t)
	img := writeBytes(t, w)
	f, err := Parse(img, "sample.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 3 || f.Alignment != 32 || f.DataOffset%32 != 0 {
		t.Errorf("version %d alignment %d data offset %d", f.Version, f.Alignment, f.DataOffset)
	}
	if !reflect.DeepEqual(f.KV, w.kvs) {
		for i := range f.KV {
			if i < len(w.kvs) && !reflect.DeepEqual(f.KV[i], w.kvs[i]) {
				t.Errorf("KV %d: read %#v, wrote %#v", i, f.KV[i], w.kvs[i])
			}
		}
		t.Fatalf("metadata differs (%d vs %d keys)", len(f.KV), len(w.kvs))
	}
	if len(f.Tensors) != len(w.tensors) {
		t.Fatalf("%d tensors", len(f.Tensors))
	}
	for i, wt := range w.tensors {
		ti := &f.Tensors[i]
		if ti.Name != wt.info.Name || ti.Type != wt.info.Type || !reflect.DeepEqual(ti.Dims, wt.info.Dims) || ti.Size != wt.info.Size {
			t.Errorf("tensor %d: %+v, want %+v", i, *ti, wt.info)
		}
		if !bytes.Equal(f.TensorData(ti), wt.data) {
			t.Errorf("tensor %s data differs", ti.Name)
		}
	}
	// Typed accessors on the written values.
	if v, err := f.Int("i32"); err != nil || v != -2000000000 {
		t.Errorf("Int(i32) = %d, %v", v, err)
	}
	if _, err := f.Uint32("i8"); err == nil || !strings.Contains(err.Error(), `"i8"`) {
		t.Errorf("Uint32(i8) err = %v", err)
	}
	if _, err := f.Uint32("u64"); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("Uint32(u64) err = %v", err)
	}
	if v, err := f.Uint32("u16"); err != nil || v != 60000 {
		t.Errorf("Uint32(u16) = %d, %v", v, err)
	}
	if v, err := f.Float32("f64"); err != nil || v != float32(math.Pi) {
		t.Errorf("Float32(f64) = %v, %v", v, err)
	}
	if v, err := f.Int32s("ids"); err != nil || !reflect.DeepEqual(v, []int32{7, 8}) {
		t.Errorf("Int32s(ids) = %v, %v", v, err)
	}
	if v, err := f.Float32s("f64s"); err != nil || !reflect.DeepEqual(v, []float32{0.25}) {
		t.Errorf("Float32s(f64s) = %v, %v", v, err)
	}
	if _, err := f.Strings("scores"); err == nil || !strings.Contains(err.Error(), "array of float32") {
		t.Errorf("Strings(scores) err = %v", err)
	}
	if v, err := f.Strings("empty"); err != nil || len(v) != 0 {
		t.Errorf("Strings(empty) = %v, %v", v, err)
	}
	if f.ArchKey("block_count") != "llama.block_count" {
		t.Errorf("ArchKey = %q", f.ArchKey("block_count"))
	}

	// The same image written to a file and opened through mmap.
	path := filepath.Join(t.TempDir(), "sample.gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	g, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g.Bytes(), img) || !reflect.DeepEqual(g.KV, f.KV) {
		t.Error("Open differs from Parse")
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
}

func TestWriterAlignmentKey(t *testing.T) {
	w := NewWriter()
	w.AddKV(KeyAlignment, uint32(64))
	if err := w.AddTensor("x", quant.F32, []uint64{3}, make([]byte, 12)); err != nil {
		t.Fatal(err)
	}
	if err := w.AddTensor("y", quant.F32, []uint64{1}, make([]byte, 4)); err != nil {
		t.Fatal(err)
	}
	f, err := Parse(writeBytes(t, w), "a64.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if f.Alignment != 64 || f.DataOffset%64 != 0 || f.Tensors[1].Offset != 64 {
		t.Errorf("alignment %d data offset %d y offset %d", f.Alignment, f.DataOffset, f.Tensors[1].Offset)
	}
	if len(f.Bytes())%64 != 0 {
		t.Errorf("last tensor not padded: %d bytes", len(f.Bytes()))
	}
}

func TestWriterErrors(t *testing.T) {
	w := NewWriter()
	for _, c := range []struct {
		name string
		typ  quant.Type
		dims []uint64
		n    int
		want string
	}{
		{"len", quant.F32, []uint64{4}, 15, "15 bytes of data, want 16"},
		{"type", quant.Type(4), []uint64{4}, 16, "unknown ggml type 4"},
		{"dims", quant.F32, []uint64{1, 1, 1, 1, 1}, 4, "5 dimensions"},
		{"nodims", quant.F32, nil, 4, "0 dimensions"},
		{"zero", quant.F32, []uint64{4, 0}, 0, "dimension 1 is zero"},
		{"block", quant.Q8_0, []uint64{33}, 34, "not a multiple of the q8_0 block size 32"},
		{"overflow", quant.F32, []uint64{1 << 32, 1 << 32}, 0, "overflows"},
	} {
		err := w.AddTensor(c.name, c.typ, c.dims, make([]byte, c.n))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.name) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
	if err := w.AddTensor("ok", quant.F32, []uint64{1}, make([]byte, 4)); err != nil {
		t.Fatal(err)
	}
	if err := w.AddTensor("ok", quant.F32, []uint64{1}, make([]byte, 4)); err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Errorf("duplicate tensor: %v", err)
	}

	w = NewWriter()
	w.AddKV("plain.int", 3)
	if _, err := w.WriteTo(&bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "plain.int") {
		t.Errorf("plain int: %v", err)
	}
	w = NewWriter()
	w.AddKV("bad.array", Array{Elem: TypeInt32, Values: []uint32{1}})
	if _, err := w.WriteTo(&bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "bad.array") {
		t.Errorf("mismatched array: %v", err)
	}
	w = NewWriter()
	w.AddKV(KeyAlignment, uint32(48))
	if _, err := w.WriteTo(&bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "power of two") {
		t.Errorf("alignment 48: %v", err)
	}
	// Replacing a key keeps its position.
	w = NewWriter()
	w.AddKV("a", uint32(1))
	w.AddKV("b", uint32(2))
	w.AddKV("a", "x")
	f, err := Parse(writeBytes(t, w), "replace.gguf")
	if err != nil || len(f.KV) != 2 || f.KV[0].Key != "a" || f.KV[0].Value != "x" {
		t.Errorf("replace: %v %v", f, err)
	}
}

// rewrite copies every KV and tensor of f into a new Writer.
func rewrite(t testing.TB, f *File) []byte {
	w := NewWriter()
	for _, kv := range f.KV {
		w.AddKV(kv.Key, kv.Value)
	}
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		if err := w.AddTensor(ti.Name, ti.Type, ti.Dims, f.TensorData(ti)); err != nil {
			t.Fatal(err)
		}
	}
	return writeBytes(t, w)
}

// TestRewriteFixturesIdentical rewrites every fixture GGUF with the Writer
// and compares with the original bytes. The models and the rebuilt vocabs
// (written by gguf-py) come out byte-identical. The two vocab files taken
// from llama.cpp's repository (gpt-2, llama-spm) were written by an older
// writer that, for a file with no tensors, did not pad the end of the
// metadata to the alignment; our Writer always pads (as current llama.cpp and
// gguf-py do), so for them the output is the original plus zero padding.
func TestRewriteFixturesIdentical(t *testing.T) {
	dir := filepath.Dir(filepath.Dir(fixtures.Path(t, "models", "llama-synth-f32.gguf")))
	paths, _ := filepath.Glob(filepath.Join(dir, "models", "*.gguf"))
	vocabs, _ := filepath.Glob(filepath.Join(dir, "tokenizer", "*.gguf"))
	for _, p := range append(paths, vocabs...) {
		t.Run(filepath.Base(p), func(t *testing.T) {
			orig, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			f, err := Parse(orig, p)
			if err != nil {
				t.Fatal(err)
			}
			out := rewrite(t, f)
			if bytes.Equal(out, orig) {
				return
			}
			if len(f.Tensors) == 0 && len(out) > len(orig) && bytes.Equal(out[:len(orig)], orig) &&
				len(out) == int(f.DataOffset) && !bytes.ContainsFunc(out[len(orig):], func(r rune) bool { return r != 0 }) {
				t.Logf("identical up to %d bytes of trailing alignment padding the original omits", len(out)-len(orig))
				return
			}
			i := 0
			for i < len(out) && i < len(orig) && out[i] == orig[i] {
				i++
			}
			t.Errorf("rewrite differs at byte %d (lengths %d vs %d)", i, len(out), len(orig))
		})
	}
}

// TestWriterStreamedTensors checks that AddTensorFunc tensors give the same
// image as AddTensor, in pieces of any size, and that a fill writing the
// wrong number of bytes or failing makes WriteTo fail.
func TestWriterStreamedTensors(t *testing.T) {
	data := make([]byte, 6*34) // q8_0 64×3: two blocks of 34 bytes per row
	for i := range data {
		data[i] = byte(i * 13)
	}
	held := NewWriter()
	held.AddKV("k", uint32(1))
	if err := held.AddTensor("x", quant.Q8_0, []uint64{64, 3}, data); err != nil {
		t.Fatal(err)
	}
	want := writeBytes(t, held)
	for _, c := range []struct {
		name    string
		fill    func(w io.Writer) error
		wantErr string
	}{
		{"whole", func(w io.Writer) error { _, err := w.Write(data); return err }, ""},
		{"pieces", func(w io.Writer) error {
			for i := 0; i < len(data); i += 7 {
				if _, err := w.Write(data[i:min(len(data), i+7)]); err != nil {
					return err
				}
			}
			return nil
		}, ""},
		{"short", func(w io.Writer) error { _, err := w.Write(data[1:]); return err }, "wrote 203 bytes of data, want 204"},
		{"fails", func(w io.Writer) error { return errors.New("boom") }, "boom"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := NewWriter()
			w.AddKV("k", uint32(1))
			if err := w.AddTensorFunc("x", quant.Q8_0, []uint64{64, 3}, c.fill); err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			_, err := w.WriteTo(&buf)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Error("streamed image differs from the held one")
			}
		})
	}
	if err := NewWriter().AddTensorFunc("y", quant.Q4_K, []uint64{100}, nil); err == nil {
		t.Error("row of 100 accepted for q4_K")
	}
}
