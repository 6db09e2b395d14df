// Package alloc plans the memory of one schedule of a graph: where every
// activation lives, how much per-worker scratch the executor must reserve,
// and where each KV cache region sits.
//
// Three memory spaces are planned:
//   - the shared activation arena, read and written by all workers, holding
//     the outputs of steps whose work is split across workers (SplitCols,
//     SplitRows, Single);
//   - each worker's private scratch, holding the outputs of Redundant steps
//     (every worker computes the whole value into its own copy);
//   - the KV regions, one per persistent State value of the graph.
//
// Liveness is tracked at group granularity over the schedule order: a value
// produced in group i and last read in group j is live over [i, j]
// inclusive, and the graph's logits stay live to the end of the schedule.
// Values whose live intervals overlap never share bytes. Offsets are chosen
// by greedy first-fit in order of decreasing size (the classic offset
// assignment for static graphs), which keeps the arena close to the largest
// set of simultaneously live values.
package alloc

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"

	"github.com/minfer/minfer/ir"
	"github.com/minfer/minfer/quant"
)

// Options are the run-time limits a plan is made for.
type Options struct {
	MaxTokens int        // the largest batch T the arena must hold (e.g. 512)
	MaxOut    int        // the largest R (rows of logits requested per call)
	NCtx      int        // KV cache positions of one slot (sequence)
	KVType    quant.Type // F32, F16 or Q8_0 cache elements
	Align     int        // byte alignment of every offset (64); 0 means 64
	// Slots is the number of sequences whose KV caches the plan holds side
	// by side: each cache's region is Slots × NCtx rows, slot s at rows
	// s·NCtx … s·NCtx+NCtx-1. 0 (plans written before slots existed, and
	// omitted from the JSON so a one-slot plan reads as before) means 1.
	Slots int `json:",omitempty"`
}

// MaxSlots bounds Options.Slots.
const MaxSlots = 1024

// SlotCount is the number of KV slots (Slots, 0 read as 1).
func (o Options) SlotCount() int { return max(1, o.Slots) }

// DefaultAlign is the offset alignment used when Options.Align is 0.
const DefaultAlign = 64

// Slot is a byte range in one memory space.
type Slot struct{ Offset, Size int64 }

// End is the first byte after the slot.
func (s Slot) End() int64 { return s.Offset + s.Size }

// Plan is the memory layout of one schedule of a graph.
type Plan struct {
	Schedule     string       // schedule name
	ArenaBytes   int64        // shared activation arena (all workers read/write it)
	Slots        map[int]Slot // value ID -> slot in the shared arena (activations computed split across workers)
	PrivateBytes int64        // bytes of EACH worker's private scratch
	Private      map[int]Slot // value ID -> slot in a worker's private scratch (values produced by Redundant steps)
	// QuantBytes is the per-worker scratch for a mat-mul's activation rows
	// converted to the weight's vec-dot type: the maximum over mat-muls of
	// rows × VecDotType().RowSize(K), rows being MaxTokens (or MaxOut for
	// R-row inputs). Mat-muls whose vec-dot type is f32 are counted too.
	QuantBytes  int64
	AttnScratch int64        // per-worker attention scratch, in float32s: 2*NCtx (0 without attention)
	KVBytes     int64        // all KV regions
	KV          map[int]Slot // State value ID (the root cache value, not its versions) -> region of Options.SlotCount() × NCtx rows
	SumBytes    int64        // what the activations (shared and private) would take with one aligned buffer each
	Options     Options
}

// SlotFor returns the slot of activation v: its place in the shared arena,
// or in each worker's private scratch when private is true. ok is false for
// values that have no activation slot (inputs, weights, state and its
// versions: see KVFor).
func (p *Plan) SlotFor(v *ir.Value) (slot Slot, private, ok bool) {
	if s, ok := p.Slots[v.ID]; ok {
		return s, false, true
	}
	if s, ok := p.Private[v.ID]; ok {
		return s, true, true
	}
	return Slot{}, false, false
}

