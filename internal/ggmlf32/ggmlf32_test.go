package ggmlf32

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// bigFMA is the exact a·b+c rounded once to float32 (nearest, ties to
// even, subnormals and overflow included), by math/big; non-finite
// operands follow IEEE through float64, where they are exact.
func bigFMA(a, b, c float32) float32 {
	if isFinite(a) && isFinite(b) && isFinite(c) {
		x := new(big.Float).SetPrec(1200).SetFloat64(float64(a))
		x.Mul(x, new(big.Float).SetPrec(1200).SetFloat64(float64(b)))
		x.Add(x, new(big.Float).SetPrec(1200).SetFloat64(float64(c)))
		if x.Sign() == 0 {
			// The sign of an exact zero: IEEE's x+y rules, as float64 has them.
			return float32(float64(a)*float64(b) + float64(c))
		}
		f, _ := x.Float32()
		return f
	}
	return float32(float64(a)*float64(b) + float64(c))
}

func isFinite(x float32) bool { return !math.IsInf(float64(x), 0) && !math.IsNaN(float64(x)) }

func same(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b
}

func TestBigFMAOracle(t *testing.T) {
	tiny := math.Float32frombits(1) // 2^-149
	for _, c := range []struct{ a, b, c, want float32 }{
		{tiny, 0.75, 0, tiny},    // 0.75 of the smallest subnormal rounds up
		{tiny, 0.5, 0, 0},        // a tie rounds to even (zero)
		{tiny, 1.5, 0, 2 * tiny}, // a tie rounds to even (2)
		{1, 1, -1, 0},            // +0
		{math.MaxFloat32, 2, 0, float32(math.Inf(1))},
	} {
		if got := bigFMA(c.a, c.b, c.c); got != c.want {
			t.Errorf("bigFMA(%g, %g, %g) = %g, want %g", c.a, c.b, c.c, got, c.want)
		}
	}
	if z := bigFMA(-1, 0, float32(math.Copysign(0, -1))); !math.Signbit(float64(z)) {
		t.Error("bigFMA(-1, 0, -0) is not -0")
	}
}

// fmaCases returns n operand triples: random bit patterns, cancellations,
// double-rounding midpoints, subnormal results and special values.
func fmaCases(r *rand.Rand, n int) [][3]float32 {
	f := func() float32 { return math.Float32frombits(r.Uint32()) }
	mid := func() float32 { return float32(r.NormFloat64()) * float32(math.Ldexp(1, r.IntN(40)-20)) }
	var cs [][3]float32
	specials := []float32{0, float32(math.Copysign(0, -1)), 1, -1, math.MaxFloat32, -math.MaxFloat32,
		math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, 0x1p-126, -0x1p-126,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 0x1.fffffep-127, 3, 0.1}
	for _, a := range specials {
		for _, b := range specials {
			for _, c := range specials {
				cs = append(cs, [3]float32{a, b, c})
			}
		}
	}
	for len(cs) < n {
		switch r.IntN(7) {
		case 0: // any bits
			cs = append(cs, [3]float32{f(), f(), f()})
		case 1: // ordinary magnitudes
			cs = append(cs, [3]float32{mid(), mid(), mid()})
		case 2: // cancellation: c ≈ -a·b
			a, b := mid(), mid()
			cs = append(cs, [3]float32{a, b, -(a * b)})
		case 3: // a·b+c a hair below/above a float32 midpoint of c: the
			// float64 FMA rounds onto the midpoint
			c := mid()
			d := float32(math.Ldexp(1, math.Ilogb(float64(c))-24)) // half an ulp of c
			m := float32(1 + r.IntN(300))
			a := d * (1 + m*0x1p-23)
			b := 1 - m*0x1p-23
			if r.IntN(2) == 0 {
				a = -a
			}
			cs = append(cs, [3]float32{a, b, c})
		case 4: // results near or in the subnormal range
			a := float32(r.NormFloat64()) * float32(math.Ldexp(1, -60-r.IntN(20)))
			b := float32(r.NormFloat64()) * float32(math.Ldexp(1, -60-r.IntN(20)))
			c := math.Float32frombits(r.Uint32()&0x80ffffff) * float32(r.IntN(2))
			cs = append(cs, [3]float32{a, b, c})
		case 6: // a·b+c a hair off a subnormal midpoint: c a subnormal,
			// a·b = 2^-150·(1 - m²·2^-46)
			m := float32(1 + r.IntN(300))
			a := 0x1p-75 * (1 + m*0x1p-23)
			b := 0x1p-75 * (1 - m*0x1p-23)
			c := math.Float32frombits(r.Uint32() & 0x807fffff)
			if r.IntN(2) == 0 {
				a = -a
			}
			cs = append(cs, [3]float32{a, b, c})
		case 5: // overflow boundaries
			a := math.Float32frombits(0x7f000000 | r.Uint32()&0x807fffff)
			cs = append(cs, [3]float32{a, 1 + float32(r.IntN(4)), a})
		}
	}
	return cs
}

