package gguf

import (
	"fmt"
	"math"

	"github.com/minfer/minfer/ir"
	"github.com/minfer/minfer/quant"
)

// archInfo says how an architecture differs from plain llama.
type archInfo struct {
	neox    bool // NeoX rope pairs (i, i+d/2)
	freqs   bool // reads rope_freqs.weight when present (llama3 RoPE scaling)
	qkvBias bool // attn_{q,k,v}.bias present
	qkNorm  bool // per-head RMSNorm of q and k before rope
}

var archs = map[string]archInfo{
	"llama": {freqs: true},
	"qwen2": {neox: true, qkvBias: true},
	"qwen3": {neox: true, qkNorm: true},
}

// SupportedArchs lists the architectures BuildGraph accepts.
func SupportedArchs() []string { return []string{"llama", "qwen2", "qwen3"} }

// ReadParams reads the hyper-parameters of a supported architecture from the
// file's metadata and tensor shapes. Errors name the missing or bad key.
func ReadParams(f *File) (ir.Params, string, error) {
	var p ir.Params
	arch, err := f.Arch()
	if err != nil {
		return p, "", err
	}
	if _, ok := archs[arch]; !ok {
		return p, arch, fmt.Errorf("%s: unsupported architecture %q (supported: %v)", f.Path, arch, SupportedArchs())
	}
	geti := func(suffix string, dst *int) {
		if err != nil {
			return
		}
		*dst, err = f.Int(f.ArchKey(suffix))
		if err == nil && *dst <= 0 {
			err = fmt.Errorf("%s: metadata key %q = %d must be positive", f.Path, f.ArchKey(suffix), *dst)
		}
	}
	geti("embedding_length", &p.NEmbd)
	geti("feed_forward_length", &p.NFF)
	geti("block_count", &p.NLayer)
	geti("attention.head_count", &p.NHead)
	geti("context_length", &p.NCtx)
	if err == nil && p.NCtx > 1<<30 {
		err = fmt.Errorf("%s: metadata key %q = %d is implausibly large", f.Path, f.ArchKey("context_length"), p.NCtx)
	}
	p.NCtx = ir.PadContext(p.NCtx) // as llama.cpp pads its context
	if err != nil {
		return p, arch, err
	}
	p.NHeadKV = p.NHead
	if _, ok := f.Get(f.ArchKey("attention.head_count_kv")); ok {
		geti("attention.head_count_kv", &p.NHeadKV)
		if err != nil {
			return p, arch, err
		}
	}
	if p.NHead%p.NHeadKV != 0 {
		return p, arch, fmt.Errorf("%s: %s = %d is not a multiple of %s = %d", f.Path,
			f.ArchKey("attention.head_count"), p.NHead, f.ArchKey("attention.head_count_kv"), p.NHeadKV)
	}
	if p.NEmbd%p.NHead != 0 {
		if _, ok := f.Get(f.ArchKey("attention.key_length")); !ok {
			return p, arch, fmt.Errorf("%s: embedding_length %d not divisible by head_count %d and no %s", f.Path, p.NEmbd, p.NHead, f.ArchKey("attention.key_length"))
		}
	}
	p.HeadDim = p.NEmbd / p.NHead
	if _, ok := f.Get(f.ArchKey("attention.key_length")); ok {
		geti("attention.key_length", &p.HeadDim)
		vl := p.HeadDim
		if _, ok := f.Get(f.ArchKey("attention.value_length")); ok {
			geti("attention.value_length", &vl)
		}
		if err != nil {
			return p, arch, err
		}
		if vl != p.HeadDim {
			return p, arch, fmt.Errorf("%s: %s = %d differs from key_length %d (unsupported)", f.Path, f.ArchKey("attention.value_length"), vl, p.HeadDim)
		}
	}
	if p.HeadDim%2 != 0 {
		src := fmt.Sprintf("%s / %s = %d / %d", f.ArchKey("embedding_length"), f.ArchKey("attention.head_count"), p.NEmbd, p.NHead)
		if f.Has(f.ArchKey("attention.key_length")) {
			src = fmt.Sprintf("%s = %d", f.ArchKey("attention.key_length"), p.HeadDim)
		}
		return p, arch, fmt.Errorf("%s: head size %s is odd: rotary embeddings rotate pairs of dimensions", f.Path, src)
	}
	if p.RMSEps, err = f.Float32(f.ArchKey("attention.layer_norm_rms_epsilon")); err != nil {
		return p, arch, err
	}
	if !(p.RMSEps > 0) {
		return p, arch, fmt.Errorf("%s: %s = %g must be positive", f.Path, f.ArchKey("attention.layer_norm_rms_epsilon"), p.RMSEps)
	}
	p.RopeBase = 10000
	if _, ok := f.Get(f.ArchKey("rope.freq_base")); ok {
		if p.RopeBase, err = f.Float32(f.ArchKey("rope.freq_base")); err != nil {
			return p, arch, err
		}
	}
	if !(p.RopeBase > 0) || math.IsInf(float64(p.RopeBase), 0) {
		return p, arch, fmt.Errorf("%s: %s = %g must be positive", f.Path, f.ArchKey("rope.freq_base"), p.RopeBase)
	}
	emb, ok := f.Tensor("token_embd.weight")
	if !ok {
		return p, arch, fmt.Errorf("%s: tensor %q missing", f.Path, "token_embd.weight")
	}
	if len(emb.Dims) != 2 || emb.Dims[0] != uint64(p.NEmbd) {
		return p, arch, fmt.Errorf("%s: tensor %q has dims %v, want [%d, n_vocab]", f.Path, emb.Name, emb.Dims, p.NEmbd)
	}
	p.NVocab = int(emb.Dims[1])
	_, hasOut := f.Tensor("output.weight")
	p.Tied = !hasOut
	return p, arch, nil
}

