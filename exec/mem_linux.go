package exec

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// physicalMemory is the machine's RAM in bytes (0 if unknown).
func physicalMemory() int64 {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}

// untouchedBytes returns n zero bytes whose pages the kernel maps only when
// first written (an anonymous private mapping, page-aligned), so a KV cache
// costs resident memory only for the positions a conversation reaches.
// Go's heap cannot promise that: a large allocation that reuses freed heap
// pages is cleared, which touches every page (measured: one start-up in
// four took 1.8 s instead of 0.4 s and 900 MB instead of 450 MB for a
// 4096-position Qwen3-0.6B cache). The mapping is released by a cleanup
// when the Model that owns it becomes unreachable. ok is false when the
// mapping fails; the caller then uses the heap.
//
// With huge, the mapping starts on a 2 MiB boundary and is advised for
// transparent huge pages (MADV_HUGEPAGE; most distributions leave THP in
// "madvise" mode, where only advised memory gets them), so the pages a
// write maps in are 2 MiB at a time. See kvHugePages for why and when.
func untouchedBytes(n int64, huge bool) (b []byte, release func(), ok bool) {
	if n <= 0 || int64(int(n)) != n {
		return nil, nil, false
	}
	if !huge {
		b, err := unix.Mmap(-1, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return nil, nil, false
		}
		return b, func() { unix.Munmap(b) }, true
	}
	// Map one huge page more and unmap the unaligned head and the tail.
	all, err := unix.Mmap(-1, 0, int(n)+hugePage, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, nil, false
	}
	skip := int((hugePage - addrOf(all)%hugePage) % hugePage)
	if skip > 0 {
		unix.Munmap(all[:skip])
	}
	if tail := all[skip+int(n):]; len(tail) > 0 {
		unix.Munmap(tail)
	}
	b = all[skip : skip+int(n) : skip+int(n)]
	// The advice is a hint: where THP is off ("never") or unsupported the
	// mapping works with small pages.
	_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
	return b, func() { unix.Munmap(b) }, true
}

// addrOf is the address of b's first byte.
func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }
