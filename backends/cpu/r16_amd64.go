//go:build amd64 && !purego

package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/minfer/minfer/quant"
)

// The AVX-512 VNNI kernels of the sixteen-row layouts Q8_0r16, Q5_0r16
// and Q4_0r16
// (quant/r16.go; internal/asmgen/r16.go), which minferc's pack-weights
// pass writes into plans for that tier (--pack-weights avx512): one kernel
// per weight type and activation row count 1..8, every output the bits of
// quant.DotR16 of its tile. Those layouts have no other kernels, so a plan
// holding them needs AVX-512 VNNI (plan.CheckCPU; NewMatMul names the
// recompile command where they are missing).

type r16Kernel func(w *byte, nb int, a *byte, arb int, rec *byte, y *float32, ldy int, tiles int)

//go:noescape
func r16Q8_0m1(w *byte, nb int, a *byte, arb int, rec *byte, y *float32, ldy int, tiles int)

//go:noescape
func r16Q8_0m2(w *byte, nb int, a *byte, arb int, rec *byte, y *float32, ldy int, tiles int)

//go:noescape
func r16Q8_0m3(w *byte, nb int, a *byte, arb int, rec *byte, y *float32, ldy int, tiles int)

//go:noescape
func r16Q8_0m4(w *byte, nb int, a *byte, arb int, rec *byte, y *float32, ldy int, tiles int)

//go:noescape
func r16Q8_0m5(w *byte, nb int, a *byte, arb int, rec *byte, y *float32, ldy int, tiles int)

//go:noescape
func r16Q8_0m6(w *byte, nb int, a *byte, arb int, rec *byte, y *float32, ldy int, tiles int)

//go:noescape
func r16Q8_0m7(w *byte, nb int, a *byte, arb int, rec *byte, y *float32, ldy int, tiles int)

//go:noescape
func r16Q8_0m8(w *byte, nb int, a *byte, arb int, rec *byte, y *float32, ldy int, tiles int)

//go:noescape
func r16Q5_0m1(w *byte, nb int, a *byte, arb int, rec *byte, y *float32, ldy int, tiles int)

//go:noescape
func r16Q5_0m2(w *byte, nb int, a *byte, arb int, rec *byte, y *float32, ldy int, tiles int)

//go:noescape
func r16Q5_0m3(w *byte, nb int, a *byte, arb int, rec *byte, y *float32, ldy int, tiles int)

//go:noescape
func r16Q5_0m4(w *byte, nb int, a *byte, arb int, rec *byte, y *float32, ldy int, tiles int)

//go:noescape
func r16Q5_0m5(w *byte, nb int, a *byte, arb int, rec *byte, y *float32, ldy int, tiles int)

//go:noescape
func r16Q5_0m6(w *byte, nb int, a *byte, arb int, rec *byte, y *float32, ldy int, tiles int)

//go:noescape
func r16Q5_0m7(w *byte, nb int, a *byte, arb int, rec *byte, y *float32, ldy int, tiles int)

//go:noescape
func r16Q5_0m8(w *byte, nb int, a *byte, arb int, rec *byte, y *float32, ldy int, tiles int)

//go:noescape
func r16Q4_0m1(w *byte, nb int, a *byte, arb int, rec *byte, y *float32, ldy int, tiles int)

//go:noescape
func r16Q4_0m2(w *byte, nb int, a *byte, arb int, rec *byte, y *float32, ldy int, tiles int)

//go:noescape
func r16Q4_0m3(w *byte, nb int, a *byte, arb int, rec *byte, y *float32, ldy int, tiles int)

//go:noescape
func r16Q4_0m4(w *byte, nb int, a *byte, arb int, rec *byte, y *float32, ldy int, tiles int)

//go:noescape
func r16Q4_0m5(w *byte, nb int, a *byte, arb int, rec *byte, y *float32, ldy int, tiles int)

//go:noescape
func r16Q4_0m6(w *byte, nb int, a *byte, arb int, rec *byte, y *float32, ldy int, tiles int)

//go:noescape
func r16Q4_0m7(w *byte, nb int, a *byte, arb int, rec *byte, y *float32, ldy int, tiles int)

//go:noescape
func r16Q4_0m8(w *byte, nb int, a *byte, arb int, rec *byte, y *float32, ldy int, tiles int)

type r16StreamKernel func(w *byte, nb int, a *byte, rec *byte, y *float32, stride int, ystride int, steps int)

//go:noescape
func r16Q8_0m1s4(w *byte, nb int, a *byte, rec *byte, y *float32, stride int, ystride int, steps int)

//go:noescape
func r16Q5_0m1s4(w *byte, nb int, a *byte, rec *byte, y *float32, stride int, ystride int, steps int)

