package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/minfer/minfer/compiler"
	"github.com/minfer/minfer/frontends/gguf"
	"github.com/minfer/minfer/ir"
	"github.com/minfer/minfer/synth"
)

// needDot finds Graphviz's dot: .ci/run installs it, so CI fails without it;
// elsewhere the test is skipped.
func needDot(t *testing.T) string {
	p, err := exec.LookPath("dot")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("Graphviz dot not found (CI installs the graphviz package)")
		}
		t.Skip("Graphviz dot not found: apt-get install graphviz")
	}
	return p
}

// TestDOTRendersRealModel draws the Qwen2.5-0.5B-shaped graph (24 layers,
// before and after the passes) and has Graphviz lay it out as SVG within a
// few seconds: identical layers are drawn once, no cluster crosses a
// layer. The drawing's counts agree with the compiled schedule.
func TestDOTRendersRealModel(t *testing.T) {
	dot := needDot(t)
	path := filepath.Join(t.TempDir(), "qwen2-0.5b.gguf")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := synth.WriteSkeleton(f, synth.Options{Preset: "qwen2-0.5b", Type: "q4_k_m"}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	gf, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer gf.Close()
	before, err := gguf.BuildGraph(gf)
	if err != nil {
		t.Fatal(err)
	}
	after, _, err := compiler.Graph(gf, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		g    *ir.Graph
		o    ir.DOTOptions
		want []string
	}{
		{"before", before, ir.DOTOptions{First: -1, Last: -2}, []string{"24 layers:", "layers 1–2", "as layer 0"}},
		{"after", after, ir.DOTOptions{First: -1, Last: -2}, []string{"24 layers:", "(1 barrier"}},
		{"after-layers-3-5", after, ir.DOTOptions{First: 3, Last: 5}, []string{"layers 3–5 of 24 drawn", "layers 0–2", "layers 6–23"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := ir.WriteDOTWith(&buf, tc.g, "qwen2-0.5b "+tc.name, tc.o); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(buf.String(), w) {
					t.Errorf("the drawing does not say %q", w)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, dot, "-Tsvg")
			size := buf.Len()
			cmd.Stdin = &buf
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			start := time.Now()
			if err := cmd.Run(); err != nil {
				t.Fatalf("dot -Tsvg: %v (after %v)\n%s", err, time.Since(start), errb.String())
			}
			if !bytes.Contains(out.Bytes(), []byte("<svg")) {
				t.Fatalf("dot printed no SVG")
			}
			t.Logf("%s: %d bytes of DOT, laid out by dot in %v", tc.name, size, time.Since(start).Round(time.Millisecond))
		})
	}
	// The compiled drawing's group clusters: every group of the layer drawn
	// (and of the parts outside the layers) appears, and the title's layer
	// counts add up to the model's 24 layers.
	var buf bytes.Buffer
	if err := ir.WriteDOTWith(&buf, after, "x", ir.DOTOptions{First: -1, Last: -2}); err != nil {
		t.Fatal(err)
	}
	total := 0
	label := regexp.MustCompile(`(?m)^  label=.*$`).FindString(buf.String())
	for _, m := range regexp.MustCompile(`layer \d+ ×(\d+)`).FindAllStringSubmatch(label, -1) {
		n := 0
		for _, c := range m[1] {
			n = n*10 + int(c-'0')
		}
		total += n
	}
	if total != 24 {
		t.Fatalf("the title accounts for %d layers, want 24", total)
	}
}
