package cpu

import (
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/cpu"

	"github.com/minfer/minfer/quant"
)

// The amd64 instruction-set tiers a kernel may use, decided once at start-up from
// the CPU's features. MINFER_NO_AVX512=1 drops the AVX-512 tier,
// MINFER_NO_AVX2=1 drops every SIMD tier (the pure-Go kernels remain; they
// are also what a `-tags purego` build uses everywhere), MINFER_NO_AVXVNNI=1
// the AVX-VNNI row kernels of the AVX2 tier (hasAVXVNNI).
var (
	hasAVX2   = cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C && os.Getenv("MINFER_NO_AVX2") == ""
	hasAVX512 = hasAVX2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL &&
		cpu.X86.HasAVX512DQ && os.Getenv("MINFER_NO_AVX512") == ""
	hasVNNI = hasAVX512 && cpu.X86.HasAVX512VNNI
	// hasAVXVNNI: the VEX-encoded VPDPBUSD on 256-bit registers (AVX-VNNI,
	// without AVX-512), which the AVX2 tier's Q5_0 / Q4_0 decode row kernels
	// use when the AVX-512 VNNI ones do not run; MINFER_NO_AVXVNNI=1 drops it.
	hasAVXVNNI = hasAVX2 && cpu.X86.HasAVXVNNI && os.Getenv("MINFER_NO_AVXVNNI") == ""
)

// The arm64 tiers: base NEON (ASIMD, which every arm64 CPU has) and ARMv8.2
// dotprod (SDOT). MINFER_NO_DOTPROD=1 drops the dotprod tier (the NEON
// kernels remain), MINFER_NO_NEON=1 drops both (pure Go).
var (
	hasNEON    = runtime.GOARCH == "arm64" && cpu.ARM64.HasASIMD && os.Getenv("MINFER_NO_NEON") == ""
	hasDotProd = hasNEON && cpu.ARM64.HasASIMDDP && os.Getenv("MINFER_NO_DOTPROD") == ""
)

// RowsFunc computes y[n] = dot(W row n, a) for the weight rows n in
// [n0, n1): one converted activation row a against wrb-byte weight rows of
// K elements. A SIMD RowsFunc must give the same bits as the pure-Go dot of
// its type (quant.DotFor), which is what the tests check.
type RowsFunc func(K int, w []byte, wrb int, a []byte, y []float32, n0, n1 int)

// GemmFunc computes y[m*ldy+n] = dot(W row n, act row m) for the weight
// rows n in [n0, n1) and activation rows m in [0, M) (arb bytes each): the
// prompt (prefill) form of a mat-mul, which can reuse each loaded weight
// block for several activation rows. Every output must have the same bits
// as its RowsFunc / pure-Go dot.
type GemmFunc func(K int, w []byte, wrb int, act []byte, arb, M int, y []float32, ldy, n0, n1 int)

// gemmKernels holds the SIMD GEMM kernels by weight type.
var gemmKernels = map[quant.Type]GemmFunc{}

// gemmTileRows holds, by weight type, the activation rows of its GEMM's
// tile: the GEMM evaluates multiples of it in tiles and the rest one row
// at a time with the row kernel (MatMul.RunCached hands such a rest to the
// small-M kernel instead, see gemmTail).
var gemmTileRows = map[quant.Type]int{}

// GemmCachedFunc is a GemmFunc that takes what it derives from the
// activation rows from an ActCache (nil: derive per call).
type GemmCachedFunc func(K int, w []byte, wrb int, act []byte, arb, M int, y []float32, ldy, n0, n1 int, c *ActCache)

// gemmCachedKernels holds the GEMMs that use an ActCache, by weight type;
// a type here has the same kernel in gemmKernels (without the cache).
var gemmCachedKernels = map[quant.Type]GemmCachedFunc{}

// registerGemmCached installs a SIMD GEMM kernel that can use an ActCache.
func registerGemmCached(t quant.Type, tier string, tileRows int, f GemmCachedFunc) {
	registerGemm(t, tier, tileRows, func(K int, w []byte, wrb int, act []byte, arb, M int, y []float32, ldy, n0, n1 int) {
		f(K, w, wrb, act, arb, M, y, ldy, n0, n1, nil)
	})
	gemmCachedKernels[t] = f
}

