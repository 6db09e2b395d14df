package alloc

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/minfer/minfer/frontends/gguf"
	"github.com/minfer/minfer/internal/fixtures"
	"github.com/minfer/minfer/ir"
	"github.com/minfer/minfer/quant"
)

// tiny is a hand-built graph with a known optimal layout:
//
//	a = get_rows(emb, tok)   [T,16]  256 B at T=4
//	b = rms_norm(a)          [T,16]  256 B
//	c = mat_mul(b, w1)       [T,32]  512 B
//	d = mat_mul(c, w2)       [T,16]  256 B
//	e = add(d, a)            [T,16]  256 B
//	f = get_rows(e, out_ids) [R,16]   64 B at R=1
//	logits = mat_mul(f, w3)  [R,8]    32 B
type tiny struct {
	g                          *ir.Graph
	a, b, c, d, e, f, logits   *ir.Value
	kc, vc                     *ir.Value
	nA, nB, nC, nD, nE, nF, nL int
}

func newTiny(kvWidth int) *tiny {
	g := &ir.Graph{Arch: "test"}
	tk := &tiny{g: g}
	T, R := ir.DimT, ir.DimR
	g.Tokens = g.NewValue("tokens", ir.Input, quant.I32, ir.Shape{T})
	g.Positions = g.NewValue("positions", ir.Input, quant.I32, ir.Shape{T})
	g.OutIDs = g.NewValue("out_ids", ir.Input, quant.I32, ir.Shape{R})
	emb := g.NewValue("emb", ir.Weight, quant.F32, ir.Shape{10, 16})
	w1 := g.NewValue("w1", ir.Weight, quant.F16, ir.Shape{32, 16})
	w2 := g.NewValue("w2", ir.Weight, quant.Q8_0, ir.Shape{16, 32})
	w3 := g.NewValue("w3", ir.Weight, quant.F32, ir.Shape{8, 16})
	tk.kc = g.NewValue("k_cache", ir.State, quant.F32, ir.Shape{8, ir.Dim(kvWidth)})
	tk.vc = g.NewValue("v_cache", ir.State, quant.F32, ir.Shape{8, ir.Dim(2 * kvWidth)})
	tk.a = g.AddNode(ir.OpGetRows, "a", -1, ir.Attrs{}, ir.Shape{T, 16}, emb, g.Tokens)
	tk.b = g.AddNode(ir.OpRMSNorm, "b", 0, ir.Attrs{Eps: 1e-5}, ir.Shape{T, 16}, tk.a)
	tk.c = g.AddNode(ir.OpMatMul, "c", 0, ir.Attrs{}, ir.Shape{T, 32}, tk.b, w1)
	tk.d = g.AddNode(ir.OpMatMul, "d", 0, ir.Attrs{}, ir.Shape{T, 16}, tk.c, w2)
	tk.e = g.AddNode(ir.OpAdd, "e", 0, ir.Attrs{}, ir.Shape{T, 16}, tk.d, tk.a)
	tk.f = g.AddNode(ir.OpGetRows, "f", -1, ir.Attrs{}, ir.Shape{R, 16}, tk.e, g.OutIDs)
	tk.logits = g.AddNode(ir.OpMatMul, "logits", -1, ir.Attrs{}, ir.Shape{R, 8}, tk.f, w3)
	g.Logits = tk.logits
	tk.nA, tk.nB, tk.nC, tk.nD, tk.nE, tk.nF, tk.nL = 0, 1, 2, 3, 4, 5, 6
	return tk
}

// onePerGroup schedules every node in its own group, split by columns.
func onePerGroup(g *ir.Graph, name string) *ir.Schedule {
	s := &ir.Schedule{Name: name}
	for i := range g.Nodes {
		s.Groups = append(s.Groups, ir.Group{Steps: []ir.Step{{Node: i, Split: ir.SplitCols}}, Units: 1})
	}
	return s
}

