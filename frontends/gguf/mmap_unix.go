//go:build unix

package gguf

import (
	"os"
	"syscall"
)

// mapFile maps size bytes of fd read-only. An empty file yields an empty,
// unmapped image.
func mapFile(fd *os.File, size int) ([]byte, func() error, error) {
	if size == 0 {
		return []byte{}, nil, nil
	}
	data, err := syscall.Mmap(int(fd.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return data, func() error { return syscall.Munmap(data) }, nil
}
