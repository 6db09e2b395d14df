// Package cpu holds the kernels of minfer's CPU executor: scalar pure Go for
// now, shaped so that SIMD versions can replace them one by one.
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
//   - Kernels allocate nothing; every buffer, scratch included, is the
//     caller's.
//   - No kernel switches on a tensor type per element or per block: type
//     dispatch happens once, in a constructor (NewMatMul, NewKV,
//     GetRowsQuant), which returns a specialized func or struct.
//   - The arithmetic is bit-identical to minfer/reference for the same
//     inputs: same formulas, same operation order, same precisions. So is
//     the result of a range computed in pieces by different workers, which
//     is what makes one thread and N threads produce the same bits.
package cpu