// ropeDims returns the rotated dimensions per head (rope.dimension_count,
// default the head size) and the linear position scale.
func ropeSettings(f *File, p ir.Params) (dims int, scale float32, err error) {
	dims = p.HeadDim
	if _, ok := f.Get(f.ArchKey("rope.dimension_count")); ok {
		if dims, err = f.Int(f.ArchKey("rope.dimension_count")); err != nil {
			return 0, 0, err
		}
		if dims <= 0 || dims > p.HeadDim || dims%2 != 0 {
			return 0, 0, fmt.Errorf("%s: %s = %d invalid for head size %d", f.Path, f.ArchKey("rope.dimension_count"), dims, p.HeadDim)
		}
	}
	scale = 1
	if t, ok := f.Get(f.ArchKey("rope.scaling.type")); ok {
		switch t {
		case "none":
		case "linear":
			factor, err := f.Float32(f.ArchKey("rope.scaling.factor"))
			if err != nil {
				return 0, 0, err
			}
			if !(factor > 0) {
				return 0, 0, fmt.Errorf("%s: %s = %g must be positive", f.Path, f.ArchKey("rope.scaling.factor"), factor)
			}
			scale = 1 / factor
		default:
			return 0, 0, fmt.Errorf("%s: %s = %v is not supported (only none, linear)", f.Path, f.ArchKey("rope.scaling.type"), t)
		}
	}
	return dims, scale, nil
}

// ropeFreqsTensor is the GGUF tensor of per-pair RoPE frequency factors
// that convert_hf_to_gguf.py writes for "llama3" RoPE scaling (Llama 3.1,
// 3.2), which llama.cpp passes to ggml_rope_ext as freq_factors.
const ropeFreqsTensor = "rope_freqs.weight"

