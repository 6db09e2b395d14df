package exec_test

import (
	"bytes"
	"math"
	"testing"

	"github.com/minfer/minfer/exec"
	"github.com/minfer/minfer/quant"
)

// TestKVStateRoundTrip: truncating the cache to a prefix and continuing,
// or saving the state and loading a prefix of it into a fresh model, gives
// bit-identical logits to a model that evaluated the same calls straight
// through, for every cache type. Refusals: loading more than was saved,
// truncating beyond the filled positions, a short state.
func TestKVStateRoundTrip(t *testing.T) {
	toks := []int32{620, 894, 134, 864, 856, 848, 924, 819, 69, 813, 170, 805}
	for _, kv := range []quant.Type{quant.F32, quant.F16, quant.Q8_0} {
		t.Run(kv.String(), func(t *testing.T) {
			c := compile(t, "qwen2-synth-q8_0", kv, 16)
			newModel := func() *exec.Model {
				m, err := exec.New(c.g, c.mem, c.f, exec.Config{Threads: 2})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(m.Close)
				return m
			}
			eval := func(m *exec.Model, a, b int) []float32 {
				t.Helper()
				o, err := m.Eval(toks[a:b], seq(a, b), []int32{int32(b - a - 1)})
				if err != nil {
					t.Fatal(err)
				}
				return append([]float32(nil), o...)
			}
			// The tail every model runs from position 6 on.
			tail := func(m *exec.Model) []float32 {
				out := eval(m, 6, 10)
				for i := 10; i < len(toks); i++ {
					out = append(out, eval(m, i, i+1)...)
				}
				return out
			}
			same := func(name string, got, want []float32) {
				t.Helper()
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s: logit %d = %v, straight run %v", name, i, got[i], want[i])
					}
				}
			}
			a := newModel()
			eval(a, 0, 6)
			want := tail(a)

			b := newModel()
			eval(b, 0, 6)
			if _, err := b.Eval([]int32{1, 2, 3}, seq(6, 9), []int32{2}); err != nil { // a turn later discarded
				t.Fatal(err)
			}
			if err := b.Truncate(10); err == nil {
				t.Fatal("truncate beyond the filled positions: no error")
			}
			if err := b.Truncate(6); err != nil {
				t.Fatal(err)
			}
			same("truncate", tail(b), want)

			var buf bytes.Buffer
			if err := b.SaveKV(&buf, b.Filled()+1); err == nil {
				t.Fatal("save beyond the filled positions: no error")
			}
			if err := b.SaveKV(&buf, 10); err != nil {
				t.Fatal(err)
			}
			if int64(buf.Len()) != b.KVBytes(10) {
				t.Fatalf("saved %d bytes, KVBytes says %d", buf.Len(), b.KVBytes(10))
			}
			fresh := newModel()
			if fresh.KVLayout() != b.KVLayout() {
				t.Fatal("layouts differ between models of one plan")
			}
			if err := fresh.LoadKV(bytes.NewReader(buf.Bytes()), 11, 10); err == nil {
				t.Fatal("load more positions than saved: no error")
			}
			if err := fresh.LoadKV(bytes.NewReader(buf.Bytes()[:buf.Len()-1]), 6, 10); err == nil || fresh.Filled() != 0 {
				t.Fatalf("short state: err %v, filled %d", err, fresh.Filled())
			}
			if err := fresh.LoadKV(bytes.NewReader(buf.Bytes()), 6, 10); err != nil {
				t.Fatal(err)
			}
			if fresh.Filled() != 6 {
				t.Fatalf("filled %d after loading 6", fresh.Filled())
			}
			same("save/load", tail(fresh), want)
		})
	}
}
