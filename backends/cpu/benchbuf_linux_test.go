//go:build amd64 && !purego

package cpu

import (
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// benchBytes returns n bytes for a streamed benchmark matrix, mapped as a
// plan's weights are at run time: on a 2 MiB boundary and advised for
// transparent huge pages (plan.Open maps a plan's file in 2 MiB folios
// where the filesystem allows; Go's heap gives 4 KiB pages where THP is in
// the usual "madvise" mode). On the 2026-12-03 Zen 4 host the two gave the
// same kernel figures within the noise; the mapping keeps the benchmarks
// honest where the TLB matters. MINFER_BENCH_SMALLPAGES=1 takes the heap's
// pages instead.
func benchBytes(b testing.TB, n int) []byte {
	if os.Getenv("MINFER_BENCH_SMALLPAGES") == "1" {
		return make([]byte, n)
	}
	const huge = 2 << 20
	all, err := unix.Mmap(-1, 0, n+huge, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		b.Logf("mmap %d bytes: %v; using the heap", n, err)
		return make([]byte, n)
	}
	skip := int((huge - uintptr(unsafe.Pointer(&all[0]))%huge) % huge)
	buf := all[skip : skip+n : skip+n]
	_ = unix.Madvise(buf, unix.MADV_HUGEPAGE) // a hint: THP may be off
	b.Cleanup(func() { unix.Munmap(all) })
	return buf
}