// registerGemm installs a SIMD GEMM kernel whose tiles hold tileRows
// activation rows.
func registerGemm(t quant.Type, tier string, tileRows int, f GemmFunc) {
	gemmKernels[t] = f
	gemmTileRows[t] = tileRows
	delete(gemmCachedKernels, t)
	tiers = append(tiers, "gemm/"+t.String()+":"+tier)
}

// rowTierChosen names, by weight type, the tier of the row kernel the
// start-up dispatch installed where it passed over a higher tier the CPU
// has (the f16 ZMM form on Zen 4): TestRowKernelDispatch expects it.
var rowTierChosen = map[quant.Type]string{}

// rowKernels holds the SIMD row kernels the start-up dispatch installed,
// by weight type; absent types use the pure-Go dot.
var rowKernels = map[quant.Type]RowsFunc{}

// actKernels holds SIMD activation quantizers by vec-dot type.
var actKernels = map[quant.Type]func(src []float32, dst []byte){}

// tiers lists the kernels installed, for Features.
var tiers []string

// registerRows installs a SIMD row kernel (called from arch files' init).
func registerRows(t quant.Type, tier string, f RowsFunc) {
	rowKernels[t] = f
	tiers = append(tiers, "mat_mul/"+t.String()+":"+tier)
}

// registerAct installs a SIMD activation quantizer.
func registerAct(t quant.Type, tier string, f func(src []float32, dst []byte)) {
	actKernels[t] = f
	tiers = append(tiers, "quantize/"+t.String()+":"+tier)
}

// zmmEightRow is set where the eight-row layouts' ZMM two-tile kernels
// run (amd64: AVX-512 VNNI at full 512-bit rate).
var zmmEightRow bool

// PackTier is the tier whose weight layouts minferc's pack-weights pass
// should write for this CPU (minferc compile --pack-weights auto): "avx2"
// when the AVX2 kernels run Q5_0 here (AVX2+FMA+F16C without AVX-512
// VNNI, or with it switched off by MINFER_NO_AVX512=1) and on the AVX-512
// VNNI tier where 512-bit operations run at full rate (Zen 5: the ZMM
// two-tile kernels of the eight-row layouts prefill 1.5-1.7x as fast as the
// GGUF layout's; for Q3_K and Q2_K that costs 12-16% of one-thread decode
// against their GGUF-layout VNNI row kernels, which "r8vnni" keeps); else
// "kquant" (Q4_K..Q6_K only: on Zen 4 the legacy types' GGUF-layout ZMM
// GEMMs beat the YMM eight-row kernels); "" without AVX2
// (docs/PERFORMANCE.md).
func PackTier() string {
	switch {
	case hasAVX2 && (!hasVNNI || zmmEightRow):
		return "avx2"
	case hasAVX2:
		return "kquant"
	}
	return ""
}

// PackTierRuns reports whether this CPU and build run the kernels of the
// weight layouts pack-weights writes for tier ("avx2", "r8vnni": the
// eight-row layouts, AVX2+FMA+F16C; "avx512": the sixteen-row layouts,
// AVX-512 VNNI, and the eight-row ones; "kquant": the eight-row K-quant
// ones), after the MINFER_NO_* switches.
func PackTierRuns(tier string) bool {
	kq := rowKernels[quant.Q4_Kr8] != nil
	switch tier {
	case "avx2", "r8vnni":
		return kq && rowKernels[quant.Q5_0r8] != nil
	case "avx512":
		return kq && rowKernels[quant.Q8_0r16] != nil
	case "kquant":
		return kq
	}
	return false
}

// Features describes the SIMD tier in use and the kernels it installed
// (for --stats and bug reports).
func Features() string {
	tier := "pure Go"
	switch {
	case hasAVX512:
		tier = "avx512"
	case hasAVX2:
		tier = "avx2"
	case hasDotProd:
		tier = "dotprod"
	case hasNEON:
		tier = "neon"
	}
	if len(tiers) == 0 {
		return tier
	}
	return tier + " (" + strings.Join(tiers, " ") + ")"
}
