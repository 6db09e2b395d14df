package plan

import (
	"math/rand/v2"
	"testing"
)

// TestCRCCombine checks crcCombine against the CRC of the concatenation for
// split points at the edges, inside and at chunk boundaries, and
// crcParallel against crc on lengths around crcChunk multiples.
func TestCRCCombine(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, 3*crcChunk+1000)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	for _, c := range []struct{ n, split int }{
		{0, 0}, {1, 0}, {1, 1}, {2, 1}, {100, 37}, {4096, 1}, {4096, 4095},
		{crcChunk + 5, crcChunk}, {3*crcChunk + 1000, crcChunk / 3},
	} {
		a, d := b[:c.split], b[c.split:c.n]
		if got, want := crcCombine(crc(a), crc(d), int64(len(d))), crc(b[:c.n]); got != want {
			t.Errorf("n=%d split=%d: combined %08x, want %08x", c.n, c.split, got, want)
		}
	}
	for _, n := range []int{0, 1, crcChunk - 1, crcChunk, crcChunk + 1, 2 * crcChunk, 3*crcChunk + 1000} {
		if got, want := crcParallel(b[:n]), crc(b[:n]); got != want {
			t.Errorf("crcParallel of %d bytes: %08x, want %08x", n, got, want)
		}
	}
}

// BenchmarkWeightsCRC compares the serial and parallel checksum of 256 MB.
func BenchmarkWeightsCRC(b *testing.B) {
	buf := make([]byte, 256<<20)
	for i := range buf {
		buf[i] = byte(i * 131)
	}
	b.Run("serial", func(b *testing.B) {
		b.SetBytes(int64(len(buf)))
		for range b.N {
			crc(buf)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.SetBytes(int64(len(buf)))
		for range b.N {
			crcParallel(buf)
		}
	})
}
