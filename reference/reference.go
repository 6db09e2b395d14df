// Package reference is minfer's scalar reference executor: it runs an IR
// graph op by op, single-threaded, in plain Go on float32, with the
// arithmetic llama.cpp's CPU backend uses (activations converted to the
// weight type's vec-dot type before each mat-mul, sums in the same
// precisions). It is the oracle every compiled, fused, parallel or SIMD path
// is checked against, and it stays simple on purpose.
package reference

import (
	"fmt"
	"math"
	"runtime/debug"

	"github.com/minfer/minfer/internal/ggmlf32"
	"github.com/minfer/minfer/ir"
	"github.com/minfer/minfer/quant"
)

// WeightSource supplies the raw bytes of a model tensor by its source name.
type WeightSource interface {
	WeightBytes(name string) ([]byte, error)
}

// Model is a graph bound to its weights and its KV-cache state.
type Model struct {
	g       *ir.Graph
	weights map[*ir.Value][]byte
	state   map[*ir.Value][]float32
	// filled is the number of cache positions written (for error messages
	// and to check that attention never reads an unwritten row).
	filled int
}

// New binds a graph to its weights, checking each weight's byte size, and
// allocates the KV cache for the graph's context size.
func New(g *ir.Graph, src WeightSource) (*Model, error) {
	if g.Params.NCtx <= 0 || g.Params.NCtx%16 != 0 {
		return nil, fmt.Errorf("context size %d must be a positive multiple of 16 (ir.PadContext)", g.Params.NCtx)
	}
	m := &Model{g: g, weights: make(map[*ir.Value][]byte), state: make(map[*ir.Value][]float32)}
	for _, v := range g.Values {
		switch v.Kind {
		case ir.Weight:
			b, err := src.WeightBytes(v.Source)
			if err != nil {
				return nil, err
			}
			want, err := byteSize(v)
			if err != nil {
				return nil, fmt.Errorf("weight %q: %v", v.Source, err)
			}
			if len(b) != want {
				return nil, fmt.Errorf("weight %q: %d bytes, want %d for %s%s", v.Source, len(b), want, v.DType, v.Shape)
			}
			m.weights[v] = b
		case ir.State:
			if v.StateOf == nil {
				// The cache holds Params.NCtx positions (a caller may
				// shrink the context below the trained length).
				rows := min(int(v.Shape[0]), g.Params.NCtx)
				m.state[v] = make([]float32, rows*int(v.Shape[1]))
			}
		}
	}
	return m, nil
}

func byteSize(v *ir.Value) (int, error) {
	rows, cols := 1, int(v.Shape[len(v.Shape)-1])
	if len(v.Shape) == 2 {
		rows = int(v.Shape[0])
	}
	rs, err := v.DType.RowSize(cols)
	return rows * rs, err
}

// Reset forgets the KV cache contents (a new sequence).
func (m *Model) Reset() {
	for _, s := range m.state {
		clear(s)
	}
	m.filled = 0
}

// Eval runs the graph on a batch of tokens at the given positions and returns
// the logits of the rows outIDs (indices into the batch), row-major
// [len(outIDs)][n_vocab]. Positions must continue the sequence already in the
// cache: positions[0] equals the number of positions evaluated so far.
//
// The weights may be a mapped file: if it is truncated while the model
// runs, the memory fault is returned as an error instead of killing the
// process.
func (m *Model) Eval(tokens, positions, outIDs []int32) (_ []float32, err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			f, ok := r.(interface{ Addr() uintptr })
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("memory fault at address %#x reading the mapped weights: was the file truncated or changed while running? (%v)", f.Addr(), r)
		}
	}()
	T := len(tokens)
	if err := m.g.Params.CheckBatch(m.filled, tokens, positions, outIDs); err != nil {
		return nil, err
	}
	env := &env{m: m, T: T, R: len(outIDs), f: make(map[*ir.Value][]float32), i: make(map[*ir.Value][]int32)}
	env.i[m.g.Tokens] = tokens
	env.i[m.g.Positions] = positions
	env.i[m.g.OutIDs] = outIDs
	for _, n := range m.g.Nodes {
		if err := env.run(n); err != nil {
			return nil, fmt.Errorf("node #%d %s %q: %v", n.ID, n.Op, n.Name, err)
		}
		if nodeHook != nil {
			nodeHook(n, positions, env.floats(n.Outputs[0]))
		}
	}
	m.filled += T
	return env.f[m.g.Logits], nil
}

