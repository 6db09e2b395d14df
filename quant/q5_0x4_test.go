package quant

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestQ5_0x4RoundTrip packs random rows and unpacks them back, byte for
// byte, and checks the documented place of a few 5th bits.
func TestQ5_0x4RoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, nb := range []int{1, 2, 28, 152} {
		src := make([]byte, 4*nb*blockQ5_0)
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		packed := make([]byte, nb*Q5_0x4Block)
		if err := packQ5_0x4(packed, src, nb); err != nil {
			t.Fatal(err)
		}
		back := make([]byte, len(src))
		if err := unpackGroupX4(Q5_0x4, back, packed, nb); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(back, src) {
			t.Fatalf("nb=%d: unpack(pack(rows)) differs from the rows", nb)
		}
	}
	// One bit at a time: row 1's element 9 is P01 bit 8·1+7 of block 0.
	src := make([]byte, 4*blockQ5_0)
	src[blockQ5_0+2+1] = 1 << 1 // row 1, qh bit 9
	packed := make([]byte, Q5_0x4Block)
	if err := packQ5_0x4(packed, src, 1); err != nil {
		t.Fatal(err)
	}
	if got := packed[8+1]; got != 1<<7 {
		t.Fatalf("row 1 element 9: P01 byte 1 = %#x, want 0x80", got)
	}
	if err := packQ5_0x4(packed[:10], src, 1); err == nil {
		t.Fatal("packQ5_0x4 took a short destination")
	}
}

// TestQ4_0x4RoundTrip packs random Q4_0 rows and unpacks them back.
func TestQ4_0x4RoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, nb := range []int{1, 28, 152} {
		src := make([]byte, 4*nb*blockQ4_0)
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		packed := make([]byte, len(src))
		if err := PackX4(Q4_0, packed, src, 32*nb); err != nil {
			t.Fatal(err)
		}
		back := make([]byte, len(src))
		if err := unpackGroupX4(Q4_0x4, back, packed, nb); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(back, src) {
			t.Fatalf("nb=%d: unpack(pack(rows)) differs from the rows", nb)
		}
	}
	if err := PackX4(Q4_0, make([]byte, 10), make([]byte, 10), 32); err == nil {
		t.Fatal("PackX4 took 10 bytes as whole groups")
	}
	// row by row, both layouts
	for _, tc := range []struct {
		plain, x4 Type
		bs        int
	}{{Q4_0, Q4_0x4, blockQ4_0}, {Q5_0, Q5_0x4, blockQ5_0}} {
		nb := 7
		src := make([]byte, 4*nb*tc.bs)
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		packed := make([]byte, len(src))
		if err := PackX4(tc.plain, packed, src, 32*nb); err != nil {
			t.Fatal(err)
		}
		for row := 0; row < 4; row++ {
			got := make([]byte, nb*tc.bs)
			if err := UnpackRowX4(tc.x4, got, packed, nb, row); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, src[row*nb*tc.bs:(row+1)*nb*tc.bs]) {
				t.Fatalf("%s row %d: UnpackRowX4 differs from the row", tc.x4, row)
			}
		}
	}
	if PackedX4(Q8_0) != 0 || UnpackedX4(PackedX4(Q4_0)) != Q4_0 || UnpackedX4(PackedX4(Q5_0)) != Q5_0 {
		t.Fatal("PackedX4 / UnpackedX4 do not pair up")
	}
}

// FuzzQ5_0x4 checks the round trip on any bytes.
func FuzzQ5_0x4(f *testing.F) {
	f.Add(bytes.Repeat([]byte{0xA5}, 4*blockQ5_0))
	f.Fuzz(func(t *testing.T, src []byte) {
		nb := len(src) / (4 * blockQ5_0)
		src = src[:4*nb*blockQ5_0]
		packed := make([]byte, nb*Q5_0x4Block)
		if err := packQ5_0x4(packed, src, nb); err != nil {
			t.Fatal(err)
		}
		back := make([]byte, len(src))
		if err := unpackGroupX4(Q5_0x4, back, packed, nb); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(back, src) {
			t.Fatal("round trip differs")
		}
	})
}

// unpackGroupX4 writes the four rows of one group of nb blocks in layout
// t back to dst, one after the other (UnpackRowX4 per row).
func unpackGroupX4(t Type, dst, group []byte, nb int) error {
	rs := nb * UnpackedX4(t).TypeSize()
	for r := 0; r < 4; r++ {
		if err := UnpackRowX4(t, dst[r*rs:(r+1)*rs], group, nb, r); err != nil {
			return err
		}
	}
	return nil
}