// fusedNorms schedules like onePerGroup, except that a whole-row RMSNorm, the
// Mul by its weight and the mat-muls reading the result share one group, the
// norm and mul computed redundantly by every worker (as an executor saving
// the barrier in front of the Q/K/V and gate/up mat-muls would).
func fusedNorms(g *ir.Graph, name string) *ir.Schedule {
	s := &ir.Schedule{Name: name}
	redundant := map[*ir.Value]bool{} // outputs of Redundant steps in the current group
	for i, n := range g.Nodes {
		reads := len(n.Inputs) > 0 && redundant[n.Inputs[0]]
		switch {
		case (n.Op == ir.OpRMSNorm || n.Op == ir.OpRMSNormMul) && n.Attrs.GroupSize == 0:
			redundant = map[*ir.Value]bool{n.Outputs[0]: true}
			s.Groups = append(s.Groups, ir.Group{Steps: []ir.Step{{Node: i, Split: ir.Redundant}}, Units: 1})
		case reads && n.Op == ir.OpMul:
			redundant[n.Outputs[0]] = true
			last := &s.Groups[len(s.Groups)-1]
			last.Steps = append(last.Steps, ir.Step{Node: i, Split: ir.Redundant})
		case reads && n.Op == ir.OpMatMul:
			last := &s.Groups[len(s.Groups)-1]
			last.Steps = append(last.Steps, ir.Step{Node: i, Split: ir.SplitCols})
		default:
			redundant = map[*ir.Value]bool{}
			s.Groups = append(s.Groups, ir.Group{Steps: []ir.Step{{Node: i, Split: ir.SplitCols}}, Units: 1})
		}
	}
	return s
}

var tinyOpts = Options{MaxTokens: 4, MaxOut: 1, NCtx: 8, KVType: quant.F32, Align: 64}

func TestTinyExact(t *testing.T) {
	tk := newTiny(32)
	s := onePerGroup(tk.g, "prefill")
	p, err := PlanSchedule(tk.g, s, tinyOpts)
	if err != nil {
		t.Fatal(err)
	}
	// Liveness a[0,4] b[1,2] c[2,3] d[3,4] e[4,5] f[5,6] logits[6,6];
	// group 3 holds a, c and d live at once: 1024 bytes is optimal.
	want := map[*ir.Value]Slot{
		tk.c: {0, 512}, tk.a: {512, 256}, tk.b: {768, 256}, tk.d: {768, 256},
		tk.e: {0, 256}, tk.f: {256, 64}, tk.logits: {0, 32},
	}
	for v, w := range want {
		got, private, ok := p.SlotFor(v)
		if !ok || private || got != w {
			t.Errorf("%s: slot %+v private=%v ok=%v, want %+v shared", v.Name, got, private, ok, w)
		}
	}
	if len(p.Slots) != len(want) || len(p.Private) != 0 || p.PrivateBytes != 0 {
		t.Errorf("%d shared, %d private slots (%d private bytes), want 7, 0", len(p.Slots), len(p.Private), p.PrivateBytes)
	}
	if p.ArenaBytes != 1024 || p.SumBytes != 4*256+512+64+64 {
		t.Errorf("arena %d sum %d, want 1024 1664", p.ArenaBytes, p.SumBytes)
	}
	// Mat-muls: c reads 4 rows of 16 as f16 (w1 f16): 128 B; d reads 4 rows
	// of 32 as q8_0: 4*34 = 136 -> 192 aligned; logits 1 row of 16 f32: 64.
	if p.QuantBytes != 192 {
		t.Errorf("quant scratch %d, want 192", p.QuantBytes)
	}
	if p.AttnScratch != 0 {
		t.Errorf("attention scratch %d without attention", p.AttnScratch)
	}
	// KV: 8 positions of 32 and 64 f32.
	if p.KV[tk.kc.ID] != (Slot{0, 1024}) || p.KV[tk.vc.ID] != (Slot{1024, 2048}) || p.KVBytes != 3072 {
		t.Errorf("KV %v total %d", p.KV, p.KVBytes)
	}
	if sl, ok := p.KVFor(tk.vc); !ok || sl.Offset != 1024 {
		t.Errorf("KVFor(v_cache) = %v %v", sl, ok)
	}
	if _, _, ok := p.SlotFor(tk.g.Tokens); ok {
		t.Error("an input has an arena slot")
	}
	if err := p.ValidateSchedule(tk.g, s); err != nil {
		t.Fatal(err)
	}
	tk.g.Prefill = s
	if err := p.Validate(tk.g); err != nil {
		t.Fatal(err)
	}
}

