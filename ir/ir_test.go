package ir

import (
	"bytes"
	"strings"
	"testing"

	"gonum.org/v1/gonum/graph/formats/dot"

	"github.com/minfer/minfer/quant"
)

// tiny builds a one-layer toy graph: embed, norm, mat-mul, silu, logits.
func tiny() *Graph {
	g := &Graph{Arch: "toy", Params: Params{NVocab: 8, NEmbd: 32, NCtx: 4}}
	g.Tokens = g.NewValue("tokens", Input, quant.I32, Shape{DimT})
	g.Positions = g.NewValue("positions", Input, quant.I32, Shape{DimT})
	g.OutIDs = g.NewValue("out_ids", Input, quant.I32, Shape{DimR})
	emb := g.NewValue("token_embd.weight", Weight, quant.Q8_0, Shape{8, 32})
	emb.Source = emb.Name
	nw := g.NewValue("norm.weight", Weight, quant.F32, Shape{32})
	nw.Source = nw.Name
	x := g.AddNode(OpGetRows, "embd", -1, Attrs{}, Shape{DimT, 32}, emb, g.Tokens)
	h := g.AddNode(OpRMSNorm, "norm", 0, Attrs{Eps: 1e-6}, x.Shape, x)
	h = g.AddNode(OpMul, "norm_w", 0, Attrs{}, h.Shape, h, nw)
	h = g.AddNode(OpSiLU, "act", 0, Attrs{}, h.Shape, h)
	h = g.AddNode(OpGetRows, "rows", -1, Attrs{}, Shape{DimR, 32}, h, g.OutIDs)
	g.Logits = g.AddNode(OpMatMul, "logits", -1, Attrs{}, Shape{DimR, 8}, h, emb)
	return g
}

func TestVerifyAcceptsValidGraph(t *testing.T) {
	if err := Verify(tiny()); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyRejects(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(g *Graph)
		want   string
	}{
		{"shape mismatch", func(g *Graph) { g.Nodes[1].Outputs[0].Shape = Shape{DimT, 16} }, "output shape"},
		{"use before def", func(g *Graph) { g.Nodes[1], g.Nodes[2] = g.Nodes[2], g.Nodes[1]; g.Nodes[1].ID, g.Nodes[2].ID = 1, 2 }, "before it is produced"},
		{"bad eps", func(g *Graph) { g.Nodes[1].Attrs.Eps = 0 }, "eps"},
		{"weight width", func(g *Graph) { g.Values[4].Shape = Shape{12} }, "broadcast"},
		{"matmul block", func(g *Graph) { g.Values[3].DType = quant.Q4_K }, "block size"},
		{"packed rows", func(g *Graph) { g.Values[3].DType = quant.Q8_0r16 }, "groups of 16"},
		{"missing logits", func(g *Graph) { g.Logits = nil }, "logits"},
		{"ids dtype", func(g *Graph) { g.Tokens.DType = quant.F32 }, "i32"},
		{"cycle", func(g *Graph) { g.Nodes[1].Inputs[0] = g.Nodes[3].Outputs[0] }, "before it is produced"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := tiny()
			c.mutate(g)
			err := Verify(g)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Verify = %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestTopoOrderStable(t *testing.T) {
	g := tiny()
	first, err := TopoOrder(g)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		again, _ := TopoOrder(g)
		for j := range first {
			if again[j] != first[j] {
				t.Fatalf("run %d: order differs at %d", i, j)
			}
		}
	}
	g.Nodes[1].Inputs[0] = g.Nodes[3].Outputs[0] // norm reads silu: a cycle
	if _, err := TopoOrder(g); err == nil {
		t.Fatal("cycle not detected")
	}
}

func TestDOTParsesBack(t *testing.T) {
	g := tiny()
	g.Nodes[1].Group, g.Nodes[2].Group = 0, 0
	var buf bytes.Buffer
	if err := WriteDOT(&buf, g, `toy "graph"`); err != nil {
		t.Fatal(err)
	}
	ast, err := dot.ParseBytes(buf.Bytes())
	if err != nil {
		t.Fatalf("gonum cannot parse our DOT: %v\n%s", err, buf.String())
	}
	if len(ast.Graphs) != 1 {
		t.Fatalf("%d graphs", len(ast.Graphs))
	}
	s := buf.String()
	for _, want := range []string{"cluster_g0", "rms_norm", "mat_mul logits", "token_embd.weight q8_0"} {
		if !strings.Contains(s, want) {
			t.Errorf("DOT lacks %q", want)
		}
	}
}

func TestParseOpRoundTrip(t *testing.T) {
	for o := OpGetRows; o < numOps; o++ {
		if p, ok := ParseOp(o.String()); !ok || p != o {
			t.Errorf("ParseOp(%q) = %v, %v", o.String(), p, ok)
		}
	}
}
