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
// mat-muls read (as their weight), with a multiple of 4 rows, becomes
// Q5_0x4 (Q4_0x4) and its mat-mul's kernel says so; a weight another op
// reads (the token embedding's lookup) and the other types stay; without
// Pack nothing changes; an unknown tier is an error.
func TestPackWeights(t *testing.T) {
	for _, tc := range []struct {
		model     string
		plain, x4 quant.Type
	}{{"llama-synth-q5_0", quant.Q5_0, quant.Q5_0x4}, {"llama-synth-q4_0", quant.Q4_0, quant.Q4_0x4}} {
		testPackWeights(t, tc.model, tc.plain, tc.x4)
	}
}

func testPackWeights(t *testing.T, model string, plain, x4 quant.Type) {
	f, err := gguf.Open(fixtures.Path(t, "models", model+".gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, pack := range []string{"", "avx2"} {
		g, err := gguf.BuildGraph(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := passes.Run(g, passes.Options{KVType: quant.F16, Pack: pack, Verify: true}); err != nil {
			t.Fatal(err)
		}
		cons := g.Consumers()
		packed, kept := 0, 0
		for _, v := range g.Weights() {
			onlyMatMul := len(cons[v]) > 0
			for _, n := range cons[v] {
				if n.Op != ir.OpMatMul || n.Inputs[1] != v {
					onlyMatMul = false
				}
			}
			if pack == "avx2" && onlyMatMul && len(v.Shape) == 2 && v.Shape[0]%4 == 0 && v.DType != x4 {
				t.Errorf("pack %q: %s read only by mat-muls was not packed", pack, v)
			}
			switch v.DType {
			case x4:
				packed++
				if pack == "" || !onlyMatMul {
					t.Errorf("pack %q: %s packed", pack, v)
				}
				for _, n := range cons[v] {
					if n.Kernel != "mat_mul/"+x4.String() {
						t.Errorf("%s reads %s with kernel %q", n.Name, v, n.Kernel)
					}
				}
			case plain:
				kept++
			}
		}
		switch {
		case pack == "" && packed != 0:
			t.Errorf("no pack: %d weights packed", packed)
		case pack == "avx2" && (packed == 0 || kept == 0):
			t.Errorf("%s pack avx2: %d packed, %d %s kept (want some of each: the embedding stays)", model, packed, kept, plain)
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
