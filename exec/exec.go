// Package exec runs a compiled graph: the fused groups of its prefill or
// decode schedule on a persistent worker pool, one barrier per group, with
// the kernels the compiler selected and the memory the allocator planned.
// It needs no GGUF parser and makes no decision a pass could make: splits,
// groups, kernels and buffer offsets all come from the plan.
package exec

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/minfer/minfer/alloc"
	"github.com/minfer/minfer/backends/cpu"
	"github.com/minfer/minfer/ir"
	"github.com/minfer/minfer/quant"
)

// WeightSource supplies a weight tensor's bytes by its source name.
type WeightSource interface {
	WeightBytes(name string) ([]byte, error)
}

// Config are run-time settings.
type Config struct {
	// Threads is the number of workers (≥ 1).
	Threads int
	// WeightFiles names the file(s) the weights are mapped from, for the
	// error a memory fault while reading them becomes (see Eval).
	WeightFiles string
	// FixedThreads keeps every decode pass on all Threads workers (also
	// MINFER_FIXED_THREADS=1); by default decode passes may run on fewer
	// when that is measured faster — another process busy on the machine
	// (adapt.go). The output is the same bits either way.
	FixedThreads bool
}

// Stats accumulates counters over Eval calls.
type Stats struct {
	PrefillTokens, DecodeTokens int
	PrefillTime, DecodeTime     time.Duration
	PrefillBarriers             int64
	DecodeBarriers              int64
	DecodeCalls                 int
	// DecodeWorkerPasses sums, over decode passes, the workers that ran
	// them (DecodeWorkerPasses/DecodeCalls is the mean); ThreadSwitches
	// counts the decode worker-count changes (adapt.go).
	DecodeWorkerPasses int64
	ThreadSwitches     int
	// DecodeWait is the worker time decode passes spent waiting: at
	// barriers for a later worker and at a pass's end for the last one
	// (Pool.Waited). On a quiet machine it is the passes' load imbalance.
	DecodeWait time.Duration
}

// Model is a compiled graph bound to weights, memory and a worker pool.
type Model struct {
	g       *ir.Graph
	pool    *Pool
	progs   map[string]*program
	mem     map[string]*alloc.Plan
	arena   []byte
	kv      []byte
	caches  map[*ir.Value]*cpu.KVCache   // each cache's whole region (all slots)
	views   map[*ir.Value][]*cpu.KVCache // each cache's region per slot
	kvk     *cpu.KV
	workers []*worker
	filled  []int // positions held per slot
	nctx    int   // positions per slot
	stats   Stats
	out     []float32 // Eval's result buffer
	prog    *program  // the schedule being run
	job     func(w int)
	nw      int                   // workers taking part in the current pass (≤ len(workers))
	tuner   threadTuner           // picks nw for decode passes (adapt.go)
	files   string                // Config.WeightFiles
	fault   atomic.Pointer[error] // a worker faulted in the current call
	passSeq int64                 // counts passes (groupKey)
	sq      []*sharedQuant        // shared conversion buffers (sharedquant.go)
	nsq     int                   // how many the bound schedules use
	blocks  sharedBlocks          // blocks derived from them (sharedquant.go)
	alone   atomic.Int64          // times a worker gave up waiting for a shared buffer
	broken  error                 // set after a fault: the model state is undefined

	// The current call.
	T, R                int
	tokens, pos, outIDs []int32
	kvRow               []int32  // per token row: the cache row it writes (slot·nctx + position)
	seqs                []seqRun // the sequences of the batch, their rows in order
	maxTokens, maxOut   int      // prefill plan: token rows and logit rows per pass
	decTokens, decOut   int      // decode plan: the same

	multi multiState // EvalSeqs' buffers

	fparts map[[2]int]*cpu.FlashPartials // decode attention split by block: partials per (heads, head size)
}

// seqRun is one sequence's rows r0..r1 of the current batch and its slot.
type seqRun struct{ r0, r1, slot int }

type worker struct {
	id    int
	priv  []byte
	quant []byte
	attn  *cpu.AttnScratch
	// quantized-activation cache: the value and vec-dot type whose rows sit
	// in quant, valid within one group run.
	qVal   *ir.Value
	qKind  int
	qStamp int64
	qRows  int
	// acts keeps what the GEMMs derive from the rows in quant (reset
	// whenever quant is rewritten), shared by the group's mat-mul calls.
	acts cpu.ActCache
	// rope caches the rope angles' cos/sin of the group's rows (keyed by
	// stamp), shared by the group's rope steps and chunks.
	rope cpu.RopeTable
	// stamp counts the groups this worker has entered.
	stamp int64
	// gkey is the current group run's groupKey; sqKey[i] the group run
	// whose rows this worker last found complete in shared buffer i.
	gkey  int64
	sqKey []int64
	// sqAlone[i] is the group run in which this worker gave up waiting
	// for shared buffer i and converts its input alone.
	sqAlone []int64
	// sacts is acts for the rows of the shared buffers: its blocks are
	// derived together with the other workers (actSharer).
	sacts cpu.ActCache
}

// program is a schedule bound to buffers and kernels.
type program struct {
	name   string
	groups []group
	logits func(wk *worker) []float32
}

type group struct {
	units int
	steps []step
	// blocks, when set, is the group's last step, flash attention, which a
	// decode call may run split by KV block after the group (blocks.go).
	blocks *blockAttn
	// phases, when dynamic, hand the group's split work out in chunks
	// (chunks.go); otherwise every worker takes its fixed share.
	phases  []phase
	dynamic bool
}

type step struct {
	split  ir.Split
	blocks *blockAttn // a flash attention step's split by KV block
	// rows returns the number of rows a SplitRows/Single step ranges over.
	rows func() int
	run  func(wk *worker, lo, hi int)
}

// MaxThreads bounds Config.Threads: far more workers than any machine has
// cores only multiply the per-worker scratch and the barrier cost.
const MaxThreads = 1024

// hugePage is the size of an x86-64 (and arm64 4 KiB-granule) transparent
// huge page.
const hugePage = 2 << 20

// kvHugeMin is the smallest mean size of one slot's cache region (one
// layer's K or V over the slot's positions) for which the KV cache is
// backed by transparent huge pages: a sequence's first position then makes
// at most a quarter of the cache resident (one 2 MiB page per region).
const kvHugeMin = 4 * hugePage

// kvHugePages reports whether a KV cache of kvBytes in regions per-slot
// regions is mapped with transparent huge pages. Decode attention at depth
// reads every region's rows of one KV head, a few hundred bytes out of
// each 1–2 KiB position, over thousands of positions: with 4 KiB pages
// every other row is on a new page. Measured on the 2-core EPYC VM
// (Qwen3-4B Q4_K_M, f16 cache, 4480 positions, tg32 at depth 4096, -t 2):
// 1.20, 1.79 and 4.31 tok/s with 4 KiB pages and 10.35, 10.45 and 11.47
// with huge pages, alternating, the same binary; the profile of the slow
// runs is the flash kernels waiting on the cache's reads. The cost is
// resident memory in 2 MiB steps per region instead of 4 KiB ones, so
// small caches (short contexts, narrow KV rows) keep small pages.
// MINFER_KV_HUGEPAGES=0 turns it off, =1 forces it.
func kvHugePages(kvBytes int64, regions int) bool {
	switch os.Getenv("MINFER_KV_HUGEPAGES") {
	case "0":
		return false
	case "1":
		return true
	}
	return regions > 0 && kvBytes/int64(regions) >= kvHugeMin
}

