package cpu

import (
	"strings"
	"testing"

	"github.com/minfer/minfer/quant"
)

// TestPlanOnlyTypeNeedsKernels: minfer's own weight layouts (Q5_0x4) have
// SIMD kernels only, so NewMatMul takes them where those are installed
// and otherwise (no AVX2, the purego build, arm64) refuses them naming the
// command that recompiles the plan without them.
func TestPlanOnlyTypeNeedsKernels(t *testing.T) {
	_, err := NewMatMul(quant.Q5_0x4)
	if rowKernels[quant.Q5_0x4] == nil {
		if err == nil || !strings.Contains(err.Error(), "--pack-weights none") {
			t.Fatalf("no Q5_0x4 kernels (%s): NewMatMul = %v, want a refusal naming --pack-weights none", Features(), err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
}
