package plan

import (
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"

	"golang.org/x/sys/cpu"
)

// featureStruct returns the golang.org/x/sys/cpu feature struct of arch.
func featureStruct(arch string) any {
	switch arch {
	case "amd64", "386":
		return &cpu.X86
	case "arm64":
		return &cpu.ARM64
	case "arm":
		return &cpu.ARM
	case "ppc64", "ppc64le":
		return &cpu.PPC64
	case "s390x":
		return &cpu.S390X
	case "riscv64":
		return &cpu.RISCV64
	case "loong64":
		return &cpu.Loong64
	case "mips64", "mips64le":
		return &cpu.MIPS64X
	}
	return nil
}

// features lists the feature names of this architecture's x/sys/cpu struct
// (each HasXxx field as "xxx") and which of them this CPU has.
func features() (known, have []string) {
	s := featureStruct(runtime.GOARCH)
	if s == nil {
		return nil, nil
	}
	v := reflect.ValueOf(s).Elem()
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, ok := strings.CutPrefix(f.Name, "Has")
		if !ok || f.Type.Kind() != reflect.Bool {
			continue
		}
		name = strings.ToLower(name)
		known = append(known, name)
		if v.Field(i).Bool() {
			have = append(have, name)
		}
	}
	slices.Sort(known)
	slices.Sort(have)
	return known, have
}

// MachineFeatures returns the golang.org/x/sys/cpu feature names (lower
// case, without "Has") this CPU has, sorted.
func MachineFeatures() []string {
	_, have := features()
	return have
}

// Machine returns the CPU fingerprint of this machine with the given
// required features: what the compiler stores in Plan.CPU.
func Machine(required ...string) CPUInfo {
	req := slices.Clone(required)
	slices.Sort(req)
	return CPUInfo{Arch: runtime.GOARCH, Required: slices.Compact(req), Machine: MachineFeatures()}
}

// CheckCPU refuses a plan whose kernels need a CPU feature this machine
// lacks, naming it, or that needs features of another architecture. A plan
// that needs no feature (what minferc writes unless it packs weights for a
// tier: the GGUF block layouts, which every kernel tier of every
// architecture reads) runs on any architecture: one compiled on amd64
// runs on arm64 and the other way round. A plan with Q5_0/Q4_0 packed for
// the AVX2 kernels requires avx2, f16c and fma.
func CheckCPU(c CPUInfo) error {
	if c.Arch != runtime.GOARCH && len(c.Required) > 0 {
		return fmt.Errorf("plan.bin: compiled for %s with kernels that need %s; this machine is %s — recompile with minferc compile (--pack-weights none writes a plan every CPU runs)",
			c.Arch, strings.Join(c.Required, ", "), runtime.GOARCH)
	}
	known, have := features()
	var lacking, unknown []string
	for _, f := range c.Required {
		switch {
		case slices.Contains(have, f):
		case slices.Contains(known, f):
			lacking = append(lacking, f)
		default:
			unknown = append(unknown, f)
		}
	}
	if len(lacking) > 0 {
		return fmt.Errorf("plan.bin: compiled for a CPU with %s; this CPU lacks it — recompile with minferc compile on this machine (--pack-weights none writes a plan every CPU runs)", strings.Join(lacking, ", "))
	}
	if len(unknown) > 0 {
		return fmt.Errorf("plan.bin: compiled for a CPU with %s, a feature this minfer cannot detect; this CPU lacks it as far as it can tell — recompile with minferc compile on this machine", strings.Join(unknown, ", "))
	}
	return nil
}
