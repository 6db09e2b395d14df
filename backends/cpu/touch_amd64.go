//go:build amd64 && !purego

package cpu

// touchRows loads one byte of every 64-byte line of rows runs of n bytes,
// stride bytes apart, starting at p, and drops them: it brings the lines
// into cache in address order, the order the hardware prefetchers follow
// best. The caller guarantees the bytes are in bounds.
//
//go:noescape
func touchRows(p *byte, stride, rows, n int)
