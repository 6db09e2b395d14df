package cpu

import (
	"strings"
	"testing"

	"github.com/minfer/minfer/quant"
)

// TestPlanOnlyTypeNeedsKernels: minfer's own weight layouts (Q5_0x4, Q4_0x4) have
// SIMD kernels only, so NewMatMul takes them where those are installed
// and otherwise (no AVX2, the purego build, arm64) refuses them naming the
// command that recompiles the plan without them.
func TestPlanOnlyTypeNeedsKernels(t *testing.T) {
	for _, x := range []quant.Type{quant.Q5_0x4, quant.Q4_0x4} {
		_, err := NewMatMul(x)
		if rowKernels[x] == nil {
			if err == nil || !strings.Contains(err.Error(), "--pack-weights none") {
				t.Fatalf("no %s kernels (%s): NewMatMul = %v, want a refusal naming --pack-weights none", x, Features(), err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}
