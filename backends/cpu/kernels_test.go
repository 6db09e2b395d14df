package cpu

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/minfer/minfer/internal/ggmlf32"
	"github.com/minfer/minfer/quant"
)

func randVec(r *rand.Rand, n int, amp float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = amp * float32(r.NormFloat64())
	}
	return v
}

// cuts returns the ways the tests split units 0..n among workers: one
// range, two ranges and three uneven ranges (some possibly empty), as
// boundary lists.
func cuts(n int) [][]int {
	return [][]int{{0, n}, {0, n / 2, n}, {0, n / 3, n - n/4, n}}
}

func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: element %d = %v (%#x), want %v (%#x)", what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

func TestFMA32(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200000; i++ {
		a, b, c := float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64())
		switch i % 5 {
		case 1: // tiny results (float32 subnormals)
			a, b, c = a*0x1p-70, b*0x1p-60, c*0x1p-130
		case 2: // a product of two halves plus a quarter ulp: exact midpoints
			a, b, c = 1+0x1p-12, 1+0x1p-12, -0x1p-24+float32(r.IntN(4))*0x1p-47
		}
		if i%3 == 0 {
			c = -a * b * (1 + float32(r.NormFloat64())*1e-6) // heavy cancellation
		}
		ex := new(big.Float).SetPrec(200).SetFloat64(float64(a))
		ex.Mul(ex, new(big.Float).SetFloat64(float64(b)))
		ex.Add(ex, new(big.Float).SetFloat64(float64(c)))
		want, _ := ex.Float32()
		if got := ggmlf32.FMA32(a, b, c); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("FMA32(%v, %v, %v) = %v, want %v", a, b, c, got, want)
		}
		if got := ggmlf32.FMA32Exact(a, b, c); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("FMA32Exact(%v, %v, %v) = %v, want %v", a, b, c, got, want)
		}
	}
}

func TestExpfVec(t *testing.T) {
	// ggml_v_expf is within 1.5 ulp of expf; check a sane neighbourhood.
	r := rand.New(rand.NewPCG(3, 3))
	for i := 0; i < 100000; i++ {
		x := float32(r.Float64()*170 - 100)
		got, want := ggmlf32.ExpF(x), float32(math.Exp(float64(x)))
		if d := int64(math.Float32bits(got)) - int64(math.Float32bits(want)); d < -2 || d > 2 {
			t.Fatalf("ggmlf32.ExpF(%v) = %v, exp = %v", x, got, want)
		}
	}
	if ggmlf32.ExpF(float32(math.Inf(-1))) != 0 || ggmlf32.ExpF(-200) != 0 || !math.IsInf(float64(ggmlf32.ExpF(200)), 1) {
		t.Error("ExpF limits")
	}
}

func TestRMSNorm(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		rows, cols, group, wlen int
	}{
		{1, 896, 896, 0}, {5, 896, 896, 896}, {9, 896, 896, 896}, {8, 64, 64, 0}, {7, 512, 64, 64}, {3, 256, 128, 0}, {4, 96, 32, 96}, {1, 1, 1, 1},
	} {
		name := fmt.Sprintf("%dx%d/g%d/w%d", tc.rows, tc.cols, tc.group, tc.wlen)
		t.Run(name, func(t *testing.T) {
			x := randVec(r, tc.rows*tc.cols, 3)
			var w []float32
			want := oracleRMSNorm(x, tc.group, 1e-6)
			if tc.wlen > 0 {
				w = randVec(r, tc.wlen, 1)
				want = oracleMul(want, w)
			}
			for _, c := range cuts(tc.rows) {
				y := make([]float32, len(x))
				for i := 0; i+1 < len(c); i++ {
					RMSNorm(x, y, tc.cols, tc.group, 1e-6, w, c[i], c[i+1])
				}
				sameBits(t, fmt.Sprintf("rows %v", c), y, want)
			}
			units := tc.cols / tc.group
			for _, c := range cuts(units) {
				y := make([]float32, len(x))
				for i := 0; i+1 < len(c); i++ {
					RMSNormCols(x, y, tc.rows, tc.cols, tc.group, 1e-6, w, c[i]*tc.group, c[i+1]*tc.group)
				}
				sameBits(t, fmt.Sprintf("cols %v", c), y, want)
			}
			// In place.
			y := append([]float32(nil), x...)
			RMSNorm(y, y, tc.cols, tc.group, 1e-6, w, 0, tc.rows)
			sameBits(t, "in place", y, want)
		})
	}
}

