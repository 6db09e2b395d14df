package plan

import (
	"encoding/json"
	"strings"
	"testing"
)

// editGraph decodes the graph section of img, lets edit change it, and
// returns the image with the new section and valid checksums: what a
// hostile or careless editor of plan.bin can produce.
func editGraph(t *testing.T, img []byte, edit func(g *graphJSON)) []byte {
	t.Helper()
	old := sectionOf(t, img, secGraph)
	var g graphJSON
	if err := json.Unmarshal(old, &g); err != nil {
		t.Fatal(err)
	}
	edit(&g)
	b, err := json.Marshal(&g)
	if err != nil {
		t.Fatal(err)
	}
	out, err := editSection(img, secGraph, string(old), string(b))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEditedGraphRefused (issue 13 item 2): graphs edited so that an index
// input would reach a kernel past its buffer are refused at load with the
// node named, though every checksum is valid. Before, reading the positions
// instead of the token ids in the embedding get_rows loaded and then
// panicked in the kernel at the first position >= n_vocab.
func TestEditedGraphRefused(t *testing.T) {
	img := synthImage(t)
	if _, err := Parse(img, OpenOptions{SkipSourceHash: true}); err != nil {
		t.Fatal(err)
	}
	firstOp := func(g *graphJSON, op string) *nodeJSON {
		for i := range g.Nodes {
			if g.Nodes[i].Op == op {
				return &g.Nodes[i]
			}
		}
		t.Fatalf("no %s node", op)
		return nil
	}
	for _, c := range []struct {
		name string
		edit func(g *graphJSON)
		want string
	}{
		{"get_rows by positions", func(g *graphJSON) { firstOp(g, "get_rows").Inputs[1] = g.Positions }, "only token ids and output rows may index a table"},
		{"n_vocab larger than the table", func(g *graphJSON) { g.Params.NVocab *= 4 }, "n_vocab"},
		{"n_ctx larger than the caches", func(g *graphJSON) { g.Params.NCtx *= 2 }, "n_ctx"},
		{"kv_write by token ids", func(g *graphJSON) { firstOp(g, "kv_write").Inputs[1] = g.Tokens }, "not the positions input"},
		{"attention by token ids", func(g *graphJSON) { firstOp(g, "attention").Inputs[3] = g.Tokens }, "not the positions input"},
		{"tokens are the positions", func(g *graphJSON) { g.Tokens = g.Positions }, "distinct"},
		{"out_ids as wide as the batch", func(g *graphJSON) { g.Values[g.OutIDs].Shape = []int64{-1} }, "out_ids"},
	} {
		_, err := Parse(editGraph(t, img, c.edit), OpenOptions{SkipSourceHash: true})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
}
