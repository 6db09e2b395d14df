package reference

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/minfer/minfer/frontends/gguf"
	"github.com/minfer/minfer/ir"
)

// TestDumpNodes writes every node's output for chosen positions, one token
// per Eval, to compare node by node with llama.cpp's graph callback dumps.
// It runs only when MINFER_DUMP is set:
//
//	MINFER_DUMP=model.gguf MINFER_DUMP_DIR=out MINFER_DUMP_POS=16,17 \
//	MINFER_DUMP_TOKENS=1,2,3 go test ./reference -run TestDumpNodes
//
// Files are out/<node#>_<name>@<pos>.bin (little-endian float32, the node's
// rows for that token) plus out/index.txt.
func TestDumpNodes(t *testing.T) {
	path := os.Getenv("MINFER_DUMP")
	if path == "" {
		t.Skip("MINFER_DUMP not set")
	}
	dir := os.Getenv("MINFER_DUMP_DIR")
	want := map[int32]bool{}
	for _, s := range strings.Split(os.Getenv("MINFER_DUMP_POS"), ",") {
		p, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		want[int32(p)] = true
	}
	var toks []int32
	for _, s := range strings.Split(os.Getenv("MINFER_DUMP_TOKENS"), ",") {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			t.Fatal(err)
		}
		toks = append(toks, int32(v))
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g, err := gguf.BuildGraph(f)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(g, f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	idx, err := os.Create(filepath.Join(dir, "index.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	nodeHook = func(n *ir.Node, pos []int32, out []float32) {
		if len(pos) != 1 || !want[pos[0]] {
			return
		}
		b := make([]byte, 4*len(out))
		for i, v := range out {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		name := fmt.Sprintf("%03d_%s@%d.bin", n.ID, strings.ReplaceAll(n.Name, "/", "_"), pos[0])
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(idx, "%d %d %s %s %d\n", pos[0], n.ID, n.Op, n.Name, len(out))
	}
	defer func() { nodeHook = nil }()
	for i, tok := range toks {
		if _, err := m.Eval([]int32{tok}, []int32{int32(i)}, []int32{0}); err != nil {
			t.Fatal(err)
		}
	}
}
