package quant

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/x448/float16"

	"github.com/minfer/minfer/internal/fixtures"
	"github.com/minfer/minfer/internal/ggmlf32"
)

const (
	fixRows = 4
	fixCols = 1024
)

// fixtureTypes are the 13 types of the shared quants/ fixtures, by file prefix.
var fixtureTypes = []Type{F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(fixtures.Path(t, "quants", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readF32(t *testing.T, name string) []float32 {
	t.Helper()
	b := readFixture(t, name)
	out := make([]float32, len(b)/4)
	DequantizeF32(b, out)
	return out
}

func TestFixtureIndex(t *testing.T) {
	var idx struct {
		Types map[string]struct {
			ID        uint32 `json:"ggml_type_id"`
			BlockSize int    `json:"blck_size"`
			TypeSize  int    `json:"type_size"`
			VecDot    string `json:"vec_dot_type"`
		} `json:"types"`
	}
	if err := json.Unmarshal(readFixture(t, "index.json"), &idx); err != nil {
		t.Fatal(err)
	}
	for _, typ := range fixtureTypes {
		e, ok := idx.Types[typ.String()]
		if !ok {
			t.Errorf("%s missing from index.json", typ)
			continue
		}
		if Type(e.ID) != typ || e.BlockSize != typ.BlockSize() || e.TypeSize != typ.TypeSize() {
			t.Errorf("%s: index says id %d block %d size %d", typ, e.ID, e.BlockSize, e.TypeSize)
		}
		if e.VecDot != "" && e.VecDot != typ.VecDotType().String() {
			t.Errorf("%s: vec_dot_type %s, want %s", typ, e.VecDot, typ.VecDotType())
		}
	}
}

func TestDequantizeFixtures(t *testing.T) {
	for _, typ := range fixtureTypes {
		t.Run(typ.String(), func(t *testing.T) {
			q := readFixture(t, typ.String()+".quant.bin")
			want := readF32(t, typ.String()+".dequant.f32")
			got := make([]float32, fixRows*fixCols)
			if err := Dequantize(typ, q, got); err != nil {
				t.Fatal(err)
			}
			bad := 0
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					if bad < 5 {
						t.Errorf("elem %d: got %g (%08x), want %g (%08x)", i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
					}
					bad++
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d values differ", bad, len(got))
			}
		})
	}
}

// diffBlocks reports the indices of blocks that differ between a and b.
func diffBlocks(typ Type, a, b []byte) []int {
	var out []int
	ts := typ.TypeSize()
	for i := 0; i*ts < len(a); i++ {
		if string(a[i*ts:(i+1)*ts]) != string(b[i*ts:(i+1)*ts]) {
			out = append(out, i)
		}
	}
	return out
}

func rms(a, b []float32) float64 {
	var s float64
	for i := range a {
		d := float64(a[i]) - float64(b[i])
		s += d * d
	}
	return math.Sqrt(s / float64(len(a)))
}

func TestQuantizeFixtures(t *testing.T) {
	for _, typ := range fixtureTypes {
		t.Run(typ.String(), func(t *testing.T) {
			in := readF32(t, typ.String()+".input.f32")
			want := readFixture(t, typ.String()+".quant.bin")
			got := make([]byte, len(want))
			if err := Quantize(typ, in, got); err != nil {
				t.Fatal(err)
			}
			if d := diffBlocks(typ, got, want); len(d) > 0 {
				t.Errorf("%d of %d blocks differ from llama.cpp, first %v", len(d), len(got)/typ.TypeSize(), d[:min(len(d), 8)])
			}
		})
	}
}

func TestQuantizeActFixtures(t *testing.T) {
	for _, typ := range fixtureTypes {
		if typ == Q8_K {
			continue // activation-only type: no act files
		}
		t.Run(typ.String(), func(t *testing.T) {
			vt := typ.VecDotType()
			in := readF32(t, typ.String()+".act.f32")
			want := readFixture(t, typ.String()+".act_quant.bin")
			got := make([]byte, len(want))
			if err := QuantizeAct(vt, in, got); err != nil {
				t.Fatal(err)
			}
			if d := diffBlocks(vt, got, want); len(d) > 0 {
				t.Errorf("%s: %d of %d blocks differ, first %v", vt, len(d), len(got)/vt.TypeSize(), d[:min(len(d), 8)])
			}
		})
	}
}

// TestQ8_0ActDiffersFromRef pins down that the fixture's x86 activation
// quantizer is not the reference one (q5_0's act file has one differing value).
func TestQ8_0ActDiffersFromRef(t *testing.T) {
	in := readF32(t, "q5_0.act.f32")
	want := readFixture(t, "q5_0.act_quant.bin")
	ref := make([]byte, len(want))
	if err := Quantize(Q8_0, in, ref); err != nil {
		t.Fatal(err)
	}
	if string(ref) == string(want) {
		t.Fatal("reference Q8_0 quantizer unexpectedly matches the x86 activation file")
	}
}

// bitExactDot are the types whose scalar dot reproduces the x86 kernel's
// accumulation order and so must match llama.cpp bit for bit.
// (f16: the order of an AVX-512 build, which made the fixtures; their bf16
// dots come from VDPBF16PS, another order: see DotBF16BF16.)
var bitExactDot = map[Type]bool{F16: true, Q4_0: true, Q4_1: true, Q5_0: true, Q5_1: true, Q8_0: true, Q2_K: true, Q3_K: true, Q4_K: true, Q5_K: true, Q6_K: true}

func TestDotFixtures(t *testing.T) {
	for _, typ := range fixtureTypes {
		if typ == Q8_K {
			continue
		}
		t.Run(typ.String(), func(t *testing.T) {
			w := readFixture(t, typ.String()+".quant.bin")
			a := readFixture(t, typ.String()+".act_quant.bin")
			want := readF32(t, typ.String()+".dot.f32")
			wr, _ := typ.RowSize(fixCols)
			ar, _ := typ.VecDotType().RowSize(fixCols)
			dot := DotFor(typ)
			for i := 0; i < fixRows; i++ {
				for j := 0; j < fixRows; j++ {
					ref := want[i*fixRows+j]
					got := VecDot(typ, fixCols, w[i*wr:(i+1)*wr], a[j*ar:(j+1)*ar])
					if g2 := dot(fixCols, w[i*wr:(i+1)*wr], a[j*ar:(j+1)*ar]); math.Float32bits(g2) != math.Float32bits(got) {
						t.Errorf("DotFor and VecDot disagree: %g vs %g", g2, got)
					}
					if bitExactDot[typ] && math.Float32bits(got) != math.Float32bits(ref) {
						t.Errorf("dot[%d][%d] = %.9g, llama.cpp %.9g: not bit-identical", i, j, got, ref)
					}
					rel := math.Abs(float64(got)-float64(ref)) / math.Max(math.Abs(float64(ref)), 1)
					if rel > 1e-5 {
						t.Errorf("dot[%d][%d] = %.9g, llama.cpp %.9g (rel %.3g)", i, j, got, ref, rel)
					}
				}
			}
		})
	}
}

// roundTripTypes are all the types with a quantizer.
var roundTripTypes = []Type{F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K}

// maxRelRMS bounds RMS(round-trip error)/RMS(x) for N(0,1) data per type.
var maxRelRMS = map[Type]float64{
	F32: 0, F16: 1e-3, BF16: 5e-3,
	Q8_0: 0.01, Q8_1: 0.01, Q8_K: 0.01,
	Q6_K: 0.03, Q5_0: 0.06, Q5_1: 0.05, Q5_K: 0.05,
	Q4_0: 0.12, Q4_1: 0.1, Q4_K: 0.1, Q3_K: 0.25, Q2_K: 0.45,
}

func TestRoundTripRandom(t *testing.T) {
	const n = 4096
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for _, typ := range roundTripTypes {
		rs, _ := typ.RowSize(n)
		q := make([]byte, rs)
		y := make([]float32, n)
		for _, act := range []bool{false, true} {
			var err error
			if act {
				err = QuantizeAct(typ, x, q)
			} else {
				err = Quantize(typ, x, q)
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := Dequantize(typ, q, y); err != nil {
				t.Fatal(err)
			}
			e := rms(x, y)
			if e > maxRelRMS[typ] {
				t.Errorf("%s (act=%v): relative RMS error %.4g > %.4g", typ, act, e, maxRelRMS[typ])
			}
			t.Logf("%s act=%v: rms err %.5f", typ, act, e)
		}
	}
}

// TestDotMatchesDequant checks every dot kernel against the float64 dot of the
// dequantized operands (q4_1/q5_1 use the f16 s field, so they are looser).
func TestDotMatchesDequant(t *testing.T) {
	const n = 2048
	r := rand.New(rand.NewPCG(3, 4))
	x := make([]float32, n)
	y := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
		y[i] = float32(r.NormFloat64())
	}
	for _, typ := range []Type{F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K} {
		vt := typ.VecDotType()
		ws, _ := typ.RowSize(n)
		as, _ := vt.RowSize(n)
		w, a := make([]byte, ws), make([]byte, as)
		if err := Quantize(typ, x, w); err != nil {
			t.Fatal(err)
		}
		if err := QuantizeAct(vt, y, a); err != nil {
			t.Fatal(err)
		}
		dx, dy := make([]float32, n), make([]float32, n)
		_ = Dequantize(typ, w, dx)
		_ = Dequantize(vt, a, dy)
		var ref, mag float64
		for i := range dx {
			ref += float64(dx[i]) * float64(dy[i])
			mag += math.Abs(float64(dx[i]) * float64(dy[i]))
		}
		got := float64(VecDot(typ, n, w, a))
		tol := 1e-6 * mag
		if typ == Q4_1 || typ == Q5_1 {
			tol = 2e-3 * mag
		}
		if math.Abs(got-ref) > tol {
			t.Errorf("%s: dot %g, dequantized dot %g", typ, got, ref)
		}
	}
}

func TestEdgeCases(t *testing.T) {
	const n = 512
	patterns := map[string]func(i int) float32{
		"zeros":    func(int) float32 { return 0 },
		"negzero":  func(int) float32 { return float32(math.Copysign(0, -1)) },
		"constant": func(int) float32 { return 0.75 },
		"negconst": func(int) float32 { return -1.25 },
		"tiny":     func(i int) float32 { return float32(i%7) * 1e-30 },
		"spike": func(i int) float32 {
			if i%100 == 3 {
				return 1000
			}
			return 0.001
		},
	}
	for name, f := range patterns {
		x := make([]float32, n)
		for i := range x {
			x[i] = f(i)
		}
		for _, typ := range roundTripTypes {
			rs, _ := typ.RowSize(n)
			q := make([]byte, rs)
			y := make([]float32, n)
			for _, quant := range []func(Type, []float32, []byte) error{Quantize, QuantizeAct} {
				if err := quant(typ, x, q); err != nil {
					t.Fatal(err)
				}
				if err := Dequantize(typ, q, y); err != nil {
					t.Fatal(err)
				}
				for i, v := range y {
					if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
						t.Fatalf("%s/%s: element %d is %g", name, typ, i, v)
					}
					if name == "zeros" || name == "negzero" {
						if v != 0 {
							t.Fatalf("%s/%s: element %d is %g, want 0", name, typ, i, v)
						}
					}
				}
				if name == "constant" || name == "negconst" {
					if e := rms(x, y); e > 0.01 {
						t.Errorf("%s/%s: constant block round trip error %g", name, typ, e)
					}
				}
			}
			if dot := DotFor(typ); dot != nil && (name == "zeros" || name == "negzero") {
				vt := typ.VecDotType()
				as, _ := vt.RowSize(n)
				a := make([]byte, as)
				_ = QuantizeAct(vt, x, a)
				if d := dot(n, q, a); d != 0 {
					t.Errorf("%s/%s: zero dot = %g", name, typ, d)
				}
			}
		}
	}
}

func TestSizeErrors(t *testing.T) {
	if err := Dequantize(Q4_K, make([]byte, 143), make([]float32, 256)); err == nil {
		t.Error("short Q4_K source accepted")
	}
	if err := Dequantize(Q4_0, make([]byte, 18), make([]float32, 31)); err == nil {
		t.Error("partial block accepted")
	}
	if err := Quantize(Type(99), nil, nil); err == nil {
		t.Error("unknown type accepted")
	}
	if err := QuantizeAct(Q8_K, make([]float32, 256), make([]byte, 291)); err == nil {
		t.Error("short Q8_K destination accepted")
	}
	if DotFor(Q8_K) != nil || DotFor(Type(99)) != nil || DequantFor(Type(5)) != nil {
		t.Error("kernel lookup for unsupported types is not nil")
	}
	for _, typ := range roundTripTypes {
		if DequantFor(typ) == nil || ActQuantFor(typ) == nil || QuantFor(typ) == nil {
			t.Errorf("%s: missing kernel", typ)
		}
	}
}

func TestFP16(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := FP16ToFP32(uint16(h))
		want := float16.Frombits(uint16(h)).Float32()
		if math.IsNaN(float64(want)) {
			if !math.IsNaN(float64(f)) {
				t.Fatalf("%04x: got %g, want NaN", h, f)
			}
			continue
		}
		if math.Float32bits(f) != math.Float32bits(want) {
			t.Fatalf("%04x: got %g, want %g", h, f, want)
		}
		if back := FP32ToFP16(f); back != uint16(h) {
			t.Fatalf("%04x: round trip gives %04x", h, back)
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 1<<20; i++ {
		f := math.Float32frombits(r.Uint32())
		if math.IsNaN(float64(f)) {
			if h := FP32ToFP16(f); h&0x7fff != 0x7e00 {
				t.Fatalf("NaN %08x -> %04x", math.Float32bits(f), h)
			}
			continue
		}
		if got, want := FP32ToFP16(f), float16.Fromfloat32(f).Bits(); got != want {
			t.Fatalf("%g (%08x): got %04x, want %04x", f, math.Float32bits(f), got, want)
		}
	}
}

func TestBF16(t *testing.T) {
	cases := []struct {
		in   uint32
		want uint16
	}{
		{0x3f800000, 0x3f80}, // 1
		{0x3f808000, 0x3f80}, // tie, even stays
		{0x3f818000, 0x3f82}, // tie, odd rounds up
		{0x3f808001, 0x3f81}, // above half
		{0x7f7fffff, 0x7f80}, // max float rounds to inf
		{0x7f800000, 0x7f80}, // inf
		{0xff800000, 0xff80}, // -inf
		{0x7f800001, 0x7fc0}, // signaling NaN made quiet
		{0x00000001, 0x0000}, // subnormal rounds to zero
		{0x00008000, 0x0000}, // tie to even (zero)
		{0x00018000, 0x0002}, // subnormals are kept
		{0x80000000, 0x8000}, // -0
	}
	for _, c := range cases {
		if got := FP32ToBF16(math.Float32frombits(c.in)); got != c.want {
			t.Errorf("FP32ToBF16(%08x) = %04x, want %04x", c.in, got, c.want)
		}
	}
	for h := 0; h < 1<<16; h++ {
		f := BF16ToFP32(uint16(h))
		if math.IsNaN(float64(f)) {
			continue
		}
		if back := FP32ToBF16(f); back != uint16(h) {
			t.Fatalf("%04x: round trip gives %04x", h, back)
		}
	}
}

func TestNearestInt(t *testing.T) {
	for _, c := range []struct {
		f    float32
		want int32
	}{{0.5, 0}, {1.5, 2}, {2.5, 2}, {-0.5, 0}, {-1.5, -2}, {-2.5, -2}, {3.49, 3}, {-3.51, -4}, {127, 127}, {-128, -128}} {
		if got := nearestInt(c.f); got != c.want {
			t.Errorf("nearestInt(%g) = %d, want %d", c.f, got, c.want)
		}
	}
}

func ExampleVecDot() {
	x := make([]float32, 256)
	for i := range x {
		x[i] = float32(i%16) / 16
	}
	w := make([]byte, 144) // one Q4_K super-block
	a := make([]byte, 292) // one Q8_K block
	_ = Quantize(Q4_K, x, w)
	_ = QuantizeAct(Q4_K.VecDotType(), x, a)
	fmt.Printf("%.1f\n", VecDot(Q4_K, 256, w, a))
	// Output: 77.5
}

func TestFMA32(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	rnd := func() float32 {
		return float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(40)-20)))
	}
	for i := 0; i < 200000; i++ {
		a, b, c := rnd(), rnd(), rnd()
		if i%3 == 0 { // provoke ties: c cancels most of a·b
			c = -float32(float64(a) * float64(b))
		}
		exact := new(big.Float).SetPrec(200).SetFloat64(float64(a))
		exact.Mul(exact, new(big.Float).SetFloat64(float64(b)))
		exact.Add(exact, new(big.Float).SetFloat64(float64(c)))
		want, _ := exact.Float32()
		if got := ggmlf32.FMA32(a, b, c); math.Float32bits(got) != math.Float32bits(want) && !(got == 0 && want == 0) {
			t.Fatalf("ggmlf32.FMA32(%g, %g, %g) = %g, want %g", a, b, c, got, want)
		}
	}
}
