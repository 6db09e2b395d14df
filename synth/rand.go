package synth

import (
	"math"
	"math/bits"
)

// splitmix64 advances *s and returns the next SplitMix64 output. It expands
// seeds into generator states (as the xoshiro authors recommend).
func splitmix64(s *uint64) uint64 {
	*s += 0x9e3779b97f4a7c15
	z := *s
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// mix64 hashes two words into a seed.
func mix64(a, b uint64) uint64 {
	s := a ^ bits.RotateLeft64(b, 32) ^ 0x6a09e667f3bcc909
	splitmix64(&s)
	return splitmix64(&s) ^ b
}

// fnv64 is FNV-1a of a string (used to derive per-tensor seeds from names).
func fnv64(s string) uint64 {
	h := uint64(0xcbf29ce484222325)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 0x100000001b3
	}
	return h
}

// rng is xoshiro256**, a small, fast generator with a 2^256 period.
type rng struct{ s0, s1, s2, s3 uint64 }

// newRNG seeds a generator from one word through SplitMix64.
func newRNG(seed uint64) rng {
	return rng{splitmix64(&seed), splitmix64(&seed), splitmix64(&seed), splitmix64(&seed)}
}

func (r *rng) next() uint64 {
	out := bits.RotateLeft64(r.s1*5, 7) * 9
	t := r.s1 << 17
	r.s2 ^= r.s0
	r.s3 ^= r.s1
	r.s1 ^= r.s2
	r.s0 ^= r.s3
	r.s2 ^= t
	r.s3 = bits.RotateLeft64(r.s3, 45)
	return out
}

// uniform returns a float64 in (0, 1) (never 0, so its log is finite).
func (r *rng) uniform() float64 {
	return (float64(r.next()>>11) + 0.5) * (1.0 / (1 << 53))
}

// Ziggurat tables for the standard normal (Marsaglia & Tsang, 2000) with 128
// layers: zigR is the start of the tail, zigV the area of each layer.
const (
	zigN = 128
	zigR = 3.442619855899
	zigV = 9.91256303526217e-3
)

var (
	zigK [zigN]uint32  // acceptance thresholds on the 31-bit magnitude
	zigW [zigN]float64 // magnitude → x scale per layer
	zigF [zigN]float64 // density at each layer's edge
)

func init() {
	const m = 1 << 31
	d := zigR
	t := d
	q := zigV / math.Exp(-0.5*d*d)
	zigK[0] = uint32(d / q * m)
	zigK[1] = 0
	zigW[0] = q / m
	zigW[zigN-1] = d / m
	zigF[0] = 1
	zigF[zigN-1] = math.Exp(-0.5 * d * d)
	for i := zigN - 2; i >= 1; i-- {
		d = math.Sqrt(-2 * math.Log(zigV/d+math.Exp(-0.5*d*d)))
		zigK[i+1] = uint32(d / t * m)
		t = d
		zigF[i] = math.Exp(-0.5 * d * d)
		zigW[i] = d / m
	}
}

// normal returns a standard normal variate. Each draw takes one 64-bit word
// in the common case: 7 bits pick the layer, 1 bit the sign and 31 bits the
// magnitude (disjoint bits, so layer and value are independent).
func (r *rng) normal() float64 {
	for {
		u := r.next()
		i := u & (zigN - 1)
		mag := uint32(u>>33) & (1<<31 - 1)
		neg := u>>32&1 != 0
		x := float64(mag) * zigW[i]
		if mag < zigK[i] {
			if neg {
				return -x
			}
			return x
		}
		if i == 0 {
			// The tail beyond zigR (Marsaglia's method).
			for {
				a := -math.Log(r.uniform()) / zigR
				b := -math.Log(r.uniform())
				if b+b >= a*a {
					x = zigR + a
					break
				}
			}
		} else if zigF[i]+float64(r.uniform()*(zigF[i-1]-zigF[i])) >= math.Exp(-0.5*x*x) {
			// Outside the density in the wedge: draw again. (The conversion
			// rounds the product so it cannot be fused into an FMA.)
			continue
		}
		if neg {
			return -x
		}
		return x
	}
}
