package synth

import (
	"fmt"
	"io"
	"runtime"

	"github.com/minfer/minfer/frontends/gguf"
	"github.com/minfer/minfer/internal/safefile"
)

// Options selects the model Write makes.
type Options struct {
	// Preset names a built-in preset (see Presets).
	Preset string
	// Type is the weight format: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k
	// q3_k q4_k q5_k q6_k (pure: every 2-D weight gets the type, falling
	// back like llama.cpp where a row does not fit its blocks) or q4_k_m
	// q5_k_m (llama.cpp's mixtures). Empty means f32.
	Type string
	// Seed selects the random weights.
	Seed uint64
	// VocabPath optionally names a GGUF file whose tokenizer.* keys are
	// copied; the vocabulary size is then its token count. Without it a
	// valid synthetic vocabulary of the preset's size is made.
	VocabPath string
	// Threads bounds the goroutines generating weights (0: GOMAXPROCS). The
	// output does not depend on it.
	Threads int
}

// model is everything needed to write a file: preset (with the final vocab
// size), file type, metadata and tensor plan.
type model struct {
	p    Preset
	ft   FileType
	kvs  []kv
	plan []TensorInfo
}

// build resolves the options into a model without generating weights.
func build(o Options) (*model, error) {
	p, err := LookupPreset(o.Preset)
	if err != nil {
		return nil, err
	}
	return buildPreset(p, o)
}

// buildPreset is build for preset p (o.Preset is not looked at).
func buildPreset(p Preset, o Options) (*model, error) {
	ft, err := ParseFileType(o.Type)
	if err != nil {
		return nil, err
	}
	var v vocab
	if o.VocabPath != "" {
		v, err = loadVocab(o.VocabPath)
	} else {
		v, err = synthVocab(p)
	}
	if err != nil {
		return nil, err
	}
	p.NVocab = v.n
	plan, err := Plan(p, ft.Name)
	if err != nil {
		return nil, err
	}
	m := &model{p: p, ft: ft, plan: plan}
	m.kvs = append(archKVs(p, ft), v.kvs...)
	return m, nil
}

// archKVs is the general.* and <arch>.* metadata llama.cpp reads to load and
// run the architecture.
func archKVs(p Preset, ft FileType) []kv {
	a := p.Arch + "."
	kvs := []kv{
		{"general.architecture", p.Arch},
		{"general.name", p.Name},
		{"general.quantization_version", uint32(2)},
		{"general.file_type", ft.LlamaID},
		{a + "context_length", uint32(p.NCtx)},
		{a + "embedding_length", uint32(p.NEmbd)},
		{a + "block_count", uint32(p.NLayer)},
		{a + "feed_forward_length", uint32(p.NFF)},
		{a + "attention.head_count", uint32(p.NHead)},
		{a + "attention.head_count_kv", uint32(p.NHeadKV)},
		{a + "rope.freq_base", p.RopeBase},
		{a + "attention.layer_norm_rms_epsilon", p.RMSEps},
	}
	// llama.cpp derives the head width from n_embd/n_head unless these are
	// given; qwen3 always has them.
	if p.Arch == "qwen3" || p.HeadDim*p.NHead != p.NEmbd {
		kvs = append(kvs,
			kv{a + "attention.key_length", uint32(p.HeadDim)},
			kv{a + "attention.value_length", uint32(p.HeadDim)})
	}
	if p.Arch == "llama" {
		kvs = append(kvs,
			kv{a + "rope.dimension_count", uint32(p.HeadDim)},
			kv{a + "vocab_size", uint32(p.NVocab)})
	}
	return kvs
}

// Write generates the model selected by o and writes it to w as a GGUF file.
// The data is streamed: the header is written first (every tensor's size is
// known from the plan), then each tensor as worker goroutines generate it,
// a chunk of rows at a time, so the memory used does not grow with the
// model (a few MB per thread), and the bytes do not depend on the number of
// threads.
func Write(w io.Writer, o Options) error {
	m, err := build(o)
	if err != nil {
		return err
	}
	threads := o.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	gw := gguf.NewWriter()
	for _, e := range m.kvs {
		gw.AddKV(e.key, e.value)
	}
	specs := tensorSpecs(m.p)
	st := newStream(m, specs, o.Seed, threads)
	defer st.close()
	for i, s := range specs {
		err := gw.AddTensorFunc(s.name, m.plan[i].Type, s.dims, func(out io.Writer) error {
			return st.writeTensor(i, out)
		})
		if err != nil {
			return fmt.Errorf("synth: %w", err)
		}
	}
	_, err = gw.WriteTo(w)
	return err
}

// WriteFile writes the model selected by o to path. The file is written
// under a temporary name and renamed into place only when complete
// (internal/safefile): an error or an interrupt leaves an existing file
// untouched, and path may not be the vocab source.
func WriteFile(path string, o Options) error {
	return safefile.Write(path, func(w io.Writer) error { return Write(w, o) }, o.VocabPath)
}

// FileSize returns the exact size in bytes of the file Write would produce
// for o, without generating any weights (for dry runs).
func FileSize(o Options) (int64, error) {
	m, err := build(o)
	if err != nil {
		return 0, err
	}
	return m.fileSize()
}

// fileSize is FileSize of a resolved model.
func (m *model) fileSize() (int64, error) {
	n := int64(4 + 4 + 8 + 8) // magic, version, tensor count, kv count
	for _, e := range m.kvs {
		vs, err := valueSize(e.value)
		if err != nil {
			return 0, fmt.Errorf("synth: key %q: %w", e.key, err)
		}
		n += 8 + int64(len(e.key)) + 4 + vs
	}
	for _, t := range m.plan {
		n += 8 + int64(len(t.Name)) + 4 + 8*int64(len(t.Dims)) + 4 + 8
	}
	n = (n + alignment - 1) / alignment * alignment
	return n + DataSize(m.plan), nil
}

// valueSize is the encoded size of a metadata value without its type tag.
func valueSize(v any) (int64, error) {
	switch x := v.(type) {
	case uint8, int8, bool:
		return 1, nil
	case uint16, int16:
		return 2, nil
	case uint32, int32, float32:
		return 4, nil
	case uint64, int64, float64:
		return 8, nil
	case string:
		return 8 + int64(len(x)), nil
	case []string:
		n := int64(12)
		for _, s := range x {
			n += 8 + int64(len(s))
		}
		return n, nil
	case []int32:
		return 12 + 4*int64(len(x)), nil
	case []float32:
		return 12 + 4*int64(len(x)), nil
	case gguf.Array:
		if inner, ok := x.Values.([]gguf.Array); ok {
			n := int64(12)
			for _, a := range inner {
				s, err := valueSize(a)
				if err != nil {
					return 0, err
				}
				n += s
			}
			return n, nil
		}
		if x.Elem == gguf.TypeString {
			return valueSize(x.Values)
		}
		var one int64
		switch x.Elem {
		case gguf.TypeUint8, gguf.TypeInt8, gguf.TypeBool:
			one = 1
		case gguf.TypeUint16, gguf.TypeInt16:
			one = 2
		case gguf.TypeUint32, gguf.TypeInt32, gguf.TypeFloat32:
			one = 4
		case gguf.TypeUint64, gguf.TypeInt64, gguf.TypeFloat64:
			one = 8
		default:
			return 0, fmt.Errorf("unsupported array element type %s", x.Elem)
		}
		return 12 + one*int64(x.Len()), nil
	}
	return 0, fmt.Errorf("unsupported value type %T", v)
}
