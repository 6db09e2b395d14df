package cli

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/minfer/minfer/compiler"
	"github.com/minfer/minfer/frontends/gguf"
	"github.com/minfer/minfer/ir"
	"github.com/minfer/minfer/plan"
)

// DumpGraphCmd is `minfer dump-graph`.
type DumpGraphCmd struct {
	Model       string   `arg:"" help:"GGUF model (graph before passes) or plan file (after)." type:"existingfile"`
	DOT         bool     `help:"Print Graphviz DOT (default: one line per node)." name:"dot"`
	Passes      bool     `help:"For a GGUF model: run the passes first (as minferc compile would)."`
	DisablePass []string `help:"With --passes: switch off a pass by name." name:"disable-pass"`
	Schedule    string   `help:"With text output: list the groups of this schedule (decode or prefill)." enum:",decode,prefill" default:""`
	AllLayers   bool     `help:"With --dot: draw every layer (default: identical layers once, with a count)." name:"all-layers"`
	Layers      string   `help:"With --dot: draw only these layers, e.g. 3-5 or 7." placeholder:"A-B"`
}

// dotOptions reads --all-layers and --layers.
func (c *DumpGraphCmd) dotOptions() (ir.DOTOptions, error) {
	o := ir.DOTOptions{AllLayers: c.AllLayers, First: -1, Last: -2}
	if c.Layers == "" {
		return o, nil
	}
	if c.AllLayers {
		return o, fmt.Errorf("--layers and --all-layers exclude each other")
	}
	a, b, ok := strings.Cut(c.Layers, "-")
	if !ok {
		b = a
	}
	first, err1 := strconv.Atoi(strings.TrimSpace(a))
	last, err2 := strconv.Atoi(strings.TrimSpace(b))
	if err1 != nil || err2 != nil || first < 0 || last < first {
		return o, fmt.Errorf("--layers %q: want a layer or a range like 3-5", c.Layers)
	}
	o.First, o.Last = first, last
	return o, nil
}

// Run prints the graph.
func (c *DumpGraphCmd) Run() error {
	dopt, err := c.dotOptions()
	if err != nil {
		return err
	}
	kind, err := fileKind(c.Model)
	if err != nil {
		return err
	}
	var g *ir.Graph
	var memLine string // a plan's KV and batch sizes
	title := c.Model
	if kind == "gguf" {
		f, err := gguf.Open(c.Model)
		if err != nil {
			return err
		}
		defer f.Close()
		if c.Passes {
			g, _, err = compiler.Graph(f, compiler.Options{Disabled: c.DisablePass})
			title += " (after passes)"
		} else {
			g, err = gguf.BuildGraph(f)
			title += " (before passes)"
		}
		if err != nil {
			return err
		}
	} else {
		l, err := openPlan(c.Model, plan.OpenOptions{SkipWeightChecksum: true, SkipSourceHash: true})
		if err != nil {
			return err
		}
		defer l.Close()
		g = l.Graph
		title += " (compiled)"
		if pre, dec := l.Memory["prefill"], l.Memory["decode"]; pre != nil && dec != nil {
			memLine = fmt.Sprintf("# memory: KV %s (%s, %s), prefill batch %d tokens, decode batch %d row(s)\n",
				mib(pre.KVBytes), kvSlots(pre.Options), pre.Options.KVType, pre.Options.MaxTokens, dec.Options.MaxTokens)
		}
	}
	if c.DOT {
		return ir.WriteDOTWith(os.Stdout, g, title, dopt)
	}
	if c.Schedule != "" {
		s := g.Decode
		if c.Schedule == "prefill" {
			s = g.Prefill
		}
		if s == nil {
			return fmt.Errorf("the graph has no schedules (it was not compiled)")
		}
		for gi, grp := range s.Groups {
			fmt.Printf("group %d (%d units):\n", gi, grp.Units)
			for _, st := range grp.Steps {
				fmt.Printf("  %-9s %s\n", st.Split, g.Nodes[st.Node])
			}
		}
		fmt.Printf("%d groups, %d barriers per run\n", len(s.Groups), s.Barriers())
		return nil
	}
	fmt.Printf("# %s: %s, %d nodes, %d values\n", title, g.Arch, len(g.Nodes), len(g.Values))
	fmt.Print(memLine)
	for _, n := range g.Nodes {
		fmt.Printf("%s  [%s layer %d group %d]\n", n, n.Kernel, n.Layer, n.Group)
	}
	return nil
}
