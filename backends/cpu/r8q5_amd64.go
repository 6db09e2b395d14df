//go:build amd64 && !purego

package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/minfer/minfer/quant"
)

// The AVX2 kernels of the eight-row legacy layouts Q5_0r8, Q4_0r8, Q5_1r8 and Q4_1r8 (quant/q5_0r8.go;
// internal/asmgen/kr8.go, genR8Q5): one kernel per activation row count
// 1..4, more rows in chunks of at most 4 over spans of weight tiles, every
// output the bits of quant.DotR8 of its tile (which are DotR16's). They
// need AVX2+FMA+F16C only, so every x86-64 tier from AVX2 up runs them;
// the AVX-512 VNNI tier runs VPDPBUSD forms.

//go:noescape
func r8Q5_0m1(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q5_0m2(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q5_0m3(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q5_0m4(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q5_0m1v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q5_0m2v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q5_0m3v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q5_0m4v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q4_0m1(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q4_0m2(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q4_0m3(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q4_0m4(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q4_0m1v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q4_0m2v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q4_0m3v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q4_0m4v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q5_1m1(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q5_1m2(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q5_1m3(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q5_1m4(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q5_1m1v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q5_1m2v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q5_1m3v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q5_1m4v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q4_1m1(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q4_1m2(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q4_1m3(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q4_1m4(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q4_1m1v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q4_1m2v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q4_1m3v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q4_1m4v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q5_0m2z(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q5_0m3z(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q5_0m4z(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q4_0m2z(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q4_0m3z(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q4_0m4z(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q5_1m2z(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q5_1m3z(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q5_1m4z(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q4_1m2z(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q4_1m3z(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func r8Q4_1m4z(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

// r8LegKernels are the kernels of the eight-row legacy layouts by activation row
// count (index M-1): the AVX2 forms, replaced at start-up by the AVX-512
// VNNI ones (VPDPBUSD on YMM, the same bits) where that tier runs.
var r8LegKernels = map[quant.Type]*[4]kr8Kernel{
	quant.Q5_0r8: {r8Q5_0m1, r8Q5_0m2, r8Q5_0m3, r8Q5_0m4},
	quant.Q4_0r8: {r8Q4_0m1, r8Q4_0m2, r8Q4_0m3, r8Q4_0m4},
	quant.Q5_1r8: {r8Q5_1m1, r8Q5_1m2, r8Q5_1m3, r8Q5_1m4},
	quant.Q4_1r8: {r8Q4_1m1, r8Q4_1m2, r8Q4_1m3, r8Q4_1m4},
}

// r8LegVNNI are the AVX-512 VNNI forms of r8LegKernels.
var r8LegVNNI = map[quant.Type]*[4]kr8Kernel{
	quant.Q5_0r8: {r8Q5_0m1v, r8Q5_0m2v, r8Q5_0m3v, r8Q5_0m4v},
	quant.Q4_0r8: {r8Q4_0m1v, r8Q4_0m2v, r8Q4_0m3v, r8Q4_0m4v},
	quant.Q5_1r8: {r8Q5_1m1v, r8Q5_1m2v, r8Q5_1m3v, r8Q5_1m4v},
	quant.Q4_1r8: {r8Q4_1m1v, r8Q4_1m2v, r8Q4_1m3v, r8Q4_1m4v},
}

// r8LegZMMKernels are the ZMM two-tile forms of r8LegVNNI
// (internal/asmgen/kr8z.go: a tile in each half of every register, the
// same bits); r8LegZMM holds them where this CPU runs them (kr8ZMM's
// condition), and kr8Run gives them the even runs of whole tiles.
var r8LegZMMKernels = map[quant.Type]*[4]kr8Kernel{
	quant.Q5_0r8: {nil, r8Q5_0m2z, r8Q5_0m3z, r8Q5_0m4z},
	quant.Q4_0r8: {nil, r8Q4_0m2z, r8Q4_0m3z, r8Q4_0m4z},
	quant.Q5_1r8: {nil, r8Q5_1m2z, r8Q5_1m3z, r8Q5_1m4z},
	quant.Q4_1r8: {nil, r8Q4_1m2z, r8Q4_1m3z, r8Q4_1m4z},
}

var r8LegZMM = map[quant.Type]*[4]kr8Kernel{}

// r8LegBias is the factor of Σa in the records of eight-row layout t:
// its quants' offset, negated; 0 for Q5_1r8 and Q4_1r8, whose records
// hold s_a instead.
func r8LegBias(t quant.Type) int32 {
	switch t {
	case quant.Q4_0r8:
		return -8
	case quant.Q5_0r8:
		return -16
	}
	return 0
}

// r8Q5RecKind is the actKey kind of the kernels' records.
const r8Q5RecKind = 809

// r8Q5Records writes the records of M activation rows (arb bytes apart)
// of nb blocks: per block b and row t, at 8·(b·M+t), d_a as a float32
// and then, for Q8_0 rows, bias·Σ a as an int32 (bias ≠ 0), for Q8_1 rows
// (bias = 0) s_a as a float32.
func r8Q5Records(rec []byte, act []byte, arb, M, nb int, bias int32) {
	ab := 34
	if bias == 0 {
		ab = 36
	}
	_ = rec[8*nb*M-1]
	for t := 0; t < M; t++ {
		row := act[t*arb : t*arb+nb*ab]
		for b := 0; b < nb; b++ {
			blk := row[ab*b : ab*b+ab]
			o := rec[8*(b*M+t):]
			binary.LittleEndian.PutUint32(o, math.Float32bits(quant.FP16ToFP32(binary.LittleEndian.Uint16(blk))))
			if bias == 0 {
				binary.LittleEndian.PutUint32(o[4:], math.Float32bits(quant.FP16ToFP32(binary.LittleEndian.Uint16(blk[2:]))))
				continue
			}
			binary.LittleEndian.PutUint32(o[4:], uint32(bias*q8_0Sum(blk)))
		}
	}
}

// r8Q5Check panics unless the shapes are what the kernels read: whole
// tiles of wrb-byte rows under n1, M rows of nb Q8_0 blocks.
func r8Q5Check(t quant.Type, K int, w []byte, wrb int, act []byte, arb, M int, y []float32, ldy, n0, n1 int) int {
	nb := K / quant.QK
	ab := t.VecDotType().TypeSize()
	if K%quant.QK != 0 || wrb != nb*t.TypeSize() || n0 < 0 || M < 1 || (M > 1 && arb < nb*ab) || (M > 1 && ldy < n1) {
		panic(fmt.Sprintf("cpu: %s mat-mul: bad shape K=%d wrb=%d M=%d arb=%d ldy=%d rows %d..%d", t, K, wrb, M, arb, ldy, n0, n1))
	}
	g1 := (n1 + quant.R8Rows - 1) / quant.R8Rows
	_ = w[g1*quant.R8Rows*wrb-1]
	_ = act[(M-1)*arb+nb*ab-1]
	_ = y[(M-1)*ldy+n1-1]
	return nb
}

// r8Q5Scratch is the bytes at the start of the pooled buffer: the
// kernels' scratch (64·4: M = 4's float accumulators at 0, the mins' at
// 128) and the outputs of one cut tile (4 rows of 8 floats).
const r8Q5Scratch = 64*kr8MaxM + 4*quant.R8Rows*4

// r8Q5Rows is the RowsFunc of Q5_0r8 or Q4_0r8 (one activation row:
// decode).
func r8Q5Rows(t quant.Type) RowsFunc {
	return func(K int, w []byte, wrb int, a []byte, y []float32, n0, n1 int) {
		r8Q5RowsRun(t, K, w, wrb, a, y, n0, n1)
	}
}

func r8Q5RowsRun(t quant.Type, K int, w []byte, wrb int, a []byte, y []float32, n0, n1 int) {
	if n1 <= n0 {
		return
	}
	nb := r8Q5Check(t, K, w, wrb, a, 0, 1, y, 0, n0, n1)
	if nb == 0 {
		clear(y[n0:n1])
		return
	}
	bp := smallRecs.Get().(*[]byte)
	b := aligned32(bp, r8Q5Scratch+8*nb)
	r8Q5Records(b[r8Q5Scratch:], a, 0, 1, nb, r8LegBias(t))
	rec := unsafe.Slice((*int16)(unsafe.Pointer(&b[r8Q5Scratch])), 4*nb)
	kr8Run(r8LegKernels[t], r8LegZMM[t], 1, w, wrb, nb, a, 0, rec, b, y, 0, n0, n1, (*[4 * quant.R8Rows]float32)(unsafe.Pointer(&b[64*kr8MaxM])))
	smallRecs.Put(bp)
}

// r8Q5Small is the kernel of Q5_0r8 or Q4_0r8 for M ≥ 2 activation
// rows, the records taken from c when it holds them: chunks of at most 4
// rows (as even as possible), all of them over one span of weight tiles
// before the next.
func r8Q5Small(t quant.Type) GemmCachedFunc {
	return func(K int, w []byte, wrb int, act []byte, arb, M int, y []float32, ldy, n0, n1 int, c *ActCache) {
		r8Q5SmallRun(t, K, w, wrb, act, arb, M, y, ldy, n0, n1, c)
	}
}

func r8Q5SmallRun(t quant.Type, K int, w []byte, wrb int, act []byte, arb, M int, y []float32, ldy, n0, n1 int, c *ActCache) {
	if n1 <= n0 || M <= 0 {
		return
	}
	nb := r8Q5Check(t, K, w, wrb, act, arb, M, y, ldy, n0, n1)
	if nb == 0 {
		for m := 0; m < M; m++ {
			clear(y[m*ldy+n0 : m*ldy+n1])
		}
		return
	}
	bp := smallRecs.Get().(*[]byte)
	// records per chunk, each chunk's rows together (the kernel's order)
	n := 8 * nb * M
	fill := func(dst []byte) {
		kr8Chunks(M, func(m0, m1 int) {
			r8Q5Records(dst[8*nb*m0:], act[m0*arb:], arb, m1-m0, nb, r8LegBias(t))
		})
	}
	var b []byte
	if c != nil {
		// the records depend on the bias: one kind per layout
		b = c.derived(actKey{act: &act[0], arb: arb, nb: nb, M: M, kind: r8Q5RecKind + int(t&0xff)}, n, fill)
	} else {
		b = aligned32(bp, n+r8Q5Scratch)[r8Q5Scratch:]
		fill(b)
	}
	scr := aligned32(bp, r8Q5Scratch)
	tmp := (*[4 * quant.R8Rows]float32)(unsafe.Pointer(&scr[64*kr8MaxM]))
	rec := unsafe.Slice((*int16)(unsafe.Pointer(&b[0])), n/2)
	kr8Spans(r8LegKernels[t], r8LegZMM[t], nb, w, wrb, act, arb, M, rec, 4*nb, scr, y, ldy, n0, n1, tmp)
	smallRecs.Put(bp)
}

func init() {
	if !hasAVX2 {
		return
	}
	for _, t := range []quant.Type{quant.Q5_0r8, quant.Q4_0r8, quant.Q5_1r8, quant.Q4_1r8} {
		tier := "avx2"
		if hasVNNI {
			r8LegKernels[t], tier = r8LegVNNI[t], "avx512vnni"
			if !zmmHalfRate() {
				r8LegZMM[t], tier = r8LegZMMKernels[t], "avx512vnni-zmm"
			}
		}
		registerRows(t, tier, r8Q5Rows(t))
		registerSmallCached(t, tier, 2, math.MaxInt, r8Q5Small(t))
		smallUpTo(t, math.MaxInt)
	}
}
