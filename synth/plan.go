package synth

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/minfer/minfer/quant"
)

// FileType is a weight format accepted in Options.Type: a pure single type
// or one of llama.cpp's K-quant mixtures.
type FileType struct {
	Name    string     // "f32", "q8_0", "q4_k_m", ...
	Default quant.Type // type of the 2-D weights before mixture rules and fallbacks
	Mixture bool       // apply llama.cpp's llama_tensor_get_type rules (else pure)
	LlamaID uint32     // general.file_type, numbered as llama.cpp's llama_ftype
}

// fileTypes lists the formats in Options.Type. The single K-quant types carry
// the llama_ftype of the mixture llama.cpp was run with in --pure mode to make
// the fixture files (q3_k as Q3_K_M = 12, q4_k as Q4_K_M = 15, q5_k as
// Q5_K_M = 17), so the files match the fixtures.
var fileTypes = []FileType{
	{"f32", quant.F32, false, 0},
	{"f16", quant.F16, false, 1},
	{"bf16", quant.BF16, false, 32},
	{"q8_0", quant.Q8_0, false, 7},
	{"q4_0", quant.Q4_0, false, 2},
	{"q4_1", quant.Q4_1, false, 3},
	{"q5_0", quant.Q5_0, false, 8},
	{"q5_1", quant.Q5_1, false, 9},
	{"q2_k", quant.Q2_K, false, 10},
	{"q3_k", quant.Q3_K, false, 12},
	{"q4_k", quant.Q4_K, false, 15},
	{"q5_k", quant.Q5_K, false, 17},
	{"q6_k", quant.Q6_K, false, 18},
	{"q4_k_m", quant.Q4_K, true, 15},
	{"q5_k_m", quant.Q5_K, true, 17},
}

// FileTypes returns the formats accepted in Options.Type.
func FileTypes() []FileType {
	out := make([]FileType, len(fileTypes))
	copy(out, fileTypes)
	return out
}

// ParseFileType looks up a format name (case-insensitive; "" means "f32").
func ParseFileType(name string) (FileType, error) {
	if name == "" {
		name = "f32"
	}
	for _, ft := range fileTypes {
		if strings.EqualFold(ft.Name, name) {
			return ft, nil
		}
	}
	names := make([]string, len(fileTypes))
	for i, ft := range fileTypes {
		names[i] = ft.Name
	}
	return FileType{}, fmt.Errorf("synth: unknown weight type %q (have %s)", name, strings.Join(names, " "))
}

// tensor roles: they pick the random distribution and the mixture rule.
type role int

const (
	roleEmbd role = iota
	roleOutput
	roleNorm   // output_norm, attn_norm, ffn_norm
	roleQKNorm // qwen3 attn_q_norm / attn_k_norm
	roleQ
	roleK
	roleV
	roleO
	roleGate
	roleUp
	roleDown
	roleBias
	roleRopeFreqs // rope_freqs.weight: computed factors, not random
)

// spec is one tensor of a model, in file order.
type spec struct {
	name  string
	dims  []uint64 // ggml order
	role  role
	layer int // -1 outside the blocks
}

func (s spec) elements() int64 {
	n := int64(1)
	for _, d := range s.dims {
		n *= int64(d)
	}
	return n
}

// tensorSpecs lists the tensors of p in the order llama.cpp's HF converter
// writes them (the order of the f32 fixture files): rope_freqs (llama3 RoPE
// scaling only), token_embd, output_norm,
// output (untied only), then per block attn_norm, attn_q, attn_k, attn_v,
// (qwen2: the q/k/v biases), (qwen3: attn_q_norm, attn_k_norm), attn_output,
// ffn_norm, ffn_gate, ffn_up, ffn_down.
func tensorSpecs(p Preset) []spec {
	e, v := uint64(p.NEmbd), uint64(p.NVocab)
	qw, kvw := uint64(p.NHead*p.HeadDim), uint64(p.NHeadKV*p.HeadDim)
	ff := uint64(p.NFF)
	var out []spec
	if p.Llama3Rope != (Llama3Rope{}) {
		// generate_extra_tensors comes before the checkpoint's tensors
		out = append(out, spec{"rope_freqs.weight", []uint64{uint64(p.HeadDim / 2)}, roleRopeFreqs, -1})
	}
	out = append(out,
		spec{"token_embd.weight", []uint64{e, v}, roleEmbd, -1},
		spec{"output_norm.weight", []uint64{e}, roleNorm, -1})
	if !p.Tied {
		out = append(out, spec{"output.weight", []uint64{e, v}, roleOutput, -1})
	}
	for i := 0; i < p.NLayer; i++ {
		b := "blk." + strconv.Itoa(i) + "."
		add := func(name string, r role, dims ...uint64) {
			out = append(out, spec{b + name, dims, r, i})
		}
		add("attn_norm.weight", roleNorm, e)
		add("attn_q.weight", roleQ, e, qw)
		add("attn_k.weight", roleK, e, kvw)
		add("attn_v.weight", roleV, e, kvw)
		if p.QKVBias {
			add("attn_q.bias", roleBias, qw)
			add("attn_k.bias", roleBias, kvw)
			add("attn_v.bias", roleBias, kvw)
		}
		if p.QKNorm {
			add("attn_q_norm.weight", roleQKNorm, uint64(p.HeadDim))
			add("attn_k_norm.weight", roleQKNorm, uint64(p.HeadDim))
		}
		add("attn_output.weight", roleO, qw, e)
		add("ffn_norm.weight", roleNorm, e)
		add("ffn_gate.weight", roleGate, e, ff)
		add("ffn_up.weight", roleUp, e, ff)
		add("ffn_down.weight", roleDown, ff, e)
	}
	return out
}

