package exec_test

import (
	"strings"
	"testing"

	"github.com/minfer/minfer/exec"
	"github.com/minfer/minfer/ir"
	"github.com/minfer/minfer/quant"
)

// The executor binds each node to the kernel the plan names (the
// select-kernels pass chose it at compile time); a name it does not know,
// or one that does not fit the node's operand types, is a load error — it
// never picks another kernel behind the plan's back.
func TestBindsPlanKernelNames(t *testing.T) {
	cases := []struct {
		name string
		op   ir.Op
		edit func(n *ir.Node) string // returns the kernel name to set
		want string
	}{
		{"unknown mat_mul type", ir.OpMatMul, func(*ir.Node) string { return "mat_mul/q9_Z" }, `unknown kernel "mat_mul/q9_Z"`},
		{"mat_mul of another type", ir.OpMatMul, func(n *ir.Node) string {
			if n.Inputs[1].DType == quant.Q8_0 {
				return "mat_mul/q4_0"
			}
			return "mat_mul/q8_0"
		}, "does not read"},
		{"mat_mul without a type", ir.OpMatMul, func(*ir.Node) string { return "gemm" }, `unknown kernel "gemm"`},
		{"renamed element-wise kernel", ir.OpSwiGLU, func(*ir.Node) string { return "swiglu_fast" }, `unknown kernel "swiglu_fast"`},
		{"get_rows of another type", ir.OpGetRows, func(*ir.Node) string { return "get_rows/q6_K" }, "does not read"},
		{"attention on another cache type", ir.OpAttention, func(*ir.Node) string { return "attention/q8_0" }, "KV cache"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := compile(t, "qwen2-synth-q8_0", quant.F32, 16)
			edited := 0
			for _, n := range c.g.Nodes {
				if n.Op == tc.op {
					n.Kernel = tc.edit(n)
					edited++
				}
			}
			if edited == 0 {
				t.Fatalf("no %s node in the graph", tc.op)
			}
			m, err := exec.New(c.g, c.mem, c.f, exec.Config{Threads: 1})
			if err == nil {
				m.Close()
				t.Fatalf("a plan naming kernel(s) the executor does not have loaded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
		})
	}
	// The unedited plan binds.
	c := compile(t, "qwen2-synth-q8_0", quant.F32, 16)
	m, err := exec.New(c.g, c.mem, c.f, exec.Config{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
}
