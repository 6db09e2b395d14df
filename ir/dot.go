package ir

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// DOTOptions choose which transformer layers WriteDOTWith draws.
type DOTOptions struct {
	// AllLayers draws every layer node by node.
	AllLayers bool
	// First and Last (inclusive), when Last ≥ First ≥ 0, draw only those
	// layers (plus everything outside the layers: embedding, head).
	First, Last int
}

// WriteDOT writes the whole graph in Graphviz DOT, every layer drawn.
func WriteDOT(w io.Writer, g *Graph, title string) error {
	return WriteDOTWith(w, g, title, DOTOptions{AllLayers: true})
}

// WriteDOTWith writes the graph in Graphviz DOT. Nodes are ops (labelled with
// the op, name and output shape; mat-muls also with their weight and its
// type); inputs and state are plain-text nodes; weights are folded into the
// label of the node that reads them. Nodes that a pass placed in a fused
// group are drawn inside a cluster "group N", whose label says that the
// group ends in one pool barrier; a group that spans two layers is drawn as
// one cluster per layer, so no cluster crosses a layer (Graphviz's ranker
// fails on clusters that interleave).
//
// Unless o.AllLayers or a layer range is given, layers that compute the same
// thing (the same ops, kernels, shapes, weight types and groups in the same
// order) are drawn once, at the first of them; every run of layers not drawn
// becomes one node saying which layers it stands for and which drawn layer
// each repeats, and the edges into and out of those layers attach to it.
// The title then notes how many layers each drawn layer stands for.
func WriteDOTWith(w io.Writer, g *Graph, title string, o DOTOptions) error {
	nl := 0
	for _, n := range g.Nodes {
		nl = max(nl, n.Layer+1)
	}
	shown, like, note := selectLayers(g, nl, o)
	if note != "" {
		title += "\n" + note
	}
	visible := func(n *Node) bool { return n.Layer < 0 || shown[n.Layer] }
	// hiddenRun maps a hidden layer to the first layer of its run.
	runStart := make([]int, nl)
	for l := 0; l < nl; l++ {
		runStart[l] = l
		if l > 0 && !shown[l] && !shown[l-1] {
			runStart[l] = runStart[l-1]
		}
	}

	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "digraph %s {\n", quote(title))
	fmt.Fprintf(bw, "  label=%s;\n  labelloc=t;\n  rankdir=TB;\n  node [shape=box,fontname=\"monospace\",fontsize=10];\n", quote(title))

	// Sources that are not produced by a node and that a drawn node reads.
	used := make(map[*Value]bool)
	for _, n := range g.Nodes {
		if visible(n) {
			for _, in := range n.Inputs {
				used[in] = true
			}
		}
	}
	for _, v := range g.Values {
		if (v.Kind == Input || (v.Kind == State && v.StateOf == nil)) && used[v] {
			fmt.Fprintf(bw, "  v%d [shape=plaintext,label=%s];\n", v.ID, quote(fmt.Sprintf("%s %s%s", v.Name, v.DType, v.Shape)))
		}
	}

	// Clusters: one per (group, layer).
	type ckey struct{ group, layer int }
	clusters := make(map[ckey][]*Node)
	var keys []ckey
	var ungrouped []*Node
	for _, n := range g.Nodes {
		if !visible(n) {
			continue
		}
		if n.Group < 0 {
			ungrouped = append(ungrouped, n)
			continue
		}
		k := ckey{n.Group, n.Layer}
		if _, ok := clusters[k]; !ok {
			keys = append(keys, k)
		}
		clusters[k] = append(clusters[k], n)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].group != keys[j].group {
			return keys[i].group < keys[j].group
		}
		return keys[i].layer < keys[j].layer
	})
	parts := make(map[int]int)
	for _, k := range keys {
		parts[k.group]++
	}
	for _, k := range keys {
		label := fmt.Sprintf("group %d (1 barrier)", k.group)
		switch {
		case parts[k.group] > 1 && k.layer < 0:
			label = fmt.Sprintf("group %d (1 barrier; part outside the layers)", k.group)
		case parts[k.group] > 1:
			label = fmt.Sprintf("group %d (1 barrier; part in layer %d)", k.group, k.layer)
		}
		fmt.Fprintf(bw, "  subgraph cluster_g%d_l%d {\n    label=%s;\n    style=rounded;\n", k.group, k.layer+1, quote(label))
		for _, n := range clusters[k] {
			writeNode(bw, "    ", n)
		}
		fmt.Fprintf(bw, "  }\n")
	}
	for _, n := range ungrouped {
		writeNode(bw, "  ", n)
	}
	// One node per run of hidden layers.
	for l := 0; l < nl; l++ {
		if shown[l] || runStart[l] != l {
			continue
		}
		e := l
		for e+1 < nl && !shown[e+1] {
			e++
		}
		var b strings.Builder
		if e == l {
			fmt.Fprintf(&b, "layer %d", l)
		} else {
			fmt.Fprintf(&b, "layers %d–%d", l, e)
		}
		reps := map[int][]int{}
		var order []int
		for x := l; x <= e; x++ {
			if like[x] < 0 {
				continue
			}
			if _, ok := reps[like[x]]; !ok {
				order = append(order, like[x])
			}
			reps[like[x]] = append(reps[like[x]], x)
		}
		for _, r := range order {
			fmt.Fprintf(&b, "\n%d× as layer %d", len(reps[r]), r)
		}
		if len(order) == 0 {
			b.WriteString("\n(not drawn)")
		}
		fmt.Fprintf(bw, "  h%d [shape=box3d,style=dashed,label=%s];\n", l, quote(b.String()))
	}
	// Edges, attaching hidden endpoints to their run's node (once per pair).
	seen := make(map[string]bool)
	edge := func(from, to, attrs string) {
		k := from + ">" + to
		if seen[k] {
			return
		}
		seen[k] = true
		fmt.Fprintf(bw, "  %s -> %s%s;\n", from, to, attrs)
	}
	ref := func(n *Node) string {
		if visible(n) {
			return fmt.Sprintf("n%d", n.ID)
		}
		return fmt.Sprintf("h%d", runStart[n.Layer])
	}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			switch {
			case in.Producer != nil:
				from, to := ref(in.Producer), ref(n)
				if from == to || (!visible(in.Producer) && !visible(n)) {
					continue
				}
				attrs := ""
				if visible(in.Producer) && visible(n) {
					attrs = fmt.Sprintf(" [label=%s]", quote(in.Shape.String()))
				}
				edge(from, to, attrs)
			case (in.Kind == Input || in.Kind == State) && visible(n):
				edge(fmt.Sprintf("v%d", in.ID), fmt.Sprintf("n%d", n.ID), "")
			}
		}
	}
	if g.Logits != nil && g.Logits.Producer != nil {
		fmt.Fprintf(bw, "  logits [shape=plaintext,label=%s];\n", quote("logits "+g.Logits.Shape.String()))
		edge(ref(g.Logits.Producer), "logits", "")
	}
	fmt.Fprintf(bw, "}\n")
	return bw.Flush()
}

