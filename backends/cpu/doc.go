// Package cpu holds the kernels of minfer's CPU executor. Each kernel has a
// pure-Go version, the oracle (built alone with -tags purego), and on amd64
// Go-assembly versions for the AVX2 (+FMA, F16C) and AVX-512 (F/BW/VL/DQ,
// VNNI) tiers, on arm64 for the dotprod (SDOT) and base NEON tiers (the
// quantized row kernels; docs/ARM64.md): dispatch.go chooses one per kernel
// once at start-up from the CPU's features (MINFER_NO_AVX512=1,
// MINFER_NO_AVX2=1, MINFER_NO_DOTPROD=1 and MINFER_NO_NEON=1 drop tiers),
// and Features names the choice. Within the AVX2 tier, the Q5_0 and Q4_0
// decode row kernels have AVX-VNNI forms (VEX VPDPBUSD on 256-bit
// registers), used where the CPU has AVX-VNNI and the AVX-512 VNNI ones do
// not run (MINFER_NO_AVXVNNI=1 drops them).
//
// Conventions shared by every kernel:
//
//   - Activations are row-major float32 matrices [rows][cols]: element
//     (r, c) is at index r*cols+c. Token rows are rows; a tensor's width is
//     its columns.
//   - A kernel computes a sub-range of its output and nothing else: a row
//     range r0..r1 (half-open) for work split by token rows, or a column
//     range c0..c1 over every row for work split by columns (the executor's
//     "SplitCols" units: KV heads, blocks of output columns). Row and column
//     indices are always absolute, never relative to the range, so workers
//     share one output buffer and write disjoint parts of it.
//   - Kernels allocate nothing per call in steady state: outputs are the
//     caller's, and scratch is either the caller's (per-worker scratch such
//     as AttnScratch, sized when the executor binds the plan) or taken from
//     a sync.Pool and grown only when a larger shape first needs it (the
//     GEMM wrappers).
//   - No kernel switches on a tensor type per element or per block: type
//     dispatch happens once, in a constructor (NewMatMul, NewKV,
//     GetRowsQuant), which returns a specialized func or struct.
//   - The arithmetic is bit-identical to minfer/reference for the same
//     inputs: same formulas, same operation order, same precisions. So is
//     the result of a range computed in pieces by different workers, which
//     is what makes one thread and N threads produce the same bits.
package cpu
