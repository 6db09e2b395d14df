package exec

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/minfer/minfer/backends/cpu"
	"github.com/minfer/minfer/quant"
)

// Prompts of at least sharedQuantMinRows rows have their mat-mul inputs
// converted once by all workers together (sharedquant.go): under random
// stalls at 2 and 3 threads the logits of 40- and 64-row prefills, and of
// the decode steps after them, are the 1-thread logits bit for bit, and
// the shared buffers were used (their keys moved), for a model whose
// mat-muls read Q8_K rows (Qwen3 Q4_K_M), one reading Q8_0 rows (Qwen2
// Q8_0) and one reading both (Llama Q4_0: Q4_0 and the Q6_K/Q8_0 head).
func TestSharedQuantKeepsBits(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	toks := make([]int32, 70)
	for i := range toks {
		toks[i] = int32(10 + r.IntN(900))
	}
	evalAll := func(m *Model) []float32 {
		m.Reset()
		var out []float32
		pos := 0
		for _, n := range []int{40, 24} { // 40 rows, then 24 more on the cache
			p := make([]int32, n)
			for i := range p {
				p[i] = int32(pos + i)
			}
			o, err := m.Eval(toks[pos:pos+n], p, []int32{0, int32(n / 2), int32(n - 1)})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, o...)
			pos += n
		}
		for ; pos < len(toks); pos++ {
			o, err := m.Eval(toks[pos:pos+1], []int32{int32(pos)}, []int32{0})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, o...)
		}
		return out
	}
	for _, name := range []string{"qwen3-synth-q4_k_m", "qwen2-synth-q8_0", "llama-synth-q4_0"} {
		t.Run(name, func(t *testing.T) {
			g, mem, f := compileFixtureWith(t, name, quant.F32, false, 0, 64)
			one, err := New(g, mem, f, Config{Threads: 1})
			if err != nil {
				t.Fatal(err)
			}
			want := evalAll(one)
			one.Close()
			stalls := injectStalls(t, 4, 100*time.Microsecond)
			for _, threads := range []int{2, 3} {
				m, err := New(g, mem, f, Config{Threads: threads, FixedThreads: true})
				if err != nil {
					t.Fatal(err)
				}
				if len(m.sq) == 0 {
					m.Close()
					t.Fatalf("-t %d: no shared conversion buffers bound", threads)
				}
				for rep := 0; rep < 2; rep++ {
					got := evalAll(m)
					if len(got) != len(want) {
						m.Close()
						t.Fatalf("-t %d: %d logits, 1 thread %d", threads, len(got), len(want))
					}
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							m.Close()
							t.Fatalf("-t %d rep %d: logit %d = %v, 1 thread %v", threads, rep, i, got[i], want[i])
						}
					}
				}
				used := 0
				for _, s := range m.sq {
					if s.key.Load() != 0 {
						used++
					}
				}
				m.Close()
				if used == 0 {
					t.Fatalf("-t %d: no shared conversion buffer was filled", threads)
				}
				// The GEMMs that derive activation blocks (AVX2 tier) derive
				// them through the workers' actSharer.
				t.Logf("-t %d: %d of %d shared buffers filled, %d derived blocks shared (%s), a worker gave up waiting and converted alone %d times",
					threads, used, len(m.sq), len(m.blocks.ents), strings.Fields(cpu.Features())[0], m.alone.Load())
			}
			t.Logf("%d stalls injected; every run bit-identical to 1 thread", stalls.Load())
		})
	}
}
