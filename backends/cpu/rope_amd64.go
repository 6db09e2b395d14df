//go:build amd64 && !purego

package cpu

//go:noescape
func ropeNeoxAVX2(x *float32, c *float32, s *float32, n int, half int)

func init() {
	if !hasAVX2 {
		return
	}
	ropeNeox = func(x, c, s []float32, half int) {
		n := half &^ 7
		if n > 0 {
			_ = x[half+n-1]
			_ = c[n-1]
			_ = s[n-1]
			ropeNeoxAVX2(&x[0], &c[0], &s[0], n, half)
		}
		ropeNeoxGo(x, c, s, n, half)
	}
	tiers = append(tiers, "rope:avx2")
}
