package exec_test

import (
	"fmt"
	"github.com/minfer/minfer/plan"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minfer/minfer/alloc"
	"github.com/minfer/minfer/backends/cpu"
	"github.com/minfer/minfer/compiler"
	"github.com/minfer/minfer/exec"
	"github.com/minfer/minfer/frontends/gguf"
	"github.com/minfer/minfer/internal/fixtures"
	"github.com/minfer/minfer/passes"
	"github.com/minfer/minfer/quant"
)

// compileSlots builds a fixture model's plan as minferc compile --slots
// does (compiler.Slots), with a prefill batch of maxBatch rows (and its
// weights packed for a tier, given one).
func compileSlots(t testing.TB, name string, kv quant.Type, maxBatch, slots int, pack ...string) compiled {
	t.Helper()
	f, err := gguf.Open(fixtures.Path(t, "models", name+".gguf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	g, err := gguf.BuildGraph(f)
	if err != nil {
		t.Fatal(err)
	}
	o := passes.Options{KVType: kv, Verify: true}
	if len(pack) > 0 {
		o.Pack = pack[0]
	}
	if err := passes.Run(g, o); err != nil {
		t.Fatal(err)
	}
	mem, err := compiler.Slots(g, kv, maxBatch, slots)
	if err != nil {
		t.Fatal(err)
	}
	return compiled{g, mem, f}
}

// seqTok is sequence i's token at position p (any fixed function will do).
func seqTok(i, p, nvocab int) int32 { return int32((i*131 + p*7919 + 13) % nvocab) }

// part is one sequence's share of a step in a scenario: n tokens, or a
// truncation of its slot to keep positions before the step (n tokens
// then continue from there).
type part struct {
	seq, n int
	trunc  int  // ≥ 0: TruncateSlot(seq, trunc) before the step
	noLg   bool // do not ask for logits
}

func p(seq, n int) part     { return part{seq: seq, n: n, trunc: -1} }
func pNo(seq, n int) part   { return part{seq: seq, n: n, trunc: -1, noLg: true} }
func tr(seq, n, k int) part { return part{seq: seq, n: n, trunc: k} }

// TestEvalSeqsMatchesAlone: sequences of different lengths prefilled
// together and decoded together, in steps that mix a prompt chunk of one
// with single decode tokens of the others, a prompt longer than the batch
// (cut into passes), logits not asked for, and slots truncated and reused,
// give every sequence's logits bit-identical to evaluating it alone — each
// in a fresh one-slot model fed the same tokens per call — with 1 and 2
// threads, with every KV cache type, and with weights in the sixteen-row
// layouts (pack-weights avx512) where their kernels run.
func TestEvalSeqsMatchesAlone(t *testing.T) {
	// Four slots; prompts of 3, 7, 12 and 20 tokens (the last longer than
	// the 16-row batch); decode steps; a follow-up chunk while others
	// decode; slot 1 freed and reused for a new sequence; slot 2 cut back.
	scenario := [][]part{
		{p(0, 3), p(1, 7)},
		{p(0, 1), p(1, 1), p(2, 12)},
		{p(0, 1), p(1, 1), p(2, 1), p(3, 20)},
		{p(0, 1), p(1, 1), p(2, 1), p(3, 1)},
		{p(0, 1), p(1, 5), p(2, 1), p(3, 1)},
		{p(0, 1), pNo(1, 1), p(2, 1), pNo(3, 1)},
		{p(0, 1), p(1, 1), p(2, 1), p(3, 1)},
		{p(0, 1), tr(1, 4, 0), tr(2, 1, 5), p(3, 1)},
		{p(0, 1), p(1, 1), p(2, 1), p(3, 1)},
		{p(3, 1)},
		{p(0, 1), p(1, 1), p(2, 1), p(3, 1)},
	}
	cases := []struct {
		model string
		kv    quant.Type
		pack  string
	}{
		{"qwen2-synth-q4_k_m", quant.F32, ""},
		{"qwen3-synth-q8_0", quant.F32, ""},
		{"llama-synth-q4_k", quant.F32, ""},
		{"llama-synth-f16", quant.F32, ""},
		{"qwen2-synth-q8_0", quant.F16, ""},
		{"qwen2-synth-q8_0", quant.Q8_0, ""},
		{"qwen3-synth-q8_0", quant.F16, "avx512"},
		{"llama-synth-q5_0", quant.F32, "avx512"},
		{"qwen3-synth-q4_k_m", quant.F16, "kquant"},
		{"llama-synth-q4_k", quant.F32, "kquant"},
		{"qwen2-synth-q4_k_m", quant.F16, "r8vnni"},
	}
	for _, tc := range cases {
		if _, err := cpu.NewMatMul(packProbe[tc.pack]); tc.pack != "" && err != nil {
			t.Run(tc.model+"/"+tc.pack, func(t *testing.T) { t.Skipf("no %s kernels here: %v", tc.pack, err) })
			continue
		}
		multi := compileSlots(t, tc.model, tc.kv, 16, 4, tc.pack)
		alone := compileSlots(t, tc.model, tc.kv, 16, 1, tc.pack)
		var msrc, asrc exec.WeightSource = multi.f, alone.f
		if tc.pack != "" {
			msrc, asrc = packedSource(multi.f, multi.g), packedSource(alone.f, alone.g)
		}
		nv := multi.g.Params.NVocab
		for _, threads := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/kv-%s/t%d%s", tc.model, tc.kv, threads, map[bool]string{true: "/" + tc.pack}[tc.pack != ""]), func(t *testing.T) {
				m, err := exec.New(multi.g, multi.mem, msrc, exec.Config{Threads: threads})
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				if m.Slots() != 4 || m.SlotContext() != multi.g.Params.NCtx {
					t.Fatalf("Slots %d, SlotContext %d; want 4, %d", m.Slots(), m.SlotContext(), multi.g.Params.NCtx)
				}
				// The sequences alone, each in a fresh one-slot model; a
				// reused slot starts a new sequence (id 4+).
				singles := map[int]*exec.Model{}
				single := func(id int) *exec.Model {
					if s := singles[id]; s != nil {
						return s
					}
					s, err := exec.New(alone.g, alone.mem, asrc, exec.Config{Threads: threads})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(s.Close)
					singles[id] = s
					return s
				}
				seqID := []int{0, 1, 2, 3}
				for si, step := range scenario {
					var seqs []exec.Seq
					for _, pt := range step {
						slot := pt.seq
						if pt.trunc >= 0 {
							if err := m.TruncateSlot(slot, pt.trunc); err != nil {
								t.Fatal(err)
							}
							if pt.trunc == 0 {
								seqID[slot] += 4 // a new sequence in the freed slot
							} else if err := single(seqID[slot]).Truncate(pt.trunc); err != nil {
								t.Fatal(err)
							}
						}
						f := m.SlotFilled(slot)
						s := exec.Seq{Slot: slot, Logits: !pt.noLg}
						for q := f; q < f+pt.n; q++ {
							s.Tokens = append(s.Tokens, seqTok(seqID[slot], q, nv))
							s.Positions = append(s.Positions, int32(q))
						}
						seqs = append(seqs, s)
					}
					got, err := m.EvalSeqs(seqs)
					if err != nil {
						t.Fatalf("step %d: %v", si, err)
					}
					if len(got) != len(seqs) {
						t.Fatalf("step %d: %d results for %d seqs", si, len(got), len(seqs))
					}
					for k, s := range seqs {
						if m.SlotFilled(s.Slot) != int(s.Positions[len(s.Positions)-1])+1 {
							t.Fatalf("step %d: slot %d holds %d positions after position %d", si, s.Slot, m.SlotFilled(s.Slot), s.Positions[len(s.Positions)-1])
						}
						want, err := single(seqID[s.Slot]).Eval(s.Tokens, s.Positions, []int32{int32(len(s.Tokens) - 1)})
						if err != nil {
							t.Fatal(err)
						}
						if !s.Logits {
							if got[k] != nil {
								t.Errorf("step %d seq %d: logits not asked for, got %d", si, k, len(got[k]))
							}
							continue
						}
						if len(got[k]) != nv {
							t.Fatalf("step %d seq %d: %d logits, want %d", si, k, len(got[k]), nv)
						}
						if n, worst := diffBits(got[k], want); n != 0 {
							t.Errorf("step %d seq %d (slot %d, %d tokens from position %d): %d of %d logits differ from the sequence alone (worst %.3g)",
								si, k, s.Slot, len(s.Tokens), s.Positions[0], n, nv, worst)
						}
					}
				}
			})
		}
	}
}