// nodeHook, when set (only by tests), sees every node's output after it
// runs, with the batch's positions: the per-node dumps that are compared
// with llama.cpp's graph callback (TestDumpNodes).
var nodeHook func(n *ir.Node, positions []int32, out []float32)

type env struct {
	m    *Model
	T, R int
	f    map[*ir.Value][]float32
	i    map[*ir.Value][]int32
}

func (e *env) dim(d ir.Dim) int {
	switch d {
	case ir.DimT:
		return e.T
	case ir.DimR:
		return e.R
	}
	return int(d)
}

// floats returns the f32 contents of a value: an activation, persistent
// state, or an f32 weight (norm weights and biases).
func (e *env) floats(v *ir.Value) []float32 {
	switch {
	case v.Kind == ir.Weight:
		return bytesToF32(e.m.weights[v])
	case v.StateOf != nil:
		return e.m.state[v.StateOf]
	case v.Kind == ir.State:
		return e.m.state[v]
	}
	return e.f[v]
}

func bytesToF32(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	quant.DequantFor(quant.F32)(b, out)
	return out
}

func (e *env) run(n *ir.Node) error {
	in := n.Inputs
	a := n.Attrs
	out := n.Outputs[0]
	var y []float32
	switch n.Op {
	case ir.OpGetRows:
		ids := e.i[in[1]]
		cols := int(in[0].Shape[1])
		y = make([]float32, len(ids)*cols)
		if in[0].Kind == ir.Weight {
			rs, _ := in[0].DType.RowSize(cols)
			deq := quant.DequantFor(in[0].DType)
			w := e.m.weights[in[0]]
			for r, id := range ids {
				deq(w[int(id)*rs:(int(id)+1)*rs], y[r*cols:(r+1)*cols])
			}
		} else {
			x := e.floats(in[0])
			for r, id := range ids {
				copy(y[r*cols:(r+1)*cols], x[int(id)*cols:(int(id)+1)*cols])
			}
		}
	case ir.OpRMSNorm:
		y = rmsNorm(e.floats(in[0]), groupSize(a, in[0]), a.Eps)
	case ir.OpRMSNormMul:
		y = mul(rmsNorm(e.floats(in[0]), groupSize(a, in[0]), a.Eps), e.floats(in[1]))
	case ir.OpMul:
		y = mul(e.floats(in[0]), e.floats(in[1]))
	case ir.OpAdd:
		y = add(e.floats(in[0]), e.floats(in[1]))
	case ir.OpMatMul:
		y = e.matMul(e.floats(in[0]), in[1])
		y = e.epilogues(n, y)
	case ir.OpRope:
		var freqs []float32
		if a.RopeFreqs {
			freqs = e.floats(in[2])
		}
		y = rope(e.floats(in[0]), e.i[in[1]], freqs, a)
	case ir.OpKVWrite:
		x, pos := e.floats(in[0]), e.i[in[1]]
		cache := e.m.state[in[2]]
		w := int(in[2].Shape[1])
		for t, p := range pos {
			copy(cache[int(p)*w:(int(p)+1)*w], x[t*w:(t+1)*w])
		}
		return nil
	case ir.OpAttention:
		y = attention(e.floats(in[0]), e.floats(in[1]), e.floats(in[2]), e.i[in[3]], a)
	case ir.OpSoftmax:
		x := e.floats(in[0])
		cols := in[0].Shape.Cols()
		y = make([]float32, len(x))
		for r := 0; r < len(x)/cols; r++ {
			ggmlf32.Softmax(y[r*cols:(r+1)*cols], x[r*cols:(r+1)*cols], a.Scale)
		}
	case ir.OpSiLU:
		x := e.floats(in[0])
		cols := in[0].Shape.Cols()
		y = make([]float32, len(x))
		for i, v := range x {
			y[i] = ggmlf32.SiLUAt(i%cols, cols, v)
		}
	case ir.OpSwiGLU:
		g, u := e.floats(in[0]), e.floats(in[1])
		cols := in[0].Shape.Cols()
		y = make([]float32, len(g))
		for i := range g {
			y[i] = ggmlf32.SiLUAt(i%cols, cols, g[i]) * u[i]
		}
	default:
		return fmt.Errorf("the reference executor has no %s", n.Op)
	}
	if want := e.dim(out.Shape[0]) * out.Shape.Cols(); len(y) != want {
		return fmt.Errorf("produced %d values, want %d for %s", len(y), want, out.Shape)
	}
	e.f[out] = y
	return nil
}

