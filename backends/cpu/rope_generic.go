//go:build !amd64 || purego

package cpu

// ropeNeox rotates the NEOX pairs (x[i], x[half+i]), i < half, of one
// head by the angles with cosines c[i] and sines s[i] (ggmlf32.RopePair).
func ropeNeox(x, c, s []float32, half int) { ropeNeoxGo(x, c, s, 0, half) }
