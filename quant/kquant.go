package quant

import (
	"math"

	"github.com/minfer/minfer/internal/ggmlf32"
)

// Block sizes in bytes of the K-quant super-blocks (256 elements).
const (
	blockQ2K = 84
	blockQ3K = 110
	blockQ4K = 144
	blockQ5K = 176
	blockQ6K = 210
	blockQ8K = 292
)

// scaleMinK4 decodes the 6-bit scale and min j (0..7) of a Q4_K/Q5_K block
// from its 12 packed bytes (ggml's get_scale_min_k4).
func scaleMinK4(j int, q []byte) (sc, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xf | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// bsum returns bsums[j] of a Q8_K block's bsums field.
func bsum(bs []byte, j int) int32 { return int32(int16(le16(bs[2*j:]))) }

// putScaleMinK4 packs 8 6-bit scales and mins the way quantize_row_q4_K_ref does.
func putScaleMinK4(q []byte, ls, lm *[8]uint8) {
	for j := 0; j < 8; j++ {
		if j < 4 {
			q[j] = ls[j]
			q[j+4] = lm[j]
		} else {
			q[j+4] = ls[j]&0xf | (lm[j]&0xf)<<4
			q[j-4] |= (ls[j] >> 4) << 6
			q[j] |= (lm[j] >> 4) << 6
		}
	}
}

// q3Scale decodes the signed 6-bit scale j (0..15) of a Q3_K block (already
// minus 32) from its 12 packed bytes.
func q3Scale(sc []byte, j int) int32 {
	var lo uint8
	if j < 8 {
		lo = sc[j] & 0xf
	} else {
		lo = sc[j-8] >> 4
	}
	hi := (sc[8+j%4] >> (2 * (j / 4))) & 3
	return int32(lo|hi<<4) - 32
}

// ---------------------------------------------------------------- Q2_K

// QuantizeQ2K quantizes as ggml's quantize_row_q2_K_ref.
func QuantizeQ2K(src []float32, dst []byte) {
	var (
		L       [QKK]uint8
		laux    [16]uint8
		weights [16]float32
		mins    [QKK / 16]float32
		scales  [QKK / 16]float32
	)
	const q4scale = 15
	for i := 0; i < len(src)/QKK; i++ {
		x := src[i*QKK : i*QKK+QKK]
		y := dst[i*blockQ2K : i*blockQ2K+blockQ2K]
		var maxScale, maxMin float32
		for j := 0; j < QKK/16; j++ {
			xs := x[16*j : 16*j+16]
			for l, v := range xs {
				weights[l] = abs32(v)
			}
			scales[j], mins[j] = makeQKX2Quants(3, xs, weights[:], L[16*j:16*j+16], laux[:], -0.5, 0.1, 15, true)
			maxScale = max(maxScale, scales[j])
			maxMin = max(maxMin, mins[j])
		}
		sc := y[0:16]
		if maxScale > 0 {
			iscale := q4scale / maxScale
			for j := range sc {
				sc[j] = uint8(nearestInt(float32(iscale * scales[j])))
			}
			put16(y[80:], FP32ToFP16(maxScale/q4scale))
		} else {
			clear(sc)
			put16(y[80:], 0)
		}
		if maxMin > 0 {
			iscale := q4scale / maxMin
			for j := range sc {
				sc[j] |= uint8(nearestInt(float32(iscale*mins[j])) << 4)
			}
			put16(y[82:], FP32ToFP16(maxMin/q4scale))
		} else {
			put16(y[82:], 0)
		}
		dAll, mAll := halfAt(y[80:]), halfAt(y[82:])
		for j := 0; j < QKK/16; j++ {
			d := float32(dAll * float32(sc[j]&0xf))
			if d == 0 {
				continue
			}
			dm := float32(mAll * float32(sc[j]>>4))
			for ii := 0; ii < 16; ii++ {
				l := nearestInt((x[16*j+ii] + dm) / d)
				L[16*j+ii] = uint8(max(0, min(3, l)))
			}
		}
		qs := y[16:80]
		for j := 0; j < QKK; j += 128 {
			for l := 0; l < 32; l++ {
				qs[j/4+l] = L[j+l] | L[j+l+32]<<2 | L[j+l+64]<<4 | L[j+l+96]<<6
			}
		}
	}
}

// DequantizeQ2K expands Q2_K blocks: x = d·sc·q - dmin·m per 16 elements.
func DequantizeQ2K(src []byte, dst []float32) {
	for i := 0; i < len(dst)/QKK; i++ {
		b := src[i*blockQ2K : i*blockQ2K+blockQ2K]
		y := dst[i*QKK : i*QKK+QKK]
		d, mn := halfAt(b[80:]), halfAt(b[82:])
		sc := b[0:16]
		for half := 0; half < 2; half++ {
			q := b[16+32*half : 16+32*half+32]
			for j := 0; j < 4; j++ {
				shift := uint(2 * j)
				for g := 0; g < 2; g++ {
					s := sc[half*8+2*j+g]
					dl := float32(d * float32(s&0xf))
					ml := float32(mn * float32(s>>4))
					out := y[half*128+j*32+g*16 : half*128+j*32+g*16+16]
					qq := q[16*g : 16*g+16]
					for l := range out {
						out[l] = float32(dl*float32((qq[l]>>shift)&3)) - ml
					}
				}
			}
		}
	}
}

// DotQ2KQ8K is the dot product of n Q2_K weights with n Q8_K activations.
// It reproduces ggml's x86 AVX2 kernel (which llama.cpp also runs on
// AVX-512 machines): per super-block, one FMA of -dmin times 8 lanes of
// mins·bsums pairs, then one FMA of d times 8 lanes of scaled 4-element
// integer sums, into a single 8-lane accumulator; bit-identical on x86.
func DotQ2KQ8K(n int, w, a []byte) float32 {
	var acc ggmlf32.Acc8
	for i := 0; i < n/QKK; i++ {
		x := w[i*blockQ2K : i*blockQ2K+blockQ2K]
		y := a[i*blockQ8K : i*blockQ8K+blockQ8K]
		sc := x[0:16]
		bs := y[260:292]
		q8 := y[4:260]
		var mins, sumi [8]int32
		for k := 0; k < 8; k++ {
			mins[k] = int32(sc[2*k]>>4)*bsum(bs, 2*k) + int32(sc[2*k+1]>>4)*bsum(bs, 2*k+1)
		}
		for half := 0; half < 2; half++ {
			q2 := x[16+32*half : 16+32*half+32]
			for j := 0; j < 4; j++ {
				shift := uint(2 * j)
				a8 := q8[half*128+j*32 : half*128+j*32+32]
				s0, s1 := int32(sc[half*8+2*j]&0xf), int32(sc[half*8+2*j+1]&0xf)
				for k := 0; k < 8; k++ {
					var p int32
					for l := 4 * k; l < 4*k+4; l++ {
						p += int32((q2[l]>>shift)&3) * int32(int8(a8[l]))
					}
					if k < 4 {
						sumi[k] += s0 * p
					} else {
						sumi[k] += s1 * p
					}
				}
			}
		}
		yd := math.Float32frombits(u32At(y))
		d := float32(yd * halfAt(x[80:]))
		dmin := -float32(yd * halfAt(x[82:]))
		acc.MulAdd(dmin, &mins)
		acc.MulAdd(d, &sumi)
	}
	return acc.Sum()
}

// ---------------------------------------------------------------- Q3_K

// QuantizeQ3K quantizes as ggml's quantize_row_q3_K_ref.
func QuantizeQ3K(src []float32, dst []byte) {
	var (
		L      [QKK]int8
		scales [QKK / 16]float32
	)
	for i := 0; i < len(src)/QKK; i++ {
		x := src[i*QKK : i*QKK+QKK]
		y := dst[i*blockQ3K : i*blockQ3K+blockQ3K]
		var maxScale, amax float32
		for j := 0; j < QKK/16; j++ {
			scales[j] = makeQ3Quants(4, x[16*j:16*j+16], L[16*j:16*j+16])
			if a := abs32(scales[j]); a > amax {
				amax, maxScale = a, scales[j]
			}
		}
		sc := y[96:108]
		clear(sc)
		if maxScale != 0 {
			iscale := -32 / maxScale
			for j := 0; j < QKK/16; j++ {
				l := int8(nearestInt(float32(iscale * scales[j])))
				l = max(-32, min(31, l)) + 32
				if j < 8 {
					sc[j] = uint8(l) & 0xf
				} else {
					sc[j-8] |= (uint8(l) & 0xf) << 4
				}
				l >>= 4
				sc[j%4+8] |= uint8(l) << (2 * (j / 4))
			}
			put16(y[108:], FP32ToFP16(1/iscale))
		} else {
			put16(y[108:], 0)
		}
		dAll := halfAt(y[108:])
		for j := 0; j < QKK/16; j++ {
			d := float32(dAll * float32(q3Scale(sc, j)))
			if d == 0 {
				continue
			}
			for ii := 0; ii < 16; ii++ {
				l := nearestInt(x[16*j+ii] / d)
				L[16*j+ii] = int8(max(-4, min(3, l)) + 4)
			}
		}
		hmask := y[0:32]
		clear(hmask)
		m, hm := 0, uint8(1)
		for j := 0; j < QKK; j++ {
			if L[j] > 3 {
				hmask[m] |= hm
				L[j] -= 4
			}
			if m++; m == QKK/8 {
				m, hm = 0, hm<<1
			}
		}
		qs := y[32:96]
		for j := 0; j < QKK; j += 128 {
			for l := 0; l < 32; l++ {
				qs[j/4+l] = uint8(L[j+l]) | uint8(L[j+l+32])<<2 | uint8(L[j+l+64])<<4 | uint8(L[j+l+96])<<6
			}
		}
	}
}

// DequantizeQ3K expands Q3_K blocks: x = d·(sc-32)·(q-4·!hbit) per 16 elements.
func DequantizeQ3K(src []byte, dst []float32) {
	for i := 0; i < len(dst)/QKK; i++ {
		b := src[i*blockQ3K : i*blockQ3K+blockQ3K]
		y := dst[i*QKK : i*QKK+QKK]
		dAll := halfAt(b[108:])
		hmask := b[0:32]
		sc := b[96:108]
		for half := 0; half < 2; half++ {
			q := b[32+32*half : 32+32*half+32]
			for j := 0; j < 4; j++ {
				shift := uint(2 * j)
				m := uint8(1) << (4*half + j)
				for g := 0; g < 2; g++ {
					dl := float32(dAll * float32(q3Scale(sc, half*8+2*j+g)))
					out := y[half*128+j*32+g*16 : half*128+j*32+g*16+16]
					for l := range out {
						v := int32((q[16*g+l] >> shift) & 3)
						if hmask[16*g+l]&m == 0 {
							v -= 4
						}
						out[l] = dl * float32(v)
					}
				}
			}
		}
	}
}

// DotQ3KQ8K is the dot product of n Q3_K weights with n Q8_K activations.
// It reproduces ggml's x86 AVX2 kernel: 8 lanes of scaled 4-element integer
// sums per super-block, accumulated with one FMA by d; bit-identical on x86.
func DotQ3KQ8K(n int, w, a []byte) float32 {
	var acc ggmlf32.Acc8
	var scales [16]int32
	for i := 0; i < n/QKK; i++ {
		x := w[i*blockQ3K : i*blockQ3K+blockQ3K]
		y := a[i*blockQ8K : i*blockQ8K+blockQ8K]
		hmask := x[0:32]
		sc := x[96:108]
		for j := range scales {
			scales[j] = q3Scale(sc, j)
		}
		q8 := y[4:260]
		var sumi [8]int32
		for half := 0; half < 2; half++ {
			q := x[32+32*half : 32+32*half+32]
			for j := 0; j < 4; j++ {
				shift := uint(2 * j)
				m := uint8(1) << (4*half + j)
				a8 := q8[half*128+j*32 : half*128+j*32+32]
				s0, s1 := scales[half*8+2*j], scales[half*8+2*j+1]
				for k := 0; k < 8; k++ {
					var p int32
					for l := 4 * k; l < 4*k+4; l++ {
						v := int32((q[l] >> shift) & 3)
						if hmask[l]&m == 0 {
							v -= 4
						}
						p += v * int32(int8(a8[l]))
					}
					if k < 4 {
						sumi[k] += s0 * p
					} else {
						sumi[k] += s1 * p
					}
				}
			}
		}
		d := float32(math.Float32frombits(u32At(y)) * halfAt(x[108:]))
		acc.MulAdd(d, &sumi)
	}
	return acc.Sum()
}

// ---------------------------------------------------------------- Q4_K

// QuantizeQ4K quantizes as ggml's quantize_row_q4_K_ref.
func QuantizeQ4K(src []float32, dst []byte) {
	quantizeQ45K(src, dst, 15, blockQ4K)
}

// QuantizeQ5K quantizes as ggml's quantize_row_q5_K_ref.
func QuantizeQ5K(src []float32, dst []byte) {
	quantizeQ45K(src, dst, 31, blockQ5K)
}

// quantizeQ45K is the shared body of the Q4_K (nmax 15) and Q5_K (nmax 31)
// reference quantizers; they differ in search parameters and bit packing.
func quantizeQ45K(src []float32, dst []byte, nmax int32, bsz int) {
	var (
		L       [QKK]uint8
		laux    [32]uint8
		weights [32]float32
		mins    [8]float32
		scales  [8]float32
		ls, lm  [8]uint8
	)
	rmin, nstep := float32(-1), 20
	if nmax == 31 {
		rmin, nstep = -0.5, 15
	}
	for i := 0; i < len(src)/QKK; i++ {
		x := src[i*QKK : i*QKK+QKK]
		y := dst[i*bsz : i*bsz+bsz]
		var maxScale, maxMin float32
		for j := 0; j < 8; j++ {
			xs := x[32*j : 32*j+32]
			var sumX2 float32
			for _, v := range xs {
				sumX2 += float32(v * v)
			}
			avX := sqrt32(sumX2 / 32)
			for l, v := range xs {
				weights[l] = avX + abs32(v)
			}
			scales[j], mins[j] = makeQKX2Quants(nmax, xs, weights[:], L[32*j:32*j+32], laux[:], rmin, 0.1, nstep, false)
			maxScale = max(maxScale, scales[j])
			maxMin = max(maxMin, mins[j])
		}
		var invScale, invMin float32
		if maxScale > 0 {
			invScale = 63 / maxScale
		}
		if maxMin > 0 {
			invMin = 63 / maxMin
		}
		for j := 0; j < 8; j++ {
			ls[j] = min(63, uint8(nearestInt(float32(invScale*scales[j]))))
			lm[j] = min(63, uint8(nearestInt(float32(invMin*mins[j]))))
		}
		sc := y[4:16]
		putScaleMinK4(sc, &ls, &lm)
		put16(y[0:], FP32ToFP16(maxScale/63))
		put16(y[2:], FP32ToFP16(maxMin/63))
		dAll, mAll := halfAt(y[0:]), halfAt(y[2:])
		for j := 0; j < 8; j++ {
			s, m := scaleMinK4(j, sc)
			d := float32(dAll * float32(s))
			if d == 0 {
				continue
			}
			dm := float32(mAll * float32(m))
			for ii := 0; ii < 32; ii++ {
				l := nearestInt((x[32*j+ii] + dm) / d)
				L[32*j+ii] = uint8(max(0, min(nmax, l)))
			}
		}
		if nmax == 15 {
			q := y[16:144]
			for j := 0; j < QKK; j += 64 {
				for l := 0; l < 32; l++ {
					q[j/2+l] = L[j+l] | L[j+l+32]<<4
				}
			}
			continue
		}
		qh := y[16:48]
		ql := y[48:176]
		clear(qh)
		m1, m2 := uint8(1), uint8(2)
		for n := 0; n < QKK; n += 64 {
			for j := 0; j < 32; j++ {
				l1 := L[n+j]
				if l1 > 15 {
					l1 -= 16
					qh[j] |= m1
				}
				l2 := L[n+j+32]
				if l2 > 15 {
					l2 -= 16
					qh[j] |= m2
				}
				ql[n/2+j] = l1 | l2<<4
			}
			m1 <<= 2
			m2 <<= 2
		}
	}
}

// DequantizeQ4K expands Q4_K blocks: x = d·sc·q - dmin·m per 32 elements.
func DequantizeQ4K(src []byte, dst []float32) {
	for i := 0; i < len(dst)/QKK; i++ {
		b := src[i*blockQ4K : i*blockQ4K+blockQ4K]
		y := dst[i*QKK : i*QKK+QKK]
		d, mn := halfAt(b[0:]), halfAt(b[2:])
		sc := b[4:16]
		for j := 0; j < 4; j++ {
			q := b[16+32*j : 16+32*j+32]
			s1, m1 := scaleMinK4(2*j, sc)
			s2, m2 := scaleMinK4(2*j+1, sc)
			d1, dm1 := float32(d*float32(s1)), float32(mn*float32(m1))
			d2, dm2 := float32(d*float32(s2)), float32(mn*float32(m2))
			lo := y[64*j : 64*j+32]
			hi := y[64*j+32 : 64*j+64]
			for l := 0; l < 32; l++ {
				lo[l] = float32(d1*float32(q[l]&0xf)) - dm1
				hi[l] = float32(d2*float32(q[l]>>4)) - dm2
			}
		}
	}
}

// DotQ4KQ8K is the dot product of n Q4_K weights with n Q8_K activations.
// It reproduces the accumulation order of ggml's x86 AVX2 kernel (8 float32
// lanes of 4-element integer sums for the scales, 4 lanes over bsums pairs for
// the mins, both with FMA), which makes it bit-identical to llama.cpp on x86.
func DotQ4KQ8K(n int, w, a []byte) float32 {
	var acc ggmlf32.Acc8
	var accM [4]float32
	for i := 0; i < n/QKK; i++ {
		x := w[i*blockQ4K : i*blockQ4K+blockQ4K]
		y := a[i*blockQ8K : i*blockQ8K+blockQ8K]
		sc := x[4:16]
		q8 := y[4:260]
		bs := y[260:292]
		var sumi [8]int32
		var mins [8]int32
		for j := 0; j < 4; j++ {
			q := x[16+32*j : 16+32*j+32]
			s1, m1 := scaleMinK4(2*j, sc)
			s2, m2 := scaleMinK4(2*j+1, sc)
			mins[2*j], mins[2*j+1] = int32(m1), int32(m2)
			lo := q8[64*j : 64*j+32]
			hi := q8[64*j+32 : 64*j+64]
			for k := 0; k < 8; k++ {
				var a1, a2 int32
				for l := 4 * k; l < 4*k+4; l++ {
					a1 += int32(q[l]&0xf) * int32(int8(lo[l]))
					a2 += int32(q[l]>>4) * int32(int8(hi[l]))
				}
				sumi[k] += int32(s1)*a1 + int32(s2)*a2
			}
		}
		yd := math.Float32frombits(u32At(y))
		d := float32(yd * halfAt(x[0:]))
		dmin := -float32(yd * halfAt(x[2:]))
		for k := 0; k < 4; k++ {
			prod := mins[2*k]*(bsum(bs, 4*k)+bsum(bs, 4*k+1)) + mins[2*k+1]*(bsum(bs, 4*k+2)+bsum(bs, 4*k+3))
			accM[k] = ggmlf32.FMA32(dmin, float32(prod), accM[k])
		}
		acc.MulAdd(d, &sumi)
	}
	return acc.Sum() + ((accM[0] + accM[2]) + (accM[1] + accM[3]))
}

// ---------------------------------------------------------------- Q5_K

// DequantizeQ5K expands Q5_K blocks: x = d·sc·q - dmin·m per 32 elements.
func DequantizeQ5K(src []byte, dst []float32) {
	for i := 0; i < len(dst)/QKK; i++ {
		b := src[i*blockQ5K : i*blockQ5K+blockQ5K]
		y := dst[i*QKK : i*QKK+QKK]
		d, mn := halfAt(b[0:]), halfAt(b[2:])
		sc := b[4:16]
		qh := b[16:48]
		for j := 0; j < 4; j++ {
			ql := b[48+32*j : 48+32*j+32]
			s1, m1 := scaleMinK4(2*j, sc)
			s2, m2 := scaleMinK4(2*j+1, sc)
			d1, dm1 := float32(d*float32(s1)), float32(mn*float32(m1))
			d2, dm2 := float32(d*float32(s2)), float32(mn*float32(m2))
			u1, u2 := uint8(1)<<(2*j), uint8(2)<<(2*j)
			lo := y[64*j : 64*j+32]
			hi := y[64*j+32 : 64*j+64]
			for l := 0; l < 32; l++ {
				v1, v2 := ql[l]&0xf, ql[l]>>4
				if qh[l]&u1 != 0 {
					v1 += 16
				}
				if qh[l]&u2 != 0 {
					v2 += 16
				}
				lo[l] = float32(d1*float32(v1)) - dm1
				hi[l] = float32(d2*float32(v2)) - dm2
			}
		}
	}
}

// DotQ5KQ8K is the dot product of n Q5_K weights with n Q8_K activations.
// It reproduces ggml's x86 AVX2 kernel: 8 lanes of scaled 4-element integer
// sums accumulated with one FMA by d per super-block, and the mins term
// (an exact integer per super-block) accumulated separately as a scalar
// float32 FMA by -dmin, added after the lane reduction; bit-identical on x86.
func DotQ5KQ8K(n int, w, a []byte) float32 {
	var acc ggmlf32.Acc8
	var summs float32
	for i := 0; i < n/QKK; i++ {
		x := w[i*blockQ5K : i*blockQ5K+blockQ5K]
		y := a[i*blockQ8K : i*blockQ8K+blockQ8K]
		sc := x[4:16]
		qh := x[16:48]
		q8 := y[4:260]
		bs := y[260:292]
		var sumi [8]int32
		var summ int32
		for j := 0; j < 4; j++ {
			ql := x[48+32*j : 48+32*j+32]
			s1, m1 := scaleMinK4(2*j, sc)
			s2, m2 := scaleMinK4(2*j+1, sc)
			sh := uint(2 * j)
			lo := q8[64*j : 64*j+32]
			hi := q8[64*j+32 : 64*j+64]
			for k := 0; k < 8; k++ {
				var a1, a2 int32
				for l := 4 * k; l < 4*k+4; l++ {
					h := qh[l] >> sh
					a1 += int32(ql[l]&0xf|(h&1)<<4) * int32(int8(lo[l]))
					a2 += int32(ql[l]>>4|(h&2)<<3) * int32(int8(hi[l]))
				}
				sumi[k] += int32(s1)*a1 + int32(s2)*a2
			}
			summ += int32(m1)*(bsum(bs, 4*j)+bsum(bs, 4*j+1)) + int32(m2)*(bsum(bs, 4*j+2)+bsum(bs, 4*j+3))
		}
		yd := math.Float32frombits(u32At(y))
		d := float32(yd * halfAt(x[0:]))
		dmin := -float32(yd * halfAt(x[2:]))
		summs = ggmlf32.FMA32(dmin, float32(summ), summs)
		acc.MulAdd(d, &sumi)
	}
	return acc.Sum() + summs
}

// ---------------------------------------------------------------- Q6_K

// QuantizeQ6K quantizes as ggml's quantize_row_q6_K_ref.
func QuantizeQ6K(src []float32, dst []byte) {
	var (
		L      [QKK]int8
		scales [QKK / 16]float32
	)
	for i := 0; i < len(src)/QKK; i++ {
		x := src[i*QKK : i*QKK+QKK]
		y := dst[i*blockQ6K : i*blockQ6K+blockQ6K]
		var maxScale, maxAbs float32
		for ib := 0; ib < QKK/16; ib++ {
			s := makeQXQuants(32, x[16*ib:16*ib+16], L[16*ib:16*ib+16])
			scales[ib] = s
			if a := abs32(s); a > maxAbs {
				maxAbs, maxScale = a, s
			}
		}
		if maxAbs < groupMaxEps {
			clear(y)
			continue
		}
		iscale := -128 / maxScale
		put16(y[208:], FP32ToFP16(1/iscale))
		sc := y[192:208]
		for ib := range sc {
			sc[ib] = uint8(int8(min(127, nearestInt(float32(iscale*scales[ib])))))
		}
		dAll := halfAt(y[208:])
		for j := 0; j < QKK/16; j++ {
			d := float32(dAll * float32(int8(sc[j])))
			if d == 0 {
				continue
			}
			for ii := 0; ii < 16; ii++ {
				l := nearestInt(x[16*j+ii] / d)
				L[16*j+ii] = int8(max(-32, min(31, l)) + 32)
			}
		}
		ql := y[0:128]
		qh := y[128:192]
		for j := 0; j < QKK; j += 128 {
			for l := 0; l < 32; l++ {
				q1 := uint8(L[j+l]) & 0xf
				q2 := uint8(L[j+l+32]) & 0xf
				q3 := uint8(L[j+l+64]) & 0xf
				q4 := uint8(L[j+l+96]) & 0xf
				ql[j/2+l] = q1 | q3<<4
				ql[j/2+l+32] = q2 | q4<<4
				qh[j/4+l] = uint8(L[j+l])>>4 | (uint8(L[j+l+32])>>4)<<2 | (uint8(L[j+l+64])>>4)<<4 | (uint8(L[j+l+96])>>4)<<6
			}
		}
	}
}

// DequantizeQ6K expands Q6_K blocks: x = d·sc·(q-32) per 16 elements.
func DequantizeQ6K(src []byte, dst []float32) {
	for i := 0; i < len(dst)/QKK; i++ {
		b := src[i*blockQ6K : i*blockQ6K+blockQ6K]
		y := dst[i*QKK : i*QKK+QKK]
		d := halfAt(b[208:])
		for n := 0; n < 2; n++ {
			ql := b[64*n : 64*n+64]
			qh := b[128+32*n : 128+32*n+32]
			sc := b[192+8*n : 192+8*n+8]
			out := y[128*n : 128*n+128]
			for l := 0; l < 32; l++ {
				is := l / 16
				q1 := int32(ql[l]&0xf|(qh[l]&3)<<4) - 32
				q2 := int32(ql[l+32]&0xf|((qh[l]>>2)&3)<<4) - 32
				q3 := int32(ql[l]>>4|((qh[l]>>4)&3)<<4) - 32
				q4 := int32(ql[l+32]>>4|((qh[l]>>6)&3)<<4) - 32
				out[l] = float32(d*float32(int8(sc[is]))) * float32(q1)
				out[l+32] = float32(d*float32(int8(sc[is+2]))) * float32(q2)
				out[l+64] = float32(d*float32(int8(sc[is+4]))) * float32(q3)
				out[l+96] = float32(d*float32(int8(sc[is+6]))) * float32(q4)
			}
		}
	}
}

// DotQ6KQ8K is the dot product of n Q6_K weights with n Q8_K activations.
// It reproduces ggml's x86 AVX2 kernel: 8 lanes of scaled 4-element sums of
// the unsigned 6-bit values, minus 32·(sc·bsums) over scale pairs per lane,
// accumulated with one FMA by d per super-block; bit-identical on x86.
func DotQ6KQ8K(n int, w, a []byte) float32 {
	var acc ggmlf32.Acc8
	for i := 0; i < n/QKK; i++ {
		x := w[i*blockQ6K : i*blockQ6K+blockQ6K]
		y := a[i*blockQ8K : i*blockQ8K+blockQ8K]
		q8 := y[4:260]
		bs := y[260:292]
		scAll := x[192:208]
		var sumi [8]int32
		for n := 0; n < 2; n++ {
			ql := x[64*n : 64*n+64]
			qh := x[128+32*n : 128+32*n+32]
			sc := scAll[8*n : 8*n+8]
			a8 := q8[128*n : 128*n+128]
			for k := 0; k < 8; k++ {
				var s1, s2, s3, s4 int32
				for l := 4 * k; l < 4*k+4; l++ {
					h := qh[l]
					s1 += int32(ql[l]&0xf|(h&3)<<4) * int32(int8(a8[l]))
					s2 += int32(ql[l+32]&0xf|((h>>2)&3)<<4) * int32(int8(a8[l+32]))
					s3 += int32(ql[l]>>4|((h>>4)&3)<<4) * int32(int8(a8[l+64]))
					s4 += int32(ql[l+32]>>4|((h>>6)&3)<<4) * int32(int8(a8[l+96]))
				}
				g := k / 4
				sumi[k] += int32(int8(sc[g]))*s1 + int32(int8(sc[g+2]))*s2 + int32(int8(sc[g+4]))*s3 + int32(int8(sc[g+6]))*s4
			}
		}
		for k := 0; k < 8; k++ {
			sumi[k] -= 32 * (int32(int8(scAll[2*k]))*bsum(bs, 2*k) + int32(int8(scAll[2*k+1]))*bsum(bs, 2*k+1))
		}
		d := float32(math.Float32frombits(u32At(y)) * halfAt(x[208:]))
		acc.MulAdd(d, &sumi)
	}
	return acc.Sum()
}

// ---------------------------------------------------------------- Q8_K

// QuantizeQ8K quantizes as ggml's quantize_row_q8_K_ref (which is also what
// the x86 CPU backend uses for activations): iscale = -127/max where max is
// the signed value of largest magnitude, q = min(127, nearest(iscale·x)),
// d = 1/iscale (float32), bsums = Σq per 16. An all-zero block is all zeros.
func QuantizeQ8K(src []float32, dst []byte) {
	for i := 0; i < len(src)/QKK; i++ {
		x := src[i*QKK : i*QKK+QKK]
		y := dst[i*blockQ8K : i*blockQ8K+blockQ8K]
		var mx, amax float32
		for _, v := range x {
			if a := abs32(v); a > amax {
				amax, mx = a, v
			}
		}
		if amax == 0 {
			clear(y)
			continue
		}
		iscale := -127 / mx
		qs := y[4:260]
		for j, v := range x {
			qs[j] = uint8(int8(min(127, nearestInt(float32(iscale*v)))))
		}
		bs := y[260:292]
		for j := 0; j < QKK/16; j++ {
			var s int32
			for _, q := range qs[16*j : 16*j+16] {
				s += int32(int8(q))
			}
			put16(bs[2*j:], uint16(int16(s)))
		}
		putU32(y, math.Float32bits(1/iscale))
	}
}

// QuantizeQ8KAct quantizes activations to Q8_K as the x86 CPU backend does,
// which is the reference quantizer (QuantizeQ8K).
func QuantizeQ8KAct(src []float32, dst []byte) { QuantizeQ8K(src, dst) }

// DequantizeQ8K expands Q8_K blocks: x = d·q.
func DequantizeQ8K(src []byte, dst []float32) {
	for i := 0; i < len(dst)/QKK; i++ {
		b := src[i*blockQ8K : i*blockQ8K+blockQ8K]
		y := dst[i*QKK : i*QKK+QKK]
		d := math.Float32frombits(u32At(b))
		qs := b[4:260]
		for j := range y {
			y[j] = d * float32(int8(qs[j]))
		}
	}
}
