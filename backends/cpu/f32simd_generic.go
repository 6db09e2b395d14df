//go:build !amd64 || purego

package cpu

// simdF32 is false without the amd64 assembly: every kernel takes its
// pure-Go path (internal/ggmlf32). The functions below are never called.
var simdF32 = false

func simdScores(sc, k []float32, kstride, n int, q []float32, hd int) { panic("cpu: no SIMD") }
func simdVecDot(x, y []float32) float32                               { panic("cpu: no SIMD") }
func simdVSum(out, acc, v []float32, vstride int, p []float32, n, L, hd int) {
	panic("cpu: no SIMD")
}
func simdScaleMax(dst, src []float32, scale float32) float32 { panic("cpu: no SIMD") }
func simdMul(x []float32, s float32)                         { panic("cpu: no SIMD") }
func simdExpSum(x []float32, nvalid int, maxv float32) float64 {
	panic("cpu: no SIMD")
}
func simdSiLU(y, x []float32)      { panic("cpu: no SIMD") }
func simdSwiGLU(y, g, u []float32) { panic("cpu: no SIMD") }
func simdExp(y, x []float32)       { panic("cpu: no SIMD") }