func TestElementWise(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const rows, cols = 5, 392 // 24 scalar-tail columns
	a, g, u := randVec(r, rows*cols, 2), randVec(r, rows*cols, 4), randVec(r, rows*cols, 1)
	g[0], g[1], g[2] = 100, -100, 0 // saturation and zero
	for _, bcols := range []int{cols, 56, 1} {
		b := randVec(r, bcols, 1)
		if bcols == cols {
			b = randVec(r, rows*cols, 1)
		}
		wantAdd, wantMul := oracleAdd(a, b), oracleMul(a, b)
		for _, unit := range []int{1, 8, 56} {
			for _, c := range cuts(cols / unit) {
				ya, ym := make([]float32, len(a)), make([]float32, len(a))
				for i := 0; i+1 < len(c); i++ {
					AddCols(ya, a, b, rows, cols, bcols, c[i]*unit, c[i+1]*unit)
					MulCols(ym, a, b, rows, cols, bcols, c[i]*unit, c[i+1]*unit)
				}
				sameBits(t, fmt.Sprintf("add b%d unit %d %v", bcols, unit, c), ya, wantAdd)
				sameBits(t, fmt.Sprintf("mul b%d unit %d %v", bcols, unit, c), ym, wantMul)
			}
		}
		// Row split by slicing, output aliasing a.
		ya := append([]float32(nil), a...)
		boff := 0 // a same-shape b is sliced with the rows, a broadcast one is not
		if bcols == cols {
			boff = 2 * cols
		}
		AddCols(ya[2*cols:], ya[2*cols:], b[boff:], rows-2, cols, bcols, 0, cols)
		AddCols(ya, ya, b, 2, cols, bcols, 0, cols)
		sameBits(t, fmt.Sprintf("add b%d rows in place", bcols), ya, wantAdd)
	}
	wantSw, wantSi := make([]float32, len(g)), make([]float32, len(g))
	for i := range g {
		wantSw[i] = oracleSiLUAt(i%cols, cols, g[i]) * u[i]
		wantSi[i] = oracleSiLUAt(i%cols, cols, g[i])
	}
	for _, c := range cuts(cols / 8) {
		ys, yi := make([]float32, len(g)), make([]float32, len(g))
		for i := 0; i+1 < len(c); i++ {
			SwiGLUCols(ys, g, u, rows, cols, c[i]*8, c[i+1]*8)
			SiLUCols(yi, g, rows, cols, c[i]*8, c[i+1]*8)
		}
		sameBits(t, fmt.Sprintf("swiglu %v", c), ys, wantSw)
		sameBits(t, fmt.Sprintf("silu %v", c), yi, wantSi)
	}
}

func TestSoftmax(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const rows, cols = 6, 1000
	x := randVec(r, rows*cols, 5)
	x[3] = float32(math.Inf(-1)) // a masked entry
	for _, scale := range []float32{1, 0.125} {
		want := make([]float32, len(x))
		for i := 0; i < rows; i++ {
			oracleSoftmax(x[i*cols:(i+1)*cols], want[i*cols:(i+1)*cols], scale)
		}
		for _, c := range cuts(rows) {
			y := make([]float32, len(x))
			for i := 0; i+1 < len(c); i++ {
				Softmax(y, x, cols, scale, c[i], c[i+1])
			}
			sameBits(t, fmt.Sprintf("scale %v rows %v", scale, c), y, want)
		}
		y := append([]float32(nil), x...)
		Softmax(y, y, cols, scale, 0, rows)
		sameBits(t, "in place", y, want)
	}
}

