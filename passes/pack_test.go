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
	} {
		testPackWeights(t, tc.model, tc.tier, tc.plain, tc.x4)
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