// KVFor returns the KV region of a State value or of one of its versions (a
// KVWrite output resolves to the region of its StateOf root).
func (p *Plan) KVFor(v *ir.Value) (Slot, bool) {
	root := StateRoot(v)
	if root == nil {
		return Slot{}, false
	}
	s, ok := p.KV[root.ID]
	return s, ok
}

// StateRoot follows StateOf links to the persistent value whose storage v
// shares; it returns nil if v is not state.
func StateRoot(v *ir.Value) *ir.Value {
	for i := 0; v != nil && v.StateOf != nil; i++ {
		if i > 1<<16 {
			return nil // a StateOf cycle: not state of anything
		}
		v = v.StateOf
	}
	if v == nil || v.Kind != ir.State {
		return nil
	}
	return v
}

// interval is one planned value: its size in bytes and the groups it is live in.
type interval struct {
	id         int
	size       int64 // exact bytes
	start, end int   // first and last group it is live in
}

// analysis is what both the planner and Validate derive from a graph,
// a schedule and options.
type analysis struct {
	shared, private []interval
	sizes           map[int]int64 // value ID -> exact bytes, planned values only
	quantBytes      int64
	attnScratch     int64
	kv              []interval // State roots: id and region bytes (start/end unused)
	sumBytes        int64
}

func (o Options) align() int64 {
	if o.Align == 0 {
		return DefaultAlign
	}
	return int64(o.Align)
}

func (o Options) check() error {
	if o.MaxTokens <= 0 {
		return fmt.Errorf("alloc: MaxTokens %d must be positive", o.MaxTokens)
	}
	if o.MaxOut <= 0 {
		return fmt.Errorf("alloc: MaxOut %d must be positive", o.MaxOut)
	}
	if o.NCtx <= 0 {
		return fmt.Errorf("alloc: NCtx %d must be positive", o.NCtx)
	}
	if o.Slots < 0 || o.Slots > MaxSlots {
		return fmt.Errorf("alloc: Slots %d must be 1..%d", o.Slots, MaxSlots)
	}
	if a := o.Align; a < 0 || a > maxAlign || (a > 0 && bits.OnesCount(uint(a)) != 1) {
		return fmt.Errorf("alloc: Align %d must be a power of two up to %d", a, maxAlign)
	}
	switch o.KVType {
	case quant.F32, quant.F16, quant.Q8_0:
	default:
		return fmt.Errorf("alloc: KV type %s is not supported (f32, f16, q8_0)", o.KVType)
	}
	return nil
}

func alignUp(n, a int64) int64 { return (n + a - 1) / a * a }

// maxAlign bounds Options.Align (a page of huge pages is plenty).
const maxAlign = 1 << 21

// maxBytes bounds every size the planner computes, so sums cannot overflow.
const maxBytes = int64(1) << 52

// rows resolves a dimension: DimT to MaxTokens, DimR to MaxOut.
func (o Options) dim(d ir.Dim) (int64, error) {
	switch d {
	case ir.DimT:
		return int64(o.MaxTokens), nil
	case ir.DimR:
		return int64(o.MaxOut), nil
	}
	if d < 0 {
		return 0, fmt.Errorf("unknown symbolic dimension %d", d)
	}
	return int64(d), nil
}

// valueBytes is the size of v with its symbolic dimensions resolved.
func (o Options) valueBytes(v *ir.Value) (int64, error) {
	if len(v.Shape) == 0 {
		rs, err := v.DType.RowSize(1)
		return int64(rs), err
	}
	n := int64(1)
	for _, d := range v.Shape[:len(v.Shape)-1] {
		x, err := o.dim(d)
		if err != nil {
			return 0, err
		}
		if x != 0 && n > maxBytes/x {
			return 0, fmt.Errorf("value %s is too large", v)
		}
		n *= x
	}
	cols, err := o.dim(v.Shape[len(v.Shape)-1])
	if err != nil {
		return 0, err
	}
	if cols > maxBytes {
		return 0, fmt.Errorf("value %s is too large", v)
	}
	rs, err := v.DType.RowSize(int(cols))
	if err != nil {
		return 0, err
	}
	if rs != 0 && n > maxBytes/int64(rs) {
		return 0, fmt.Errorf("value %s is too large", v)
	}
	return n * int64(rs), nil
}

