package plan

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minfer/minfer/frontends/gguf"
	"github.com/minfer/minfer/ir"
	"github.com/minfer/minfer/synth"
)

// synthFile writes a synth preset (q8_0, seed 1) into dir and opens it.
func synthFile(t *testing.T, dir, preset string) *gguf.File {
	t.Helper()
	var buf bytes.Buffer
	if err := synth.Write(&buf, synth.Options{Preset: preset, Type: "q8_0", Seed: 1}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, preset+".gguf")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestRopeFreqsPlan: a model with rope_freqs.weight (synth llama3-tiny)
// round-trips through plan.bin in both weight modes with its factors (the
// RopeFreqs attribute, the epilogues' Freqs, the weight's bytes), and a
// model without it writes neither field into the graph JSON, so its plan is
// what it was before the fields existed.
func TestRopeFreqsPlan(t *testing.T) {
	dir := t.TempDir()
	f := synthFile(t, dir, "llama3-tiny")
	for _, mode := range []Weights{Embed, Ref} {
		t.Run(mode.String(), func(t *testing.T) {
			p := compile(t, f, mode)
			epis := 0
			for _, n := range p.Graph.Nodes {
				for _, e := range n.Epilogues {
					if e.Op == ir.OpRope {
						epis++
						if !e.Attrs.RopeFreqs || e.Freqs == nil || e.Freqs.Source != "rope_freqs.weight" {
							t.Fatalf("%s: rope epilogue without its factors: %+v", n.Name, e)
						}
					}
				}
			}
			if epis == 0 {
				t.Fatal("no rope epilogue: the test does not cover Freqs")
			}
			path := filepath.Join(dir, mode.String()+".plan")
			if err := Write(path, p, f, nil); err != nil {
				t.Fatal(err)
			}
			l, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			graphsEqual(t, p.Graph, l.Graph)
			got, err := l.WeightBytes("rope_freqs.weight")
			if err != nil {
				t.Fatal(err)
			}
			ti, _ := f.Tensor("rope_freqs.weight")
			if !bytes.Equal(got, f.TensorData(ti)) {
				t.Error("rope_freqs.weight bytes differ from the GGUF's")
			}
			js, err := encodeGraph(p.Graph)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(js), `"RopeFreqs":true`) || !strings.Contains(string(js), `"Freqs":`) {
				t.Error("graph JSON does not name RopeFreqs and Freqs")
			}
		})
	}
	plain := compile(t, synthFile(t, dir, "llama-tiny"), Embed)
	js, err := encodeGraph(plain.Graph)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(js), "Freqs") {
		t.Error("graph JSON of a model without rope_freqs names RopeFreqs or Freqs")
	}
}
