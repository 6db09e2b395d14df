package main

import (
	"bytes"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestNEONEncodings assembles the comment of every WORD the generator
// writes into an arm64 file with llvm-mc and checks the WORD is its
// encoding (llvm-mc prints the encoding of each instruction). Without
// llvm-mc it skips; the kernels' bit-exactness tests under qemu check
// the instructions' effect either way.
func TestNEONEncodings(t *testing.T) {
	mc, err := exec.LookPath("llvm-mc")
	if err != nil {
		t.Skip("llvm-mc not installed: WORD encodings not cross-checked here")
	}
	word := regexp.MustCompile(`^\tWORD\t\$0x([0-9a-f]{8})\t// (.*)$`)
	type ins struct {
		enc  string
		text string
	}
	var all []ins
	seen := map[string]bool{}
	for _, o := range outputs {
		if !strings.HasSuffix(o.name, "_arm64.s") {
			continue
		}
		for _, l := range strings.Split(string(render(o)), "\n") {
			m := word.FindStringSubmatch(l)
			if m == nil || seen[m[2]] {
				continue
			}
			seen[m[2]] = true
			all = append(all, ins{m[1], m[2]})
		}
	}
	if len(all) == 0 {
		t.Fatal("no WORD instructions in the arm64 outputs")
	}
	var src bytes.Buffer
	for _, in := range all {
		src.WriteString(in.text + "\n")
	}
	cmd := exec.Command(mc, "-triple=aarch64", "-mattr=+dotprod", "-show-encoding")
	cmd.Stdin = &src
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("llvm-mc: %v\n%s", err, out)
	}
	enc := regexp.MustCompile(`encoding: \[0x(..),0x(..),0x(..),0x(..)\]`)
	var got []string
	for _, l := range strings.Split(string(out), "\n") {
		if m := enc.FindStringSubmatch(l); m != nil {
			got = append(got, m[4]+m[3]+m[2]+m[1])
		}
	}
	if len(got) != len(all) {
		t.Fatalf("llvm-mc encoded %d of %d instructions:\n%s", len(got), len(all), out)
	}
	for i, in := range all {
		if got[i] != in.enc {
			t.Errorf("%s: WORD $0x%s, llvm-mc encodes 0x%s", in.text, in.enc, got[i])
		}
	}
	t.Logf("%d distinct NEON instructions checked against llvm-mc", len(all))
}