func TestTinyPrivate(t *testing.T) {
	tk := newTiny(32)
	// b is computed redundantly in the group of c: b lives in private
	// scratch for group 1 only.
	s := &ir.Schedule{Name: "decode", Groups: []ir.Group{
		{Steps: []ir.Step{{Node: tk.nA, Split: ir.SplitCols}}, Units: 1},
		{Steps: []ir.Step{{Node: tk.nB, Split: ir.Redundant}, {Node: tk.nC, Split: ir.SplitCols}}, Units: 1},
		{Steps: []ir.Step{{Node: tk.nD, Split: ir.SplitRows}}, Units: 1},
		{Steps: []ir.Step{{Node: tk.nE, Split: ir.SplitRows}}, Units: 1},
		{Steps: []ir.Step{{Node: tk.nF, Split: ir.Single}}, Units: 1},
		{Steps: []ir.Step{{Node: tk.nL, Split: ir.SplitCols}}, Units: 1},
	}}
	p, err := PlanSchedule(tk.g, s, tinyOpts)
	if err != nil {
		t.Fatal(err)
	}
	if sl, private, ok := p.SlotFor(tk.b); !ok || !private || sl != (Slot{0, 256}) {
		t.Errorf("b: %+v private=%v ok=%v", sl, private, ok)
	}
	if p.PrivateBytes != 256 || p.ArenaBytes != 1024 {
		t.Errorf("private %d arena %d, want 256 1024", p.PrivateBytes, p.ArenaBytes)
	}
	if _, ok := p.Slots[tk.b.ID]; ok {
		t.Error("a redundant value has a shared slot")
	}
	tk.g.Decode = s
	if err := p.Validate(tk.g); err != nil {
		t.Fatal(err)
	}
	// A plan that puts b in the shared arena is wrong: every worker would
	// write all of it.
	q := clonePlan(p)
	q.Slots[tk.b.ID] = Slot{1024, 256}
	q.ArenaBytes = 1280
	delete(q.Private, tk.b.ID)
	wantErr(t, q.Validate(tk.g), "private scratch has no slot", "does not hold")
}

func TestOptionErrors(t *testing.T) {
	tk := newTiny(16)
	s := onePerGroup(tk.g, "prefill")
	o := tinyOpts
	o.KVType = quant.Q8_0
	_, err := PlanSchedule(tk.g, s, o)
	wantErr(t, err, "not a multiple of the q8_0 block size 32")
	for _, mod := range []func(*Options){
		func(o *Options) { o.MaxTokens = 0 },
		func(o *Options) { o.MaxOut = -1 },
		func(o *Options) { o.NCtx = 0 },
		func(o *Options) { o.Align = 48 },
		func(o *Options) { o.Align = 1 << 40 },
		func(o *Options) { o.KVType = quant.Q4_K },
	} {
		o := tinyOpts
		mod(&o)
		if _, err := PlanSchedule(tk.g, s, o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
	// A schedule missing a node is rejected.
	s.Groups = s.Groups[:len(s.Groups)-1]
	if _, err := PlanSchedule(tk.g, s, tinyOpts); err == nil {
		t.Error("incomplete schedule accepted")
	}
	// Align 0 means 64.
	o = tinyOpts
	o.Align = 0
	p, err := PlanSchedule(tk.g, onePerGroup(tk.g, "prefill"), o)
	if err != nil || p.Options.Align != 64 || p.ArenaBytes != 1024 {
		t.Errorf("align 0: %v %+v", err, p)
	}
}

func clonePlan(p *Plan) *Plan {
	q := *p
	q.Slots = maps.Clone(p.Slots)
	q.Private = maps.Clone(p.Private)
	q.KV = maps.Clone(p.KV)
	return &q
}

func wantErr(t *testing.T, err error, subs ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("no error, want %q", subs)
		return
	}
	for _, s := range subs {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %q", err, s)
		}
	}
}

