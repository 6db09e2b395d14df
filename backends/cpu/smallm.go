package cpu

import "github.com/minfer/minfer/quant"

// Small-M mat-muls: the batched decode step of a server (exec.Model.EvalSeqs
// over 2..8 sequences) multiplies every weight by one activation row per
// sequence. The prefill GEMMs unpack (re-pack) each weight tile per call,
// which pays off only over many rows; a small-M kernel reads the raw weight
// blocks and dots each one, unpacked once into registers, with every
// activation row of the call. Every output has the bits of the row kernel
// (quant's pure-Go dot), so whichever path MatMul.Run takes for a given M,
// the result is the same.

// smallKernel is the small-M mat-mul of one weight type: f computes what a
// GemmFunc computes, for minM ≤ M ≤ maxM activation rows (minM 0 or 2:
// from 2). fc, when set, is the same kernel taking an ActCache for what it
// derives from the activation rows (from M ≥ fcMin; below, f).
type smallKernel struct {
	f     GemmFunc
	maxM  int
	tier  string
	minM  int
	fc    GemmCachedFunc
	fcMin int
	// upTo is the most activation rows for which MatMul runs this kernel
	// in chunks of at most maxM rows (0: never), in place of the type's
	// GEMM or, without one, of its row kernel once per row.
	upTo int
	// kmin is the fewest rows the dedicated kernel itself takes (below it,
	// f runs the row kernel once per row); maxM+1 when f is only the row
	// kernel run per row.
	kmin int
}

// smallKernels holds the small-M kernels the start-up dispatch installed,
// by weight type.
var smallKernels = map[quant.Type]smallKernel{}

// registerSmall installs a small-M kernel (called from arch files' init).
func registerSmall(t quant.Type, tier string, maxM int, f GemmFunc) {
	registerSmallFrom(t, tier, 2, maxM, f)
}

// registerSmallFrom installs a small-M kernel for minM ≤ M ≤ maxM; below
// minM the type's row kernel runs once per activation row (smallFor), or,
// without one, MatMul.Run's other paths.
func registerSmallFrom(t quant.Type, tier string, minM, maxM int, f GemmFunc) {
	smallKernels[t] = smallKernel{f: f, maxM: maxM, tier: tier, minM: minM, kmin: max(2, minM)}
	tiers = append(tiers, "smallm/"+t.String()+":"+tier)
}

// registerSmallCached is registerSmallFrom for a kernel that derives a
// block from the activation rows (its records): with an ActCache, the
// calls of one worker on the same rows (the chunks of a split, the q, k
// and v mat-muls of one input) derive it once.
func registerSmallCached(t quant.Type, tier string, minM, maxM int, fc GemmCachedFunc) {
	registerSmallFrom(t, tier, minM, maxM, func(K int, w []byte, wrb int, act []byte, arb, M int, y []float32, ldy, n0, n1 int) {
		fc(K, w, wrb, act, arb, M, y, ldy, n0, n1, nil)
	})
	s := smallKernels[t]
	s.fc, s.fcMin = fc, max(2, minM)
	smallKernels[t] = s
}

// smallUpTo makes the small-M kernel of t (installed first) run in chunks
// of at most its maxM rows up to upTo activation rows, instead of the
// type's GEMM: where, measured, that takes less time.
func smallUpTo(t quant.Type, upTo int) {
	s, ok := smallKernels[t]
	if !ok {
		panic("cpu: smallUpTo of " + t.String() + ", which has no small-M kernel")
	}
	s.upTo = upTo
	smallKernels[t] = s
}

// smallRows lists, with their largest M, the weight types whose small-M
// path is their row kernel run once per activation row over tiles of
// matMulTile weight rows (which stay in L1 across the rows): no new
// kernel, but no per-call re-pack either, which for the K-quant GEMMs
// costs more than it saves below 9 rows (BenchmarkSmallM).
var smallRows = map[quant.Type]int{}

// smallFor returns the small-M kernel of weight type t (rows: its row
// kernel, or nil), or none.
func smallFor(t quant.Type, rows RowsFunc) smallKernel {
	if s, ok := smallKernels[t]; ok {
		if s.minM > 2 && rows != nil {
			f, lo, rl := s.f, s.minM, rowsLoop(rows)
			s.f = func(K int, w []byte, wrb int, act []byte, arb, M int, y []float32, ldy, n0, n1 int) {
				if M < lo {
					rl(K, w, wrb, act, arb, M, y, ldy, n0, n1)
					return
				}
				f(K, w, wrb, act, arb, M, y, ldy, n0, n1)
			}
			s.minM = 2
		}
		return s
	}
	if m := smallRows[t]; m > 0 && rows != nil {
		return smallKernel{f: rowsLoop(rows), maxM: m, tier: "rows", minM: 2, kmin: m + 1}
	}
	return smallKernel{}
}

// rowsLoop is the GemmFunc that runs a row kernel once per activation row
// over tiles of matMulTile weight rows.
func rowsLoop(rows RowsFunc) GemmFunc {
	return func(K int, w []byte, wrb int, act []byte, arb, M int, y []float32, ldy, n0, n1 int) {
		rowTiles(rows, K, w, wrb, act, arb, M, y, ldy, n0, n1)
	}
}

// runSmall runs the small-M kernel of k's weight type when it has one for
// M rows, and reports whether it did.
func (k *MatMul) runSmall(K int, w []byte, wrb int, act []byte, arb, M int, y []float32, ldy, n0, n1 int, c *ActCache) bool {
	if M < max(2, k.small.minM) || M > k.small.maxM || k.small.f == nil {
		return false
	}
	if k.small.fc != nil && c != nil && M >= k.small.fcMin {
		k.small.fc(K, w, wrb, act, arb, M, y, ldy, n0, n1, c)
		return true
	}
	k.small.f(K, w, wrb, act, arb, M, y, ldy, n0, n1)
	return true
}
