package smaps

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

const listing = `7f0000000000-7f0000200000 rw-p 00000000 00:00 0
Size:               2048 kB
AnonHugePages:      2048 kB
THPeligible:           1
7f0000200000-7f0000201000 r--p 00000000 00:00 0 /some/file
Size:                  4 kB
FilePmdMapped:         0 kB
`

func TestParse(t *testing.T) {
	for _, c := range []struct {
		addr  uintptr
		field string
		kb    int
		found bool
		err   error
	}{
		{0x7f0000000000, "AnonHugePages", 2048, true, nil},
		{0x7f00001fffff, "THPeligible", 1, true, nil},
		{0x7f0000100000, "FilePmdMapped", 0, false, nil}, // the next mapping's field
		{0x7f0000200800, "FilePmdMapped", 0, true, nil},
		{0x7f0000200800, "AnonHugePages", 0, false, nil},
		{0x7f0000201000, "Size", 0, false, ErrNoMapping},
	} {
		kb, found, err := parse(strings.NewReader(listing), c.addr, c.field)
		if kb != c.kb || found != c.found || !errors.Is(err, c.err) {
			t.Errorf("%#x %s: %d %v %v, want %d %v %v", c.addr, c.field, kb, found, err, c.kb, c.found, c.err)
		}
	}
}

func TestFieldSelf(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/self/smaps is Linux's")
	}
	b := make([]byte, 1<<20)
	kb, found, err := Field(uintptr(unsafe.Pointer(&b[0])), "Size")
	if err != nil || !found || kb < 4 {
		t.Fatalf("Size of a heap mapping: %d %v %v", kb, found, err)
	}
}
