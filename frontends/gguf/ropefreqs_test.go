package gguf_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/minfer/minfer/frontends/gguf"
	"github.com/minfer/minfer/internal/fixtures"
	"github.com/minfer/minfer/ir"
	"github.com/minfer/minfer/quant"
)

// withRopeFreqs rewrites the fixture model name with an extra
// rope_freqs.weight tensor of the given type, dims and data.
func withRopeFreqs(t *testing.T, name string, typ quant.Type, dims []uint64, data []byte) *gguf.File {
	t.Helper()
	path := fixtures.Path(t, "models", name+".gguf")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	src, err := gguf.Parse(raw, path)
	if err != nil {
		t.Fatal(err)
	}
	w := gguf.NewWriter()
	for _, kv := range src.KV {
		w.AddKV(kv.Key, kv.Value)
	}
	if err := w.AddTensor("rope_freqs.weight", typ, dims, data); err != nil {
		t.Fatal(err)
	}
	for i := range src.Tensors {
		ti := &src.Tensors[i]
		if err := w.AddTensor(ti.Name, ti.Type, ti.Dims, src.TensorData(ti)); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes(), name+"+rope_freqs.gguf")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func f32Bytes(vs ...float32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

func factors(n int, v float32) []float32 {
	f := make([]float32, n)
	for i := range f {
		f[i] = 1 + v*float32(i)
	}
	return f
}

// TestRopeFreqs: a llama file's rope_freqs.weight (f32, rope dims / 2) becomes
// every rope node's third input with the RopeFreqs attribute; a tensor of
// another shape or type, a factor that is not positive and finite, or the
// tensor in an architecture llama.cpp does not read it for are refused with
// an error naming the tensor.
func TestRopeFreqs(t *testing.T) {
	const half = 32 // llama-synth: head_dim 64, rope.dimension_count 64
	f := withRopeFreqs(t, "llama-synth-q4_k", quant.F32, []uint64{half}, f32Bytes(factors(half, 0.5)...))
	g, err := gguf.BuildGraph(f)
	if err != nil {
		t.Fatal(err)
	}
	ropes := 0
	for _, n := range g.Nodes {
		if n.Op != ir.OpRope {
			continue
		}
		ropes++
		if !n.Attrs.RopeFreqs || len(n.Inputs) != 3 || n.Inputs[2].Source != "rope_freqs.weight" || !n.Inputs[2].Shape.Equal(ir.Shape{half}) {
			t.Errorf("%s: attrs %+v inputs %v: want the factors as third input", n.Name, n.Attrs, n.Inputs)
		}
	}
	if ropes != 2*g.Params.NLayer {
		t.Errorf("%d rope nodes, want %d", ropes, 2*g.Params.NLayer)
	}
	// without the tensor: two inputs, no attribute (the plan JSON unchanged)
	plain := withRopeFreqsNone(t)
	for _, n := range plain.Nodes {
		if n.Op == ir.OpRope && (n.Attrs.RopeFreqs || len(n.Inputs) != 2) {
			t.Errorf("%s without rope_freqs: attrs %+v, %d inputs", n.Name, n.Attrs, len(n.Inputs))
		}
	}

	for _, c := range []struct {
		name  string
		model string
		typ   quant.Type
		dims  []uint64
		data  []byte
		want  string
	}{
		{"head_dim instead of half", "llama-synth-q4_k", quant.F32, []uint64{2 * half}, f32Bytes(factors(2*half, 0)...), "has dims [64], want [32]"},
		{"2-D", "llama-synth-q4_k", quant.F32, []uint64{half, 1}, f32Bytes(factors(half, 0)...), "has dims [32 1], want [32]"},
		{"f16", "llama-synth-q4_k", quant.F16, []uint64{half}, make([]byte, 2*half), "is f16, want f32"},
		{"zero factor", "llama-synth-q4_k", quant.F32, []uint64{half}, f32Bytes(append(factors(half-1, 0), 0)...), "factor 31 is 0"},
		{"NaN factor", "llama-synth-q4_k", quant.F32, []uint64{half}, f32Bytes(append([]float32{float32(math.NaN())}, factors(half-1, 0)...)...), "factor 0 is NaN"},
		{"Inf factor", "llama-synth-q4_k", quant.F32, []uint64{half}, f32Bytes(append(factors(half-1, 0), float32(math.Inf(1)))...), "factor 31 is +Inf"},
		{"qwen2", "qwen2-synth-q4_k_m", quant.F32, []uint64{half}, f32Bytes(factors(half, 0)...), "qwen2 architecture takes no RoPE frequency factors"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := gguf.BuildGraph(withRopeFreqs(t, c.model, c.typ, c.dims, c.data))
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `"rope_freqs.weight"`) {
				t.Errorf("err = %v, want one naming rope_freqs.weight with %q", err, c.want)
			}
		})
	}
}

func withRopeFreqsNone(t *testing.T) *ir.Graph {
	t.Helper()
	f, err := gguf.Open(fixtures.Path(t, "models", "llama-synth-q4_k.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g, err := gguf.BuildGraph(f)
	if err != nil {
		t.Fatal(err)
	}
	return g
}
