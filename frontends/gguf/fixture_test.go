package gguf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minfer/minfer/internal/fixtures"
	"github.com/minfer/minfer/quant"
)

func TestLlamaSynthF32(t *testing.T) {
	path := fixtures.Path(t, "models", "llama-synth-f32.gguf")
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Version != 3 {
		t.Errorf("version %d", f.Version)
	}
	arch, err := f.Arch()
	if err != nil || arch != "llama" {
		t.Fatalf("arch %q %v", arch, err)
	}
	for key, want := range map[string]int{"block_count": 2, "embedding_length": 256, "feed_forward_length": 768,
		"attention.head_count": 4, "attention.head_count_kv": 2, "context_length": 512, "rope.dimension_count": 64, "vocab_size": 1024} {
		got, err := f.Int(f.ArchKey(key))
		if err != nil || got != want {
			t.Errorf("%s = %d, %v; want %d", key, got, err, want)
		}
	}
	if u, err := f.Uint32(f.ArchKey("block_count")); err != nil || u != 2 {
		t.Errorf("Uint32 block_count = %d, %v", u, err)
	}
	if eps, err := f.Float32(f.ArchKey("attention.layer_norm_rms_epsilon")); err != nil || eps != 1e-5 {
		t.Errorf("rms eps %v %v", eps, err)
	}
	if base, err := f.Float32(f.ArchKey("rope.freq_base")); err != nil || base != 10000 {
		t.Errorf("rope base %v %v", base, err)
	}
	toks, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil || len(toks) != 1024 || toks[1] != "<s>" || toks[3] != "<0x00>" {
		t.Errorf("tokens: %d %v", len(toks), err)
	}
	if sc, err := f.Float32s("tokenizer.ggml.scores"); err != nil || len(sc) != 1024 {
		t.Errorf("scores: %d %v", len(sc), err)
	}
	if tt, err := f.Int32s("tokenizer.ggml.token_type"); err != nil || len(tt) != 1024 {
		t.Errorf("token_type: %d %v", len(tt), err)
	}
	if b, err := f.Bool("tokenizer.ggml.add_bos_token"); err != nil || !b {
		t.Errorf("add_bos %v %v", b, err)
	}
	if len(f.Tensors) != 21 {
		t.Fatalf("%d tensors, want 21", len(f.Tensors))
	}
	te, ok := f.Tensor("token_embd.weight")
	if !ok || te.Type != quant.F32 || len(te.Dims) != 2 || te.Dims[0] != 256 || te.Dims[1] != 1024 || te.Size != 256*1024*4 {
		t.Errorf("token_embd.weight = %+v", te)
	}
	if d := f.TensorData(te); len(d) != 256*1024*4 {
		t.Errorf("token_embd data %d bytes", len(d))
	}
	if n, ok := f.Tensor("blk.1.attn_norm.weight"); !ok || n.Type != quant.F32 || len(n.Dims) != 1 || n.Dims[0] != 256 {
		t.Errorf("attn_norm = %+v", n)
	}
	if f.DataOffset%f.Alignment != 0 || f.Alignment != 32 {
		t.Errorf("data offset %d alignment %d", f.DataOffset, f.Alignment)
	}
	if len(f.Bytes()) != int(fileSize(t, path)) {
		t.Errorf("Bytes() length %d", len(f.Bytes()))
	}

	// Accessor errors name the key and the file.
	_, err = f.Int("llama.no_such_key")
	if err == nil || !strings.Contains(err.Error(), `"llama.no_such_key"`) || !strings.Contains(err.Error(), "llama-synth-f32.gguf") {
		t.Errorf("missing-key error = %v", err)
	}
	if _, err = f.Int("general.architecture"); err == nil || !strings.Contains(err.Error(), "general.architecture") {
		t.Errorf("wrong-type error = %v", err)
	}
}

func fileSize(t *testing.T, path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// TestAllFixtureModels opens every model fixture and checks the tensor-type
// counts against manifest-derived expectations and the basic layout.
func TestAllFixtureModels(t *testing.T) {
	dir := filepath.Dir(fixtures.Path(t, "models", "llama-synth-f32.gguf"))
	paths, _ := filepath.Glob(filepath.Join(dir, "*.gguf"))
	if len(paths) < 19 {
		t.Fatalf("found %d models", len(paths))
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			f, err := Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			arch, err := f.Arch()
			if err != nil {
				t.Fatal(err)
			}
			if n, err := f.Int(f.ArchKey("block_count")); err != nil || n != 2 {
				t.Errorf("block_count %d %v", n, err)
			}
			want := map[string]int{"llama": 21, "qwen2": 26, "qwen3": 24}[arch]
			if len(f.Tensors) != want {
				t.Errorf("%s: %d tensors, want %d", arch, len(f.Tensors), want)
			}
			name := filepath.Base(p)
			wtype := strings.TrimSuffix(name[strings.LastIndexByte(name, '-')+1:], ".gguf")
			for _, ti := range f.Tensors {
				if len(ti.Dims) == 1 && ti.Type != quant.F32 {
					t.Errorf("%s: 1-D tensor of type %s", ti.Name, ti.Type)
				}
				if len(ti.Dims) == 2 && !strings.HasPrefix(wtype, "q4_k_m") {
					if wt, ok := quant.ParseType(wtype); ok && ti.Type != wt {
						t.Errorf("%s: type %s, want %s", ti.Name, ti.Type, wt)
					}
				}
				if uint64(len(f.TensorData(&ti))) != ti.Size {
					t.Errorf("%s: data length", ti.Name)
				}
			}
		})
	}
}

func TestVocabQwen2(t *testing.T) {
	f, err := Open(fixtures.Path(t, "tokenizer", "ggml-vocab-qwen2.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	toks, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil || len(toks) != 151936 {
		t.Fatalf("tokens: %d %v", len(toks), err)
	}
	if toks[151643] != "<|endoftext|>" || toks[151645] != "<|im_end|>" {
		t.Errorf("special tokens %q %q", toks[151643], toks[151645])
	}
	merges, err := f.Strings("tokenizer.ggml.merges")
	if err != nil || len(merges) != 151387 {
		t.Errorf("merges: %d %v", len(merges), err)
	}
	if m, err := f.String("tokenizer.ggml.model"); err != nil || m != "gpt2" {
		t.Errorf("model %q %v", m, err)
	}
	if len(f.Tensors) != 0 {
		t.Errorf("%d tensors", len(f.Tensors))
	}
}

func TestAllVocabs(t *testing.T) {
	dir := filepath.Dir(fixtures.Path(t, "tokenizer", "ggml-vocab-qwen2.gguf"))
	paths, _ := filepath.Glob(filepath.Join(dir, "*.gguf"))
	for _, p := range paths {
		f, err := Open(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if _, err := f.Strings("tokenizer.ggml.tokens"); err != nil {
			t.Error(err)
		}
		f.Close()
	}
}

func TestAccessorErrorOffsets(t *testing.T) {
	f, err := Open(fixtures.Path(t, "models", "llama-synth-f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// general.architecture is the first KV, right after the 24-byte header.
	_, err = f.Int("general.architecture")
	want := `llama-synth-f32.gguf: metadata key "general.architecture" at offset 24: is string, want an integer`
	if err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("err = %v, want suffix %q", err, want)
	}
	_, err = f.String("nope")
	if want := `metadata key "nope": missing`; err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("err = %v, want suffix %q", err, want)
	}
}
