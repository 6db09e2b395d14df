//go:build !linux

package exec

// physicalMemory is unknown off Linux: no pre-check.
func physicalMemory() int64 { return 0 }

// untouchedBytes has no anonymous mapping here: the caller uses the heap.
func untouchedBytes(n int64, huge bool) (b []byte, release func(), ok bool) { return nil, nil, false }
