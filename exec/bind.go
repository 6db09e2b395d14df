package exec

import (
	"fmt"

	"minfer/alloc"
	"minfer/backends/cpu"
	"minfer/ir"
	"minfer/quant"
)

// fbuf resolves a value's float32 storage for a worker: a fixed view of the
// shared arena or KV cache, or the worker's private scratch.
type fbuf struct {
	shared  []float32
	private bool
	off     int64
	size    int64
}

func (b fbuf) get(wk *worker) []float32 {
	if b.private {
		return f32(wk.priv[b.off : b.off+b.size])
	}
	return b.shared
}

// binder turns one schedule into closures over buffers and kernels.
type binder struct {
	m       *Model
	plan    *alloc.Plan
	weights map[*ir.Value][]byte
}

func (m *Model) bind(s *ir.Schedule, plan *alloc.Plan, weights map[*ir.Value][]byte) (*program, error) {
	if plan == nil {
		return nil, fmt.Errorf("no memory plan")
	}
	b := &binder{m: m, plan: plan, weights: weights}
	p := &program{name: s.Name}
	for gi, g := range s.Groups {
		grp := group{units: g.Units}
		for _, st := range g.Steps {
			if st.Node < 0 || st.Node >= len(m.g.Nodes) {
				return nil, fmt.Errorf("group %d: node %d out of range", gi, st.Node)
			}
			n := m.g.Nodes[st.Node]
			bs, err := b.step(n, st.Split, g.Units)
			if err != nil {
				return nil, fmt.Errorf("node #%d %s %q: %w", n.ID, n.Op, n.Name, err)
			}
			bs.split = st.Split
			grp.steps = append(grp.steps, bs)
		}
		p.groups = append(p.groups, grp)
	}
	lb, err := b.buf(m.g.Logits)
	if err != nil {
		return nil, err
	}
	p.logits = lb.get
	return p, nil
}

// buf finds a value's storage: activation slot, f32 weight, or KV cache.
func (b *binder) buf(v *ir.Value) (fbuf, error) {
	switch v.Kind {
	case ir.Weight:
		if v.DType != quant.F32 {
			return fbuf{}, fmt.Errorf("%s is %s, not f32", v.Source, v.DType)
		}
		return fbuf{shared: f32(b.weights[v])}, nil
	case ir.Activation:
		s, private, ok := b.plan.SlotFor(v)
		if !ok {
			return fbuf{}, fmt.Errorf("no memory slot for %s", v)
		}
		if private {
			return fbuf{private: true, off: s.Offset, size: s.Size}, nil
		}
		if s.End() > int64(len(b.m.arena)) {
			return fbuf{}, fmt.Errorf("slot of %s beyond the arena", v)
		}
		return fbuf{shared: f32(b.m.arena[s.Offset:s.End()])}, nil
	}
	return fbuf{}, fmt.Errorf("%s has no float storage", v)
}

// rowsOf returns the live row count of a value for the current call.
func (b *binder) rowsOf(v *ir.Value) func() int {
	m := b.m
	switch v.Shape[0] {
	case ir.DimT:
		return func() int { return m.T }
	case ir.DimR:
		return func() int { return m.R }
	}
	n := int(v.Shape[0])
	return func() int { return n }
}

// ids returns the index input a GetRows reads.
func (b *binder) ids(v *ir.Value) (func() []int32, error) {
	m := b.m
	switch v {
	case m.g.Tokens:
		return func() []int32 { return m.tokens }, nil
	case m.g.OutIDs:
		return func() []int32 { return m.outIDs }, nil
	case m.g.Positions:
		return func() []int32 { return m.pos }, nil
	}
	return nil, fmt.Errorf("%s is not a graph input", v)
}

func (b *binder) cache(v *ir.Value) (*cpu.KVCache, error) {
	root := alloc.StateRoot(v)
	c, ok := b.m.caches[root]
	if !ok {
		return nil, fmt.Errorf("no KV cache for %s", v)
	}
	return c, nil
}

