//go:build !linux

package gguf

// adviseHuge does nothing where transparent huge pages are not known.
func adviseHuge(b []byte) {}
