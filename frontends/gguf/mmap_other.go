//go:build !unix

package gguf

import (
	"io"
	"os"
)

// mapFile reads the file into memory on platforms without mmap support here.
func mapFile(fd *os.File, size int) ([]byte, func() error, error) {
	data := make([]byte, size)
	if _, err := io.ReadFull(fd, data); err != nil {
		return nil, nil, err
	}
	return data, nil, nil
}
