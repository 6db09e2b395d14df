//go:build amd64 && !purego

package cpu

//go:noescape
func ropeNeoxAVX2(x *float32, c *float32, s *float32, n int, half int)

// ropeNeox rotates the NEOX pairs (x[i], x[half+i]), i < half, of one
// head by the angles with cosines c[i] and sines s[i] (ggmlf32.RopePair):
// the first half&^7 pairs with ropeNeoxAVX2 when the CPU has AVX2+FMA
// (same bits), the rest in Go.
func ropeNeox(x, c, s []float32, half int) {
	n := 0
	if hasAVX2 {
		n = half &^ 7
	}
	if n > 0 {
		_ = x[half+n-1]
		_ = c[n-1]
		_ = s[n-1]
		ropeNeoxAVX2(&x[0], &c[0], &s[0], n, half)
	}
	ropeNeoxGo(x, c, s, n, half)
}

//go:noescape
func ropeNormalAVX2(x *float32, c *float32, s *float32, n int)

// ropeNormal rotates the NORMAL pairs (x[2i], x[2i+1]), i < half, of one
// head by the angles with cosines c[i] and sines s[i], as ggml's NORMAL
// loop (ropeNormalGo): the fused pairs eight at a time with ropeNormalAVX2
// when the CPU has AVX2+FMA (same bits), the rest in Go.
func ropeNormal(x, c, s []float32, half int) {
	n := 0
	if hasAVX2 && half > 6 {
		n = (half - half%4) &^ 7
	}
	if n > 0 {
		_ = x[2*n-1]
		_ = c[n-1]
		_ = s[n-1]
		ropeNormalAVX2(&x[0], &c[0], &s[0], n)
	}
	ropeNormalGo(x, c, s, n, half)
}

func init() {
	if hasAVX2 {
		tiers = append(tiers, "rope:avx2")
	}
}
