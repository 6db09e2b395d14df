//go:build !amd64 || purego

package cpu

// Without the amd64 assembly there is no float32 SIMD tier: every kernel
// takes its pure-Go path (internal/ggmlf32). The tiers are listed so the
// tests can name what they skip.
var f32Tiers = []*f32Tier{
	{name: "avx512", why: "no amd64 assembly in this build (purego or another GOARCH)"},
	{name: "avx2", why: "no amd64 assembly in this build (purego or another GOARCH)"},
}