// cols maps a unit range to a column range of a width-w output.
func cols(w, units, u0, u1 int) (int, int) { return u0 * w / units, u1 * w / units }

func (b *binder) step(n *ir.Node, split ir.Split, units int) (step, error) {
	m := b.m
	out := n.Outputs[0]
	a := n.Attrs
	var st step
	st.rows = b.rowsOf(out)
	width := out.Shape.Cols()
	in := n.Inputs
	// colRange converts the worker's [lo, hi) into the column range the
	// kernel computes, whatever the split.
	colRange := func(lo, hi int) (int, int) {
		if split == ir.SplitCols {
			return cols(width, units, lo, hi)
		}
		return 0, width
	}
	rowRange := func(lo, hi int) (int, int) {
		if split == ir.SplitCols {
			return 0, st.rows()
		}
		return lo, hi
	}
	if split == ir.SplitCols && (units <= 0 || width%units != 0) {
		return st, fmt.Errorf("width %d not a multiple of %d units", width, units)
	}
	switch n.Op {
	case ir.OpGetRows:
		y, err := b.buf(out)
		if err != nil {
			return st, err
		}
		ids, err := b.ids(in[1])
		if err != nil {
			return st, err
		}
		if split == ir.SplitCols {
			return st, fmt.Errorf("get_rows cannot split by columns")
		}
		if in[0].Kind == ir.Weight {
			gr, err := cpu.GetRowsQuant(in[0].DType)
			if err != nil {
				return st, err
			}
			table := b.weights[in[0]]
			st.run = func(wk *worker, lo, hi int) { gr(y.get(wk), table, width, ids(), lo, hi) }
		} else {
			x, err := b.buf(in[0])
			if err != nil {
				return st, err
			}
			st.run = func(wk *worker, lo, hi int) { cpu.GetRowsF32(y.get(wk), x.get(wk), width, ids(), lo, hi) }
		}
	case ir.OpRMSNorm, ir.OpRMSNormMul:
		x, err := b.buf(in[0])
		if err != nil {
			return st, err
		}
		y, err := b.buf(out)
		if err != nil {
			return st, err
		}
		var w []float32
		if n.Op == ir.OpRMSNormMul {
			wb, err := b.buf(in[1])
			if err != nil {
				return st, err
			}
			w = wb.shared
		}
		grp := a.GroupSize
		if grp == 0 {
			grp = width
		}
		if split == ir.SplitCols {
			st.run = func(wk *worker, lo, hi int) {
				c0, c1 := colRange(lo, hi)
				cpu.RMSNormCols(x.get(wk), y.get(wk), st.rows(), width, grp, a.Eps, w, c0, c1)
			}
		} else {
			st.run = func(wk *worker, lo, hi int) { cpu.RMSNorm(x.get(wk), y.get(wk), width, grp, a.Eps, w, lo, hi) }
		}
	case ir.OpAdd, ir.OpMul, ir.OpSwiGLU, ir.OpSiLU:
		x, err := b.buf(in[0])
		if err != nil {
			return st, err
		}
		y, err := b.buf(out)
		if err != nil {
			return st, err
		}
		var z fbuf
		bcols := width
		broadcastRow := false
		if len(in) > 1 {
			if z, err = b.buf(in[1]); err != nil {
				return st, err
			}
			if len(in[1].Shape) == 1 {
				bcols = int(in[1].Shape[0])
				broadcastRow = true
			}
		}
		op := n.Op
		st.run = func(wk *worker, lo, hi int) {
			c0, c1 := colRange(lo, hi)
			r0, r1 := rowRange(lo, hi)
			xs, ys := x.get(wk)[r0*width:], y.get(wk)[r0*width:]
			rows := r1 - r0
			var zs []float32
			if op != ir.OpSiLU {
				zs = z.get(wk)
				if !broadcastRow {
					zs = zs[r0*width:]
				}
			}
			switch op {
			case ir.OpSiLU:
				cpu.SiLUCols(ys, xs, rows, width, c0, c1)
			case ir.OpSwiGLU:
				cpu.SwiGLUCols(ys, xs, zs, rows, width, c0, c1)
			case ir.OpAdd:
				broadcastCols(cpu.AddCols, ys, xs, zs, rows, width, bcols, broadcastRow, c0, c1)
			case ir.OpMul:
				broadcastCols(cpu.MulCols, ys, xs, zs, rows, width, bcols, broadcastRow, c0, c1)
			}
		}
	case ir.OpMatMul:
		return b.matMul(n, split, units)
	case ir.OpRope:
		x, err := b.buf(in[0])
		if err != nil {
			return st, err
		}
		y, err := b.buf(out)
		if err != nil {
			return st, err
		}
		st.run = func(wk *worker, lo, hi int) {
			c0, c1 := colRange(lo, hi)
			r0, r1 := rowRange(lo, hi)
			xs, ys := x.get(wk), y.get(wk)
			for r := r0; r < r1; r++ {
				copy(ys[r*width+c0:r*width+c1], xs[r*width+c0:r*width+c1])
			}
			cpu.RopeCols(ys[r0*width:], r1-r0, width, m.pos[r0:r1], a.HeadDim, a.RopeDims, a.RopeBase, a.RopeScale, a.RopeNeoX, c0, c1)
		}
	case ir.OpKVWrite:
		x, err := b.buf(in[0])
		if err != nil {
			return st, err
		}
		c, err := b.cache(in[2])
		if err != nil {
			return st, err
		}
		kv := m.kvk
		xw := in[0].Shape.Cols()
		st.rows = b.rowsOf(in[0])
		st.run = func(wk *worker, lo, hi int) {
			c0, c1 := 0, xw
			r0, r1 := 0, m.T
			if split == ir.SplitCols {
				c0, c1 = cols(xw, units, lo, hi)
			} else if split == ir.SplitRows {
				r0, r1 = lo, hi
			}
			kv.Store(c, x.get(wk)[r0*xw:], m.pos[r0:r1], c0, c1)
		}
	case ir.OpAttention:
		q, err := b.buf(in[0])
		if err != nil {
			return st, err
		}
		y, err := b.buf(out)
		if err != nil {
			return st, err
		}
		kc, err := b.cache(in[1])
		if err != nil {
			return st, err
		}
		vc, err := b.cache(in[2])
		if err != nil {
			return st, err
		}
		kv := m.kvk
		hkv := a.NHeadKV
		if split == ir.SplitCols && hkv%units != 0 {
			return st, fmt.Errorf("attention over %d KV heads cannot split into %d units", hkv, units)
		}
		st.run = func(wk *worker, lo, hi int) {
			h0, h1 := 0, hkv
			r0, r1 := 0, m.T
			if split == ir.SplitCols {
				h0, h1 = lo*hkv/units, hi*hkv/units
			} else if split == ir.SplitRows {
				r0, r1 = lo, hi
			}
			kv.Attend(y.get(wk), q.get(wk), kc, vc, m.pos[:m.T], a.NHead, a.NHeadKV, a.HeadDim, a.Scale, h0, h1, r0, r1, wk.attn)
		}
	case ir.OpSoftmax:
		x, err := b.buf(in[0])
		if err != nil {
			return st, err
		}
		y, err := b.buf(out)
		if err != nil {
			return st, err
		}
		if split == ir.SplitCols {
			return st, fmt.Errorf("softmax cannot split by columns")
		}
		st.run = func(wk *worker, lo, hi int) { cpu.Softmax(y.get(wk), x.get(wk), width, a.Scale, lo, hi) }
	default:
		return st, fmt.Errorf("no kernel for %s", n.Op)
	}
	return st, nil
}