// selectLayers decides which of the nl layers to draw. like[l] is the drawn
// layer that layer l repeats (-1 when l is drawn itself or, with a range,
// not compared); note summarizes the choice for the title.
func selectLayers(g *Graph, nl int, o DOTOptions) (shown []bool, like []int, note string) {
	shown = make([]bool, nl)
	like = make([]int, nl)
	for l := range like {
		like[l] = -1
	}
	switch {
	case o.AllLayers || nl == 0:
		for l := range shown {
			shown[l] = true
		}
		return shown, like, ""
	case o.Last >= o.First && o.First >= 0:
		for l := o.First; l <= min(o.Last, nl-1); l++ {
			shown[l] = true
		}
		return shown, like, fmt.Sprintf("layers %d–%d of %d drawn", o.First, min(o.Last, nl-1), nl)
	}
	sig := layerSignatures(g, nl)
	first := map[string]int{}
	count := map[int]int{}
	for l := 0; l < nl; l++ {
		r, ok := first[sig[l]]
		if !ok {
			first[sig[l]] = l
			shown[l] = true
			r = l
		} else {
			like[l] = r
		}
		count[r]++
	}
	var parts []string
	for l := 0; l < nl; l++ {
		if shown[l] {
			parts = append(parts, fmt.Sprintf("layer %d ×%d", l, count[l]))
		}
	}
	return shown, like, fmt.Sprintf("%d layers: %s (identical layers drawn once)", nl, strings.Join(parts, ", "))
}

// layerSignatures describes what each layer computes, without its layer
// number: two layers with the same signature draw the same.
func layerSignatures(g *Graph, nl int) []string {
	var b = make([]strings.Builder, nl)
	firstGroup := make([]int, nl)
	for l := range firstGroup {
		firstGroup[l] = -1
	}
	for _, n := range g.Nodes {
		if n.Layer < 0 || n.Layer >= nl {
			continue
		}
		if firstGroup[n.Layer] < 0 && n.Group >= 0 {
			firstGroup[n.Layer] = n.Group
		}
		s := &b[n.Layer]
		fmt.Fprintf(s, "%s|%s|%s|%s", n.Op, n.Kernel, n.Outputs[0].Shape, n.Outputs[0].DType)
		for _, in := range n.Inputs {
			fmt.Fprintf(s, "|%s%s%s", in.Kind, in.DType, in.Shape)
		}
		for _, e := range n.Epilogues {
			fmt.Fprintf(s, "|+%s", e.Op)
		}
		if n.Group >= 0 {
			fmt.Fprintf(s, "|g%d", n.Group-firstGroup[n.Layer])
		}
		s.WriteByte(';')
	}
	out := make([]string, nl)
	for l := range out {
		out[l] = b[l].String()
	}
	return out
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