func TestRope(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, tc := range []struct {
		heads, headDim, ropeDims int
		base, scale              float32
		neox                     bool
		freqs                    []float32 // frequency factors (rope_freqs.weight) or nil
	}{
		{14, 64, 64, 1e6, 1, true, nil}, {8, 128, 128, 10000, 0, false, nil}, {6, 64, 32, 10000, 0.25, true, nil}, {4, 80, 40, 500000, 1, false, nil},
		{3, 80, 36, 10000, 1, true, nil}, // NEOX with a scalar remainder (18 pairs)
		// frequency factors: llama3-like ramps (1 … 32, with smooth ones in
		// between) in both pair layouts, with and without a linear scale,
		// and a NEOX remainder
		{8, 64, 64, 500000, 1, false, testFreqs(32)}, {8, 64, 64, 500000, 1, true, testFreqs(32)},
		{4, 128, 128, 500000, 0.5, false, testFreqs(64)}, {3, 80, 36, 10000, 1, true, testFreqs(18)},
	} {
		name := fmt.Sprintf("h%d/hd%d/rd%d/neox=%v/freqs=%v", tc.heads, tc.headDim, tc.ropeDims, tc.neox, tc.freqs != nil)
		t.Run(name, func(t *testing.T) {
			const T = 5
			cols := tc.heads * tc.headDim
			x := randVec(r, T*cols, 1)
			pos := []int32{0, 1, 17, 300, 4095}
			want := oracleRope(x, pos, tc.headDim, tc.ropeDims, tc.base, tc.scale, tc.freqs, tc.neox)
			if tc.freqs != nil {
				// the factors must change the result (else the case tests nothing)
				if plain := oracleRope(x, pos, tc.headDim, tc.ropeDims, tc.base, tc.scale, nil, tc.neox); slices.Equal(plain, want) {
					t.Fatal("frequency factors left every value unchanged")
				}
			}
			for _, c := range cuts(tc.heads) {
				y := append([]float32(nil), x...)
				for i := 0; i+1 < len(c); i++ {
					RopeCols(y, T, cols, pos, tc.headDim, tc.ropeDims, tc.base, tc.scale, tc.freqs, tc.neox, c[i]*tc.headDim, c[i+1]*tc.headDim)
				}
				sameBits(t, fmt.Sprintf("heads %v", c), y, want)
			}
			// The same chunks through one RopeTable (computed by the first,
			// reused by the rest), and the table kept across a change of
			// positions under a new generation: it must be refilled.
			var tab RopeTable
			for gen, ps := range [][]int32{pos, {3, 2, 1, 0, 9}, pos} {
				wantP := want
				if gen == 1 {
					wantP = oracleRope(x, ps, tc.headDim, tc.ropeDims, tc.base, tc.scale, tc.freqs, tc.neox)
				}
				for _, c := range cuts(tc.heads) {
					y := append([]float32(nil), x...)
					for i := 0; i+1 < len(c); i++ {
						RopeColsCached(y, T, cols, ps, tc.headDim, tc.ropeDims, tc.base, tc.scale, tc.freqs, tc.neox, c[i]*tc.headDim, c[i+1]*tc.headDim, &tab, int64(gen))
					}
					sameBits(t, fmt.Sprintf("table gen %d heads %v", gen, c), y, wantP)
				}
			}
			// Row split by slicing.
			y := append([]float32(nil), x...)
			RopeCols(y, 2, cols, pos[:2], tc.headDim, tc.ropeDims, tc.base, tc.scale, tc.freqs, tc.neox, 0, cols)
			RopeCols(y[2*cols:], T-2, cols, pos[2:], tc.headDim, tc.ropeDims, tc.base, tc.scale, tc.freqs, tc.neox, 0, cols)
			sameBits(t, "rows", y, want)
		})
	}
}

// testFreqs returns n rope frequency factors shaped like llama3's: 1 for
// the first quarter, 32 for the last, values from 1/(1/32 + ...) that are
// not powers of two in between.
func testFreqs(n int) []float32 {
	f := make([]float32, n)
	for i := range f {
		switch {
		case i < n/4:
			f[i] = 1
		case i >= 3*n/4:
			f[i] = 32
		default:
			s := float32(i-n/4) / float32(n/2)
			f[i] = 1 / ((1-s)/32 + s)
		}
	}
	return f
}

