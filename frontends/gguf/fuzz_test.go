package gguf

import (
	"bytes"
	"testing"
)

// FuzzParse feeds arbitrary bytes to Parse. It must never panic (or hang, or
// allocate beyond a small multiple of the input); for inputs that parse,
// every tensor's data must lie inside the image, the accessors must not
// panic, and writing the file back out must give an image that parses to the
// same structure.
//
//	go test ./frontends/gguf -run '^$' -fuzz FuzzParse -fuzztime 60s
func FuzzParse(f *testing.F) {
	base, _ := baseRaw().bytes()
	f.Add(base)
	f.Add(writeBytes(f, sampleWriter(f)))
	for _, c := range brokenCases() {
		img, _ := brokenImage(f, c)
		f.Add(img)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := Parse(data, "fuzz.gguf")
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %T is not *gguf.Error: %v", err, err)
			}
			return
		}
		if g.DataOffset%g.Alignment != 0 {
			t.Fatalf("data offset %d not aligned to %d", g.DataOffset, g.Alignment)
		}
		for i := range g.Tensors {
			ti := &g.Tensors[i]
			d := g.TensorData(ti)
			if uint64(len(d)) != ti.Size || d == nil && ti.Size != 0 {
				t.Fatalf("tensor %q: %d data bytes, size %d", ti.Name, len(d), ti.Size)
			}
			end := g.DataOffset + ti.Offset + ti.Size
			if end > uint64(len(data)) || ti.Offset%g.Alignment != 0 {
				t.Fatalf("tensor %q [%d,+%d) out of range", ti.Name, ti.Offset, ti.Size)
			}
		}
		for _, kv := range g.KV {
			g.String(kv.Key)
			g.Uint32(kv.Key)
			g.Int(kv.Key)
			g.Float32(kv.Key)
			g.Bool(kv.Key)
			g.Strings(kv.Key)
			g.Float32s(kv.Key)
			g.Int32s(kv.Key)
		}
		g.ArchKey("block_count")

		// Round trip through the Writer.
		w := NewWriter()
		for _, kv := range g.KV {
			w.AddKV(kv.Key, kv.Value)
		}
		for i := range g.Tensors {
			ti := &g.Tensors[i]
			if err := w.AddTensor(ti.Name, ti.Type, ti.Dims, g.TensorData(ti)); err != nil {
				t.Fatalf("AddTensor of a parsed tensor: %v", err)
			}
		}
		var buf bytes.Buffer
		if _, err := w.WriteTo(&buf); err != nil {
			t.Fatalf("rewrite: %v", err)
		}
		h, err := Parse(buf.Bytes(), "rewritten.gguf")
		if err != nil {
			t.Fatalf("rewritten image does not parse: %v", err)
		}
		if len(h.KV) != len(g.KV) || len(h.Tensors) != len(g.Tensors) || h.Alignment != g.Alignment {
			t.Fatalf("rewritten structure differs")
		}
		for i := range g.Tensors {
			if !bytes.Equal(h.TensorData(&h.Tensors[i]), g.TensorData(&g.Tensors[i])) {
				t.Fatalf("tensor %q data differs after rewrite", g.Tensors[i].Name)
			}
		}
	})
}
