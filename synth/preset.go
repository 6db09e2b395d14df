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
	"math"
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

	// Llama3Rope is Llama 3.x's "llama3" RoPE scaling (zero: none), written
	// as convert_hf_to_gguf.py writes it: a rope_freqs.weight tensor of
	// per-pair frequency factors (Llama3RopeFreqs), no scaling metadata.
	Llama3Rope Llama3Rope
}

// Llama3Rope holds the rope_scaling entries of a Hugging Face config with
// rope_type "llama3".
type Llama3Rope struct {
	Factor         float32 // rope_scaling.factor (0: no llama3 scaling)
	LowFreqFactor  float32 // rope_scaling.low_freq_factor
	HighFreqFactor float32 // rope_scaling.high_freq_factor
	OrigCtx        int     // rope_scaling.original_max_position_embeddings
}

// Llama3RopeFreqs returns the frequency factors convert_hf_to_gguf.py
// writes as rope_freqs.weight for llama3 RoPE scaling, for heads of dim
// rotated dimensions and base theta, one per pair: with freq_i =
// 1/base^(2i/dim) and wavelen_i = 2π/freq_i, the factor is 1 where wavelen_i
// < OrigCtx/HighFreqFactor, Factor where wavelen_i > OrigCtx/LowFreqFactor,
// and 1/((1-smooth)/Factor + smooth) with smooth = (OrigCtx/wavelen_i -
// LowFreqFactor)/(HighFreqFactor - LowFreqFactor) in between. The converter
// computes in float32 torch tensors; so does this, step by step (its
// base^x is float64 pow rounded to float32, which a float32 pow may miss by
// an ulp; a factor of 1 or Factor does not depend on it).
func Llama3RopeFreqs(r Llama3Rope, base float32, dim int) []float32 {
	out := make([]float32, dim/2)
	lowWavelen := float32(float64(r.OrigCtx) / float64(r.LowFreqFactor))
	highWavelen := float32(float64(r.OrigCtx) / float64(r.HighFreqFactor))
	twoPi := float32(2 * math.Pi)
	for i := range out {
		e := float32(2*i) / float32(dim)
		freq := 1 / float32(math.Pow(float64(base), float64(e)))
		wavelen := twoPi / freq
		switch {
		case wavelen < highWavelen:
			out[i] = 1
		case wavelen > lowWavelen:
			out[i] = r.Factor
		default:
			smooth := (float32(r.OrigCtx)/wavelen - r.LowFreqFactor) / (r.HighFreqFactor - r.LowFreqFactor)
			out[i] = 1 / ((1-smooth)/r.Factor + smooth)
		}
	}
	return out
}

var presets = []Preset{
	{
		// The shapes of the llama-synth fixture models.
		Name: "llama-tiny", Arch: "llama",
		NVocab: 1024, NEmbd: 256, NFF: 768, NLayer: 2, NHead: 4, NHeadKV: 2, HeadDim: 64, NCtx: 512,
		RopeBase: 10000, RMSEps: 1e-5,
	},
	{
		// llama-tiny with Llama 3's llama3 RoPE scaling (rope_freqs.weight,
		// factor 32 as Llama 3.2 but an original context of 256, so that the
		// factors matter within a few hundred positions), for fast tests
		// against llama.cpp.
		Name: "llama3-tiny", Arch: "llama",
		NVocab: 1024, NEmbd: 256, NFF: 768, NLayer: 2, NHead: 4, NHeadKV: 2, HeadDim: 64, NCtx: 2048,
		RopeBase: 500000, RMSEps: 1e-5,
		Llama3Rope: Llama3Rope{Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OrigCtx: 256},
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

	// The real sizes below follow the models' published Hugging Face
	// config.json files (copies found with the search tool: for Llama 3.2 1B
	// kevinstephano/thunder_model_blocks hf_llama/llama_config.py, which pins
	// meta-llama/Llama-3.2-1B-Instruct at commit 4e20de36; for Llama 3.1 8B
	// citsjtu2020/LLM-Prof sglang/Model_Config.md; for Qwen3-4B a copy of
	// Qwen/Qwen3-4B's config with hidden_size 2560, head_dim 128,
	// intermediate_size 9728, 36 layers, 32/8 heads, max_position_embeddings
	// 40960, rope_theta 1e6, tied; the later Qwen3-4B-Instruct-2507 differs
	// only in max_position_embeddings 262144 and rope_theta 5e6). The
	// vocabulary sizes are those of the tokenizer fixtures
	// ggml-vocab-llama-bpe.gguf (128256) and ggml-vocab-qwen2.gguf (151936).
	//
	// The Llama presets carry the configs' "llama3" RoPE scaling (factor 32
	// for 3.2-1B, 8 for 3.1-8B; low/high_freq_factor 1/4, original context
	// 8192, rope_theta 500000) as the converter writes it: a
	// rope_freqs.weight tensor of per-pair frequency factors, which both
	// llama.cpp and minfer apply.
	{
		// Llama 3.2 1B: hidden 2048, 16 layers, 32 heads of 64, 8 KV heads,
		// FFN 8192, tied output, trained context 131072.
		Name: "llama-3.2-1b", Arch: "llama",
		NVocab: 128256, NEmbd: 2048, NFF: 8192, NLayer: 16, NHead: 32, NHeadKV: 8, HeadDim: 64, NCtx: 131072,
		RopeBase: 500000, RMSEps: 1e-5, Tied: true,
		Llama3Rope: Llama3Rope{Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OrigCtx: 8192},
	},
	{
		// Qwen3-4B: hidden 2560, 36 layers, 32 heads of 128 (q width 4096 ≠
		// hidden), 8 KV heads, FFN 9728, q/k norms, tied output, context 40960.
		Name: "qwen3-4b", Arch: "qwen3",
		NVocab: 151936, NEmbd: 2560, NFF: 9728, NLayer: 36, NHead: 32, NHeadKV: 8, HeadDim: 128, NCtx: 40960,
		RopeBase: 1e6, RMSEps: 1e-6, Tied: true, QKNorm: true,
	},
	{
		// Llama 3.1 8B: hidden 4096, 32 layers, 32 heads of 128, 8 KV heads,
		// FFN 14336, untied output, trained context 131072.
		Name: "llama-3.1-8b", Arch: "llama",
		NVocab: 128256, NEmbd: 4096, NFF: 14336, NLayer: 32, NHead: 32, NHeadKV: 8, HeadDim: 128, NCtx: 131072,
		RopeBase: 500000, RMSEps: 1e-5,
		Llama3Rope: Llama3Rope{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OrigCtx: 8192},
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
	if r := p.Llama3Rope; r != (Llama3Rope{}) {
		if p.Arch != "llama" {
			// llama.cpp loads rope_freqs.weight only for llama here.
			return fmt.Errorf("synth: preset %q: llama3 RoPE scaling needs arch llama, not %s", p.Name, p.Arch)
		}
		if !(r.Factor > 0) || !(r.LowFreqFactor > 0) || !(r.HighFreqFactor > r.LowFreqFactor) || r.OrigCtx <= 0 {
			return fmt.Errorf("synth: preset %q: llama3 RoPE scaling %+v needs factor > 0, 0 < low_freq_factor < high_freq_factor and an original context > 0", p.Name, r)
		}
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