// ropeFreqs returns the graph's frequency-factor weight (nil when the file
// has none): llama.cpp's llama builder reads rope_freqs.weight, an f32
// vector of rope.dimension_count/2 factors shared by every layer.
func ropeFreqs(f *File, g *ir.Graph, ai archInfo, arch string, ropeDims int) (*ir.Value, error) {
	ti, ok := f.Tensor(ropeFreqsTensor)
	if !ok {
		return nil, nil
	}
	if !ai.freqs {
		return nil, fmt.Errorf("%s: tensor %q: the %s architecture takes no RoPE frequency factors (llama.cpp does not load it either)", f.Path, ropeFreqsTensor, arch)
	}
	if len(ti.Dims) != 1 || ti.Dims[0] != uint64(ropeDims/2) {
		return nil, fmt.Errorf("%s: tensor %q has dims %v, want [%d] (rope dimensions %d / 2)", f.Path, ropeFreqsTensor, ti.Dims, ropeDims/2, ropeDims)
	}
	if ti.Type != quant.F32 {
		return nil, fmt.Errorf("%s: tensor %q is %s, want f32", f.Path, ropeFreqsTensor, ti.Type)
	}
	data := f.TensorData(ti)
	if len(data) != 4*(ropeDims/2) {
		return nil, fmt.Errorf("%s: tensor %q holds %d bytes, want %d", f.Path, ropeFreqsTensor, len(data), 4*(ropeDims/2))
	}
	for i := 0; i < ropeDims/2; i++ {
		v := math.Float32frombits(uint32(data[4*i]) | uint32(data[4*i+1])<<8 | uint32(data[4*i+2])<<16 | uint32(data[4*i+3])<<24)
		if !(v > 0) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("%s: tensor %q: factor %d is %g, want a positive finite number", f.Path, ropeFreqsTensor, i, v)
		}
	}
	v := g.NewValue(ropeFreqsTensor, ir.Weight, quant.F32, ir.Shape{ir.Dim(ropeDims / 2)})
	v.Source = ropeFreqsTensor
	return v, nil
}

