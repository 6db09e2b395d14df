//go:build amd64 && !purego

package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/minfer/minfer/quant"
)

// The AVX2 kernels of the eight-row K-quant layouts Q4_Kr8, Q5_Kr8, Q6_Kr8, Q3_Kr8 and Q2_Kr8 (quant/kr8.go;
// internal/asmgen/kr8.go), which minferc's pack-weights pass writes into
// plans: one kernel per activation row count 1..4 (more rows run in
// chunks of at most 4, a span of weight tiles at a time), every output the
// bits of quant.DotR8 of its tile. They need AVX2+FMA+F16C only; the
// AVX-512 VNNI tier runs VPDPBUSD forms of them (kr8VNNIKernels), whose
// exact integer sums give the same bits, so every tier gets the same
// logits; where 512-bit operations run at full rate, ZMM forms of those
// take two tiles at a time (kr8ZMMKernels). The layouts have no other
// kernels, so a plan holding them needs those features (plan.CheckCPU; NewMatMul names the recompile command
// where they are missing).

type kr8Kernel func(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q4Km1(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q4Km2(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q4Km3(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q4Km4(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q6Km1(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q6Km2(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q6Km3(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q6Km4(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q5Km1(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q5Km2(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q5Km3(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q5Km4(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q4Km1v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q4Km2v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q4Km3v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q4Km4v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q5Km1v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q5Km2v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q5Km3v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q5Km4v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q6Km1v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q6Km2v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q6Km3v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q6Km4v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q3Km1(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q3Km2(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q3Km3(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q3Km4(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q3Km1v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q3Km2v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q3Km3v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q3Km4v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q2Km1(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q2Km2(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q2Km3(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q2Km4(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q2Km1v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q2Km2v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q2Km3v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q2Km4v(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q4Km2z(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q4Km3z(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q4Km4z(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q5Km2z(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q5Km3z(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q5Km4z(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q6Km2z(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q6Km3z(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q6Km4z(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q3Km2z(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q3Km3z(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q3Km4z(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q2Km2z(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q2Km3z(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q2Km4z(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q4Km1p(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q4Km1vp(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q5Km1p(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q5Km1vp(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q6Km1p(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q6Km1vp(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q3Km1p(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q3Km1vp(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q2Km1p(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

//go:noescape
func kr8Q2Km1vp(w *byte, nb int, a *byte, arb int, rec *byte, scr *byte, y *float32, ldy int, tiles int)

// kr8ZMMKernels are the ZMM forms of the eight-row K-quant VNNI kernels
// (internal/asmgen/kr8z.go): two tiles at once, one in each half of every
// register, the same bits; for 2..4 activation rows (none for decode:
// internal/asmgen/kr8z.go says why). kr8Run gives them the even runs of
// whole tiles where kr8ZMM installed them (AVX-512 VNNI at full 512-bit
// rate).
var kr8ZMMKernels = map[quant.Type]*[4]kr8Kernel{
	quant.Q4_Kr8: {nil, kr8Q4Km2z, kr8Q4Km3z, kr8Q4Km4z},
	quant.Q5_Kr8: {nil, kr8Q5Km2z, kr8Q5Km3z, kr8Q5Km4z},
	quant.Q6_Kr8: {nil, kr8Q6Km2z, kr8Q6Km3z, kr8Q6Km4z},
	quant.Q3_Kr8: {nil, kr8Q3Km2z, kr8Q3Km3z, kr8Q3Km4z},
	quant.Q2_Kr8: {nil, kr8Q2Km2z, kr8Q2Km3z, kr8Q2Km4z},
}

// kr8ZMM is each eight-row layout's ZMM kernels where this CPU runs them
// (a VNNI CPU that runs 512-bit operations at full rate: not Zen 4, whose
// halves would gain nothing; MINFER_KQGEMM=avx2 drops them, as it drops
// the other ZMM K-quant kernels), nil where it does not.
var kr8ZMM = map[quant.Type]*[4]kr8Kernel{}

// kr8PrefL1Kernels are the one-row kernels (AVX2 form, VNNI form) that
// prefetch the weights into L1 8 KiB ahead instead of into L2 16 KiB
// ahead (internal/asmgen/kr8.go, kr8Pref): the same bits, installed where
// prefetchL1 says so.
var kr8PrefL1Kernels = map[quant.Type][2]kr8Kernel{
	quant.Q4_Kr8: {kr8Q4Km1p, kr8Q4Km1vp},
	quant.Q5_Kr8: {kr8Q5Km1p, kr8Q5Km1vp},
	quant.Q6_Kr8: {kr8Q6Km1p, kr8Q6Km1vp},
	quant.Q3_Kr8: {kr8Q3Km1p, kr8Q3Km1vp},
	quant.Q2_Kr8: {kr8Q2Km1p, kr8Q2Km1vp},
}

// kr8VNNIKernels are the AVX-512 VNNI forms of the kernels (VPDPBUSD on
// YMM: a quarter fewer instructions, the same bits),
// which replace kr8Kernels' where the tier runs.
var kr8VNNIKernels = map[quant.Type][4]kr8Kernel{
	quant.Q4_Kr8: {kr8Q4Km1v, kr8Q4Km2v, kr8Q4Km3v, kr8Q4Km4v},
	quant.Q5_Kr8: {kr8Q5Km1v, kr8Q5Km2v, kr8Q5Km3v, kr8Q5Km4v},
	quant.Q6_Kr8: {kr8Q6Km1v, kr8Q6Km2v, kr8Q6Km3v, kr8Q6Km4v},
	quant.Q3_Kr8: {kr8Q3Km1v, kr8Q3Km2v, kr8Q3Km3v, kr8Q3Km4v},
	quant.Q2_Kr8: {kr8Q2Km1v, kr8Q2Km2v, kr8Q2Km3v, kr8Q2Km4v},
}

// kr8Kernels are the kernels of each eight-row layout by activation row
// count (index M-1).
var kr8Kernels = map[quant.Type][4]kr8Kernel{
	quant.Q4_Kr8: {kr8Q4Km1, kr8Q4Km2, kr8Q4Km3, kr8Q4Km4},
	quant.Q5_Kr8: {kr8Q5Km1, kr8Q5Km2, kr8Q5Km3, kr8Q5Km4},
	quant.Q6_Kr8: {kr8Q6Km1, kr8Q6Km2, kr8Q6Km3, kr8Q6Km4},
	quant.Q3_Kr8: {kr8Q3Km1, kr8Q3Km2, kr8Q3Km3, kr8Q3Km4},
	quant.Q2_Kr8: {kr8Q2Km1, kr8Q2Km2, kr8Q2Km3, kr8Q2Km4},
}

// kr8Recs reports whether the kernels of eight-row layout t read records
// (Q4_Kr8, Q5_Kr8: the pair sums their eight mins multiply); the layouts
// of sixteen sub-blocks take their bsums from the Q8_K block itself.
func kr8Recs(t quant.Type) bool { return t == quant.Q4_Kr8 || t == quant.Q5_Kr8 }

// kr8MaxM is the most activation rows one kernel call takes.
const kr8MaxM = 4

// kr8KernScratch is the most scratch a kernel uses: 64+96·4 bytes (the
// YMM forms), 512 (the ZMM forms: four rows' sums or Q3_K's scales and
// four rows' float accumulators, 64 bytes each).
const kr8KernScratch = 512

// kr8Scratch is the bytes at the start of the pooled buffer: the kernels'
// scratch (kr8KernScratch) and the outputs of one cut tile (4 rows of 8
// floats) after it.
const kr8Scratch = kr8KernScratch + 4*quant.R8Rows*4

// kr8RecKind is the actKey kind of the kernels' records.
const kr8RecKind = 808

// kr8SpanBytes is how many bytes of weight tiles the kernels run over for
// every chunk of activation rows before the next span: the span stays in
// L2 while the chunks re-read it.
const kr8SpanBytes = 256 << 10

// kr8Records writes the records of M Q8_K activation rows (arb bytes
// apart) of nb super-blocks: per super-block b and row t, at 8·(b·M+t),
// the eight int16 sub-block sums of quant.R8Sums.
func kr8Records(rec []int16, act []byte, arb, M, nb int) {
	_ = rec[8*nb*M-1]
	for t := 0; t < M; t++ {
		row := act[t*arb : t*arb+nb*292]
		for b := 0; b < nb; b++ {
			bs := row[292*b+260 : 292*b+292]
			o := rec[8*(b*M+t) : 8*(b*M+t)+8]
			for j := range 8 {
				o[j] = int16(binary.LittleEndian.Uint16(bs[4*j:])) + int16(binary.LittleEndian.Uint16(bs[4*j+2:]))
			}
		}
	}
}

// kr8Run runs the kernel for M (1..4) activation rows over the weight rows
// n0..n1: the tiles inside the range in one call, a tile the range cuts
// computed whole into tmp and only its rows in range stored (a row's bits
// do not depend on its tile's other rows).
//
// zs, when not nil, are the ZMM forms for pairs of tiles: they take the
// even part of the run of whole tiles, ks the odd tile left.
func kr8Run(ks, zs *[4]kr8Kernel, M int, w []byte, wrb, nb int, act []byte, arb int, rec []int16, scr []byte, y []float32, ldy, n0, n1 int, tmp *[4 * quant.R8Rows]float32) {
	const R = quant.R8Rows
	f := ks[M-1]
	tb := R * wrb
	rp, sp := (*byte)(unsafe.Pointer(&rec[0])), &scr[0]
	part := func(g, c0, c1 int) {
		f(&w[g*tb], nb, &act[0], arb, rp, sp, &tmp[0], R, 1)
		for t := 0; t < M; t++ {
			copy(y[t*ldy+c0:t*ldy+c1], tmp[t*R+c0-g*R:])
		}
	}
	g0, g1 := n0/R, (n1+R-1)/R
	if n0%R != 0 {
		part(g0, n0, min(n1, (g0+1)*R))
		g0++
	}
	if g1 > g0 && n1%R != 0 {
		g1--
		part(g1, g1*R, n1)
	}
	if p := (g1 - g0) &^ 1; zs != nil && zs[M-1] != nil && p > 0 {
		zs[M-1](&w[g0*tb], nb, &act[0], arb, rp, sp, &y[g0*R], ldy, p)
		g0 += p
	}
	if g1 > g0 {
		f(&w[g0*tb], nb, &act[0], arb, rp, sp, &y[g0*R], ldy, g1-g0)
	}
}

// kr8Check panics unless the shapes are what the kernels read: whole
// tiles of wrb-byte rows under n1, M rows of nb Q8_K blocks.
func kr8Check(t quant.Type, K int, w []byte, wrb int, act []byte, arb, M int, y []float32, ldy, n0, n1 int) int {
	nb := K / quant.QKK
	if K%quant.QKK != 0 || wrb != nb*t.TypeSize() || n0 < 0 || M < 1 || (M > 1 && arb < nb*292) || (M > 1 && ldy < n1) {
		panic(fmt.Sprintf("cpu: %s mat-mul: bad shape K=%d wrb=%d M=%d arb=%d ldy=%d rows %d..%d", t, K, wrb, M, arb, ldy, n0, n1))
	}
	g1 := (n1 + quant.R8Rows - 1) / quant.R8Rows
	_ = w[g1*quant.R8Rows*wrb-1]
	_ = act[(M-1)*arb+nb*292-1]
	_ = y[(M-1)*ldy+n1-1]
	return nb
}

// kr8Rows is the RowsFunc of eight-row layout t (one activation row:
// decode). Only Q4_Kr8's and Q5_Kr8's kernels read records (kr8Recs).
func kr8Rows(t quant.Type) RowsFunc {
	ks := kr8Kernels[t] // one row: no ZMM form (internal/asmgen/kr8z.go)
	recs := kr8Recs(t)
	return func(K int, w []byte, wrb int, a []byte, y []float32, n0, n1 int) {
		if n1 <= n0 {
			return
		}
		nb := kr8Check(t, K, w, wrb, a, 0, 1, y, 0, n0, n1)
		if nb == 0 {
			clear(y[n0:n1])
			return
		}
		bp := smallRecs.Get().(*[]byte)
		b := aligned32(bp, kr8Scratch+16*nb)
		rec := unsafe.Slice((*int16)(unsafe.Pointer(&b[kr8Scratch])), 8*nb)
		if recs {
			kr8Records(rec, a, 0, 1, nb)
		}
		kr8Run(&ks, nil, 1, w, wrb, nb, a, 0, rec, b, y, 0, n0, n1, (*[4 * quant.R8Rows]float32)(unsafe.Pointer(&b[kr8KernScratch])))
		smallRecs.Put(bp)
	}
}

// kr8Small is the kernel of eight-row layout t for M ≥ 2 activation rows,
// the records taken from c when it holds them: chunks of at most 4 rows
// (as even as possible), all of them over one span of weight tiles before
// the next.
func kr8Small(t quant.Type) GemmCachedFunc {
	ks, zs := kr8Kernels[t], kr8ZMM[t]
	return func(K int, w []byte, wrb int, act []byte, arb, M int, y []float32, ldy, n0, n1 int, c *ActCache) {
		kr8SmallRun(t, &ks, zs, K, w, wrb, act, arb, M, y, ldy, n0, n1, c)
	}
}

func kr8SmallRun(t quant.Type, ks, zs *[4]kr8Kernel, K int, w []byte, wrb int, act []byte, arb, M int, y []float32, ldy, n0, n1 int, c *ActCache) {
	if n1 <= n0 || M <= 0 {
		return
	}
	nb := kr8Check(t, K, w, wrb, act, arb, M, y, ldy, n0, n1)
	if nb == 0 {
		for m := 0; m < M; m++ {
			clear(y[m*ldy+n0 : m*ldy+n1])
		}
		return
	}
	bp := smallRecs.Get().(*[]byte)
	// records per chunk, each chunk's rows together (the kernel's order)
	n := 16 * nb * M
	fill := func(dst []byte) {
		kr8Chunks(M, func(m0, m1 int) {
			kr8Records(unsafe.Slice((*int16)(unsafe.Pointer(&dst[16*nb*m0])), 8*nb*(m1-m0)), act[m0*arb:], arb, m1-m0, nb)
		})
	}
	var b []byte
	switch {
	case !kr8Recs(t):
		// no records; the kernels still take a pointer
		n = 16
		b = aligned32(bp, n+kr8Scratch)[kr8Scratch:]
	case c != nil:
		b = c.derived(actKey{act: &act[0], arb: arb, nb: nb, M: M, kind: kr8RecKind}, n, fill)
	default:
		b = aligned32(bp, n+kr8Scratch)[kr8Scratch:]
		fill(b)
	}
	scr := aligned32(bp, kr8Scratch)
	tmp := (*[4 * quant.R8Rows]float32)(unsafe.Pointer(&scr[kr8KernScratch]))
	rec := unsafe.Slice((*int16)(unsafe.Pointer(&b[0])), n/2)
	rpr := 0 // records (int16s) per activation row
	if kr8Recs(t) {
		rpr = 8 * nb
	}
	kr8Spans(ks, zs, nb, w, wrb, act, arb, M, rec, rpr, scr, y, ldy, n0, n1, tmp)
	smallRecs.Put(bp)
}

// kr8Chunks calls f for the chunks m0..m1 of M activation rows the
// kernels take in turn: at most kr8MaxM rows each, as even as possible.
func kr8Chunks(M int, f func(m0, m1 int)) {
	nc := (M + kr8MaxM - 1) / kr8MaxM
	m0 := 0
	for i := 1; i <= nc; i++ {
		m1 := M * i / nc
		f(m0, m1)
		m0 = m1
	}
}

// kr8Spans runs the kernels ks of an eight-row layout for M activation
// rows over the weight rows n0..n1 in chunks (kr8Chunks), all of them over
// one span of weight tiles (kr8SpanBytes, in L2) before the next; chunk
// m0.. reads its records at rec[rpr·m0:] (rpr int16s per activation row,
// 0 where every chunk reads the same); zs as kr8Run's.
func kr8Spans(ks, zs *[4]kr8Kernel, nb int, w []byte, wrb int, act []byte, arb, M int, rec []int16, rpr int, scr []byte, y []float32, ldy, n0, n1 int, tmp *[4 * quant.R8Rows]float32) {
	span := max(quant.R8Rows, kr8SpanBytes/wrb/quant.R8Rows*quant.R8Rows)
	for s0 := n0; s0 < n1; {
		s1 := min(n1, (s0/quant.R8Rows+1)*quant.R8Rows+span-quant.R8Rows)
		if M <= kr8MaxM {
			s1 = n1
		}
		kr8Chunks(M, func(m0, m1 int) {
			kr8Run(ks, zs, m1-m0, w, wrb, nb, act[m0*arb:], arb, rec[rpr*m0:], scr, y[m0*ldy:], ldy, s0, s1, tmp)
		})
		s0 = s1
	}
}

func init() {
	if !hasAVX2 {
		return
	}
	for _, t := range []quant.Type{quant.Q4_Kr8, quant.Q5_Kr8, quant.Q6_Kr8, quant.Q3_Kr8, quant.Q2_Kr8} {
		tier := "avx2"
		if prefetchL1() {
			ks := kr8Kernels[t]
			ks[0] = kr8PrefL1Kernels[t][0]
			kr8Kernels[t] = ks
			v := kr8VNNIKernels[t]
			v[0] = kr8PrefL1Kernels[t][1]
			kr8VNNIKernels[t] = v
		}
		if v, ok := kr8VNNIKernels[t]; ok && hasVNNI {
			kr8Kernels[t], tier = v, "avx512vnni"
			if z := kr8ZMMKernels[t]; z != nil && !zmmHalfRate() {
				kr8ZMM[t], tier = z, "avx512vnni-zmm"
				zmmEightRow = true
			}
		}
		registerRows(t, tier, kr8Rows(t))
		registerSmallCached(t, tier, 2, math.MaxInt, kr8Small(t))
		smallUpTo(t, math.MaxInt)
	}
}
