package passes_test

import (
	"strings"
	"testing"

	"github.com/minfer/minfer/frontends/gguf"
	"github.com/minfer/minfer/internal/fixtures"
	"github.com/minfer/minfer/ir"
	"github.com/minfer/minfer/passes"
	"github.com/minfer/minfer/quant"
)

// TestPackWeights: with Pack "avx2" every Q5_0 (Q4_0) weight that only
// mat-muls (as their weight) and row lookups (as their table: the token
// embedding) read, with a multiple of 8 rows, becomes Q5_0r8 (Q4_0r8), and
// with Pack "avx512" every such Q5_0 (Q8_0, Q4_0) weight with a multiple
// of 16 rows becomes Q5_0r16 (Q8_0r16, Q4_0r16), and its readers' kernels say so; the
// other types stay; without Pack nothing changes; an unknown tier is an
// error.
func TestPackWeights(t *testing.T) {
	for _, tc := range []struct {
		model     string
		tier      string
		plain, x4 quant.Type
	}{
		{"llama-synth-q5_0", "avx2", quant.Q5_0, quant.Q5_0r8},
		{"llama-synth-q4_0", "avx2", quant.Q4_0, quant.Q4_0r8},
		{"llama-synth-q5_0", "avx512", quant.Q5_0, quant.Q5_0r16},
		{"llama-synth-q8_0", "avx512", quant.Q8_0, quant.Q8_0r16},
		{"llama-synth-q4_0", "avx512", quant.Q4_0, quant.Q4_0r16},
		{"qwen2-synth-q8_0", "avx512", quant.Q8_0, quant.Q8_0r16},
		{"llama-synth-q5_0", "r8vnni", quant.Q5_0, quant.Q5_0r8},
		{"llama-synth-q4_1", "r8vnni", quant.Q4_1, quant.Q4_1r8},
		{"llama-synth-q4_k", "r8vnni", quant.Q4_K, quant.Q4_Kr8},
		{"llama-synth-q3_k", "avx2", quant.Q3_K, quant.Q3_Kr8},
	} {
		testPackWeights(t, tc.model, tc.tier, tc.plain, tc.x4)
	}
}

// TestPackR8VNNIKeepsQ3Q2 checks that "r8vnni" and "kquant" leave Q3_K
// and Q2_K weights in the GGUF layout (their GGUF-layout VNNI row kernels
// decode faster), where "avx2" packs them (TestPackWeights).
func TestPackR8VNNIKeepsQ3Q2(t *testing.T) {
	for _, model := range []string{"llama-synth-q3_k", "llama-synth-q2_k"} {
		f, err := gguf.Open(fixtures.Path(t, "models", model+".gguf"))
		if err != nil {
			t.Fatal(err)
		}
		for _, pack := range []string{"r8vnni", "kquant"} {
			g, err := gguf.BuildGraph(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := passes.Run(g, passes.Options{KVType: quant.F16, Pack: pack, Verify: true}); err != nil {
				t.Fatal(err)
			}
			kq := 0
			for _, v := range g.Weights() {
				switch v.DType {
				case quant.Q3_Kr8, quant.Q2_Kr8:
					t.Errorf("%s pack %s: %s packed to %s", model, pack, v, v.DType)
				case quant.Q3_K, quant.Q2_K:
					kq++
				}
			}
			if kq == 0 {
				t.Errorf("%s pack %s: no Q3_K/Q2_K weight left to check", model, pack)
			}
		}
		f.Close()
	}
}

func testPackWeights(t *testing.T, model, tier string, plain, x4 quant.Type) {
	rows := quant.GroupRows(x4)
	f, err := gguf.Open(fixtures.Path(t, "models", model+".gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, pack := range []string{"", tier} {
		g, err := gguf.BuildGraph(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := passes.Run(g, passes.Options{KVType: quant.F16, Pack: pack, Verify: true}); err != nil {
			t.Fatal(err)
		}
		cons := g.Consumers()
		packed, lookups := 0, 0
		for _, v := range g.Weights() {
			readable := len(cons[v]) > 0 // only as a mat-mul's weight or a lookup's table
			for _, n := range cons[v] {
				switch {
				case n.Op == ir.OpMatMul && n.Inputs[1] == v:
				case n.Op == ir.OpGetRows && n.Inputs[0] == v:
				default:
					readable = false
				}
			}
			want := v.DType == x4 || v.DType == plain && !(pack == tier && readable && len(v.Shape) == 2 && int(v.Shape[0])%rows == 0)
			if v.DType == x4 {
				packed++
				want = pack == tier && readable
				for _, n := range cons[v] {
					if n.Op == ir.OpGetRows {
						lookups++
					}
					if k := n.Op.String() + "/" + x4.String(); n.Kernel != k {
						t.Errorf("%s reads %s with kernel %q, want %q", n.Name, v, n.Kernel, k)
					}
				}
			}
			if (v.DType == x4 || v.DType == plain) && !want {
				t.Errorf("%s pack %q: %s is %s", model, pack, v, v.DType)
			}
		}
		switch {
		case pack == "" && packed != 0:
			t.Errorf("%s no pack: %d weights packed", model, packed)
		case pack == tier && (packed == 0 || lookups == 0):
			t.Errorf("%s pack %s: %d weights packed, %d of them looked up by rows (want both > 0: the embedding table packs too)", model, tier, packed, lookups)
		}
	}
	g, err := gguf.BuildGraph(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := passes.Run(g, passes.Options{KVType: quant.F16, Pack: "neon"}); err == nil || !strings.Contains(err.Error(), "neon") {
		t.Fatalf("pack neon: %v, want an error naming it", err)
	}
}
