package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/minfer/minfer/frontends/gguf"
)

// InspectCmd is `minferc inspect` / `minfer inspect`.
type InspectCmd struct {
	Model string `arg:"" help:"GGUF file." type:"existingfile"`
	JSON  bool   `help:"Print JSON."`
	Full  bool   `help:"Print long arrays (vocabularies) in full."`
}

type tensorJSON struct {
	Name   string   `json:"name"`
	Type   string   `json:"type"`
	Shape  []uint64 `json:"shape"`
	Offset uint64   `json:"offset"`
	Bytes  uint64   `json:"bytes"`
}

// summarize shortens long arrays for display.
func summarize(v any, full bool) any {
	a, ok := v.(gguf.Array)
	if !ok || full || a.Len() <= 8 {
		if ok {
			return a.Values
		}
		return v
	}
	return fmt.Sprintf("[%d × %s]", a.Len(), a.Elem)
}

// jsonSafe replaces the values JSON cannot encode — NaN and infinities,
// which a GGUF may hold — by the strings "NaN", "+Inf" and "-Inf", in
// scalars, float arrays and nested arrays.
func jsonSafe(v any) any {
	num := func(f float64) any {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return strconv.FormatFloat(f, 'g', -1, 64)
		}
		return f
	}
	floats := func(n int, at func(int) float64) any {
		out := make([]any, n)
		for i := range out {
			out[i] = num(at(i))
		}
		return out
	}
	switch x := v.(type) {
	case float32:
		return num(float64(x))
	case float64:
		return num(x)
	case []float32:
		return floats(len(x), func(i int) float64 { return float64(x[i]) })
	case []float64:
		return floats(len(x), func(i int) float64 { return x[i] })
	case gguf.Array:
		return jsonSafe(x.Values)
	case []gguf.Array:
		out := make([]any, len(x))
		for i, a := range x {
			out[i] = jsonSafe(a.Values)
		}
		return out
	}
	return v
}

// Run prints the file.
func (c *InspectCmd) Run() error {
	f, err := gguf.Open(c.Model)
	if err != nil {
		return err
	}
	defer f.Close()
	if c.JSON {
		meta := map[string]any{}
		for _, kv := range f.KV {
			meta[kv.Key] = jsonSafe(summarize(kv.Value, c.Full))
		}
		var ts []tensorJSON
		for _, t := range f.Tensors {
			ts = append(ts, tensorJSON{t.Name, t.Type.String(), t.Dims, t.Offset, t.Size})
		}
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"path": f.Path, "version": f.Version, "alignment": f.Alignment, "data_offset": f.DataOffset, "metadata": meta, "tensors": ts})
	}
	fmt.Printf("%s: GGUF v%d, %d metadata keys, %d tensors, alignment %d, data at %d\n\n", f.Path, f.Version, len(f.KV), len(f.Tensors), f.Alignment, f.DataOffset)
	tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	for _, kv := range f.KV {
		fmt.Fprintf(tw, "%s\t%v\n", kv.Key, summarize(kv.Value, c.Full))
	}
	tw.Flush()
	fmt.Println()
	tw = tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "#\tname\ttype\tshape\tbytes\t")
	count := map[string]int{}
	var total uint64
	for i, t := range f.Tensors {
		dims := make([]string, len(t.Dims))
		for j, d := range t.Dims {
			dims[j] = fmt.Sprint(d)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t[%s]\t%d\t\n", i, t.Name, t.Type, strings.Join(dims, ", "), t.Size)
		count[t.Type.String()]++
		total += t.Size
	}
	tw.Flush()
	var types []string
	for t, n := range count {
		types = append(types, fmt.Sprintf("%s %d", t, n))
	}
	sort.Strings(types)
	fmt.Printf("\ntensor types: %s; tensor data %d bytes\n", strings.Join(types, ", "), total)
	return nil
}
