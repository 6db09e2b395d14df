//go:build amd64 && !purego && !linux

package cpu

import "testing"

// benchBytes returns n bytes for a streamed benchmark matrix (the Linux
// version maps them in huge pages, as a plan's weights are).
func benchBytes(b testing.TB, n int) []byte { return make([]byte, n) }