// analyze derives liveness, sizes and scratch needs of schedule s.
func analyze(g *ir.Graph, s *ir.Schedule, o Options) (*analysis, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	if s == nil {
		return nil, fmt.Errorf("alloc: no schedule")
	}
	if err := ir.VerifySchedule(g, s); err != nil {
		return nil, fmt.Errorf("alloc: %w", err)
	}
	al := o.align()
	a := &analysis{sizes: make(map[int]int64)}
	type life struct {
		start, end int
		private    bool
	}
	lives := make(map[*ir.Value]*life)
	var order []*ir.Value // planned values in production order
	last := len(s.Groups) - 1
	for gi, grp := range s.Groups {
		for _, st := range grp.Steps {
			n := g.Nodes[st.Node]
			for _, in := range n.Inputs {
				if l := lives[in]; l != nil && gi > l.end {
					l.end = gi
				}
			}
			if n.Op == ir.OpMatMul && len(n.Inputs) >= 2 {
				x, w := n.Inputs[0], n.Inputs[1]
				if len(x.Shape) != 2 {
					return nil, fmt.Errorf("alloc: node #%d %s: input %s is not rank 2", n.ID, n.Op, x)
				}
				rows, err := o.dim(x.Shape[0])
				if err != nil {
					return nil, fmt.Errorf("alloc: node #%d %s: %v", n.ID, n.Op, err)
				}
				rs, err := w.DType.VecDotType().RowSize(x.Shape.Cols())
				if err != nil {
					return nil, fmt.Errorf("alloc: node #%d %s: activation rows: %v", n.ID, n.Op, err)
				}
				if rs != 0 && rows > maxBytes/int64(rs) {
					return nil, fmt.Errorf("alloc: node #%d %s: activation rows too large", n.ID, n.Op)
				}
				a.quantBytes = max(a.quantBytes, alignUp(rows*int64(rs), al))
			}
			if n.Op == ir.OpAttention {
				a.attnScratch = 2 * int64(o.NCtx)
			}
			for _, out := range n.Outputs {
				if out.Kind != ir.Activation {
					continue // state versions share their root's KV region
				}
				size, err := o.valueBytes(out)
				if err != nil {
					return nil, fmt.Errorf("alloc: %v", err)
				}
				a.sizes[out.ID] = size
				lives[out] = &life{start: gi, end: gi, private: st.Split == ir.Redundant}
				order = append(order, out)
			}
		}
	}
	if g.Logits != nil {
		if l := lives[g.Logits]; l != nil {
			l.end = last
		}
	}
	for _, v := range order {
		l := lives[v]
		iv := interval{id: v.ID, size: a.sizes[v.ID], start: l.start, end: l.end}
		a.sumBytes += alignUp(iv.size, al)
		if l.private {
			a.private = append(a.private, iv)
		} else {
			a.shared = append(a.shared, iv)
		}
	}
	// Every activation must be produced by the schedule.
	for _, v := range g.Values {
		if v.Kind == ir.Activation {
			if _, ok := a.sizes[v.ID]; !ok {
				return nil, fmt.Errorf("alloc: activation %s is not produced by the %s schedule", v, s.Name)
			}
		}
	}
	for _, v := range g.Values {
		if v.Kind != ir.State || v.StateOf != nil {
			continue
		}
		if len(v.Shape) != 2 || v.Shape.Cols() <= 0 {
			return nil, fmt.Errorf("alloc: state %s must be [positions, width]", v)
		}
		bs := o.KVType.BlockSize()
		if v.Shape.Cols()%bs != 0 {
			return nil, fmt.Errorf("alloc: state %s: width %d is not a multiple of the %s block size %d", v, v.Shape.Cols(), o.KVType, bs)
		}
		rs, err := o.KVType.RowSize(v.Shape.Cols())
		if err != nil {
			return nil, fmt.Errorf("alloc: state %s: %v", v, err)
		}
		rows := int64(o.NCtx) * int64(o.SlotCount())
		if rs != 0 && rows > maxBytes/int64(rs) {
			return nil, fmt.Errorf("alloc: state %s: region too large", v)
		}
		a.kv = append(a.kv, interval{id: v.ID, size: rows * int64(rs)})
	}
	return a, nil
}

