package cpu

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
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

// TestGetRowsX4: a row lookup of a table in a four-row layout (a tied
// embedding packed with the output head) gives the plain table's floats.
func TestGetRowsX4(t *testing.T) {
	r := rand.New(rand.NewPCG(71, 72))
	const V, cols = 12, 96
	for _, plain := range []quant.Type{quant.Q4_0, quant.Q5_0} {
		table := make([]byte, V*cols/32*plain.TypeSize())
		for i := range table {
			table[i] = byte(r.Uint32())
		}
		for i := 0; i < len(table); i += plain.TypeSize() { // finite scales
			binary.LittleEndian.PutUint16(table[i:], quant.FP32ToFP16(float32(r.NormFloat64())))
		}
		packed := make([]byte, len(table))
		if err := quant.PackX4(plain, packed, table, cols); err != nil {
			t.Fatal(err)
		}
		ids := []int32{0, 5, 11, 3, 3, 8}
		want, got := make([]float32, len(ids)*cols), make([]float32, len(ids)*cols)
		gp, err := GetRowsQuant(plain)
		if err != nil {
			t.Fatal(err)
		}
		gx, err := GetRowsQuant(quant.PackedX4(plain))
		if err != nil {
			t.Fatal(err)
		}
		gp(want, table, cols, ids, 0, len(ids))
		gx(got, packed, cols, ids, 1, len(ids)) // row 0 left zero
		for i := cols; i < len(got); i++ {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s: element %d = %v, want %v", quant.PackedX4(plain), i, got[i], want[i])
			}
		}
		for i := 0; i < cols; i++ {
			if got[i] != 0 {
				t.Fatalf("%s: row 0 written outside [r0, r1)", quant.PackedX4(plain))
			}
		}
	}
}
