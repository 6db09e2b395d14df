package gguf_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/minfer/minfer/alloc"
	"github.com/minfer/minfer/frontends/gguf"
	"github.com/minfer/minfer/internal/fixtures"
	"github.com/minfer/minfer/ir"
	"github.com/minfer/minfer/passes"
	"github.com/minfer/minfer/quant"
)

// FuzzBuildGraph rewrites a real model's hyper-parameters with fuzzed values
// and requires the frontend, the passes and the memory planner to either
// accept the result (and then produce a valid graph and plan) or refuse it
// with an error — never panic or hang.
func FuzzBuildGraph(f *testing.F) {
	path := fixtures.Path(f, "models", "llama-synth-q4_k.gguf")
	raw, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	src, err := gguf.Parse(raw, path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint32(2), uint32(256), uint32(4), uint32(2), uint32(64), uint32(512), float32(1e-5), float32(10000), uint32(768))
	f.Add(uint32(0), uint32(256), uint32(4), uint32(2), uint32(64), uint32(512), float32(1e-5), float32(10000), uint32(768))
	f.Add(uint32(2), uint32(255), uint32(0), uint32(3), uint32(63), uint32(1<<31), float32(-1), float32(0), uint32(1))
	f.Fuzz(func(t *testing.T, layers, embd, heads, kvHeads, ropeDims, ctx uint32, eps, base float32, ff uint32) {
		over := map[string]any{
			"llama.block_count":                      layers,
			"llama.embedding_length":                 embd,
			"llama.attention.head_count":             heads,
			"llama.attention.head_count_kv":          kvHeads,
			"llama.rope.dimension_count":             ropeDims,
			"llama.context_length":                   ctx % (1 << 20), // the planner sizes the KV cache from it
			"llama.attention.layer_norm_rms_epsilon": eps,
			"llama.rope.freq_base":                   base,
			"llama.feed_forward_length":              ff,
		}
		w := gguf.NewWriter()
		for _, kv := range src.KV {
			v := kv.Value
			if o, ok := over[kv.Key]; ok {
				v = o
			}
			w.AddKV(kv.Key, v)
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
		file, err := gguf.Parse(buf.Bytes(), "fuzz.gguf")
		if err != nil {
			return
		}
		g, err := gguf.BuildGraph(file)
		if err != nil {
			return
		}
		if err := passes.Run(g, passes.Options{KVType: quant.F32}); err != nil {
			return
		}
		if err := ir.Verify(g); err != nil {
			t.Fatalf("accepted graph fails verification: %v", err)
		}
		for _, s := range []*ir.Schedule{g.Prefill, g.Decode} {
			if _, err := alloc.PlanSchedule(g, s, alloc.Options{MaxTokens: 8, MaxOut: 8, NCtx: g.Params.NCtx, KVType: quant.F32}); err != nil {
				return
			}
		}
	})
}
