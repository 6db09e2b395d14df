//go:build !amd64 || purego

package cpu

// ropeNeox rotates the NEOX pairs (x[i], x[half+i]), i < half, of one
// head by the angles with cosines c[i] and sines s[i] (ggmlf32.RopePair).
func ropeNeox(x, c, s []float32, half int) { ropeNeoxGo(x, c, s, 0, half) }

// ropeNormal rotates the NORMAL pairs (x[2i], x[2i+1]), i < half, of one
// head by the angles with cosines c[i] and sines s[i] (ropeNormalGo).
func ropeNormal(x, c, s []float32, half int) { ropeNormalGo(x, c, s, 0, half) }