// BuildGraph builds the IR of one forward pass of a llama, qwen2 or qwen3
// model from the file's metadata and tensors, the way llama.cpp's graph
// builders for those architectures compute it. Every weight the graph reads
// is checked for presence, element type and shape; errors name the tensor.
func BuildGraph(f *File) (*ir.Graph, error) {
	p, arch, err := ReadParams(f)
	if err != nil {
		return nil, err
	}
	ai := archs[arch]
	ropeDims, ropeScale, err := ropeSettings(f, p)
	if err != nil {
		return nil, err
	}
	g := &ir.Graph{Arch: arch, Params: p}
	T := ir.DimT
	weight := func(name string, rows, cols int) (*ir.Value, error) {
		ti, ok := f.Tensor(name)
		if !ok {
			return nil, fmt.Errorf("%s: tensor %q missing", f.Path, name)
		}
		want := []uint64{uint64(cols)}
		if rows > 0 {
			want = append(want, uint64(rows))
		}
		if len(ti.Dims) != len(want) || ti.Dims[0] != want[0] || (rows > 0 && ti.Dims[1] != want[1]) {
			return nil, fmt.Errorf("%s: tensor %q has dims %v, want %v", f.Path, name, ti.Dims, want)
		}
		if err := ti.Type.Unsupported(); err != nil {
			return nil, fmt.Errorf("%s: tensor %q: %v", f.Path, name, err)
		}
		if rows <= 0 && ti.Type != quant.F32 {
			return nil, fmt.Errorf("%s: tensor %q is %s, want f32", f.Path, name, ti.Type)
		}
		if rows > 0 && quant.DotFor(ti.Type) == nil {
			return nil, fmt.Errorf("%s: tensor %q has type %s, which minfer cannot multiply", f.Path, name, ti.Type)
		}
		shape := ir.Shape{ir.Dim(cols)}
		if rows > 0 {
			shape = ir.Shape{ir.Dim(rows), ir.Dim(cols)}
		}
		v := g.NewValue(name, ir.Weight, ti.Type, shape)
		v.Source = name
		return v, nil
	}
	var werr error
	W := func(name string, rows, cols int) *ir.Value {
		if werr != nil {
			return nil
		}
		v, err := weight(name, rows, cols)
		werr = err
		return v
	}

	g.Tokens = g.NewValue("tokens", ir.Input, quant.I32, ir.Shape{T})
	g.Positions = g.NewValue("positions", ir.Input, quant.I32, ir.Shape{T})
	g.OutIDs = g.NewValue("out_ids", ir.Input, quant.I32, ir.Shape{ir.DimR})

	E, hd := p.NEmbd, p.HeadDim
	qw, kvw := p.NHead*hd, p.NHeadKV*hd
	norm := ir.Attrs{Eps: p.RMSEps}
	rope := ir.Attrs{HeadDim: hd, RopeDims: ropeDims, RopeBase: p.RopeBase, RopeScale: ropeScale, RopeNeoX: ai.neox}
	freqs, err := ropeFreqs(f, g, ai, arch, ropeDims)
	if err != nil {
		return nil, err
	}
	ropeIn := []*ir.Value{g.Positions}
	if freqs != nil {
		rope.RopeFreqs = true
		ropeIn = append(ropeIn, freqs)
	}
	attn := ir.Attrs{HeadDim: hd, NHead: p.NHead, NHeadKV: p.NHeadKV, Scale: float32(1 / math.Sqrt(float64(hd)))}

	embd := W("token_embd.weight", p.NVocab, E)
	if werr != nil {
		return nil, werr
	}
	x := g.AddNode(ir.OpGetRows, "embd", -1, ir.Attrs{}, ir.Shape{T, ir.Dim(E)}, embd, g.Tokens)
	for l := 0; l < p.NLayer; l++ {
		b := func(s string) string { return fmt.Sprintf("blk.%d.%s", l, s) }
		name := func(s string) string { return fmt.Sprintf("l%d.%s", l, s) }
		an := W(b("attn_norm.weight"), 0, E)
		wq, wk, wv := W(b("attn_q.weight"), qw, E), W(b("attn_k.weight"), kvw, E), W(b("attn_v.weight"), kvw, E)
		var bq, bk, bv, qn, kn *ir.Value
		if ai.qkvBias {
			bq, bk, bv = W(b("attn_q.bias"), 0, qw), W(b("attn_k.bias"), 0, kvw), W(b("attn_v.bias"), 0, kvw)
		}
		if ai.qkNorm {
			qn, kn = W(b("attn_q_norm.weight"), 0, hd), W(b("attn_k_norm.weight"), 0, hd)
		}
		wo := W(b("attn_output.weight"), E, qw)
		fn := W(b("ffn_norm.weight"), 0, E)
		wg, wu, wd := W(b("ffn_gate.weight"), p.NFF, E), W(b("ffn_up.weight"), p.NFF, E), W(b("ffn_down.weight"), E, p.NFF)
		if werr != nil {
			return nil, werr
		}
		kc := g.NewValue(name("k_cache"), ir.State, quant.F32, ir.Shape{ir.Dim(p.NCtx), ir.Dim(kvw)})
		vc := g.NewValue(name("v_cache"), ir.State, quant.F32, ir.Shape{ir.Dim(p.NCtx), ir.Dim(kvw)})

		h := g.AddNode(ir.OpRMSNorm, name("attn_norm"), l, norm, ir.Shape{T, ir.Dim(E)}, x)
		h = g.AddNode(ir.OpMul, name("attn_norm_w"), l, ir.Attrs{}, h.Shape, h, an)
		q := g.AddNode(ir.OpMatMul, name("q"), l, ir.Attrs{}, ir.Shape{T, ir.Dim(qw)}, h, wq)
		k := g.AddNode(ir.OpMatMul, name("k"), l, ir.Attrs{}, ir.Shape{T, ir.Dim(kvw)}, h, wk)
		v := g.AddNode(ir.OpMatMul, name("v"), l, ir.Attrs{}, ir.Shape{T, ir.Dim(kvw)}, h, wv)
		if ai.qkvBias {
			q = g.AddNode(ir.OpAdd, name("q_bias"), l, ir.Attrs{}, q.Shape, q, bq)
			k = g.AddNode(ir.OpAdd, name("k_bias"), l, ir.Attrs{}, k.Shape, k, bk)
			v = g.AddNode(ir.OpAdd, name("v_bias"), l, ir.Attrs{}, v.Shape, v, bv)
		}
		if ai.qkNorm {
			hn := ir.Attrs{Eps: p.RMSEps, GroupSize: hd}
			q = g.AddNode(ir.OpRMSNorm, name("q_norm"), l, hn, q.Shape, q)
			q = g.AddNode(ir.OpMul, name("q_norm_w"), l, ir.Attrs{}, q.Shape, q, qn)
			k = g.AddNode(ir.OpRMSNorm, name("k_norm"), l, hn, k.Shape, k)
			k = g.AddNode(ir.OpMul, name("k_norm_w"), l, ir.Attrs{}, k.Shape, k, kn)
		}
		q = g.AddNode(ir.OpRope, name("q_rope"), l, rope, q.Shape, append([]*ir.Value{q}, ropeIn...)...)
		k = g.AddNode(ir.OpRope, name("k_rope"), l, rope, k.Shape, append([]*ir.Value{k}, ropeIn...)...)
		kv := g.AddNode(ir.OpKVWrite, name("k_write"), l, ir.Attrs{}, kc.Shape, k, g.Positions, kc)
		kv.Kind, kv.StateOf = ir.State, kc
		vv := g.AddNode(ir.OpKVWrite, name("v_write"), l, ir.Attrs{}, vc.Shape, v, g.Positions, vc)
		vv.Kind, vv.StateOf = ir.State, vc
		a := g.AddNode(ir.OpAttention, name("attn"), l, attn, q.Shape, q, kv, vv, g.Positions)
		o := g.AddNode(ir.OpMatMul, name("attn_out"), l, ir.Attrs{}, ir.Shape{T, ir.Dim(E)}, a, wo)
		x = g.AddNode(ir.OpAdd, name("attn_res"), l, ir.Attrs{}, o.Shape, o, x)

		h = g.AddNode(ir.OpRMSNorm, name("ffn_norm"), l, norm, x.Shape, x)
		h = g.AddNode(ir.OpMul, name("ffn_norm_w"), l, ir.Attrs{}, h.Shape, h, fn)
		gate := g.AddNode(ir.OpMatMul, name("gate"), l, ir.Attrs{}, ir.Shape{T, ir.Dim(p.NFF)}, h, wg)
		up := g.AddNode(ir.OpMatMul, name("up"), l, ir.Attrs{}, ir.Shape{T, ir.Dim(p.NFF)}, h, wu)
		s := g.AddNode(ir.OpSiLU, name("silu"), l, ir.Attrs{}, gate.Shape, gate)
		m := g.AddNode(ir.OpMul, name("gate_up"), l, ir.Attrs{}, s.Shape, s, up)
		d := g.AddNode(ir.OpMatMul, name("down"), l, ir.Attrs{}, ir.Shape{T, ir.Dim(E)}, m, wd)
		x = g.AddNode(ir.OpAdd, name("ffn_res"), l, ir.Attrs{}, d.Shape, d, x)
	}
	on := W("output_norm.weight", 0, E)
	out := embd
	if !p.Tied {
		out = W("output.weight", p.NVocab, E)
	}
	if werr != nil {
		return nil, werr
	}
	R := ir.DimR
	x = g.AddNode(ir.OpGetRows, "out_rows", -1, ir.Attrs{}, ir.Shape{R, ir.Dim(E)}, x, g.OutIDs)
	x = g.AddNode(ir.OpRMSNorm, "out_norm", -1, norm, x.Shape, x)
	x = g.AddNode(ir.OpMul, "out_norm_w", -1, ir.Attrs{}, x.Shape, x, on)
	g.Logits = g.AddNode(ir.OpMatMul, "logits", -1, ir.Attrs{}, ir.Shape{R, ir.Dim(p.NVocab)}, x, out)
	if err := ir.Verify(g); err != nil {
		return nil, fmt.Errorf("%s: built graph is invalid (a frontend bug): %v", f.Path, err)
	}
	return g, nil
}

// WeightType returns the element type of the named tensor (ok false when
// the file has none): an executor checks it against the graph's.
func (f *File) WeightType(name string) (quant.Type, bool) {
	t, ok := f.Tensor(name)
	if !ok {
		return 0, false
	}
	return t.Type, true
}

// WeightBytes returns the raw bytes of the named tensor, so a File can serve
// as the weight source of an executor.
func (f *File) WeightBytes(name string) ([]byte, error) {
	t, ok := f.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("%s: tensor %q missing", f.Path, name)
	}
	return f.TensorData(t), nil
}
