//go:build amd64 && !purego

package cpu

import (
	"testing"

	"golang.org/x/sys/cpu"
)

// TestX86Model checks the CPUID helper against what x/sys/cpu reads from
// the same instruction (the AVX2 bit of leaf 7) and that it names a vendor
// and a family, and logs which K-quant GEMMs the start-up chose.
func TestX86Model(t *testing.T) {
	vendor, family, model := x86Model()
	t.Logf("CPU: %s family %#x model %#x; 512-bit ops at half rate: %v", vendor, family, model, zmmHalfRate())
	if len(vendor) != 12 || family == 0 {
		t.Fatalf("x86Model = %q, %#x, %#x", vendor, family, model)
	}
	_, b, _, _ := cpuid(7, 0)
	if got := b&(1<<5) != 0; got != cpu.X86.HasAVX2 {
		t.Fatalf("CPUID.7.0:EBX bit 5 (AVX2) = %v, x/sys/cpu says %v", got, cpu.X86.HasAVX2)
	}
}

// TestZMMHalfRateOverride checks MINFER_KQGEMM's two values.
func TestZMMHalfRateOverride(t *testing.T) {
	t.Setenv("MINFER_KQGEMM", "avx2")
	if !zmmHalfRate() {
		t.Fatal("MINFER_KQGEMM=avx2: zmmHalfRate() = false")
	}
	t.Setenv("MINFER_KQGEMM", "avx512")
	if zmmHalfRate() {
		t.Fatal("MINFER_KQGEMM=avx512: zmmHalfRate() = true")
	}
}
