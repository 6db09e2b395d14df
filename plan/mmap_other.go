//go:build !unix

package plan

import (
	"io"
	"os"
)

// mapFile reads size bytes of f where mmap is unavailable.
func mapFile(f *os.File, size int) ([]byte, func() error, error) {
	data := make([]byte, size)
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, nil, err
	}
	return data, func() error { return nil }, nil
}