//go:noescape
func r16Q4_0m1s4(w *byte, nb int, a *byte, rec *byte, y *float32, stride int, ystride int, steps int)

// r16StreamKernels are the one-row kernels that read four runs of tiles
// at once (internal/asmgen/r16.go, genR16Streams): the decode step's.
var r16StreamKernels = map[quant.Type]r16StreamKernel{
	quant.Q8_0r16: r16Q8_0m1s4,
	quant.Q5_0r16: r16Q5_0m1s4,
	quant.Q4_0r16: r16Q4_0m1s4,
}

// r16Kernels are the kernels of each sixteen-row layout by activation row
// count (index M-1).
var r16Kernels = map[quant.Type][8]r16Kernel{
	quant.Q8_0r16: {r16Q8_0m1, r16Q8_0m2, r16Q8_0m3, r16Q8_0m4, r16Q8_0m5, r16Q8_0m6, r16Q8_0m7, r16Q8_0m8},
	quant.Q5_0r16: {r16Q5_0m1, r16Q5_0m2, r16Q5_0m3, r16Q5_0m4, r16Q5_0m5, r16Q5_0m6, r16Q5_0m7, r16Q5_0m8},
	quant.Q4_0r16: {r16Q4_0m1, r16Q4_0m2, r16Q4_0m3, r16Q4_0m4, r16Q4_0m5, r16Q4_0m6, r16Q4_0m7, r16Q4_0m8},
}

// r16Scratch is the bytes of r16Run's scratch (8 rows of one tile's
// outputs), at the start of the pooled buffer.
const r16Scratch = 8 * quant.R16Rows * 4

// r16RecKind is the actKey kind of the kernels' records.
const r16RecKind = 512

// r16Records writes the records of M Q8_0 activation rows (arb bytes
// apart) of nb blocks: per block b and row t, at 2·(b·M+t), the int32
// -128·Σ of the block's quants and d_a as float32 bits.
func r16Records(rec []uint32, act []byte, arb, M, nb int) {
	_ = rec[2*nb*M-1]
	for t := 0; t < M; t++ {
		row := act[t*arb : t*arb+nb*34]
		for b := 0; b < nb; b++ {
			blk := row[34*b : 34*b+34]
			sum := q8_0Sum(blk)
			i := 2 * (b*M + t)
			rec[i] = uint32(-128 * sum)
			rec[i+1] = math.Float32bits(quant.FP16ToFP32(uint16(blk[0]) | uint16(blk[1])<<8))
		}
	}
}

// q8_0Sum is the sum of the 32 signed quants of a Q8_0 block: Σ int8(q) =
// Σ (q XOR 0x80) − 32·128, the unsigned bytes summed eight at a time in
// 16-bit fields.
func q8_0Sum(blk []byte) int32 {
	const lo = 0x00FF00FF00FF00FF
	var s uint64
	for i := 2; i < 34; i += 8 {
		v := binary.LittleEndian.Uint64(blk[i:]) ^ 0x8080808080808080
		s += v&lo + v>>8&lo
	}
	return int32(s*0x0001000100010001>>48) - 32*128
}

// r16Run runs kernel f (M activation rows) over the weight rows n0..n1:
// the tiles inside the range in one call (M = 1: sk, when given, over four
// runs of them at once, the rest on f), a tile the range cuts computed
// whole into a scratch and only its rows in range stored (a row's bits do
// not depend on its tile's other rows). tmp is that scratch (the kernels
// are called through func values, so a stack array would escape).
func r16Run(f r16Kernel, sk r16StreamKernel, w []byte, wrb, nb int, act []byte, arb int, rec []uint32, M int, y []float32, ldy, n0, n1 int, tmp *[8 * quant.R16Rows]float32) {
	tb := quant.R16Rows * wrb
	part := func(g, c0, c1 int) {
		f(&w[g*tb], nb, &act[0], arb, (*byte)(unsafe.Pointer(&rec[0])), &tmp[0], quant.R16Rows, 1)
		for t := 0; t < M; t++ {
			copy(y[t*ldy+c0:t*ldy+c1], tmp[t*quant.R16Rows+c0-g*quant.R16Rows:])
		}
	}
	g0, g1 := n0/quant.R16Rows, (n1+quant.R16Rows-1)/quant.R16Rows
	if n0%quant.R16Rows != 0 {
		part(g0, n0, min(n1, (g0+1)*quant.R16Rows))
		g0++
	}
	if g1 > g0 && n1%quant.R16Rows != 0 {
		g1--
		part(g1, g1*quant.R16Rows, n1)
	}
	if g1 <= g0 {
		return
	}
	if sk != nil {
		const J = 4
		if q := (g1 - g0) / J; q > 0 {
			sk(&w[g0*tb], nb, &act[0], (*byte)(unsafe.Pointer(&rec[0])), &y[g0*quant.R16Rows], q*tb, q*quant.R16Rows*4, q)
			g0 += J * q
		}
		if g1 <= g0 {
			return
		}
	}
	f(&w[g0*tb], nb, &act[0], arb, (*byte)(unsafe.Pointer(&rec[0])), &y[g0*quant.R16Rows], ldy, g1-g0)
}

