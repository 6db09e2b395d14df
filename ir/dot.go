package ir

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// WriteDOT writes the graph in Graphviz DOT. Nodes are ops (labelled with the
// op, name and output shape; mat-muls also with their weight and its type);
// inputs and state are plain-text nodes; weights are folded into the label of
// the node that reads them. Nodes that a pass placed in a fused group are
// drawn inside a cluster "group N", whose label says that the group ends in
// one pool barrier.
func WriteDOT(w io.Writer, g *Graph, title string) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "digraph %s {\n", quote(title))
	fmt.Fprintf(bw, "  label=%s;\n  labelloc=t;\n  rankdir=TB;\n  node [shape=box,fontname=\"monospace\",fontsize=10];\n", quote(title))

	// Sources that are not produced by a node.
	used := make(map[*Value]bool)
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			used[in] = true
		}
	}
	for _, v := range g.Values {
		if (v.Kind == Input || (v.Kind == State && v.StateOf == nil)) && used[v] {
			fmt.Fprintf(bw, "  v%d [shape=plaintext,label=%s];\n", v.ID, quote(fmt.Sprintf("%s %s%s", v.Name, v.DType, v.Shape)))
		}
	}

	groups := make(map[int][]*Node)
	var ungrouped []*Node
	for _, n := range g.Nodes {
		if n.Group >= 0 {
			groups[n.Group] = append(groups[n.Group], n)
		} else {
			ungrouped = append(ungrouped, n)
		}
	}
	ids := make([]int, 0, len(groups))
	for id := range groups {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	for _, id := range ids {
		fmt.Fprintf(bw, "  subgraph cluster_g%d {\n    label=%s;\n    style=rounded;\n", id, quote(fmt.Sprintf("group %d (1 barrier)", id)))
		for _, n := range groups[id] {
			writeNode(bw, "    ", n)
		}
		fmt.Fprintf(bw, "  }\n")
	}
	for _, n := range ungrouped {
		writeNode(bw, "  ", n)
	}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			switch {
			case in.Producer != nil:
				fmt.Fprintf(bw, "  n%d -> n%d [label=%s];\n", in.Producer.ID, n.ID, quote(in.Shape.String()))
			case in.Kind == Input || in.Kind == State:
				fmt.Fprintf(bw, "  v%d -> n%d;\n", in.ID, n.ID)
			}
		}
	}
	if g.Logits != nil && g.Logits.Producer != nil {
		fmt.Fprintf(bw, "  logits [shape=plaintext,label=%s];\n  n%d -> logits;\n", quote("logits "+g.Logits.Shape.String()), g.Logits.Producer.ID)
	}
	fmt.Fprintf(bw, "}\n")
	return bw.Flush()
}

func writeNode(w io.Writer, indent string, n *Node) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n%s", n.Op, n.Name, n.Outputs[0].Shape)
	for _, in := range n.Inputs {
		if in.Kind == Weight {
			fmt.Fprintf(&b, "\n%s %s", in.Source, in.DType)
		}
	}
	for _, e := range n.Epilogues {
		fmt.Fprintf(&b, "\n+ %s", e.Op)
	}
	fmt.Fprintf(w, "%sn%d [label=%s];\n", indent, n.ID, quote(b.String()))
}

// quote makes a DOT string literal (gonum's marshaller does not quote for us).
func quote(s string) string {
	q := strconv.Quote(s)
	// DOT understands \" and \\ and \n; strconv may emit other escapes
	// (\t, \x..) only for control bytes, which our labels do not contain.
	return q
}
