package gguf

import "golang.org/x/sys/unix"

// adviseHuge advises a mapping for transparent huge pages (advice only).
func adviseHuge(b []byte) { _ = unix.Madvise(b, unix.MADV_HUGEPAGE) }