// New binds a compiled graph (with both schedules) to its memory plans and
// weights and starts the worker pool.
func New(g *ir.Graph, mem map[string]*alloc.Plan, ws WeightSource, cfg Config) (*Model, error) {
	if g.Prefill == nil || g.Decode == nil {
		return nil, fmt.Errorf("graph has no schedules: compile it with the grouping pass")
	}
	if cfg.Threads < 1 {
		cfg.Threads = 1
	}
	if g.Params.NCtx <= 0 || g.Params.NCtx%16 != 0 {
		return nil, fmt.Errorf("context size %d must be a positive multiple of 16: recompile the plan", g.Params.NCtx)
	}
	m := &Model{g: g, mem: mem, progs: map[string]*program{}, caches: map[*ir.Value]*cpu.KVCache{}}
	var arena, priv, quantB, attn int64
	var kvBytes int64 = -1
	for _, name := range []string{"prefill", "decode"} {
		p, ok := mem[name]
		if !ok {
			return nil, fmt.Errorf("no %s memory plan", name)
		}
		arena = max(arena, p.ArenaBytes)
		priv = max(priv, p.PrivateBytes)
		quantB = max(quantB, p.QuantBytes)
		attn = max(attn, p.AttnScratch)
		if kvBytes >= 0 && kvBytes != p.KVBytes {
			return nil, fmt.Errorf("prefill and decode plans disagree on the KV cache size")
		}
		kvBytes = p.KVBytes
	}
	dec := mem["decode"]
	m.maxTokens, m.maxOut = mem["prefill"].Options.MaxTokens, mem["prefill"].Options.MaxOut
	m.decTokens, m.decOut = dec.Options.MaxTokens, dec.Options.MaxOut
	if m.decTokens < 1 || m.decOut < 1 || m.maxTokens < 1 || m.maxOut < 1 {
		return nil, fmt.Errorf("memory plans hold no tokens")
	}
	slots := dec.Options.SlotCount()
	if mem["prefill"].Options.SlotCount() != slots {
		return nil, fmt.Errorf("prefill and decode plans disagree on the number of KV slots")
	}
	m.nctx = g.Params.NCtx
	m.filled = make([]int, slots)
	m.views = map[*ir.Value][]*cpu.KVCache{}
	if cfg.Threads > MaxThreads {
		return nil, fmt.Errorf("%d threads: at most %d are supported", cfg.Threads, MaxThreads)
	}
	perWorker := priv + quantB + 4*attn
	workers := int64(cfg.Threads) * perWorker
	need := arena + kvBytes + workers
	if avail := physicalMemory(); avail > 0 && need > avail {
		// Name the largest part as the cause.
		fix := "compile with a smaller --n-ctx or --max-batch"
		if workers > arena+kvBytes {
			fix = fmt.Sprintf("use fewer threads (each needs %.1f MiB of scratch)", float64(perWorker)/(1<<20))
		}
		if kvBytes > arena+workers && slots > 1 {
			fix = "compile with fewer --slots or a smaller --n-ctx"
		}
		return nil, fmt.Errorf("the plan needs %.1f GiB of memory (arena %.1f, KV cache %.1f for %d slot(s) × %d positions, scratch %.1f for %d threads) but this machine has %.1f GiB: %s",
			gib(need), gib(arena), gib(kvBytes), slots, g.Params.NCtx, gib(workers), cfg.Threads, gib(avail), fix)
	}
	m.arena = alignedBytes(arena)
	if kv, release, ok := untouchedBytes(kvBytes, kvHugePages(kvBytes, len(dec.KV)*slots)); ok {
		m.kv = kv
		runtime.AddCleanup(m, func(f func()) { f() }, release)
	} else {
		m.kv = alignedBytes(kvBytes)
	}
	kvk, err := cpu.NewKV(dec.Options.KVType)
	if err != nil {
		return nil, err
	}
	m.kvk = kvk
	for _, v := range g.Values {
		if v.Kind != ir.State || v.StateOf != nil {
			continue
		}
		for _, p := range mem {
			if s, ok := p.KVFor(v); !ok || s != mustKV(dec, v) {
				return nil, fmt.Errorf("plans disagree on the KV region of %s", v.Name)
			}
		}
		s := mustKV(dec, v)
		rows, width := int(v.Shape[0]), v.Shape.Cols()
		if rows != m.nctx || s.Size%int64(slots) != 0 {
			return nil, fmt.Errorf("KV region of %s: %d bytes for %d slots of %d rows", v.Name, s.Size, slots, rows)
		}
		// The region holds the slots one after the other, slot k at rows
		// k·rows … k·rows+rows-1 (alloc.Options.Slots).
		view := func(b []byte, rows int) *cpu.KVCache {
			c := &cpu.KVCache{Rows: rows, Width: width, Type: v.DType}
			if v.DType == quant.F32 {
				c.F = f32(b)
			} else {
				c.B = b
			}
			return c
		}
		b := m.kv[s.Offset:s.End()]
		m.caches[v] = view(b, slots*rows)
		per := int(s.Size) / slots
		for k := 0; k < slots; k++ {
			m.views[v] = append(m.views[v], view(b[k*per:(k+1)*per:(k+1)*per], rows))
		}
	}
	group := max(1, g.Params.NHead/max(1, g.Params.NHeadKV))
	for w := 0; w < cfg.Threads; w++ {
		m.workers = append(m.workers, &worker{
			id:    w,
			priv:  alignedBytes(priv),
			quant: alignedBytes(quantB),
			attn:  cpu.NewAttnScratch(g.Params.NCtx, group, max(1, g.Params.HeadDim)),
		})
	}
	weights := map[*ir.Value][]byte{}
	for _, v := range g.Weights() {
		if ts, ok := ws.(interface {
			WeightType(string) (quant.Type, bool)
		}); ok {
			if t, ok := ts.WeightType(v.Source); ok && t != v.DType {
				hint := ""
				if v.DType.PlanOnly() {
					hint = " (weights packed by minferc's pack-weights pass run from the plan it writes, not from the GGUF)"
				}
				return nil, fmt.Errorf("weight %q is %s in its source, but the graph reads it as %s%s", v.Source, t, v.DType, hint)
			}
		}
		b, err := ws.WeightBytes(v.Source)
		if err != nil {
			return nil, err
		}
		rows := 1
		if len(v.Shape) == 2 {
			rows = int(v.Shape[0])
		}
		rs, err := v.DType.RowSize(v.Shape.Cols())
		if err != nil || len(b) != rows*rs {
			return nil, fmt.Errorf("weight %q: %d bytes, want %d for %s%s", v.Source, len(b), rows*rs, v.DType, v.Shape)
		}
		weights[v] = b
	}
	for _, s := range []*ir.Schedule{g.Prefill, g.Decode} {
		p, err := m.bind(s, mem[s.Name], weights)
		if err != nil {
			return nil, fmt.Errorf("%s schedule: %w", s.Name, err)
		}
		m.progs[s.Name] = p
	}
	if cfg.Threads > 1 {
		// The shared conversion buffers, one quant scratch each, are known
		// only once the schedules are bound.
		if sh, avail := int64(m.nsq)*quantB, physicalMemory(); avail > 0 && need+sh > avail {
			return nil, fmt.Errorf("the plan needs %.1f GiB of memory (%.1f, plus %.1f for %d shared conversion buffers at %d threads) but this machine has %.1f GiB: use fewer threads or compile with a smaller --max-batch",
				gib(need+sh), gib(need), gib(sh), m.nsq, cfg.Threads, gib(avail))
		}
		for i := 0; i < m.nsq; i++ {
			m.sq = append(m.sq, &sharedQuant{buf: alignedBytes(quantB)})
		}
		for _, wk := range m.workers {
			wk.sacts.SetSharer(&actSharer{m: m, wk: wk})
			wk.sqKey, wk.sqAlone = make([]int64, m.nsq), make([]int64, m.nsq)
			for i := range wk.sqKey {
				wk.sqKey[i], wk.sqAlone[i] = -1, -1
			}
		}
	}
	m.files = cfg.WeightFiles
	if m.files == "" {
		m.files = "the weight source"
	}
	m.pool = NewPool(cfg.Threads)
	m.tuner = newThreadTuner(cfg.Threads, cfg.FixedThreads || os.Getenv("MINFER_FIXED_THREADS") == "1")
	m.job = func(w int) { m.runWorker(m.prog, m.workers[w]) } // bound once: no allocation per call
	return m, nil
}

