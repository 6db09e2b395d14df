package exec_test

import (
	"fmt"
	"testing"

	"github.com/minfer/minfer/alloc"
	"github.com/minfer/minfer/exec"
	"github.com/minfer/minfer/frontends/gguf"
	"github.com/minfer/minfer/quant"
	"github.com/minfer/minfer/reference"
)

// TestLongBatchMatchesReference evaluates prompts longer than the 16 lanes
// of the batched v sum (T = 17, 24, 33) in one prefill batch with the
// compiled executor and with the reference, at 1 and 2 threads, and wants
// the same bits: the last row's logits (which see every row's keys and
// values in later layers), and every row's when the memory plans let one
// chunk return them all.
func TestLongBatchMatchesReference(t *testing.T) {
	for _, name := range []string{"llama-synth-f32", "qwen2-synth-f32", "qwen3-synth-q4_k_m"} {
		c := compile(t, name, quant.F32, 64)
		// Plan the decode schedule for as many output rows as prefill, so
		// that Eval's chunk (the smaller of the two plans' MaxOut) is the
		// whole batch even when every row's logits are asked for.
		dec, err := alloc.PlanSchedule(c.g, c.g.Decode, alloc.Options{MaxTokens: 1, MaxOut: 64, NCtx: c.g.Params.NCtx, KVType: quant.F32})
		if err != nil {
			t.Fatal(err)
		}
		c.mem["decode"] = dec
		g0, err := gguf.BuildGraph(c.f)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := reference.New(g0, c.f)
		if err != nil {
			t.Fatal(err)
		}
		for _, T := range []int{17, 24, 33} {
			toks := make([]int32, T)
			for i := range toks {
				toks[i] = int32((i*7919 + 13) % g0.Params.NVocab)
			}
			for _, out := range [][]int32{{int32(T - 1)}, seq(0, T)} {
				ref.Reset()
				want, err := ref.Eval(toks, seq(0, T), out)
				if err != nil {
					t.Fatal(err)
				}
				for _, threads := range []int{1, 2} {
					t.Run(fmt.Sprintf("%s/T%d/rows%d/t%d", name, T, len(out), threads), func(t *testing.T) {
						m, err := exec.New(c.g, c.mem, c.f, exec.Config{Threads: threads})
						if err != nil {
							t.Fatal(err)
						}
						defer m.Close()
						got, err := m.Eval(toks, seq(0, T), out)
						if err != nil {
							t.Fatal(err)
						}
						if len(got) != len(want) {
							t.Fatalf("%d logits, want %d", len(got), len(want))
						}
						if n, worst := diffBits(got, want); n != 0 {
							t.Errorf("%d of %d logits differ from the reference (worst %.3g)", n, len(want), worst)
						}
					})
				}
			}
		}
	}
}
