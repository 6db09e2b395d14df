package exec

import (
	"fmt"
	"strings"

	"github.com/minfer/minfer/alloc"
	"github.com/minfer/minfer/backends/cpu"
	"github.com/minfer/minfer/ir"
	"github.com/minfer/minfer/quant"
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
	// slots numbers the (input, vec-dot type) pairs the current group's
	// mat-muls read from shared buffers (sharedSlot).
	slots map[sharedInput]int
}

// sharedInput is a mat-mul input as one vec-dot type.
type sharedInput struct {
	v    *ir.Value
	kind int
}

// sharedSlot returns the shared conversion buffer of input v as vec-dot
// type kind in the group being bound: mat-muls of one group reading the
// same input share one; each group numbers its own from 0, and the Model
// allocates as many as the group that needs most.
func (b *binder) sharedSlot(v *ir.Value, kind int) int {
	in := sharedInput{v, kind}
	if i, ok := b.slots[in]; ok {
		return i
	}
	i := len(b.slots)
	b.slots[in] = i
	b.m.nsq = max(b.m.nsq, i+1)
	return i
}

func (m *Model) bind(s *ir.Schedule, plan *alloc.Plan, weights map[*ir.Value][]byte) (*program, error) {
	if plan == nil {
		return nil, fmt.Errorf("no memory plan")
	}
	b := &binder{m: m, plan: plan, weights: weights}
	p := &program{name: s.Name}
	for gi, g := range s.Groups {
		grp := group{units: g.Units}
		b.slots = map[sharedInput]int{}
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
		// A step may leave its work for after the group only if no later
		// step of the group reads its output (the values the group reads
		// stay live until the next group: alloc's liveness is per group).
		for si, st := range grp.steps {
			if st.blocks == nil || st.split != ir.SplitCols || grp.blocks != nil {
				continue
			}
			out := m.g.Nodes[g.Steps[si].Node].Outputs[0]
			read := false
			for _, later := range g.Steps[si+1:] {
				for _, in := range m.g.Nodes[later.Node].Inputs {
					read = read || in == out
				}
			}
			if !read {
				grp.blocks = st.blocks
				grp.blocks.attached = true
			}
		}
		grp.phases, grp.dynamic = planPhases(&grp)
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

// slotViews returns a cache's region per slot (what attention reads).
func (b *binder) slotViews(v *ir.Value) ([]*cpu.KVCache, error) {
	root := alloc.StateRoot(v)
	c, ok := b.m.views[root]
	if !ok {
		return nil, fmt.Errorf("no KV cache for %s", v)
	}
	return c, nil
}

// cols maps a unit range to a column range of a width-w output.
func cols(w, units, u0, u1 int) (int, int) { return u0 * w / units, u1 * w / units }

// site is where a step runs: its node, its split and unit count, and the
// ranges a worker's [lo, hi) maps to.
type site struct {
	n     *ir.Node
	split ir.Split
	units int
	width int        // columns of the node's output
	rows  func() int // live rows of the node's output
}

// colRange converts the worker's [lo, hi) into the column range the kernel
// computes, whatever the split.
func (s *site) colRange(lo, hi int) (int, int) {
	if s.split == ir.SplitCols {
		return cols(s.width, s.units, lo, hi)
	}
	return 0, s.width
}

// rowRange converts the worker's [lo, hi) into the row range the kernel
// computes, whatever the split.
func (s *site) rowRange(lo, hi int) (int, int) {
	if s.split == ir.SplitCols {
		return 0, s.rows()
	}
	return lo, hi
}

// bindFunc binds one node to the kernel its plan names: it resolves the
// node's buffers once and returns the step the workers run.
type bindFunc func(b *binder, s *site) (step, error)

// binders has one bind function per op, as a compiler backend has one
// lowering function per opcode.
var binders map[ir.Op]bindFunc

func init() {
	binders = map[ir.Op]bindFunc{
		ir.OpGetRows:    (*binder).getRows,
		ir.OpRMSNorm:    (*binder).rmsNorm,
		ir.OpRMSNormMul: (*binder).rmsNorm,
		ir.OpAdd:        (*binder).elementWise,
		ir.OpMul:        (*binder).elementWise,
		ir.OpSwiGLU:     (*binder).elementWise,
		ir.OpSiLU:       (*binder).elementWise,
		ir.OpMatMul:     (*binder).matMul,
		ir.OpRope:       (*binder).rope,
		ir.OpKVWrite:    (*binder).kvWrite,
		ir.OpAttention:  (*binder).attention,
		ir.OpSoftmax:    (*binder).softmax,
	}
}

// kernelType reads the type a "family/type" kernel name binds (mat_mul/q4_K,
// get_rows/q8_0, kv_write/f16, attention/f16). A name the executor does
// not know is an error: the plan, not the executor, chose the kernel.
func kernelType(n *ir.Node, family string) (quant.Type, error) {
	t, ok := strings.CutPrefix(n.Kernel, family+"/")
	if !ok {
		return 0, fmt.Errorf("unknown kernel %q for a %s node (want %s/<type>)", n.Kernel, n.Op, family)
	}
	qt, ok := quant.ParseType(t)
	if !ok {
		return 0, fmt.Errorf("unknown kernel %q: no type %q", n.Kernel, t)
	}
	return qt, nil
}

// plainKernel checks that a node whose kernel has no variants names it by
// its op.
func plainKernel(n *ir.Node) error {
	if n.Kernel != n.Op.String() {
		return fmt.Errorf("unknown kernel %q for a %s node (want %q)", n.Kernel, n.Op, n.Op.String())
	}
	return nil
}

// sameType checks that the type a kernel name binds is the type of the
// value it reads.
func sameType(n *ir.Node, kt quant.Type, v *ir.Value) error {
	if kt != v.DType {
		return fmt.Errorf("kernel %q does not read %s, which is %s", n.Kernel, v, v.DType)
	}
	return nil
}

func (b *binder) step(n *ir.Node, split ir.Split, units int) (step, error) {
	out := n.Outputs[0]
	s := &site{n: n, split: split, units: units, width: out.Shape.Cols(), rows: b.rowsOf(out)}
	if split == ir.SplitCols && (units <= 0 || s.width%units != 0) {
		return step{}, fmt.Errorf("width %d not a multiple of %d units", s.width, units)
	}
	f := binders[n.Op]
	if f == nil {
		return step{}, fmt.Errorf("no kernel for %s", n.Op)
	}
	return f(b, s)
}

// bufs resolves the storage of several values.
func (b *binder) bufs(vs ...*ir.Value) ([]fbuf, error) {
	out := make([]fbuf, len(vs))
	for i, v := range vs {
		var err error
		if out[i], err = b.buf(v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// plainIO checks the kernel name of a node whose kernel has no variants
// and resolves its first input and its output.
func (b *binder) plainIO(n *ir.Node) (x, y fbuf, err error) {
	if err := plainKernel(n); err != nil {
		return x, y, err
	}
	io, err := b.bufs(n.Inputs[0], n.Outputs[0])
	if err != nil {
		return x, y, err
	}
	return io[0], io[1], nil
}

func (b *binder) getRows(s *site) (step, error) {
	n := s.n
	st := step{rows: s.rows}
	table := n.Inputs[0]
	kt, err := kernelType(n, "get_rows")
	if err != nil {
		return st, err
	}
	if err := sameType(n, kt, table); err != nil {
		return st, err
	}
	y, err := b.buf(n.Outputs[0])
	if err != nil {
		return st, err
	}
	ids, err := b.ids(n.Inputs[1])
	if err != nil {
		return st, err
	}
	if s.split == ir.SplitCols {
		return st, fmt.Errorf("get_rows cannot split by columns")
	}
	width := s.width
	if table.Kind == ir.Weight {
		gr, err := cpu.GetRowsQuant(kt)
		if err != nil {
			return st, err
		}
		w := b.weights[table]
		st.run = func(wk *worker, lo, hi int) { gr(y.get(wk), w, width, ids(), lo, hi) }
		return st, nil
	}
	x, err := b.buf(table)
	if err != nil {
		return st, err
	}
	st.run = func(wk *worker, lo, hi int) { cpu.GetRowsF32(y.get(wk), x.get(wk), width, ids(), lo, hi) }
	return st, nil
}

func (b *binder) rmsNorm(s *site) (step, error) {
	n := s.n
	st := step{rows: s.rows}
	x, y, err := b.plainIO(n)
	if err != nil {
		return st, err
	}
	var w []float32
	if n.Op == ir.OpRMSNormMul {
		wb, err := b.buf(n.Inputs[1])
		if err != nil {
			return st, err
		}
		w = wb.shared
	}
	width, eps := s.width, n.Attrs.Eps
	grp := n.Attrs.GroupSize
	if grp == 0 {
		grp = width
	}
	if s.split == ir.SplitCols {
		st.run = func(wk *worker, lo, hi int) {
			c0, c1 := s.colRange(lo, hi)
			cpu.RMSNormCols(x.get(wk), y.get(wk), s.rows(), width, grp, eps, w, c0, c1)
		}
	} else {
		st.run = func(wk *worker, lo, hi int) { cpu.RMSNorm(x.get(wk), y.get(wk), width, grp, eps, w, lo, hi) }
	}
	return st, nil
}

func (b *binder) elementWise(s *site) (step, error) {
	n := s.n
	st := step{rows: s.rows}
	x, y, err := b.plainIO(n)
	if err != nil {
		return st, err
	}
	var z fbuf
	width := s.width
	bcols := width
	broadcastRow := false
	if len(n.Inputs) > 1 {
		if z, err = b.buf(n.Inputs[1]); err != nil {
			return st, err
		}
		if len(n.Inputs[1].Shape) == 1 {
			bcols = int(n.Inputs[1].Shape[0])
			broadcastRow = true
		}
	}
	op := n.Op
	st.run = func(wk *worker, lo, hi int) {
		c0, c1 := s.colRange(lo, hi)
		r0, r1 := s.rowRange(lo, hi)
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
	return st, nil
}

func (b *binder) rope(s *site) (step, error) {
	n := s.n
	m := b.m
	st := step{rows: s.rows}
	x, y, err := b.plainIO(n)
	if err != nil {
		return st, err
	}
	width, a := s.width, n.Attrs
	var freqs []float32
	if a.RopeFreqs {
		if freqs, err = b.ropeFreqs(n.Inputs[2], a); err != nil {
			return st, err
		}
	}
	st.run = func(wk *worker, lo, hi int) {
		c0, c1 := s.colRange(lo, hi)
		r0, r1 := s.rowRange(lo, hi)
		xs, ys := x.get(wk), y.get(wk)
		for r := r0; r < r1; r++ {
			copy(ys[r*width+c0:r*width+c1], xs[r*width+c0:r*width+c1])
		}
		cpu.RopeColsCached(ys[r0*width:], r1-r0, width, m.pos[r0:r1], a.HeadDim, a.RopeDims, a.RopeBase, a.RopeScale, freqs, a.RopeNeoX, c0, c1, &wk.rope, wk.stamp)
	}
	return st, nil
}

// ropeFreqs returns a rope's frequency factors: the f32 weight's
// RopeDims/2 values (ir.Verify checked its type and shape).
func (b *binder) ropeFreqs(v *ir.Value, a ir.Attrs) ([]float32, error) {
	if v == nil || v.Kind != ir.Weight {
		return nil, fmt.Errorf("rope frequency factors %v are not a weight", v)
	}
	fb, err := b.buf(v)
	if err != nil {
		return nil, err
	}
	if len(fb.shared) != a.RopeDims/2 {
		return nil, fmt.Errorf("rope frequency factors %s hold %d values, want %d", v.Source, len(fb.shared), a.RopeDims/2)
	}
	return fb.shared, nil
}

// kvKernel checks a kv_write/attention kernel name against the cache type
// the model was built with.
func (b *binder) kvKernel(n *ir.Node, family string) error {
	kt, err := kernelType(n, family)
	if err != nil {
		return err
	}
	if kt != b.m.kvk.Type {
		return fmt.Errorf("kernel %q does not match the plan's %s KV cache", n.Kernel, b.m.kvk.Type)
	}
	return nil
}

func (b *binder) kvWrite(s *site) (step, error) {
	n := s.n
	m := b.m
	in := n.Inputs
	st := step{rows: b.rowsOf(in[0])}
	if err := b.kvKernel(n, "kv_write"); err != nil {
		return st, err
	}
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
	split, units := s.split, s.units
	st.run = func(wk *worker, lo, hi int) {
		c0, c1 := 0, xw
		r0, r1 := 0, m.T
		if split == ir.SplitCols {
			c0, c1 = cols(xw, units, lo, hi)
		} else if split == ir.SplitRows {
			r0, r1 = lo, hi
		}
		// kvRow is each row's position offset by its slot's first row.
		kv.Store(c, x.get(wk)[r0*xw:], m.kvRow[r0:r1], c0, c1)
	}
	return st, nil
}

func (b *binder) attention(s *site) (step, error) {
	n := s.n
	m := b.m
	in := n.Inputs
	st := step{rows: s.rows}
	family := "attention"
	if strings.HasPrefix(n.Kernel, "attention_fa/") {
		family = "attention_fa"
		if err := b.m.kvk.CheckFlash(); err != nil {
			return st, err
		}
	}
	if err := b.kvKernel(n, family); err != nil {
		return st, err
	}
	io, err := b.bufs(in[0], n.Outputs[0])
	if err != nil {
		return st, err
	}
	q, y := io[0], io[1]
	kc, err := b.slotViews(in[1])
	if err != nil {
		return st, err
	}
	vc, err := b.slotViews(in[2])
	if err != nil {
		return st, err
	}
	kv := m.kvk
	attend := kv.Attend
	if family == "attention_fa" {
		attend = kv.AttendFlash
	}
	a := n.Attrs
	hkv := a.NHeadKV
	split, units := s.split, s.units
	if split == ir.SplitCols && hkv%units != 0 {
		return st, fmt.Errorf("attention over %d KV heads cannot split into %d units", hkv, units)
	}
	qw := a.NHead * a.HeadDim
	var ba *blockAttn
	if family == "attention_fa" && split == ir.SplitCols && !q.private && !y.private {
		ba = b.blockAttn(a.NHead, a.NHeadKV, a.HeadDim)
		part := ba.part
		ba.piece = func(wk *worker, kh, blk int) {
			sq := m.seqs[0]
			cpu.FlashBlockPartial(part, q.get(wk)[sq.r0*qw:], kc[sq.slot], vc[sq.slot], m.pos[sq.r0], a.NHead, a.NHeadKV, a.HeadDim, a.Scale, kh, blk, wk.attn)
		}
		ba.merge = func(wk *worker, kh int) {
			sq := m.seqs[0]
			cpu.FlashMergeHead(y.get(wk)[sq.r0*qw:], part, m.pos[sq.r0], a.NHead, a.NHeadKV, a.HeadDim, kh, wk.attn)
		}
		st.blocks = ba
	}
	st.run = func(wk *worker, lo, hi int) {
		if ba != nil && ba.active {
			return // split by KV block after the group (runBlocks)
		}
		h0, h1 := 0, hkv
		r0, r1 := 0, m.T
		if split == ir.SplitCols {
			h0, h1 = lo*hkv/units, hi*hkv/units
		} else if split == ir.SplitRows {
			r0, r1 = lo, hi
		}
		// Each sequence of the batch attends over its own slot's cache as
		// if it were the whole batch: the kernel derives its arithmetic
		// (batched or single-token v-sum order, padded length) from the
		// sequence's positions and its slot's length, so the sequence's
		// bits do not depend on what else is in the batch.
		ys, qs := y.get(wk), q.get(wk)
		for _, sq := range m.seqs {
			t0, t1 := max(r0, sq.r0), min(r1, sq.r1)
			if t0 >= t1 {
				continue
			}
			o := sq.r0 * qw
			attend(ys[o:], qs[o:], kc[sq.slot], vc[sq.slot], m.pos[sq.r0:sq.r1], a.NHead, a.NHeadKV, a.HeadDim, a.Scale, h0, h1, t0-sq.r0, t1-sq.r0, wk.attn)
		}
	}
	return st, nil
}

func (b *binder) softmax(s *site) (step, error) {
	n := s.n
	st := step{rows: s.rows}
	x, y, err := b.plainIO(n)
	if err != nil {
		return st, err
	}
	if s.split == ir.SplitCols {
		return st, fmt.Errorf("softmax cannot split by columns")
	}
	width, scale := s.width, n.Attrs.Scale
	st.run = func(wk *worker, lo, hi int) { cpu.Softmax(y.get(wk), x.get(wk), width, scale, lo, hi) }
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
func (b *binder) matMul(s *site) (step, error) {
	n, split, units := s.n, s.split, s.units
	m := b.m
	var st step
	out := n.Outputs[0]
	xv, wv := n.Inputs[0], n.Inputs[1]
	kt, err := kernelType(n, "mat_mul")
	if err != nil {
		return st, err
	}
	if err := sameType(n, kt, wv); err != nil {
		return st, err
	}
	x, err := b.buf(xv)
	if err != nil {
		return st, err
	}
	y, err := b.buf(out)
	if err != nil {
		return st, err
	}
	k, err := cpu.NewMatMul(kt)
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
		freqs  []float32 // rope: frequency factors or nil
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
			ep := epi{op: ir.OpRope, attrs: e.Attrs}
			if e.Attrs.RopeFreqs {
				f, err := b.ropeFreqs(e.Freqs, e.Attrs)
				if err != nil {
					return st, err
				}
				ep.freqs = f
			}
			epis = append(epis, ep)
		default:
			return st, fmt.Errorf("unsupported epilogue %s", e.Op)
		}
	}
	if split == ir.SplitRows {
		// A row split would need per-row activation offsets; the grouping
		// pass never asks for it.
		return st, fmt.Errorf("mat-mul split by rows is not supported")
	}
	slot := -1 // the shared conversion buffer of (xv, qkind) in this group (sharedquant.go)
	if !x.private {
		slot = b.sharedSlot(xv, qkind)
	}
	st.run = func(wk *worker, lo, hi int) {
		M := st.rows()
		n0, n1 := 0, N
		if split == ir.SplitCols {
			n0, n1 = cols(N, units, lo, hi)
		}
		var act []byte
		acts := &wk.acts
		if slot >= 0 && m.nw > 1 && M >= sharedQuantMinRows && wk.sqAlone[slot] != wk.gkey {
			s := m.sq[slot]
			if wk.sqKey[slot] != wk.gkey {
				if m.fill(wk, s, k, x.get(wk), K, M) {
					wk.sqKey[slot] = wk.gkey
					wk.sacts.Reset()
				} else {
					wk.sqAlone[slot] = wk.gkey // converts alone in this group run
					m.alone.Add(1)
				}
			}
			if wk.sqKey[slot] == wk.gkey {
				act, acts = s.buf[:M*actRow], &wk.sacts
			}
		}
		if act == nil {
			if wk.qVal != xv || wk.qKind != qkind || wk.qStamp != wk.stamp || wk.qRows != M {
				k.QuantizeRows(x.get(wk), K, 0, M, wk.quant)
				wk.qVal, wk.qKind, wk.qRows, wk.qStamp = xv, qkind, M, wk.stamp
				wk.acts.Reset()
			}
			act = wk.quant[:M*actRow]
		}
		ys := y.get(wk)
		k.RunCached(K, w, act, M, ys, N, n0, n1, acts)
		for _, e := range epis {
			switch e.op {
			case ir.OpAdd:
				broadcastCols(cpu.AddCols, ys, ys, e.arg.get(wk), M, N, e.bcols, e.rowVec, n0, n1)
			case ir.OpRope:
				a := e.attrs
				cpu.RopeColsCached(ys, M, N, m.pos[:M], a.HeadDim, a.RopeDims, a.RopeBase, a.RopeScale, e.freqs, a.RopeNeoX, n0, n1, &wk.rope, wk.stamp)
			}
		}
	}
	return st, nil
}