// useMoreBits is llama.cpp's use_more_bits: the first and last eighth of the
// layers and every third layer in between get more bits in the _M mixtures.
func useMoreBits(i, n int) bool {
	return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2
}

// mixtureType is llama_tensor_get_type_impl for the Q4_K_M and Q5_K_M
// mixtures of a dense (non-MoE, non-Falcon) model. For attn_v and ffn_down
// llama.cpp counts the tensors in its loader's order (by layer number), so
// the counter equals the layer index here.
func mixtureType(p Preset, s spec, def quant.Type) quant.Type {
	switch {
	case s.role == roleOutput || (p.Tied && s.role == roleEmbd):
		// The output head (or the embedding that doubles as it) gets Q6_K,
		// or Q8_0 when its rows do not fit the default type's blocks.
		if int(s.dims[0])%def.BlockSize() != 0 {
			return quant.Q8_0
		}
		if def != quant.Q8_0 {
			return quant.Q6_K
		}
	case s.role == roleV, s.role == roleDown:
		if useMoreBits(s.layer, p.NLayer) {
			return quant.Q6_K
		}
	}
	return def
}

// fallbackType is llama.cpp's tensor_type_fallback: a type whose block does
// not divide the row length (ne0) is replaced by a 32-block type of similar
// size, or F16 when even that does not fit.
func fallbackType(t quant.Type, ne0 int) quant.Type {
	if ne0%t.BlockSize() == 0 {
		return t
	}
	var r quant.Type
	switch t {
	case quant.Q2_K, quant.Q3_K:
		r = quant.Q4_0
	case quant.Q4_K:
		r = quant.Q5_0
	case quant.Q5_K:
		r = quant.Q5_1
	case quant.Q6_K:
		r = quant.Q8_0
	default:
		// Only the 256-block K-quants can reach here for presets that pass
		// Validate (rows are multiples of 32).
		return quant.F16
	}
	if ne0%r.BlockSize() != 0 {
		return quant.F16
	}
	return r
}

// tensorType picks the type of one tensor: 1-D tensors (norms, biases) stay
// F32 as llama.cpp never quantizes them; 2-D weights get the file type, with
// the mixture rules if any, then the fallback for incompatible rows.
func tensorType(p Preset, ft FileType, s spec) quant.Type {
	if len(s.dims) < 2 {
		return quant.F32
	}
	t := ft.Default
	switch t {
	case quant.F32, quant.F16, quant.BF16:
		return t
	}
	if ft.Mixture {
		t = mixtureType(p, s, t)
	}
	return fallbackType(t, int(s.dims[0]))
}

// TensorInfo is one tensor of a planned model: name, ggml shape, type and
// data size in bytes (unpadded).
type TensorInfo struct {
	Name  string
	Dims  []uint64
	Type  quant.Type
	Bytes int64
}

// Plan returns the tensors synth writes for preset p and weight format
// ftype, in file order, with their types.
func Plan(p Preset, ftype string) ([]TensorInfo, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	ft, err := ParseFileType(ftype)
	if err != nil {
		return nil, err
	}
	specs := tensorSpecs(p)
	out := make([]TensorInfo, len(specs))
	for i, s := range specs {
		t := tensorType(p, ft, s)
		rs, err := t.RowSize(int(s.dims[0]))
		if err != nil {
			return nil, fmt.Errorf("synth: %s: %w", s.name, err)
		}
		out[i] = TensorInfo{Name: s.name, Dims: s.dims, Type: t, Bytes: int64(rs) * (s.elements() / int64(s.dims[0]))}
	}
	return out, nil
}

// TensorTypes returns the per-tensor type plan of preset p in weight format
// ftype (see Options.Type), keyed by tensor name.
func TensorTypes(p Preset, ftype string) (map[string]quant.Type, error) {
	plan, err := Plan(p, ftype)
	if err != nil {
		return nil, err
	}
	m := make(map[string]quant.Type, len(plan))
	for _, t := range plan {
		m[t.Name] = t.Type
	}
	return m, nil
}

// DataSize returns the size of the tensor data section of a GGUF file holding
// the planned tensors, each padded to the 32-byte alignment.
func DataSize(plan []TensorInfo) int64 {
	var n int64
	for _, t := range plan {
		n += (t.Bytes + alignment - 1) / alignment * alignment
	}
	return n
}

// alignment is GGUF's default tensor data alignment.
const alignment = 32