// PlanSchedule plans the memory of schedule s of graph g for the limits in o.
// It fails if the schedule does not verify against the graph, an activation
// is not produced by the schedule, an option is out of range or a cache's
// width is not a multiple of the KV type's block size.
func PlanSchedule(g *ir.Graph, s *ir.Schedule, o Options) (*Plan, error) {
	a, err := analyze(g, s, o)
	if err != nil {
		return nil, err
	}
	if o.Align == 0 {
		o.Align = DefaultAlign
	}
	al := int64(o.Align)
	p := &Plan{
		Schedule:    s.Name,
		QuantBytes:  a.quantBytes,
		AttnScratch: a.attnScratch,
		SumBytes:    a.sumBytes,
		Options:     o,
	}
	p.Slots, p.ArenaBytes = assign(a.shared, al)
	p.Private, p.PrivateBytes = assign(a.private, al)
	p.KV = make(map[int]Slot, len(a.kv))
	for _, r := range a.kv {
		p.KV[r.id] = Slot{Offset: p.KVBytes, Size: r.size}
		p.KVBytes += alignUp(r.size, al)
	}
	return p, nil
}

// orderings are the placement orders assign tries; it keeps the smallest.
var orderings = []func(a, b interval) int{
	// Greedy by size: the largest values claim the low offsets first.
	func(a, b interval) int {
		return cmp.Or(cmp.Compare(b.size, a.size), cmp.Compare(a.start, b.start), cmp.Compare(a.id, b.id))
	},
	// Greedy by breadth: longest-lived values first, then by size.
	func(a, b interval) int {
		return cmp.Or(cmp.Compare(b.end-b.start, a.end-a.start), cmp.Compare(b.size, a.size), cmp.Compare(a.id, b.id))
	},
	// Production order (a linear scan).
	func(a, b interval) int {
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.id, b.id))
	},
}

// assign gives each interval an aligned offset such that intervals live at
// the same time do not overlap, trying each ordering with first-fit and
// keeping the smallest peak (ties go to the earlier ordering).
func assign(ivs []interval, al int64) (map[int]Slot, int64) {
	var best map[int]Slot
	bestPeak := int64(-1)
	for _, less := range orderings {
		slots, peak := firstFit(slices.SortedStableFunc(slices.Values(ivs), less), al)
		if bestPeak < 0 || peak < bestPeak {
			best, bestPeak = slots, peak
		}
	}
	if bestPeak < 0 {
		return map[int]Slot{}, 0
	}
	return best, bestPeak
}

// firstFit places intervals in the given order at the lowest aligned offset
// that clears every already placed interval live at the same time.
func firstFit(ivs []interval, al int64) (map[int]Slot, int64) {
	type placed struct {
		interval
		off int64
	}
	done := make([]placed, 0, len(ivs))
	slots := make(map[int]Slot, len(ivs))
	var peak int64
	var conflicts []placed
	for _, iv := range ivs {
		conflicts = conflicts[:0]
		for _, p := range done {
			if p.start <= iv.end && iv.start <= p.end && p.size > 0 {
				conflicts = append(conflicts, p)
			}
		}
		slices.SortFunc(conflicts, func(a, b placed) int { return cmp.Compare(a.off, b.off) })
		var off int64
		if iv.size > 0 {
			for _, c := range conflicts {
				if off+iv.size <= c.off {
					break
				}
				off = max(off, alignUp(c.off+c.size, al))
			}
		}
		done = append(done, placed{iv, off})
		slots[iv.id] = Slot{Offset: off, Size: iv.size}
		peak = max(peak, alignUp(off+iv.size, al))
	}
	return slots, peak
}
