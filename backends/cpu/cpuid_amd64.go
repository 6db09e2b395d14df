//go:build amd64 && !purego

package cpu

import (
	"encoding/binary"
	"os"
)

// cpuid executes CPUID with EAX = leaf and ECX = sub.
//
//go:noescape
func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)

// x86Model returns the CPU's vendor string and its family and model as
// CPUID leaf 1 gives them (the extended family and model folded in).
func x86Model() (vendor string, family, model uint32) {
	_, b, c, d := cpuid(0, 0)
	var v [12]byte
	binary.LittleEndian.PutUint32(v[0:], b)
	binary.LittleEndian.PutUint32(v[4:], d)
	binary.LittleEndian.PutUint32(v[8:], c)
	a, _, _, _ := cpuid(1, 0)
	family = a >> 8 & 0xf
	model = a >> 4 & 0xf
	if family == 0xf {
		family += a >> 20 & 0xff
	}
	if family == 0xf || family == 0x6 || family >= 0x11 {
		model |= (a >> 16 & 0xf) << 4
	}
	return string(v[:]), family, model
}

// zmmHalfRate reports whether the CPU runs 512-bit vector instructions as
// two 256-bit halves (AMD Zen 4, family 0x19 with AVX-512), where the
// AVX-512 K-quant GEMMs measured slower than the paired AVX2 ones
// (BenchmarkGemmKQuantAVX512, 2026-12-03: Q4_K 68–73 against 75–86 GMAC
// per CPU-second, Q6_K 73–79 against 83–93, Q5_K even) and the ZMM f16
// row kernel decoded slower than the YMM one (rows_f16_amd64.go).
// MINFER_KQGEMM=avx2 or =avx512 overrides the choice for both; either way
// every output has the same bits.
func zmmHalfRate() bool { return amdFamilyChoice("MINFER_KQGEMM", "avx2", "avx512", 0x19) }

// amdFamilyChoice is a start-up choice by CPU: true on AMD CPUs of the
// given family, unless the environment variable env says yes (true) or no
// (false).
func amdFamilyChoice(env, yes, no string, family uint32) bool {
	switch os.Getenv(env) {
	case yes:
		return true
	case no:
		return false
	}
	vendor, f, _ := x86Model()
	return vendor == "AuthenticAMD" && f == family
}

// prefetchL1 reports whether the eight-row K-quant layouts' one-row
// (decode) kernels should prefetch the weights into L1 8 KiB ahead rather than into
// L2 16 KiB ahead: on AMD Zen 5 (family 0x1a), where that streamed a 1 GiB
// matrix at 0.8–0.98 of a plain read against 0.5–0.8 and decoded
// Qwen3-0.6B Q4_K_M 15–20% faster (docs/PERFORMANCE.md, twenty-second
// session); elsewhere the L2 prefetch chosen on Zen 4 stays, where a
// prefetch into L1 had stalled on the L1's miss buffers (the sixteen-row
// kernels, seventeenth session). MINFER_PREFETCH=l1 or =l2 overrides; the
// bits are the same either way.
func prefetchL1() bool { return amdFamilyChoice("MINFER_PREFETCH", "l1", "l2", 0x1a) }
