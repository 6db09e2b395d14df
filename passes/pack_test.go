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

// TestPackWeights: with Pack "avx2" every Q5_0 weight that only mat-muls
// read (as their weight), with a multiple of 4 rows, becomes Q5_0x4 and
// its mat-mul's kernel says so; a weight another op reads (the token
// embedding's lookup) and the other types stay; without Pack nothing
// changes; an unknown tier is an error.
func TestPackWeights(t *testing.T) {
	f, err := gguf.Open(fixtures.Path(t, "models", "llama-synth-q5_0.gguf"))
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
			if pack == "avx2" && onlyMatMul && len(v.Shape) == 2 && v.Shape[0]%4 == 0 && v.DType != quant.Q5_0x4 {
				t.Errorf("pack %q: %s read only by mat-muls was not packed", pack, v)
			}
			switch v.DType {
			case quant.Q5_0x4:
				packed++
				if pack == "" || !onlyMatMul {
					t.Errorf("pack %q: %s packed", pack, v)
				}
				for _, n := range cons[v] {
					if n.Kernel != "mat_mul/q5_0x4" {
						t.Errorf("%s reads %s with kernel %q", n.Name, v, n.Kernel)
					}
				}
			case quant.Q5_0:
				kept++
			}
		}
		switch {
		case pack == "" && packed != 0:
			t.Errorf("no pack: %d weights packed", packed)
		case pack == "avx2" && (packed == 0 || kept == 0):
			t.Errorf("pack avx2: %d packed, %d Q5_0 kept (want some of each: the embedding stays)", packed, kept)
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