func TestFMA32(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 1_200_000
	if testing.Short() {
		n = 100_000
	}
	slow := 0
	for _, c := range fmaCases(r, n) {
		want := bigFMA(c[0], c[1], c[2])
		if got := FMA32(c[0], c[1], c[2]); !same(got, want) {
			t.Fatalf("FMA32(%g, %g, %g) = %g (%#x), want %g (%#x)", c[0], c[1], c[2], got, math.Float32bits(got), want, math.Float32bits(want))
		}
		if got := FMA32Exact(c[0], c[1], c[2]); !same(got, want) {
			t.Fatalf("FMA32Exact(%g, %g, %g) = %g (%#x), want %g (%#x)", c[0], c[1], c[2], got, math.Float32bits(got), want, math.Float32bits(want))
		}
		if r := math.FMA(float64(c[0]), float64(c[1]), float64(c[2])); !same(float32(r), want) {
			slow++
		}
	}
	// The midpoint cases must really exercise the double rounding.
	if slow < 1000 {
		t.Errorf("only %d cases where float32(math.FMA) double-rounds", slow)
	}
}

// scalef is _mm512_scalef_ps for a finite or NaN lane: j·2^floor(n),
// rounded once to float32.
func scalef(j, n float32) float32 {
	if n != n || j != j {
		return float32(math.NaN())
	}
	x := new(big.Float).SetPrec(200).SetFloat64(float64(j))
	x.SetMantExp(x, int(math.Floor(float64(n))))
	f, _ := x.Float32()
	return f
}

// expfSteps is ggml_v_expf's AVX-512 body one lane at a time, an
// intrinsic per line, with the exact bigFMA for every fmadd/fnmadd.
func expfSteps(x float32) float32 {
	const r = 0x1.8p23
	z := bigFMA(x, 0x1.715476p+0, r)                            // _mm512_fmadd_ps
	n := z - r                                                  // _mm512_sub_ps
	b := bigFMA(-n, 0x1.7f7d1cp-20, bigFMA(-n, 0x1.62e4p-1, x)) // _mm512_fnmadd_ps twice
	d := float32(math.Abs(float64(n))) > 192                    // _CMP_GT_OQ: false for NaN
	u := b * b                                                  // _mm512_mul_ps
	j := bigFMA(bigFMA(bigFMA(0x1.0e4020p-7, b, 0x1.573e2ep-5), u, bigFMA(0x1.555e66p-3, b, 0x1.fffdb6p-2)), u,
		bigFMA(0x1.ffffecp-1, b, 1))
	res := scalef(j, n)
	if !d {
		return res
	}
	// alt = blend(n <= 0, +Inf, 0): lanes with n <= 0 take 0.
	alt := float32(math.Inf(1))
	if n <= 0 {
		alt = 0
	}
	return alt
}

func TestExpF(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	xs := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 88.37, 88.38, 88.73, 88.8, 89, 100, 133, 190, 266, 300, 1e30,
		-87.3, -87.34, -87.4, -100, -103.9, -103.97, -104, -110, -133, -180, -192, -266, -300, -1e30,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.MaxFloat32, -math.MaxFloat32,
		math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, 0x1p-126, 0x1p-30, -0x1p-30}
	n := 1_000_000
	if testing.Short() {
		n = 100_000
	}
	for len(xs) < n {
		switch r.IntN(4) {
		case 0: // any bits
			xs = append(xs, math.Float32frombits(r.Uint32()))
		case 1: // soft_max's range, subnormal results included
			xs = append(xs, -float32(r.Float64()*110))
		case 2: // silu's range and overflow
			xs = append(xs, float32(r.Float64()*200-100))
		case 3: // around the subnormal and overflow edges
			xs = append(xs, float32(r.Float64()*30-110), float32(r.Float64()*2+88))
		}
	}
	sub := 0
	for _, x := range xs {
		want := expfSteps(x)
		if got := ExpF(x); !same(got, want) {
			t.Fatalf("ExpF(%g) = %g (%#x), the AVX-512 steps give %g (%#x)", x, got, math.Float32bits(got), want, math.Float32bits(want))
		}
		if want != 0 && math.Abs(float64(want)) < 0x1p-126 {
			sub++
		}
	}
	if sub < 100 {
		t.Errorf("only %d subnormal results tested", sub)
	}
	if ExpF(float32(math.Inf(-1))) != 0 || ExpF(-200) != 0 || !math.IsInf(float64(ExpF(200)), 1) || !math.IsNaN(float64(ExpF(float32(math.NaN())))) {
		t.Error("ExpF limits")
	}
}

