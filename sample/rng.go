package sample

import "math/bits"

// rng is a xoshiro256** generator seeded through splitmix64. It is small,
// fast, and produces the same stream on every platform for a given seed, which
// is what makes sampling reproducible. The zero value is not usable; call seed.
type rng struct {
	s [4]uint64
}

// splitmix64 advances *x and returns the next splitmix64 output. It is used
// only to expand a 64-bit seed into the 256-bit xoshiro state.
func splitmix64(x *uint64) uint64 {
	*x += 0x9e3779b97f4a7c15
	z := *x
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// seed resets the generator to the stream determined by seed.
func (r *rng) seed(seed uint64) {
	x := seed
	for i := range r.s {
		r.s[i] = splitmix64(&x)
	}
	// splitmix64 never yields four zero words in a row, but guard anyway:
	// the all-zero state is a fixed point of xoshiro.
	if r.s == [4]uint64{} {
		r.s[0] = 1
	}
}

// next returns the next 64 random bits.
func (r *rng) next() uint64 {
	s := &r.s
	result := bits.RotateLeft64(s[1]*5, 7) * 9
	t := s[1] << 17
	s[2] ^= s[0]
	s[3] ^= s[1]
	s[1] ^= s[2]
	s[0] ^= s[3]
	s[2] ^= t
	s[3] = bits.RotateLeft64(s[3], 45)
	return result
}

// float64 returns a uniformly distributed value in [0, 1) with 53 random bits.
func (r *rng) float64() float64 {
	return float64(r.next()>>11) * 0x1p-53
}