// colsKernel is the shape of cpu.AddCols and cpu.MulCols.
type colsKernel func(y, a, b []float32, rows, cols, bcols, c0, c1 int)

// broadcastCols applies f (y = x op z) on columns c0..c1 of rows rows, z
// either same-shaped or one row broadcast to every row.
func broadcastCols(f colsKernel, y, x, z []float32, rows, width, bcols int, rowVec bool, c0, c1 int) {
	switch {
	case !rowVec:
		f(y, x, z, rows, width, width, c0, c1)
	case bcols < width:
		f(y, x, z, rows, width, bcols, c0, c1)
	default:
		for r := 0; r < rows; r++ {
			f(y[r*width:], x[r*width:], z, 1, width, width, c0, c1)
		}
	}
}

// matMul binds a mat-mul with its epilogues. Each worker converts the input
// rows to the vec-dot type in its own scratch (once per group when several
// mat-muls of the group read the same input), then computes its columns and
// applies the epilogues to them.
func (b *binder) matMul(n *ir.Node, split ir.Split, units int) (step, error) {
	m := b.m
	var st step
	out := n.Outputs[0]
	xv, wv := n.Inputs[0], n.Inputs[1]
	x, err := b.buf(xv)
	if err != nil {
		return st, err
	}
	y, err := b.buf(out)
	if err != nil {
		return st, err
	}
	k, err := cpu.NewMatMul(wv.DType)
	if err != nil {
		return st, err
	}
	K, N := int(wv.Shape[1]), int(wv.Shape[0])
	if err := k.Check(K); err != nil {
		return st, err
	}
	w := b.weights[wv]
	actRow := k.ActRowBytes(K)
	qkind := int(k.VecDot)
	st.rows = b.rowsOf(out)
	type epi struct {
		op     ir.Op
		arg    fbuf
		rowVec bool
		bcols  int
		attrs  ir.Attrs
	}
	var epis []epi
	for _, e := range n.Epilogues {
		switch e.Op {
		case ir.OpAdd:
			ab, err := b.buf(e.Arg)
			if err != nil {
				return st, err
			}
			ep := epi{op: ir.OpAdd, arg: ab, bcols: N}
			if len(e.Arg.Shape) == 1 {
				ep.rowVec, ep.bcols = true, int(e.Arg.Shape[0])
			}
			epis = append(epis, ep)
		case ir.OpRope:
			epis = append(epis, epi{op: ir.OpRope, attrs: e.Attrs})
		default:
			return st, fmt.Errorf("unsupported epilogue %s", e.Op)
		}
	}
	if split == ir.SplitRows {
		// A row split would need per-row activation offsets; the grouping
		// pass never asks for it.
		return st, fmt.Errorf("mat-mul split by rows is not supported")
	}
	st.run = func(wk *worker, lo, hi int) {
		M := st.rows()
		n0, n1 := 0, N
		if split == ir.SplitCols {
			n0, n1 = cols(N, units, lo, hi)
		}
		if wk.qVal != xv || wk.qKind != qkind || wk.qStamp != wk.stamp || wk.qRows != M {
			k.QuantizeRows(x.get(wk), K, 0, M, wk.quant)
			wk.qVal, wk.qKind, wk.qRows, wk.qStamp = xv, qkind, M, wk.stamp
		}
		ys := y.get(wk)
		k.Run(K, w, wk.quant[:M*actRow], M, ys, N, n0, n1)
		for _, e := range epis {
			switch e.op {
			case ir.OpAdd:
				broadcastCols(cpu.AddCols, ys, ys, e.arg.get(wk), M, N, e.bcols, e.rowVec, n0, n1)
			case ir.OpRope:
				a := e.attrs
				cpu.RopeCols(ys, M, N, m.pos[:M], a.HeadDim, a.RopeDims, a.RopeBase, a.RopeScale, a.RopeNeoX, n0, n1)
			}
		}
	}
	return st, nil
}