// r16Check panics unless the shapes are what the kernels read: whole
// tiles of wrb-byte rows under n1, M rows of nb Q8_0 blocks.
func r16Check(t quant.Type, K int, w []byte, wrb int, act []byte, arb, M int, y []float32, ldy, n0, n1 int) int {
	nb := K / quant.QK
	if K%quant.QK != 0 || wrb != nb*t.TypeSize() || n0 < 0 || M < 1 || M > 8 || (M > 1 && arb < nb*34) || (M > 1 && ldy < n1) {
		panic(fmt.Sprintf("cpu: %s mat-mul: bad shape K=%d wrb=%d M=%d arb=%d ldy=%d rows %d..%d", t, K, wrb, M, arb, ldy, n0, n1))
	}
	g1 := (n1 + quant.R16Rows - 1) / quant.R16Rows
	_ = w[g1*quant.R16Rows*wrb-1]
	_ = act[(M-1)*arb+nb*34-1]
	_ = y[(M-1)*ldy+n1-1]
	return nb
}

// r16Rows is the RowsFunc of sixteen-row layout t.
func r16Rows(t quant.Type) RowsFunc {
	f, sk := r16Kernels[t][0], r16StreamKernels[t]
	return func(K int, w []byte, wrb int, a []byte, y []float32, n0, n1 int) {
		if n1 <= n0 {
			return
		}
		nb := r16Check(t, K, w, wrb, a, 0, 1, y, 0, n0, n1)
		if nb == 0 {
			clear(y[n0:n1])
			return
		}
		bp := smallRecs.Get().(*[]byte)
		b := aligned32(bp, 8*nb+r16Scratch)
		rec := unsafe.Slice((*uint32)(unsafe.Pointer(&b[r16Scratch])), 2*nb)
		r16Records(rec, a, 0, 1, nb)
		r16Run(f, sk, w, wrb, nb, a, 0, rec, 1, y, 0, n0, n1, (*[8 * quant.R16Rows]float32)(unsafe.Pointer(&b[0])))
		smallRecs.Put(bp)
	}
}

// r16Small is the small-M kernel (2..8 activation rows) of layout t, the
// records taken from c when it holds them.
func r16Small(t quant.Type) GemmCachedFunc {
	ks := r16Kernels[t]
	return func(K int, w []byte, wrb int, act []byte, arb, M int, y []float32, ldy, n0, n1 int, c *ActCache) {
		if n1 <= n0 || M <= 0 {
			return
		}
		nb := r16Check(t, K, w, wrb, act, arb, M, y, ldy, n0, n1)
		if nb == 0 {
			for m := 0; m < M; m++ {
				clear(y[m*ldy+n0 : m*ldy+n1])
			}
			return
		}
		n := 8 * nb * M
		fill := func(dst []byte) {
			r16Records(unsafe.Slice((*uint32)(unsafe.Pointer(&dst[0])), 2*nb*M), act, arb, M, nb)
		}
		bp := smallRecs.Get().(*[]byte)
		var b []byte
		if c != nil {
			b = c.derived(actKey{act: &act[0], arb: arb, nb: nb, M: M, kind: r16RecKind}, n, fill)
		} else {
			b = aligned32(bp, n+r16Scratch)[r16Scratch:]
			fill(b)
		}
		tmp := (*[8 * quant.R16Rows]float32)(unsafe.Pointer(&aligned32(bp, r16Scratch)[0]))
		rec := unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), 2*nb*M)
		r16Run(ks[M-1], nil, w, wrb, nb, act, arb, rec, M, y, ldy, n0, n1, tmp)
		smallRecs.Put(bp)
	}
}

func init() {
	if !hasVNNI {
		return
	}
	// The layouts' only kernels: every row count runs them, more than 8
	// in chunks of at most 8.
	for _, t := range []quant.Type{quant.Q8_0r16, quant.Q5_0r16, quant.Q4_0r16} {
		registerRows(t, "avx512vnni", r16Rows(t))
		registerSmallCached(t, "avx512vnni", 2, 8, r16Small(t))
		smallUpTo(t, math.MaxInt)
	}
}
