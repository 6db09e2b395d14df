//go:build unix

package gguf

import (
	"os"
	"runtime"
	"syscall"
)

// mapFile maps size bytes of fd read-only. An empty file yields an empty,
// unmapped image. On Linux the mapping is advised for transparent huge
// pages: pages the kernel reads in for it come in 2 MiB folios mapped
// whole, so streaming the weights does not take a TLB miss per 4 KiB
// (pages already cached keep their size).
func mapFile(fd *os.File, size int) ([]byte, func() error, error) {
	if size == 0 {
		return []byte{}, nil, nil
	}
	data, err := syscall.Mmap(int(fd.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	if runtime.GOOS == "linux" {
		adviseHuge(data)
	}
	return data, func() error { return syscall.Munmap(data) }, nil
}