func mustKV(p *alloc.Plan, v *ir.Value) alloc.Slot {
	s, _ := p.KVFor(v)
	return s
}

func gib(n int64) float64 { return float64(n) / (1 << 30) }

// alignedBytes returns n zeroed bytes starting on a 64-byte boundary.
func alignedBytes(n int64) []byte {
	if n <= 0 {
		return nil
	}
	b := make([]byte, n+64)
	off := (64 - int(uintptr(unsafe.Pointer(&b[0]))%64)) % 64
	return b[off : off+int(n) : off+int(n)]
}

// f32 views 4-byte-aligned bytes as float32s.
func f32(b []byte) []float32 {
	if len(b) < 4 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// Close stops the worker pool.
func (m *Model) Close() { m.pool.Close() }

// Threads is the number of workers.
func (m *Model) Threads() int { return len(m.workers) }

// Stats returns the counters accumulated so far.
func (m *Model) Stats() Stats { return m.stats }

// Graph returns the compiled graph.
func (m *Model) Graph() *ir.Graph { return m.g }

// Filled is the number of positions in the KV cache (of slot 0, the one
// Eval uses).
func (m *Model) Filled() int { return m.filled[0] }

// Reset forgets the KV cache contents of every slot (a new sequence).
// Nothing is cleared: a query at position p reads cache positions 0..p of
// its slot only, and Eval and EvalSeqs accept only positions that continue
// the slot's cache, so every position read was written by the current
// sequence. Leaving the cache alone keeps its pages untouched until
// positions are used (RSS grows with the conversation, not with the
// context) and makes Reset free.
func (m *Model) Reset() {
	clear(m.filled)
}

// Eval runs the graph on a batch of tokens at consecutive positions that
// continue the cache (of slot 0), and returns the logits of the rows outIDs, row-major
// [len(outIDs)][n_vocab]. The slice is the model's own buffer, valid until
// the next call (decoding allocates nothing per token). A single token runs the decode schedule, more run
// the prefill schedule, in chunks of the planned maximum batch.
func (m *Model) Eval(tokens, positions, outIDs []int32) ([]float32, error) {
	if m.broken != nil {
		return nil, m.broken
	}
	p := m.g.Params
	T := len(tokens)
	if err := p.CheckBatch(m.filled[0], tokens, positions, outIDs); err != nil {
		return nil, err
	}
	for i := 1; i < len(outIDs); i++ {
		if outIDs[i] <= outIDs[i-1] {
			return nil, fmt.Errorf("output rows must be increasing (index %d)", i)
		}
	}
	chunk := m.maxTokens
	if len(outIDs) > m.maxOut {
		chunk = min(chunk, m.maxOut)
	}
	if T <= chunk {
		lg, err := m.evalChunk(tokens, positions, outIDs)
		return lg[:len(lg):len(lg)], err
	}
	out := m.out[:0]
	if cap(out) < len(outIDs)*p.NVocab {
		out = make([]float32, 0, len(outIDs)*p.NVocab)
	}
	next := 0
	for start := 0; start < T; start += chunk {
		end := min(T, start+chunk)
		var rows []int32
		for next < len(outIDs) && int(outIDs[next]) < end {
			rows = append(rows, outIDs[next]-int32(start))
			next++
		}
		if len(rows) == 0 {
			// The graph always computes at least one row of logits; ask for
			// the last and drop it.
			if _, err := m.evalChunk(tokens[start:end], positions[start:end], []int32{int32(end - start - 1)}); err != nil {
				return nil, err
			}
			continue
		}
		lg, err := m.evalChunk(tokens[start:end], positions[start:end], rows)
		if err != nil {
			return nil, err
		}
		out = append(out, lg...)
	}
	m.out = out
	return out[:len(out):len(out)], nil
}

// evalChunk runs one pass of a single sequence in slot 0.
func (m *Model) evalChunk(tokens, positions, outIDs []int32) ([]float32, error) {
	m.seqs = append(m.seqs[:0], seqRun{r0: 0, r1: len(tokens), slot: 0})
	m.kvRow = positions // slot 0 starts at cache row 0
	return m.pass(tokens, positions, outIDs)
}

// pass runs one forward pass over the batch m.seqs describes (their rows
// concatenated; m.kvRow set), with the decode schedule when the decode
// memory plan holds the batch and the prefill schedule otherwise.
func (m *Model) pass(tokens, positions, outIDs []int32) ([]float32, error) {
	m.T, m.R = len(tokens), len(outIDs)
	m.tokens, m.pos, m.outIDs = tokens, positions, outIDs
	name := "prefill"
	if m.T <= m.decTokens && m.R <= m.decOut {
		name = "decode"
	}
	prog := m.progs[name]
	start := time.Now()
	before, waited := m.pool.Barriers(), m.pool.Waited()
	m.prog = prog
	m.nw = len(m.workers)
	if name == "decode" {
		m.nw = m.tuner.pick()
	}
	prog.resetChunks(m.nw)
	m.passSeq++
	m.planBlocks(prog)
	m.pool.RunN(m.nw, m.job)
	if e := m.fault.Load(); e != nil {
		err := *e
		m.broken = fmt.Errorf("%w (the model cannot be used after this)", err)
		return nil, err
	}
	bars := m.pool.Barriers() - before
	el := time.Since(start)
	if name == "decode" {
		m.tuner.record(m.nw, el, m.T)
		m.stats.DecodeTokens += m.T
		m.stats.DecodeCalls++
		m.stats.DecodeTime += el
		m.stats.DecodeBarriers += bars
		m.stats.DecodeWait += m.pool.Waited() - waited
		m.stats.DecodeWorkerPasses += int64(m.nw)
		m.stats.ThreadSwitches = m.tuner.switches
	} else {
		m.stats.PrefillTokens += m.T
		m.stats.PrefillTime += el
		m.stats.PrefillBarriers += bars
	}
	for _, sq := range m.seqs {
		m.filled[sq.slot] = int(positions[sq.r1-1]) + 1
	}
	lg := prog.logits(m.workers[0])
	return lg[:m.R*m.g.Params.NVocab], nil
}

// part is worker w's share [lo, hi) of n items split over k workers.
func part(n, w, k int) (int, int) {
	return n * w / k, n * (w + 1) / k
}

// runWorker runs worker wk's share of every group of p, meeting the others
// at a barrier after each. The weights are memory-mapped files: if one is
// truncated while the model runs, reading it faults. The fault becomes a
// panic (debug.SetPanicOnFault), recovered per group: the worker records
// it, skips the remaining groups but still meets every barrier, so no
// worker is left waiting, and Eval returns the error naming the file.
func (m *Model) runWorker(p *program, wk *worker) {
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	for gi := range p.groups {
		if m.fault.Load() == nil {
			m.runGroup(p, gi, wk)
		}
		if ba := p.groups[gi].blocks; ba != nil && ba.active {
			m.pool.Barrier()
			if m.fault.Load() == nil {
				m.runBlocks(ba, gi, wk)
			}
		}
		if gi < len(p.groups)-1 {
			m.pool.Barrier()
		}
	}
}

// recoverFault turns a panic in a worker into the call's error.
func (m *Model) recoverFault(grp int) {
	r := recover()
	if r == nil {
		return
	}
	var err error
	if f, ok := r.(interface{ Addr() uintptr }); ok {
		err = fmt.Errorf("memory fault at address %#x in group %d reading the weights mapped from %s: was the file truncated or changed while running? (%v)", f.Addr(), grp, m.files, r)
	} else {
		err = fmt.Errorf("internal error in group %d: %v\n%s", grp, r, debug.Stack())
	}
	m.fault.CompareAndSwap(nil, &err)
}

func (m *Model) runGroup(p *program, gi int, wk *worker) {
	defer m.recoverFault(gi)
	W := m.nw
	{
		grp := &p.groups[gi]
		wk.stamp++
		wk.gkey = m.groupKey(gi)
		if grp.dynamic && W > 1 {
			m.runPhases(grp, wk)
			return
		}
		for si := range grp.steps {
			st := &grp.steps[si]
			switch st.split {
			case ir.SplitCols:
				if lo, hi := part(grp.units, wk.id, W); lo < hi {
					st.run(wk, lo, hi)
				}
			case ir.SplitRows:
				if lo, hi := part(st.rows(), wk.id, W); lo < hi {
					st.run(wk, lo, hi)
				}
			case ir.Redundant:
				st.run(wk, 0, st.rows())
			case ir.Single:
				if wk.id == 0 {
					st.run(wk, 0, st.rows())
				}
			}
		}
	}
}