func groupSize(a ir.Attrs, x *ir.Value) int {
	if a.GroupSize > 0 {
		return a.GroupSize
	}
	return x.Shape.Cols()
}

// rmsNorm is ggml's rms_norm: the sum of squares (each square rounded to
// float32) accumulated in float64, the mean rounded to float32, then
// y = x · (1/sqrtf(mean+eps)).
func rmsNorm(x []float32, n int, eps float32) []float32 {
	y := make([]float32, len(x))
	for g := 0; g < len(x); g += n {
		var sum float64
		for _, v := range x[g : g+n] {
			sum += float64(v * v)
		}
		mean := float32(sum / float64(n))
		scale := 1 / float32(math.Sqrt(float64(mean+eps)))
		for i, v := range x[g : g+n] {
			y[g+i] = v * scale
		}
	}
	return y
}

// broadcast applies f to x and w, repeating w along x when it is shorter.
func broadcast(x, w []float32, f func(a, b float32) float32) []float32 {
	y := make([]float32, len(x))
	for i := range x {
		y[i] = f(x[i], w[i%len(w)])
	}
	return y
}

func mul(x, w []float32) []float32 {
	return broadcast(x, w, func(a, b float32) float32 { return a * b })
}

func add(x, w []float32) []float32 {
	return broadcast(x, w, func(a, b float32) float32 { return a + b })
}

// matMul converts each input row to the weight's vec-dot type with the
// activation quantizer of llama.cpp's x86 CPU backend, then takes one block
// dot product per output element.
func (e *env) matMul(x []float32, w *ir.Value) []float32 {
	N, K := int(w.Shape[0]), int(w.Shape[1])
	M := len(x) / K
	vdt := w.DType.VecDotType()
	actRow, _ := vdt.RowSize(K)
	wRow, _ := w.DType.RowSize(K)
	act := make([]byte, actRow)
	quantize := quant.ActQuantFor(vdt)
	dot := quant.DotFor(w.DType)
	wb := e.m.weights[w]
	y := make([]float32, M*N)
	for m := 0; m < M; m++ {
		quantize(x[m*K:(m+1)*K], act)
		for n := 0; n < N; n++ {
			y[m*N+n] = dot(K, wb[n*wRow:(n+1)*wRow], act)
		}
	}
	return y
}

