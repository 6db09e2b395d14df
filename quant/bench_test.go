package quant

import (
	"math/rand/v2"
	"testing"
)

const benchN = 4096

func benchRow(seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 99))
	x := make([]float32, benchN)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

var benchTypes = []Type{F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K}

var benchSink float32

// BenchmarkDot measures one 4096-element row dot per op.
func BenchmarkDot(b *testing.B) {
	for _, typ := range benchTypes {
		b.Run(typ.String(), func(b *testing.B) {
			vt := typ.VecDotType()
			ws, _ := typ.RowSize(benchN)
			as, _ := vt.RowSize(benchN)
			w, a := make([]byte, ws), make([]byte, as)
			_ = Quantize(typ, benchRow(1), w)
			_ = QuantizeAct(vt, benchRow(2), a)
			dot := DotFor(typ)
			b.SetBytes(int64(ws))
			b.ReportAllocs()
			for b.Loop() {
				benchSink += dot(benchN, w, a)
			}
		})
	}
}

// BenchmarkDequantize measures dequantizing one 4096-element row per op.
func BenchmarkDequantize(b *testing.B) {
	for _, typ := range append(benchTypes, Q8_K) {
		b.Run(typ.String(), func(b *testing.B) {
			ws, _ := typ.RowSize(benchN)
			w := make([]byte, ws)
			_ = Quantize(typ, benchRow(1), w)
			dst := make([]float32, benchN)
			deq := DequantFor(typ)
			b.SetBytes(int64(ws))
			b.ReportAllocs()
			for b.Loop() {
				deq(w, dst)
			}
		})
	}
}

// BenchmarkQuantizeAct measures quantizing one 4096-element activation row.
func BenchmarkQuantizeAct(b *testing.B) {
	for _, typ := range []Type{Q8_0, Q8_1, Q8_K, F16, BF16} {
		b.Run(typ.String(), func(b *testing.B) {
			x := benchRow(3)
			rs, _ := typ.RowSize(benchN)
			dst := make([]byte, rs)
			q := ActQuantFor(typ)
			b.ReportAllocs()
			for b.Loop() {
				q(x, dst)
			}
		})
	}
}

// BenchmarkQuantize measures the reference (model-file) quantizers.
func BenchmarkQuantize(b *testing.B) {
	for _, typ := range []Type{Q4_0, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K} {
		b.Run(typ.String(), func(b *testing.B) {
			x := benchRow(4)
			rs, _ := typ.RowSize(benchN)
			dst := make([]byte, rs)
			q := QuantFor(typ)
			b.ReportAllocs()
			for b.Loop() {
				q(x, dst)
			}
		})
	}
}
