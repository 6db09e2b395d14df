//go:build (amd64 || arm64) && !purego

package cpu

import (
	"fmt"

	"github.com/minfer/minfer/quant"
)

// The Go side of the assembly row kernels shared by every architecture
// that has them: the asm signatures and the wrappers that check every
// bound the asm relies on, so the asm itself checks nothing.

type rowsAsm func(w *byte, wrb int, a *byte, nb int, y *float32, rows int)

// legacyRows wraps an asm row kernel for weight blocks of wts bytes and
// activation blocks of ats bytes with the bounds checks the asm omits.
func legacyRows(f rowsAsm, wts, ats int) RowsFunc {
	return func(K int, w []byte, wrb int, a []byte, y []float32, n0, n1 int) {
		if n1 <= n0 {
			return
		}
		nb := K / 32
		if nb == 0 {
			for n := n0; n < n1; n++ {
				y[n] = 0
			}
			return
		}
		if nb*wts > wrb {
			panic("cpu: weight row shorter than K")
		}
		_ = w[(n1-1)*wrb+nb*wts-1]
		_ = a[nb*ats-1]
		_ = y[n1-1]
		f(&w[n0*wrb], wrb, &a[0], nb, &y[n0], n1-n0)
	}
}

type kqRowsAsm func(w *byte, wrb int, a *byte, y *float32, rows int, nb int)

// kqBlockQ8K is the size of one Q8_K super-block (d, 256 int8, 16 bsums).
const kqBlockQ8K = 292

// kqRows wraps an asm row kernel for a weight type of bs bytes per
// super-block into a RowsFunc, checking the bounds the kernel relies on.
func kqRows(f kqRowsAsm, bs int) RowsFunc {
	return func(K int, w []byte, wrb int, a []byte, y []float32, n0, n1 int) {
		if n1 <= n0 {
			return
		}
		nb := K / 256
		if K%256 != 0 || n0 < 0 || wrb < nb*bs {
			panic(fmt.Sprintf("cpu: k-quant rows: bad shape K=%d wrb=%d n0=%d", K, wrb, n0))
		}
		_ = y[n1-1]
		if nb == 0 {
			clear(y[n0:n1])
			return
		}
		_ = w[(n1-1)*wrb+nb*bs-1]
		_ = a[nb*kqBlockQ8K-1]
		f(&w[n0*wrb], wrb, &a[0], &y[n0], n1-n0, nb)
	}
}

// rowKernel is one SIMD row kernel of one tier, for the tests and
// benchmarks that call every tier directly.
type rowKernel struct {
	typ  quant.Type
	tier string // "avx2", "avx512" (F/BW/VL/DQ), "avx512vnni", "avxvnni" (AVX-VNNI: VEX VPDPBUSD, 256-bit); "neon" or "dotprod" on arm64
	f    RowsFunc
}
