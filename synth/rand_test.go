package synth

import (
	"math"
	"testing"
)

// TestNormalMoments checks that the ziggurat sampler gives N(0, 1): mean,
// variance, kurtosis and the tail mass beyond 2σ and 3σ.
func TestNormalMoments(t *testing.T) {
	r := newRNG(42)
	const n = 10_000_000
	var s1, s2, s4 float64
	var over2, over3 int
	for i := 0; i < n; i++ {
		x := r.normal()
		s1 += x
		s2 += x * x
		s4 += x * x * x * x
		if math.Abs(x) > 2 {
			over2++
		}
		if math.Abs(x) > 3 {
			over3++
		}
	}
	mean, vari := s1/n, s2/n
	kurt := s4 / n
	p2, p3 := float64(over2)/n, float64(over3)/n
	t.Logf("mean %.5f var %.5f kurt %.4f P(|x|>2) %.5f P(|x|>3) %.6f", mean, vari, kurt, p2, p3)
	if math.Abs(mean) > 0.002 || math.Abs(vari-1) > 0.003 || math.Abs(kurt-3) > 0.02 {
		t.Errorf("moments off: mean %g var %g kurtosis %g", mean, vari, kurt)
	}
	if math.Abs(p2-0.0455) > 0.0004 || math.Abs(p3-0.0027) > 0.0001 {
		t.Errorf("tails off: P(|x|>2) = %g (want 0.0455), P(|x|>3) = %g (want 0.0027)", p2, p3)
	}
}

func BenchmarkNormal(b *testing.B) {
	r := newRNG(1)
	var s float64
	for i := 0; i < b.N; i++ {
		s += r.normal()
	}
	_ = s
}