// matMulTypes are the weight types the mat-mul tests cover: every type
// with a dot kernel.
var matMulTypes = []quant.Type{quant.F32, quant.F16, quant.BF16, quant.Q4_0, quant.Q4_1, quant.Q5_0, quant.Q5_1, quant.Q8_0,
	quant.Q2_K, quant.Q3_K, quant.Q4_K, quant.Q5_K, quant.Q6_K}

func quantWeights(t testing.TB, r *rand.Rand, wt quant.Type, N, K int) []byte {
	rs, err := wt.RowSize(K)
	if err != nil {
		t.Fatal(err)
	}
	wf := randVec(r, N*K, 0.05)
	wb := make([]byte, N*rs)
	for n := 0; n < N; n++ {
		if err := quant.Quantize(wt, wf[n*K:(n+1)*K], wb[n*rs:(n+1)*rs]); err != nil {
			t.Fatal(err)
		}
	}
	return wb
}

func TestMatMul(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, wt := range matMulTypes {
		for _, shape := range [][3]int{{1, 37, 512}, {4, 70, 256}, {19, 33, 768}} {
			M, N, K := shape[0], shape[1], shape[2]
			t.Run(fmt.Sprintf("%s/M%d/N%d/K%d", wt, M, N, K), func(t *testing.T) {
				k, err := NewMatMul(wt)
				if err != nil {
					t.Fatal(err)
				}
				if err := k.Check(K); err != nil {
					t.Fatal(err)
				}
				wb := quantWeights(t, r, wt, N, K)
				x := randVec(r, M*K, 1)
				want := oracleMatMul(x, wt, wb, N, K)
				arb := k.ActRowBytes(K)
				for _, rc := range cuts(M) {
					act := make([]byte, M*arb)
					for i := 0; i+1 < len(rc); i++ {
						k.QuantizeRows(x, K, rc[i], rc[i+1], act)
					}
					for _, c := range cuts(N) {
						y := make([]float32, M*N)
						for i := 0; i+1 < len(c); i++ {
							k.Run(K, wb, act, M, y, N, c[i], c[i+1])
						}
						sameBits(t, fmt.Sprintf("quant rows %v cols %v", rc, c), y, want)
					}
					// Split by token rows: each worker runs its rows.
					y := make([]float32, M*N)
					for i := 0; i+1 < len(rc); i++ {
						r0, r1 := rc[i], rc[i+1]
						k.Run(K, wb, act[r0*arb:], r1-r0, y[r0*N:], N, 0, N)
					}
					sameBits(t, fmt.Sprintf("token rows %v", rc), y, want)
				}
				// A strided output (ldy > N), e.g. writing into a wider buffer.
				act := make([]byte, M*arb)
				k.QuantizeRows(x, K, 0, M, act)
				ld := N + 5
				y := make([]float32, M*ld)
				k.Run(K, wb, act, M, y, ld, 0, N)
				for m := 0; m < M; m++ {
					sameBits(t, "strided", y[m*ld:m*ld+N], want[m*N:(m+1)*N])
				}
			})
		}
	}
}

