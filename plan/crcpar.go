package plan

import (
	"runtime"
	"sync"
)

// Parallel CRC-32C of the weights section.
//
// The weights section is hundreds of MB to several GB and its checksum is
// the longest step of loading a plan. crcParallel cuts it into chunks whose
// CRCs goroutines compute at the same time, then joins them with
// crcCombine, which gives exactly crc(a‖b) from crc(a), crc(b) and len(b):
// the value written by the compiler is unchanged.

// castagnoliPoly is CRC-32C's polynomial in the reflected bit order
// hash/crc32 uses (bit 31 is the coefficient of x^0).
const castagnoliPoly = 0x82f63b78

// gfMul multiplies two polynomials over GF(2) modulo the CRC polynomial,
// both in the reflected order (the highest bit is x^0).
func gfMul(a, b uint32) uint32 {
	var p uint32
	for m := uint32(1) << 31; m != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
		}
		// b·x: one shift right in the reflected order, reduced.
		if b&1 != 0 {
			b = b>>1 ^ castagnoliPoly
		} else {
			b >>= 1
		}
	}
	return p
}

// xPow8n returns x^(8·n) modulo the CRC polynomial: the factor by which
// appending n zero bytes multiplies a CRC register.
func xPow8n(n int64) uint32 {
	result := uint32(1) << 31 // x^0
	sq := uint32(1) << 23     // x^8
	for ; n > 0; n >>= 1 {
		if n&1 != 0 {
			result = gfMul(sq, result)
		}
		sq = gfMul(sq, sq)
	}
	return result
}

// crcCombine returns the CRC-32C of a‖b given crcA = crc(a), crcB = crc(b)
// and lenB = len(b). hash/crc32's pre- and post-inversion cancel out: with
// registers, crc(a‖b) = crc(a)·x^(8·lenB) ⊕ crc(b) (the inversions of a's
// final value and of b's initial value are the same constant shifted the
// same way).
func crcCombine(crcA, crcB uint32, lenB int64) uint32 {
	if lenB == 0 {
		return crcA
	}
	return gfMul(xPow8n(lenB), crcA) ^ crcB
}

// crcChunk is the span each goroutine checksums at a time: large enough
// that combining costs nothing, small enough to spread over the workers.
const crcChunk = 16 << 20

// crcParallel returns crc(b) computed by up to GOMAXPROCS goroutines.
func crcParallel(b []byte) uint32 {
	n := (len(b) + crcChunk - 1) / crcChunk
	workers := min(n, runtime.GOMAXPROCS(0))
	if workers <= 1 {
		return crc(b)
	}
	sums := make([]uint32, n)
	var next sync.Mutex
	i := 0
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				next.Lock()
				k := i
				i++
				next.Unlock()
				if k >= n {
					return
				}
				sums[k] = crc(b[k*crcChunk : min(len(b), (k+1)*crcChunk)])
			}
		}()
	}
	wg.Wait()
	total := sums[0]
	full := xPow8n(crcChunk)
	for k := 1; k < n; k++ {
		lo, hi := k*crcChunk, min(len(b), (k+1)*crcChunk)
		if hi-lo == crcChunk {
			total = gfMul(full, total) ^ sums[k]
		} else {
			total = crcCombine(total, sums[k], int64(hi-lo))
		}
	}
	return total
}