func TestReductions(t *testing.T) {
	var v [16]float32
	for i := range v {
		v[i] = float32(math.Ldexp(1, 3*i))
	}
	// _mm512_reduce_add_ps: i+8, then +4, +2, +1.
	var a [8]float32
	for i := range a {
		a[i] = v[i] + v[i+8]
	}
	want := ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]))
	if got := Reduce16(&v); got != want {
		t.Errorf("Reduce16 = %g, want %g", got, want)
	}
	h := [8]float32{1, 0x1p24, 1, -0x1p24, 1, 0, 1, 0}
	// hsum_float_8: (0+4, 1+5, 2+6, 3+7), then (0+2, 1+3), then 0+1.
	if got, want := HSum8(&h), ((h[0]+h[4])+(h[2]+h[6]))+((h[1]+h[5])+(h[3]+h[7])); got != want {
		t.Errorf("HSum8 = %g, want %g", got, want)
	}
	var acc Acc8
	s := [8]int32{1, 2, 3, 4, 5, 6, 7, 8}
	acc.MulAdd(0.5, &s)
	acc.MulAdd(0.25, &s)
	if acc.Sum() != 27 {
		t.Errorf("Acc8 sum %g, want 27", acc.Sum())
	}
}

// TestDots restates the lane layouts with the exact FMA.
func TestDots(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 15, 16, 17, 63, 64, 65, 80, 128, 200, 256} {
		x, y := make([]float32, n), make([]float32, n)
		for i := range x {
			x[i], y[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
		}
		// ggml_vec_dot_f32: 64 FMA lanes (4 accumulators of 16) then the
		// combine, then the tail in float32.
		np := n &^ 63
		var acc [64]float32
		for i := 0; i < np; i++ {
			acc[i%64] = bigFMA(x[i], y[i], acc[i%64])
		}
		var s [16]float32
		for l := range s {
			s[l] = (acc[l] + acc[32+l]) + (acc[16+l] + acc[48+l])
		}
		want := Reduce16(&s)
		for i := np; i < n; i++ {
			p := x[i] * y[i]
			want += p
		}
		if got := VecDotF32(x, y); !same(got, want) {
			t.Errorf("VecDotF32 n=%d: %g, want %g", n, got, want)
		}
		if n%16 == 0 {
			var a16 [16]float32
			for i := range x {
				a16[i%16] = bigFMA(x[i], y[i], a16[i%16])
			}
			if got, want := SgemmDotF32(x, y), Reduce16(&a16); !same(got, want) {
				t.Errorf("SgemmDotF32 n=%d: %g, want %g", n, got, want)
			}
		}
	}
}

func TestSoftmax(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 5, 16, 17, 40, 100} {
		for _, pad := range []int{16, 48, 256} {
			x := make([]float32, (n+pad)&^15)
			for i := range x {
				x[i] = float32(r.NormFloat64() * 4)
			}
			// ggml: masked entries are -Inf, every chunk goes through ExpF.
			y := make([]float32, len(x))
			maxv := float32(math.Inf(-1))
			for i := range y {
				y[i] = float32(math.Inf(-1))
				if i < n {
					y[i] = x[i] * 0.125
				}
				maxv = max(maxv, y[i])
			}
			var sum float64
			for i := 0; i < len(y); i += 16 {
				var c [16]float32
				for l := range c {
					y[i+l] = expfSteps(y[i+l] - maxv)
					c[l] = y[i+l]
				}
				sum += float64(Reduce16(&c))
			}
			inv := float32(1 / sum)
			SoftmaxMasked(x, n, 0.125)
			for i := range y {
				if want := y[i] * inv; !same(x[i], want) {
					t.Fatalf("SoftmaxMasked n=%d len=%d [%d] = %g, want %g", n, len(x), i, x[i], want)
				}
			}
		}
	}
	// Unmasked: a tail of n mod 16 takes libm expf.
	x := []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18}
	y := make([]float32, len(x))
	Softmax(y, x, 1)
	var sum float64
	e := make([]float32, len(x))
	var c [16]float32
	for i := range 16 {
		e[i] = ExpF(x[i] - 18)
		c[i] = e[i]
	}
	sum = float64(Reduce16(&c))
	for i := 16; i < 18; i++ {
		e[i] = float32(math.Exp(float64(x[i] - 18)))
		sum += float64(e[i])
	}
	for i := range e {
		if want := e[i] * float32(1/sum); y[i] != want {
			t.Errorf("Softmax[%d] = %g, want %g", i, y[i], want)
		}
	}
}

func TestSiLUAt(t *testing.T) {
	for i, x := range []float32{-3, 0.5, 2} {
		if got := SiLUAt(i, 17, x); got != x/(1+ExpF(-x)) {
			t.Errorf("SiLUAt(%d, 17) vector chunk: %g", i, got)
		}
		if got := SiLUAt(16, 17, x); got != x/(1+float32(math.Exp(float64(-x)))) {
			t.Errorf("SiLUAt(16, 17) tail: %g", got)
		}
	}
}