// TestEvalOnSlotsPlan: Eval (slot 0) on a many-slot plan, whose decode
// schedule holds several rows, gives the bits of a one-slot plan.
func TestEvalOnSlotsPlan(t *testing.T) {
	multi := compileSlots(t, "qwen2-synth-q4_k_m", quant.F32, 16, 8)
	alone := compileSlots(t, "qwen2-synth-q4_k_m", quant.F32, 16, 1)
	var outs [2][]float32
	for i, c := range []compiled{multi, alone} {
		m, err := exec.New(c.g, c.mem, c.f, exec.Config{Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		outs[i] = run(t, m)
		m.Close()
	}
	if n, worst := diffBits(outs[0], outs[1]); n != 0 {
		t.Fatalf("%d logits differ (worst %.3g)", n, worst)
	}
}

// TestEvalSeqsErrors: invalid steps are refused with an error naming the
// problem and the limits, and nothing runs (no slot advances).
func TestEvalSeqsErrors(t *testing.T) {
	c := compileSlots(t, "qwen2-synth-q8_0", quant.F32, 16, 3)
	m, err := exec.New(c.g, c.mem, c.f, exec.Config{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	nctx := m.SlotContext()
	if _, err := m.EvalSeqs([]exec.Seq{{Slot: 1, Tokens: []int32{1, 2}, Positions: []int32{0, 1}}}); err != nil {
		t.Fatal(err)
	}
	ok := exec.Seq{Slot: 0, Tokens: []int32{7}, Positions: []int32{0}, Logits: true}
	long := make([]int32, nctx+1)
	cases := []struct {
		name string
		seqs []exec.Seq
		want string
	}{
		{"none", nil, "no sequences"},
		{"negative slot", []exec.Seq{ok, {Slot: -1, Tokens: []int32{1}, Positions: []int32{0}}}, "slot -1 out of range: the plan has 3 slot(s) (0..2"},
		{"slot past the plan", []exec.Seq{ok, {Slot: 3, Tokens: []int32{1}, Positions: []int32{0}}}, "slot 3 out of range: the plan has 3 slot(s)"},
		{"slot twice", []exec.Seq{ok, {Slot: 0, Tokens: []int32{1}, Positions: []int32{0}}}, "slot 0 is already used by seq 0"},
		{"no tokens", []exec.Seq{ok, {Slot: 2}}, "no tokens"},
		{"positions count", []exec.Seq{ok, {Slot: 2, Tokens: []int32{1, 2}, Positions: []int32{0}}}, "1 positions for 2 tokens"},
		{"not continuing", []exec.Seq{ok, {Slot: 1, Tokens: []int32{1}, Positions: []int32{0}}}, "first position 0, but the slot holds 2 positions"},
		{"gap", []exec.Seq{ok, {Slot: 1, Tokens: []int32{1, 2}, Positions: []int32{2, 4}}}, "consecutive"},
		{"beyond the context", []exec.Seq{ok, {Slot: 2, Tokens: long, Positions: seq(0, nctx+1)}}, fmt.Sprintf("positions 0..%d go beyond the slot's context of %d positions", nctx, nctx)},
		{"vocabulary", []exec.Seq{ok, {Slot: 2, Tokens: []int32{int32(c.g.Params.NVocab)}, Positions: []int32{0}}}, "outside the vocabulary"},
	}
	for _, cs := range cases {
		t.Run(cs.name, func(t *testing.T) {
			_, err := m.EvalSeqs(cs.seqs)
			if err == nil || !strings.Contains(err.Error(), cs.want) {
				t.Fatalf("err = %v, want %q", err, cs.want)
			}
			for s, want := range []int{0, 2, 0} {
				if got := m.SlotFilled(s); got != want {
					t.Fatalf("after the error slot %d holds %d positions, want %d", s, got, want)
				}
			}
		})
	}
	for _, cs := range []struct {
		slot, n int
		want    string
	}{
		{3, 0, "slot 3 out of range"},
		{-1, 0, "slot -1 out of range"},
		{1, 3, "truncate slot 1 to 3 positions: it holds 2"},
		{1, -1, "truncate slot 1 to -1"},
	} {
		if err := m.TruncateSlot(cs.slot, cs.n); err == nil || !strings.Contains(err.Error(), cs.want) {
			t.Errorf("TruncateSlot(%d, %d) = %v, want %q", cs.slot, cs.n, err, cs.want)
		}
	}
}

// TestEvalSeqsDecodeAllocatesNothing: a batched decode step of every slot
// reuses every buffer, with the weights in the GGUF layouts and in the
// sixteen-row and eight-row ones (their records and scratch come from a pool).
func TestEvalSeqsDecodeAllocatesNothing(t *testing.T) {
	for _, tc := range []struct{ pack, model string }{{"", "qwen2-synth-q8_0"}, {"avx512", "qwen2-synth-q8_0"}, {"kquant", "qwen2-synth-q4_k_m"}} {
		t.Run("pack="+tc.pack, func(t *testing.T) {
			if _, err := cpu.NewMatMul(packProbe[tc.pack]); tc.pack != "" && err != nil {
				t.Skipf("no %s kernels here: %v", tc.pack, err)
			}
			evalSeqsDecodeAllocs(t, tc.model, tc.pack)
		})
	}
}

// packProbe is a layout each pack-weights tier writes, to skip a case
// whose kernels this CPU lacks.
var packProbe = map[string]quant.Type{"avx2": quant.Q5_0r8, "avx512": quant.Q8_0r16, "kquant": quant.Q4_Kr8, "r8vnni": quant.Q5_0r8}

func evalSeqsDecodeAllocs(t *testing.T, model, pack string) {
	c := compileSlots(t, model, quant.F32, 16, 4, pack)
	var ws exec.WeightSource = c.f
	if pack != "" {
		ws = packedSource(c.f, c.g)
	}
	m, err := exec.New(c.g, c.mem, ws, exec.Config{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	seqs := make([]exec.Seq, 4)
	for i := range seqs {
		seqs[i] = exec.Seq{Slot: i, Tokens: []int32{int32(i + 1)}, Positions: []int32{0}, Logits: true}
	}
	step := func() {
		if _, err := m.EvalSeqs(seqs); err != nil {
			t.Fatal(err)
		}
		for i := range seqs {
			seqs[i].Positions[0]++
		}
	}
	step()
	if allocs := testing.AllocsPerRun(20, step); allocs != 0 {
		t.Fatalf("%.1f allocations per batched decode step", allocs)
	}
}

// TestSlotsPlanMemory: the KV regions of a plan with N slots are N times
// those of one slot, the decode plan holds one row per slot, and the
// executor refuses memory plans that disagree on the slots.
func TestSlotsPlanMemory(t *testing.T) {
	one := compileSlots(t, "qwen2-synth-q8_0", quant.F16, 16, 1)
	four := compileSlots(t, "qwen2-synth-q8_0", quant.F16, 16, 4)
	if got, want := four.mem["decode"].KVBytes, 4*one.mem["decode"].KVBytes; got != want {
		t.Fatalf("4 slots: KV %d bytes, want %d", got, want)
	}
	if o := four.mem["decode"].Options; o.MaxTokens != 4 || o.MaxOut != 4 || o.SlotCount() != 4 {
		t.Fatalf("decode plan options %+v, want 4 rows, 4 logits, 4 slots", o)
	}
	if o := one.mem["decode"].Options; o.MaxTokens != 1 || o.Slots != 0 {
		t.Fatalf("one-slot decode plan options %+v, want 1 row and Slots left 0", o)
	}
	mixed := map[string]*alloc.Plan{"prefill": one.mem["prefill"], "decode": four.mem["decode"]}
	if _, err := exec.New(four.g, mixed, four.f, exec.Config{Threads: 1}); err == nil {
		t.Fatal("memory plans with different slot counts were accepted")
	}
}

// BenchmarkEvalSeqsDecode measures batched decode on a real plan compiled
// with --slots ≥ 8 (MINFER_SLOTS_PLAN=path; skipped without it): one
// EvalSeqs step of np sequences at context positions 64.. (or from
// MINFER_BENCH_DEPTH on: the attention's share grows with it), reported as
// aggregate tokens per second.
//
//	MINFER_SLOTS_PLAN=/tmp/q2s8.plan go test ./exec -run '^$' -bench EvalSeqsDecode -cpu 2 -count 3
func BenchmarkEvalSeqsDecode(b *testing.B) {
	path := os.Getenv("MINFER_SLOTS_PLAN")
	if path == "" {
		b.Skip("set MINFER_SLOTS_PLAN to a plan compiled with minferc compile --slots 8")
	}
	l, err := plan.OpenWith(path, plan.OpenOptions{SkipWeightChecksum: true, SkipSourceHash: true})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	for _, np := range []int{1, 4, 8} {
		b.Run(fmt.Sprintf("np%d", np), func(b *testing.B) {
			m, err := exec.New(l.Graph, l.Memory, l, exec.Config{Threads: runtime.GOMAXPROCS(0)})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			if np > m.Slots() {
				b.Skipf("the plan has %d slots", m.Slots())
			}
			seqs := make([]exec.Seq, np)
			for k := range seqs {
				seqs[k] = exec.Seq{Slot: k, Tokens: []int32{int32(100 + k)}, Positions: []int32{0}, Logits: true}
			}
			step := func() {
				if _, err := m.EvalSeqs(seqs); err != nil {
					b.Fatal(err)
				}
				for k := range seqs {
					seqs[k].Positions[0]++
					if int(seqs[k].Positions[0]) >= m.SlotContext() {
						b.Fatal("context full: use a smaller -benchtime")
					}
				}
			}
			warm := 64
			if d := os.Getenv("MINFER_BENCH_DEPTH"); d != "" {
				if _, err := fmt.Sscan(d, &warm); err != nil || warm < 0 {
					b.Fatalf("MINFER_BENCH_DEPTH=%q: want a position count", d)
				}
			}
			for range warm {
				step()
			}
			b.ResetTimer()
			cpu0 := cpuTime()
			for b.Loop() {
				step()
			}
			b.ReportMetric(float64(np*b.N)/b.Elapsed().Seconds(), "tok/s")
			// CPU time per token: what a busy machine does not inflate.
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(np*b.N), "cpu-ms/tok")
		})
	}
}

// cpuTime is the process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
