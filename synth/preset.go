// Package synth writes GGUF models of real architectures (llama, qwen2,
// qwen3) filled with deterministic random weights, so that minfer can be
// tested and benchmarked on the exact tensor shapes, types and metadata of a
// real model without downloading one, and compared against llama.cpp on the
// very same file.
//
// A model is described by a Preset (hyperparameters) and an Options.Type
// naming the weight format: a single ggml type ("q8_0", "q4_k", ...; every
// 2-D weight gets that type, like llama.cpp's `llama-quantize --pure`) or one
// of llama.cpp's mixtures ("q4_k_m", "q5_k_m"), whose per-tensor types follow
// llama.cpp's llama_tensor_get_type rules, including the fallback for rows
// that are not a multiple of the K-quant block of 256.
//
// Weights are normal random numbers from a seeded xoshiro256** generator and
// a ziggurat sampler, seeded per tensor row, so the output depends only on
// the options (not on the number of threads): the same options give the same
// bytes.
package synth

import (
	"fmt"
	"sort"
	"strings"
)

// Preset holds the hyperparameters of a model architecture instance.
type Preset struct {
	Name    string // preset name, also written as general.name
	Arch    string // GGUF general.architecture: "llama", "qwen2" or "qwen3"
	NVocab  int    // vocabulary size (replaced by the token count of Options.VocabPath)
	NEmbd   int    // embedding width
	NFF     int    // feed-forward width
	NLayer  int    // number of transformer blocks
	NHead   int    // query heads
	NHeadKV int    // key/value heads
	HeadDim int    // per-head width (may differ from NEmbd/NHead, as in qwen3)
	NCtx    int    // training context length

	RopeBase float32 // RoPE frequency base
	RMSEps   float32 // RMSNorm epsilon

	Tied    bool // output head shares token_embd.weight (no output.weight)
	QKVBias bool // attn_q/attn_k/attn_v have biases (qwen2)
	QKNorm  bool // per-head RMSNorm of q and k before RoPE (qwen3)
}

var presets = []Preset{
	{
		// The shapes of the llama-synth fixture models.
		Name: "llama-tiny", Arch: "llama",
		NVocab: 1024, NEmbd: 256, NFF: 768, NLayer: 2, NHead: 4, NHeadKV: 2, HeadDim: 64, NCtx: 512,
		RopeBase: 10000, RMSEps: 1e-5,
	},
	{
		// The shapes of the qwen2-synth fixture models.
		Name: "qwen2-tiny", Arch: "qwen2",
		NVocab: 1024, NEmbd: 256, NFF: 768, NLayer: 2, NHead: 4, NHeadKV: 2, HeadDim: 64, NCtx: 512,
		RopeBase: 1e6, RMSEps: 1e-6, Tied: true, QKVBias: true,
	},
	{
		// The shapes of the qwen3-synth fixture models (head_dim 128 ≠ n_embd/n_head).
		Name: "qwen3-tiny", Arch: "qwen3",
		NVocab: 1024, NEmbd: 256, NFF: 768, NLayer: 2, NHead: 4, NHeadKV: 2, HeadDim: 128, NCtx: 512,
		RopeBase: 1e6, RMSEps: 1e-6, Tied: true, QKNorm: true,
	},
	{
		// Qwen2.5-0.5B (the benchmark model).
		Name: "qwen2-0.5b", Arch: "qwen2",
		NVocab: 151936, NEmbd: 896, NFF: 4864, NLayer: 24, NHead: 14, NHeadKV: 2, HeadDim: 64, NCtx: 32768,
		RopeBase: 1e6, RMSEps: 1e-6, Tied: true, QKVBias: true,
	},
	{
		// Qwen3-0.6B.
		Name: "qwen3-0.6b", Arch: "qwen3",
		NVocab: 151936, NEmbd: 1024, NFF: 3072, NLayer: 28, NHead: 16, NHeadKV: 8, HeadDim: 128, NCtx: 40960,
		RopeBase: 1e6, RMSEps: 1e-6, Tied: true, QKNorm: true,
	},
}

// Presets returns the built-in presets (a copy; callers may modify it).
func Presets() []Preset {
	out := make([]Preset, len(presets))
	copy(out, presets)
	return out
}

// LookupPreset returns the built-in preset with the given name
// (case-insensitive).
func LookupPreset(name string) (Preset, error) {
	for _, p := range presets {
		if strings.EqualFold(p.Name, name) {
			return p, nil
		}
	}
	names := make([]string, len(presets))
	for i, p := range presets {
		names[i] = p.Name
	}
	sort.Strings(names)
	return Preset{}, fmt.Errorf("synth: unknown preset %q (have %s)", name, strings.Join(names, ", "))
}

// Validate checks that p describes a model synth can write.
func (p Preset) Validate() error {
	switch p.Arch {
	case "llama", "qwen2", "qwen3":
	default:
		return fmt.Errorf("synth: preset %q: unsupported architecture %q", p.Name, p.Arch)
	}
	if p.NVocab <= 0 || p.NEmbd <= 0 || p.NFF <= 0 || p.NLayer <= 0 || p.NHead <= 0 ||
		p.NHeadKV <= 0 || p.HeadDim <= 0 || p.NCtx <= 0 {
		return fmt.Errorf("synth: preset %q: sizes must be positive", p.Name)
	}
	if p.NHead%p.NHeadKV != 0 {
		return fmt.Errorf("synth: preset %q: n_head %d is not a multiple of n_head_kv %d", p.Name, p.NHead, p.NHeadKV)
	}
	if p.HeadDim%2 != 0 {
		return fmt.Errorf("synth: preset %q: head_dim %d must be even for RoPE", p.Name, p.HeadDim)
	}
	if p.NEmbd%32 != 0 || p.NFF%32 != 0 || (p.NHead*p.HeadDim)%32 != 0 {
		return fmt.Errorf("synth: preset %q: n_embd, n_ff and n_head·head_dim must be multiples of 32", p.Name)
	}
	// llama.cpp requires the q/k/v biases of qwen2 and the q/k norms of
	// qwen3, and knows neither for llama.
	if p.QKVBias != (p.Arch == "qwen2") {
		return fmt.Errorf("synth: preset %q: arch %s with QKVBias = %v (qwen2 has q/k/v biases, the others none)", p.Name, p.Arch, p.QKVBias)
	}
	if p.QKNorm != (p.Arch == "qwen3") {
		return fmt.Errorf("synth: preset %q: arch %s with QKNorm = %v (qwen3 has q/k norms, the others none)", p.Name, p.Arch, p.QKNorm)
	}
	if p.Arch == "qwen2" && p.HeadDim*p.NHead != p.NEmbd {
		// llama.cpp sizes qwen2's q bias by n_embd.
		return fmt.Errorf("synth: preset %q: qwen2 needs n_head·head_dim = n_embd", p.Name)
	}
	return nil
}

// Params returns the number of weights of p (all tensors, counting a tied
// embedding once).
func (p Preset) Params() int64 {
	var n int64
	for _, s := range tensorSpecs(p) {
		n += s.elements()
	}
	return n
}
