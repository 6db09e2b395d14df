//go:build unix

package plan

import (
	"io"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// mapFile maps size bytes of f read-only. With MINFER_HUGEPAGES=1 on
// Linux it instead reads them into an anonymous mapping advised for
// transparent huge pages: a decode step reads every weight byte, and over
// 4 KiB pages of a multi-GB file the TLB misses cost as much as the reads
// (Llama-3.1-8B Q4_K_M, AVX-512, one thread: 2.31 → 4.50 tok/s measured
// on this project's VM). It costs a copy of the file at start-up and
// resident memory for it (the page cache's copy can be dropped), so it is
// opt-in; a failed mapping falls back to the plain one.
func mapFile(f *os.File, size int) ([]byte, func() error, error) {
	if size == 0 {
		return []byte{}, func() error { return nil }, nil
	}
	if runtime.GOOS == "linux" && os.Getenv("MINFER_HUGEPAGES") == "1" {
		if b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS); err == nil {
			adviseHuge(b) // advice only: without it the copy still works
			if _, err := io.ReadFull(io.NewSectionReader(f, 0, int64(size)), b); err == nil {
				return b, func() error { return unix.Munmap(b) }, nil
			}
			unix.Munmap(b)
		}
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	if runtime.GOOS == "linux" {
		// Advice only. Pages the kernel reads in for this mapping from
		// now on come in 2 MiB folios mapped by one page-table entry each
		// (where the filesystem supports large folios and transparent huge
		// pages are "madvise" or "always"), so a decode step that streams
		// every weight byte does not take a TLB miss per 4 KiB. Pages
		// already in the page cache keep the size they have; see
		// dropPageCache.
		adviseHuge(data)
	}
	return data, func() error { return syscall.Munmap(data) }, nil
}
