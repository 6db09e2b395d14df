package cpu

import (
	"fmt"
	"unsafe"

	"github.com/minfer/minfer/quant"
)

// MatMul is the mat-mul kernel for one weight type, chosen when the graph
// is compiled. It computes y[m][n] = Σ_k x[m][k]·W[n][k] the way the
// reference executor (and llama.cpp's CPU backend) does: each activation row
// is first converted to the weight type's vec-dot type with the backend's
// activation quantizer (QuantizeRows), then every output element is one
// call of quant's dot kernel for the type (Run).
type MatMul struct {
	Weight, VecDot quant.Type

	quantize func(src []float32, dst []byte)
	dot      quant.DotFunc
	rows     RowsFunc       // SIMD row kernel, nil when the pure-Go dot is used
	gemm     GemmFunc       // SIMD kernel for several activation rows, or nil
	gemmC    GemmCachedFunc // gemm taking an ActCache, or nil (then gemm is used)
	gemmRows int            // activation rows per tile of gemm
	small    smallKernel    // SIMD kernel for 2..small.maxM rows (smallm.go), or none
	// block sizes and bytes per block of the weight and vec-dot types
	wbs, wts, abs, ats int
}

// NewMatMul returns the kernel for weights of type weight, or an error
// naming the type when minfer has no dot product for it.
func NewMatMul(weight quant.Type) (*MatMul, error) {
	if !weight.Known() {
		return nil, fmt.Errorf("cpu mat-mul: unsupported weight type %s", weight)
	}
	vdt := weight.VecDotType()
	k := &MatMul{Weight: weight, VecDot: vdt, quantize: quant.ActQuantFor(vdt), dot: quant.DotFor(weight),
		wbs: weight.BlockSize(), wts: weight.TypeSize(), abs: vdt.BlockSize(), ats: vdt.TypeSize()}
	if weight.PlanOnly() {
		// minfer's own layouts have SIMD kernels only (no pure-Go dot).
		if rowKernels[weight] == nil {
			tier := "AVX2 (+FMA, F16C)"
			if quant.GroupRows(weight) == quant.R16Rows {
				tier = "AVX-512 VNNI"
			}
			return nil, fmt.Errorf("cpu mat-mul: %s weights are %s packed by minferc's pack-weights pass for the %s tier, "+
				"and this CPU or build has no %s kernels for them: recompile the plan with "+
				"`minferc compile --pack-weights none MODEL.gguf -o PLAN`", weight, quant.Unpacked(weight), tier, tier)
		}
	} else if k.quantize == nil || k.dot == nil {
		return nil, fmt.Errorf("cpu mat-mul: unsupported weight type %s (no %s×%s dot kernel)", weight, weight, vdt)
	}
	if f := actKernels[vdt]; f != nil {
		k.quantize = f
	}
	k.rows = rowKernels[weight]
	k.gemm = gemmKernels[weight]
	k.gemmC = gemmCachedKernels[weight]
	k.gemmRows = gemmTileRows[weight]
	k.small = smallFor(weight, k.rows)
	return k, nil
}

// Check reports whether rows of K elements are valid for this kernel (K a
// multiple of both types' block sizes).
func (k *MatMul) Check(K int) error {
	if _, err := k.Weight.RowSize(K); err != nil {
		return fmt.Errorf("cpu mat-mul: weight rows: %v", err)
	}
	if _, err := k.VecDot.RowSize(K); err != nil {
		return fmt.Errorf("cpu mat-mul: activation rows: %v", err)
	}
	return nil
}

// ActRowBytes is the size of one quantized activation row of K elements
// (K must pass Check).
func (k *MatMul) ActRowBytes(K int) int { return K / k.abs * k.ats }

// WeightRowBytes is the size of one weight row (output column) of K
// elements (K must pass Check).
func (k *MatMul) WeightRowBytes(K int) int { return K / k.wbs * k.wts }

// QuantizeRows converts rows r0..r1 of x [rows][K] to the vec-dot type.
// Row r goes to dst[r*ActRowBytes(K):], the absolute row position, so
// workers quantizing different rows can share one buffer (a worker with a
// private buffer for rows r0..r1 passes x[r0*K:] and 0..r1-r0).
func (k *MatMul) QuantizeRows(x []float32, K, r0, r1 int, dst []byte) {
	rb := k.ActRowBytes(K)
	for r := r0; r < r1; r++ {
		k.quantize(x[r*K:(r+1)*K], dst[r*rb:(r+1)*rb])
	}
}

// matMulTile is the number of weight rows swept over all activation rows
// before moving on, so a tile of weights stays in cache across rows. The
// order of evaluation does not change any result: each output element is
// one independent dot product.
const matMulTile = 16

