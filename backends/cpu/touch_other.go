//go:build !amd64 || purego

package cpu

import (
	"runtime"
	"unsafe"
)

// touchRows is the portable touchRows (touch_amd64.go).
func touchRows(p *byte, stride, rows, n int) {
	var x byte
	base := unsafe.Pointer(p)
	for r := 0; r < rows; r++ {
		row := unsafe.Add(base, r*stride)
		for o := 0; o < n; o += 64 {
			x ^= *(*byte)(unsafe.Add(row, o))
		}
	}
	runtime.KeepAlive(x) // a use of every load
}