func loadGraph(t *testing.T, name string) *ir.Graph {
	t.Helper()
	f, err := gguf.Open(fixtures.Path(t, "models", name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	g, err := gguf.BuildGraph(f)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestRealGraphs(t *testing.T) {
	for _, model := range []string{"qwen2-synth-q8_0.gguf", "qwen3-synth-q4_k_m.gguf", "llama-synth-f32.gguf"} {
		t.Run(model, func(t *testing.T) {
			g := loadGraph(t, model)
			for _, sc := range []struct {
				s *ir.Schedule
				o Options
			}{
				{onePerGroup(g, "prefill"), Options{MaxTokens: 512, MaxOut: 512, NCtx: 512, KVType: quant.F16, Align: 64}},
				{fusedNorms(g, "prefill"), Options{MaxTokens: 512, MaxOut: 1, NCtx: 512, KVType: quant.F16, Align: 64}},
				{fusedNorms(g, "decode"), Options{MaxTokens: 1, MaxOut: 1, NCtx: 512, KVType: quant.Q8_0, Align: 64}},
			} {
				if err := ir.VerifySchedule(g, sc.s); err != nil {
					t.Fatal(err)
				}
				p, err := PlanSchedule(g, sc.s, sc.o)
				if err != nil {
					t.Fatal(err)
				}
				if err := p.ValidateSchedule(g, sc.s); err != nil {
					t.Fatal(err)
				}
				if p.ArenaBytes+p.PrivateBytes >= p.SumBytes {
					t.Errorf("arena %d + private %d not below the sum %d", p.ArenaBytes, p.PrivateBytes, p.SumBytes)
				}
				if lb := liveLowerBound(g, sc.s, p); p.ArenaBytes < lb {
					t.Errorf("arena %d below the live lower bound %d", p.ArenaBytes, lb)
				} else {
					t.Logf("%s %d groups T=%d R=%d: arena %d (live bound %d) + private %d vs sum %d: %.1f%%; quant %d, KV %d",
						sc.s.Name, len(sc.s.Groups), sc.o.MaxTokens, sc.o.MaxOut, p.ArenaBytes, lb, p.PrivateBytes, p.SumBytes,
						100*float64(p.ArenaBytes+p.PrivateBytes)/float64(p.SumBytes), p.QuantBytes, p.KVBytes)
				}
				for _, v := range g.Values {
					_, _, ok := p.SlotFor(v)
					if (v.Kind == ir.Activation) != ok {
						t.Errorf("%s: has slot %v", v, ok)
					}
					if _, ok := p.KVFor(v); (v.Kind == ir.State) != ok {
						t.Errorf("%s: has KV region %v", v, ok)
					}
				}
			}
		})
	}
}

// liveLowerBound is the largest total of aligned sizes of the shared values
// live in one group: no layout can use less.
func liveLowerBound(g *ir.Graph, s *ir.Schedule, p *Plan) int64 {
	a, err := analyze(g, s, p.Options)
	if err != nil {
		panic(err)
	}
	var best int64
	for gi := range s.Groups {
		var sum int64
		for _, iv := range a.shared {
			if iv.start <= gi && gi <= iv.end {
				sum += alignUp(iv.size, 64)
			}
		}
		best = max(best, sum)
	}
	return best
}

func TestKVBytes(t *testing.T) {
	g := loadGraph(t, "qwen2-synth-q8_0.gguf")
	s := onePerGroup(g, "decode")
	width := g.Params.NHeadKV * g.Params.HeadDim
	for _, kt := range []quant.Type{quant.F32, quant.F16, quant.Q8_0} {
		const nctx = 256
		p, err := PlanSchedule(g, s, Options{MaxTokens: 1, MaxOut: 1, NCtx: nctx, KVType: kt, Align: 64})
		if err != nil {
			t.Fatal(err)
		}
		rs, _ := kt.RowSize(width)
		want := int64(2 * g.Params.NLayer * nctx * rs)
		if p.KVBytes != want || len(p.KV) != 2*g.Params.NLayer {
			t.Errorf("%s: KV %d bytes in %d regions, want %d in %d", kt, p.KVBytes, len(p.KV), want, 2*g.Params.NLayer)
		}
		if p.AttnScratch != 2*nctx {
			t.Errorf("attention scratch %d", p.AttnScratch)
		}
		t.Logf("%s: %d layers x 2 x %d positions x %d bytes = %d", kt, g.Params.NLayer, nctx, rs, p.KVBytes)
		// Every KVWrite output resolves to its cache's region.
		for _, n := range g.Nodes {
			if n.Op == ir.OpKVWrite {
				out := n.Outputs[0]
				a, ok1 := p.KVFor(out)
				b, ok2 := p.KVFor(n.Inputs[2])
				if !ok1 || !ok2 || a != b {
					t.Errorf("%s: region %v, cache's %v", out, a, b)
				}
			}
		}
	}
}

func TestValidateCatchesCorruption(t *testing.T) {
	g := loadGraph(t, "qwen2-synth-q8_0.gguf")
	s := fusedNorms(g, "prefill")
	g.Prefill = s
	p, err := PlanSchedule(g, s, Options{MaxTokens: 64, MaxOut: 64, NCtx: 128, KVType: quant.Q8_0, Align: 64})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Validate(g); err != nil {
		t.Fatal(err)
	}
	// out_rows is read by out_norm, which shares the logits' group (the
	// norm and its mul are redundant there), so both are live in it.
	var x *ir.Value
	for _, v := range g.Values {
		if v.Name == "out_rows" {
			x = v
		}
	}
	if _, ok := p.Slots[x.ID]; !ok {
		t.Fatal("out_rows is not in the arena")
	}
	var priv *ir.Value
	for _, v := range g.Values {
		if _, ok := p.Private[v.ID]; ok {
			priv = v
			break
		}
	}
	if priv == nil {
		t.Fatal("no private values in a fused schedule")
	}
	var kv []int
	for id := range p.KV {
		kv = append(kv, id)
	}
	cases := []struct {
		name string
		mod  func(q *Plan)
		want string
	}{
		{"overlap", func(q *Plan) { q.Slots[x.ID] = Slot{q.Slots[g.Logits.ID].Offset, q.Slots[x.ID].Size} }, "overlap while both are live"},
		{"out of bounds", func(q *Plan) { q.Slots[x.ID] = Slot{q.ArenaBytes, q.Slots[x.ID].Size} }, "outside"},
		{"negative", func(q *Plan) { q.Slots[x.ID] = Slot{-64, q.Slots[x.ID].Size} }, "aligned"},
		{"huge size", func(q *Plan) { q.Slots[x.ID] = Slot{64, 1 << 62} }, "outside"},
		{"missing", func(q *Plan) { delete(q.Slots, g.Logits.ID) }, "no slot for"},
		{"misaligned", func(q *Plan) { s := q.Slots[x.ID]; s.Offset += 8; q.Slots[x.ID] = s }, "not 64-aligned"},
		{"short", func(q *Plan) { s := q.Slots[x.ID]; s.Size -= 4; q.Slots[x.ID] = s }, "needs"},
		{"stray", func(q *Plan) { q.Slots[g.Tokens.ID] = Slot{0, 64} }, "does not hold"},
		{"private missing", func(q *Plan) { delete(q.Private, priv.ID) }, "private scratch has no slot"},
		{"private oob", func(q *Plan) { q.PrivateBytes = 0 }, "outside"},
		{"kv overlap", func(q *Plan) { q.KV[kv[0]] = q.KV[kv[1]] }, "overlap"},
		{"kv missing", func(q *Plan) { delete(q.KV, kv[0]) }, "KV has no slot"},
		{"arena too big", func(q *Plan) { q.ArenaBytes = q.SumBytes + 64 }, "one buffer per value"},
		{"quant", func(q *Plan) { q.QuantBytes-- }, "quant scratch"},
		{"attn", func(q *Plan) { q.AttnScratch = 1 }, "attention scratch"},
		{"options", func(q *Plan) { q.Options.MaxTokens = 128 }, "needs"},
		{"schedule", func(q *Plan) { q.Schedule = "nope" }, "does not have"},
	}
	for _, c := range cases {
		q := clonePlan(p)
		c.mod(q)
		err := q.Validate(g)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

// randomGraph builds a random DAG of n adds of random widths, each reading
// one or two earlier activations, scheduled in random groups with random
// Redundant steps (kept only where the schedule stays valid).
func randomGraph(r *rand.Rand, n int) (*ir.Graph, *ir.Schedule) {
	g := &ir.Graph{Arch: "random"}
	T := ir.DimT
	g.Tokens = g.NewValue("tokens", ir.Input, quant.I32, ir.Shape{T})
	g.Positions = g.NewValue("positions", ir.Input, quant.I32, ir.Shape{T})
	g.OutIDs = g.NewValue("out_ids", ir.Input, quant.I32, ir.Shape{ir.DimR})
	emb := g.NewValue("emb", ir.Weight, quant.F32, ir.Shape{8, 16})
	acts := []*ir.Value{g.AddNode(ir.OpGetRows, "x0", -1, ir.Attrs{}, ir.Shape{T, 16}, emb, g.Tokens)}
	for i := 1; i < n; i++ {
		ins := []*ir.Value{acts[len(acts)-1-r.IntN(min(len(acts), 4))]}
		if r.IntN(2) == 0 {
			ins = append(ins, acts[r.IntN(len(acts))])
		}
		w := ir.Dim(16 * (1 + r.IntN(8)))
		acts = append(acts, g.AddNode(ir.OpAdd, fmt.Sprintf("x%d", i), 0, ir.Attrs{}, ir.Shape{T, w}, ins...))
	}
	g.Logits = acts[len(acts)-1]
	s := &ir.Schedule{Name: "prefill"}
	for i := range g.Nodes {
		if i == 0 || r.IntN(3) == 0 {
			s.Groups = append(s.Groups, ir.Group{Units: 1})
		}
		split := ir.SplitCols
		if r.IntN(2) == 0 {
			split = ir.Redundant
		}
		last := &s.Groups[len(s.Groups)-1]
		last.Steps = append(last.Steps, ir.Step{Node: i, Split: split})
	}
	// Private scratch is only readable inside its group, and a redundant
	// step needs its same-group inputs computed redundantly too: demote
	// redundant steps to column splits until both hold.
	for changed := true; changed; {
		changed = false
		where := map[*ir.Value]*ir.Step{}
		groupOf := map[*ir.Value]int{}
		for gi := range s.Groups {
			for si := range s.Groups[gi].Steps {
				st := &s.Groups[gi].Steps[si]
				n := g.Nodes[st.Node]
				for _, in := range n.Inputs {
					ps, ok := where[in]
					if !ok || ps.Split != ir.Redundant && (groupOf[in] != gi || st.Split != ir.Redundant) {
						continue
					}
					if groupOf[in] != gi {
						ps.Split, changed = ir.SplitCols, true
					} else if ps.Split != ir.Redundant {
						st.Split, changed = ir.SplitCols, true
					}
				}
				where[n.Outputs[0]], groupOf[n.Outputs[0]] = st, gi
			}
		}
	}
	return g, s
}

// naiveOverlap reports whether two values of one space, live in a common
// group, share a byte: the pairwise definition Validate's sweep implements.
func naiveOverlap(ivs []interval, slots map[int]Slot) bool {
	for i, x := range ivs {
		for _, y := range ivs[i+1:] {
			sx, sy := slots[x.id], slots[y.id]
			if x.size > 0 && y.size > 0 && x.start <= y.end && y.start <= x.end &&
				sx.Offset < sy.End() && sy.Offset < sx.End() {
				return true
			}
		}
	}
	return false
}

func TestRandomGraphs(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var overlaps, privates, ratio float64
	defer func() {
		t.Logf("300 graphs: %.0f with private values, %.0f squeezed plans overlapping; mean arena/sum %.1f%%", privates, overlaps, 100*ratio/300)
	}()
	for iter := range 300 {
		g, s := randomGraph(r, 2+r.IntN(40))
		if err := ir.VerifySchedule(g, s); err != nil {
			t.Fatalf("iteration %d: generator made a bad schedule: %v", iter, err)
		}
		o := Options{MaxTokens: 1 + r.IntN(9), MaxOut: 1, NCtx: 4, KVType: quant.F32, Align: 64}
		p, err := PlanSchedule(g, s, o)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.ValidateSchedule(g, s); err != nil {
			t.Fatalf("iteration %d: %v", iter, err)
		}
		a, _ := analyze(g, s, o)
		if naiveOverlap(a.shared, p.Slots) || naiveOverlap(a.private, p.Private) {
			t.Fatalf("iteration %d: planned slots overlap", iter)
		}
		if lb := liveLowerBound(g, s, p); p.ArenaBytes < lb {
			t.Fatalf("iteration %d: arena %d below bound %d", iter, p.ArenaBytes, lb)
		}
		// Squeeze random shared slots down to low offsets: Validate must
		// report an overlap exactly when the pairwise check finds one.
		ratio += float64(p.ArenaBytes+p.PrivateBytes) / float64(p.SumBytes)
		if len(a.private) > 0 {
			privates++
		}
		if len(a.shared) == 0 {
			continue
		}
		q := clonePlan(p)
		for range 1 + r.IntN(3) {
			iv := a.shared[r.IntN(len(a.shared))]
			sl := q.Slots[iv.id]
			sl.Offset = 64 * r.Int64N(sl.Offset/64+1)
			q.Slots[iv.id] = sl
		}
		err = q.ValidateSchedule(g, s)
		got := err != nil && strings.Contains(err.Error(), "overlap")
		if want := naiveOverlap(a.shared, q.Slots); got != want {
			t.Fatalf("iteration %d: Validate overlap %v (%v), pairwise %v", iter, got, err, want)
		}
		if got {
			overlaps++
		}
	}
}