// Run computes y[m*ldy+n] = dot(W row n, act row m) for output columns n in
// n0..n1 and activation rows m in 0..M. w is the whole weight [N][K] in its
// type's row layout (row n at n*WeightRowBytes(K)), act holds M rows
// quantized by QuantizeRows (row m at m*ActRowBytes(K)), and ldy is the
// row stride of y (N for a plain [M][N] output).
func (k *MatMul) Run(K int, w []byte, act []byte, M int, y []float32, ldy, n0, n1 int) {
	k.RunCached(K, w, act, M, y, ldy, n0, n1, nil)
}

// RunCached is Run with an ActCache: what the GEMM derives from the
// activation rows (ActCache) is taken from c when an earlier call on the
// same rows already derived it, instead of being derived again. c may be
// nil. The result is the same bits either way.
func (k *MatMul) RunCached(K int, w []byte, act []byte, M int, y []float32, ldy, n0, n1 int, c *ActCache) {
	wrb, arb := k.WeightRowBytes(K), k.ActRowBytes(K)
	if k.runSmall(K, w, wrb, act, arb, M, y, ldy, n0, n1, c) {
		return
	}
	if M > 1 && M <= k.small.upTo && k.small.f != nil {
		k.runSmallChunks(K, w, wrb, act, arb, M, y, ldy, n0, n1, c)
		return
	}
	if (k.gemmC != nil || k.gemm != nil) && M > 1 {
		if t := k.gemmTail(M); t > 0 {
			h := M - t
			k.runGemm(K, w, wrb, act, arb, h, y, ldy, n0, n1, c)
			k.runSmall(K, w, wrb, act[h*arb:], arb, t, y[h*ldy:], ldy, n0, n1, c)
			return
		}
		k.runGemm(K, w, wrb, act, arb, M, y, ldy, n0, n1, c)
		return
	}
	if rows := k.rows; rows != nil {
		if M == 1 {
			rows(K, w, wrb, act[:arb], y, n0, n1)
			return
		}
		rowTiles(rows, K, w, wrb, act, arb, M, y, ldy, n0, n1)
		return
	}
	dot := k.dot
	if M == 1 {
		a := act[:arb]
		for n := n0; n < n1; n++ {
			y[n] = dot(K, w[n*wrb:(n+1)*wrb], a)
		}
		return
	}
	for nb := n0; nb < n1; nb += matMulTile {
		ne := min(nb+matMulTile, n1)
		for m := 0; m < M; m++ {
			a := act[m*arb : (m+1)*arb]
			ym := y[m*ldy:]
			for n := nb; n < ne; n++ {
				ym[n] = dot(K, w[n*wrb:(n+1)*wrb], a)
			}
		}
	}
}

// rowTiles runs a row kernel once per activation row over tiles of
// matMulTile weight rows, which stay in cache across the M rows.
func rowTiles(rows RowsFunc, K int, w []byte, wrb int, act []byte, arb, M int, y []float32, ldy, n0, n1 int) {
	for nb := n0; nb < n1; nb += matMulTile {
		ne := min(nb+matMulTile, n1)
		for m := 0; m < M; m++ {
			rows(K, w, wrb, act[m*arb:(m+1)*arb], y[m*ldy:], nb, ne)
		}
	}
}

// runGemm runs the GEMM (with c when it takes one).
func (k *MatMul) runGemm(K int, w []byte, wrb int, act []byte, arb, M int, y []float32, ldy, n0, n1 int, c *ActCache) {
	if k.gemmC != nil {
		k.gemmC(K, w, wrb, act, arb, M, y, ldy, n0, n1, c)
		return
	}
	k.gemm(K, w, wrb, act, arb, M, y, ldy, n0, n1)
}

// runSmallChunks runs the small-M kernel over M activation rows (more than
// it takes at once) in the fewest calls of at most small.maxM rows each,
// the rows shared out evenly (9 = 4 + 5): below small.upTo rows, several
// passes of it over the weights take less time than the GEMM's one.
func (k *MatMul) runSmallChunks(K int, w []byte, wrb int, act []byte, arb, M int, y []float32, ldy, n0, n1 int, c *ActCache) {
	n := (M + k.small.maxM - 1) / k.small.maxM
	m0 := 0
	for i := 1; i <= n; i++ {
		m1 := M * i / n
		if !k.runSmall(K, w, wrb, act[m0*arb:], arb, m1-m0, y[m0*ldy:], ldy, n0, n1, c) {
			// Unreachable: smallFor leaves every kernel taking 2..maxM
			// rows, and a chunk of more than maxM rows has at least
			// maxM/2.
			panic(fmt.Sprintf("cpu: %s small-M kernel refused a chunk of %d rows", k.Weight, m1-m0))
		}
		m0 = m1
	}
}

// gemmTail returns how many of the last of M activation rows (more than
// the small-M kernel takes) go to the small-M kernel instead of the GEMM,
// 0 for none. The GEMM evaluates whole tiles of gemmRows rows and the rest
// with the row kernel, one pass over the weights per row: at 9 rows that
// single row cost Qwen2.5-0.5B's step more than the 8 before it. The
// small-M kernel takes those rows together, with a tile's worth more when
// the rest is below its fewest rows (9 = 4 + 5 for 4-row tiles).
func (k *MatMul) gemmTail(M int) int {
	C, s := k.gemmRows, k.small
	if C < 2 || s.f == nil || M <= s.maxM {
		return 0
	}
	r := M % C
	if r == 0 {
		return 0
	}
	for t := r; t <= s.maxM && t < M; t += C {
		if t >= s.kmin {
			return t
		}
	}
	return 0
}

// ActCache keeps what a GEMM derives from a block of quantized activation
// rows before its tiles run — the K-quant GEMMs' paired activation blocks,
// bsum pairs or biased quants, the legacy AVX2 GEMMs' repacked quants and
// scale tables, a copy of every activation byte — so that
// the mat-muls of a group that read the same rows (Q, K and V; gate and up)
// and every chunk of their output columns derive it once, not once per
// call: in a prefill split over two workers in four chunks each, a
// mat-mul's columns come in eight calls. An ActCache belongs to one
// goroutine. Its owner calls Reset whenever the activation rows it hands
// to RunCached change (the rows are identified by their address, shape
// and layout only). The zero value is ready to use.
type ActCache struct {
	gen    uint64
	ents   []actEntry
	sharer ActSharer
}

// ActSharer builds a derived activation block together with the other
// workers that run the same mat-muls on the same activation rows (an
// executor's workers on an input they share).
type ActSharer interface {
	// Share returns n bytes, 64-byte aligned, holding the block named key
	// for the current rows: the callers split its tiles between them,
	// each writing tiles t0..t1 with fill(dst, t0, t1) (tiles write
	// disjoint bytes), and it returns once every tile is written — or nil
	// if the caller is to build the block alone (the others are slow to
	// finish their tiles). Every caller passes the same n, tiles and fill
	// for the same key.
	Share(key any, n, tiles int, fill func(dst []byte, t0, t1 int)) []byte
}

// SetSharer makes c take the blocks that can be built tile by tile from s
// (shared with the other workers) instead of building them alone; c must
// then only be given activation rows those workers share. (The blocks
// built this way are the GEMMs' that are made tile by tile; their calls
// then allocate their closures, which the unshared calls do not.)
func (c *ActCache) SetSharer(s ActSharer) { c.sharer = s }

// actKey identifies one derived block: the rows (address, bytes per row,
// blocks per row, rows), the kernel's tile shape and the kind of block.
type actKey struct {
	act                    *byte
	arb, nb, M, C, R, kind int
}

type actEntry struct {
	key actKey
	gen uint64
	buf []byte
}

// actCacheEntries bounds the blocks kept at once (a group reads one
// activation matrix through at most a few tile shapes).
const actCacheEntries = 4

// Reset forgets every derived block: the activation rows changed.
func (c *ActCache) Reset() { c.gen++ }

// derived returns n bytes, 64-byte aligned, holding what fill writes for
// key: from the cache when key was filled since the last Reset, else
// filled now (reusing a stale entry's buffer when there is one).
func (c *ActCache) derived(key actKey, n int, fill func(dst []byte)) []byte {
	var slot *actEntry
	for i := range c.ents {
		e := &c.ents[i]
		if e.gen == c.gen && e.key == key {
			return align64(e.buf, n)
		}
		if slot == nil && e.gen != c.gen {
			slot = e
		}
	}
	if slot == nil {
		if len(c.ents) < actCacheEntries {
			c.ents = append(c.ents, actEntry{})
			slot = &c.ents[len(c.ents)-1]
		} else {
			slot = &c.ents[0]
		}
	}
	if cap(slot.buf) < n+63 {
		slot.buf = make([]byte, n+63)
	}
	slot.buf = slot.buf[:cap(slot.buf)]
	slot.key, slot.gen = key, c.gen
	b := align64(slot.buf, n)
	fill(b)
	return b
}

// align64 returns n bytes of b starting at its first 64-byte boundary (b
// must hold n+63 bytes): derived blocks suit the ZMM kernels' aligned
// loads.
func align64(b []byte, n int) []byte {
	o := int(-uintptr(unsafe.Pointer(unsafe.SliceData(b))) & 63)
	return b[o : o+n]
}

// align32 returns n bytes of b starting at its first 32-byte boundary (b
// must hold n+31 bytes).
func align32(b []byte, n int) []byte {
	o := int(-uintptr(unsafe.Pointer(unsafe.SliceData(b))) & 31)
	return b[o : o+n]
}