func TestMatMulUnsupported(t *testing.T) {
	for _, wt := range []quant.Type{quant.Q8_1, quant.Q8_K, quant.I32, quant.Type(99)} {
		if _, err := NewMatMul(wt); err == nil {
			t.Errorf("NewMatMul(%s) succeeded", wt)
		} else if want := wt.String(); !contains(err.Error(), want) {
			t.Errorf("NewMatMul(%s) error %q does not name the type", wt, err)
		}
	}
	k, _ := NewMatMul(quant.Q4_K)
	if err := k.Check(100); err == nil {
		t.Error("Q4_K accepted K=100")
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestGetRows(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	const V, cols = 50, 256
	ids := []int32{3, 49, 0, 3, 17, 22, 8}
	tab := randVec(r, V*cols, 1)
	want := make([]float32, len(ids)*cols)
	for i, id := range ids {
		copy(want[i*cols:], tab[int(id)*cols:(int(id)+1)*cols])
	}
	for _, c := range cuts(len(ids)) {
		y := make([]float32, len(want))
		for i := 0; i+1 < len(c); i++ {
			GetRowsF32(y, tab, cols, ids, c[i], c[i+1])
		}
		sameBits(t, "f32", y, want)
	}
	for _, tt := range []quant.Type{quant.F32, quant.F16, quant.BF16, quant.Q4_0, quant.Q8_0, quant.Q4_K, quant.Q6_K} {
		wb := quantWeights(t, r, tt, V, cols)
		rs, _ := tt.RowSize(cols)
		want := make([]float32, len(ids)*cols)
		for i, id := range ids {
			if err := quant.Dequantize(tt, wb[int(id)*rs:(int(id)+1)*rs], want[i*cols:(i+1)*cols]); err != nil {
				t.Fatal(err)
			}
		}
		f, err := GetRowsQuant(tt)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cuts(len(ids)) {
			y := make([]float32, len(want))
			for i := 0; i+1 < len(c); i++ {
				f(y, wb, cols, ids, c[i], c[i+1])
			}
			sameBits(t, tt.String(), y, want)
		}
	}
	if _, err := GetRowsQuant(quant.Type(99)); err == nil {
		t.Error("GetRowsQuant(type 99) succeeded")
	}
}

// TestToF16Row: the KV store's f32→f16 conversion gives quant.FP32ToFP16's
// bits on every tier for every exponent, sign and the rounding-relevant
// low mantissa bits (ties, just above and below them, sticky bits), NaNs
// of every kind among them, and for random patterns, at every offset of a
// SIMD chunk.
func TestToF16Row(t *testing.T) {
	var src []float32
	lows := []uint32{0, 1, 0xfff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x3000, 0x7fffff, 0x400000, 0x400001, 0x3fffff}
	for hi := uint32(0); hi < 1<<9; hi++ { // sign and exponent
		for m := uint32(0); m < 1<<10; m += 37 { // upper mantissa bits
			for _, lo := range lows {
				src = append(src, math.Float32frombits(hi<<23|(m<<13|lo)&0x7fffff))
			}
		}
	}
	r := rand.New(rand.NewPCG(61, 62))
	for range 1 << 16 {
		src = append(src, math.Float32frombits(r.Uint32()))
	}
	want := make([]byte, 2*len(src))
	quant.QuantizeF16(src, want)
	tiers := append([]*f32Tier{nil}, f32Tiers...)
	for _, tier := range tiers {
		name := "go"
		if tier != nil {
			name = tier.name
		}
		t.Run(name, func(t *testing.T) {
			if tier != nil && !tier.ok {
				t.Skip(tier.name + " float32 kernels unavailable: " + tier.why)
			}
			withF32(tier, func() {
				for _, off := range []int{0, 1, 7, 15} {
					got := make([]byte, 2*len(src))
					toF16Row(got[2*off:], src[off:])
					quant.QuantizeF16(src[:off], got[:2*off])
					for i := range src {
						g, w := uint16(got[2*i])|uint16(got[2*i+1])<<8, uint16(want[2*i])|uint16(want[2*i+1])<<8
						if g != w {
							t.Fatalf("offset %d: %#08x (%g) → %#04x, want %#04x", off, math.Float32bits(src[i]), src[i], g, w)
						}
					}
				}
			})
		})
	}
}

// BenchmarkToF16Row converts one Qwen3-0.6B K row (1024 floats) to f16,
// per tier ("go": quant.QuantizeF16).
func BenchmarkToF16Row(b *testing.B) {
	r := rand.New(rand.NewPCG(63, 64))
	src := randVec(r, 1024, 1)
	dst := make([]byte, 2*len(src))
	for _, tier := range append([]*f32Tier{nil}, f32Tiers...) {
		name := "go"
		if tier != nil {
			name = tier.name
		}
		b.Run(name, func(b *testing.B) {
			if tier != nil && !tier.ok {
				b.Skip(tier.why)
			}
			withF32(tier, func() {
				for b.Loop() {
					toF16Row(dst, src)
				}
			})
		})
	}
}