// rope rotates each head as ggml_rope_ext does with no YaRN extension:
// theta starts at pos·freq_scale and is multiplied by base^(-2/dims) in
// float32 for each pair; cos and sin are glibc's float32 cosf/sinf of that
// angle (ggmlf32.SinCosF), which are not always correctly rounded, and each
// pair rotates with the FMA contractions of ggml's compiled rotate_pairs
// (ggmlf32.RopePair; the unfused remainder of NORMAL mode aside).
//
// freqs, when not nil, divides each pair's theta before the scale:
// scale·(theta_i/freqs[i]), ggml_rope_cache_init's rope_yarn(theta/ff,
// freq_scale, ...), for NEOX and normal pairs alike.
func rope(x []float32, pos []int32, freqs []float32, a ir.Attrs) []float32 {
	y := append([]float32(nil), x...)
	width := len(x) / len(pos)
	thetaScale := float32(math.Pow(float64(a.RopeBase), float64(-2/float32(a.RopeDims))))
	scale := a.RopeScale
	if scale == 0 {
		scale = 1
	}
	half := a.RopeDims / 2
	for t, p := range pos {
		for h := 0; h < width/a.HeadDim; h++ {
			v := y[t*width+h*a.HeadDim : t*width+(h+1)*a.HeadDim]
			theta := float32(p)
			for i := 0; i < half; i++ {
				th := scale * theta
				if freqs != nil {
					th = scale * (theta / freqs[i])
				}
				s, c := ggmlf32.SinCosF(th)
				if a.RopeNeoX {
					v[i], v[i+half] = ggmlf32.RopePair(v[i], v[i+half], c, s)
				} else if ggmlf32.RopeNormalFused(i, half) {
					v[2*i], v[2*i+1] = ggmlf32.RopePair(v[2*i], v[2*i+1], c, s)
				} else {
					v[2*i], v[2*i+1] = ggmlf32.RopePairUnfused(v[2*i], v[2*i+1], c, s)
				}
				theta *= thetaScale
			}
		}
	}
	return y
}

// attention is llama.cpp's non-flash path with an f32 cache, per head:
// kq = k·q (ggml_vec_dot_f32 order), softmax(kq·scale + causal mask) over
// the cache's padded length (ggml_compute_forward_soft_max_f32), then
// kqv = v·probs. llama.cpp pads the number of cache cells it attends over
// to a multiple of 256 (llama_kv_cache::get_n_kv) and masks the rest with
// -inf; those cells add exact zeros, so only the lane and chunk layout they
// imply matters. kqv is a mat-mul with the probabilities as src1: with two
// or more tokens llamafile sgemm takes it (SgemmDotF32), with one token
// ggml_vec_dot_f32 does (VecDotF32). The SIMD orders of all three steps
// are ggmlf32's.
func attention(q, kc, vc []float32, pos []int32, a ir.Attrs) []float32 {
	hd, H, Hkv := a.HeadDim, a.NHead, a.NHeadKV
	qw, kvw := H*hd, Hkv*hd
	y := make([]float32, len(q))
	nkv := (int(pos[len(pos)-1]) + 256) / 256 * 256
	nkv = min(nkv, len(kc)/kvw)
	probs := make([]float32, nkv)
	vcol := make([]float32, nkv)
	for t, p := range pos {
		n := int(p) + 1
		for h := 0; h < H; h++ {
			kh := h / (H / Hkv)
			qv := q[t*qw+h*hd : t*qw+(h+1)*hd]
			for j := range probs {
				probs[j] = 0
				if j < n {
					probs[j] = ggmlf32.VecDotF32(kc[j*kvw+kh*hd:j*kvw+(kh+1)*hd], qv)
				}
			}
			ggmlf32.SoftmaxMasked(probs, n, a.Scale)
			out := y[t*qw+h*hd : t*qw+(h+1)*hd]
			for d := 0; d < hd; d++ {
				for j := range vcol {
					vcol[j] = 0
					if j < n {
						vcol[j] = vc[j*kvw+kh*hd+d]
					}
				}
				if len(pos) > 1 {
					out[d] = ggmlf32.SgemmDotF32(vcol, probs)
				} else {
					out[d] = ggmlf32.VecDotF32(vcol, probs)
				}
			}
		}
	}
	return y
}
