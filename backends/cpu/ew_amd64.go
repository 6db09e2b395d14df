//go:build !purego

package cpu

// The element-wise kernels of ew_amd64.s: AddCols and MulCols take the
// widest form the CPU has.
func init() {
	switch {
	case hasAVX512:
		ewAdd, ewMul = vecOp(addF32AVX512), vecOp(mulvF32AVX512)
	case hasAVX2:
		ewAdd, ewMul = vecOp(addF32AVX2), vecOp(mulvF32AVX2)
	}
}

// vecOp wraps a kernel of ew_amd64.s as ewAdd's slice form.
func vecOp(k func(y, a, b *float32, n int)) func(y, a, b []float32) {
	return func(y, a, b []float32) {
		if len(y) == 0 {
			return
		}
		_, _ = a[len(y)-1], b[len(y)-1]
		k(&y[0], &a[0], &b[0], len(y))
	}
}

//go:noescape
func addF32AVX2(y, a, b *float32, n int)

//go:noescape
func mulvF32AVX2(y, a, b *float32, n int)

//go:noescape
func addF32AVX512(y, a, b *float32, n int)

//go:noescape
func mulvF32AVX512(y, a, b *float32, n int)
