package cli

import (
	"fmt"
	"io"
	"os"
	"sort"
	"text/tabwriter"

	"github.com/minfer/minfer/internal/safefile"
	"github.com/minfer/minfer/quant"
	"github.com/minfer/minfer/synth"
)

// SynthCmd is `minferc synth`.
type SynthCmd struct {
	Preset string `help:"Architecture preset (see --list)." default:"qwen2-tiny"`
	Type   string `help:"Weight type: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k q4_k_m q5_k_m." default:"q8_0"`
	Seed   uint64 `help:"Random seed." default:"1"`
	Vocab  string `help:"Copy the tokenizer of this GGUF file (e.g. a vocab-only GGUF)." type:"existingfile"`
	Out    string `short:"o" help:"Output GGUF path." default:"model.gguf"`
	DryRun bool   `help:"Print the per-tensor type plan and file size, write nothing."`
	List   bool   `help:"List the presets and weight types."`
}

// Run writes the model.
func (c *SynthCmd) Run() error {
	if c.List {
		tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "preset\tarch\tlayers\tn_embd\theads\tkv\thead_dim\tffn\tvocab\tparams")
		for _, p := range synth.Presets() {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.1fM\n", p.Name, p.Arch, p.NLayer, p.NEmbd, p.NHead, p.NHeadKV, p.HeadDim, p.NFF, p.NVocab, float64(p.Params())/1e6)
		}
		tw.Flush()
		fmt.Print("types:")
		for _, t := range synth.FileTypes() {
			fmt.Print(" ", t.Name)
		}
		fmt.Println()
		return nil
	}
	if !c.DryRun {
		if err := safefile.CheckTarget(c.Out, c.Vocab); err != nil {
			return err
		}
	}
	o := synth.Options{Preset: c.Preset, Type: c.Type, Seed: c.Seed, VocabPath: c.Vocab}
	size, err := synth.FileSize(o)
	if err != nil {
		return err
	}
	if c.DryRun {
		p, err := synth.LookupPreset(c.Preset)
		if err != nil {
			return err
		}
		types, err := synth.TensorTypes(p, c.Type)
		if err != nil {
			return err
		}
		count := map[quant.Type]int{}
		for _, t := range types {
			count[t]++
		}
		var ts []quant.Type
		for t := range count {
			ts = append(ts, t)
		}
		sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
		for _, t := range ts {
			fmt.Printf("%-6s %d tensors\n", t, count[t])
		}
		fmt.Printf("file size %d bytes\n", size)
		return nil
	}
	// The weights are generated as they are written (synth.Write streams),
	// so the bar follows the generation; on a terminal the time spent before
	// the first byte (reading the vocab) is shown first.
	stop := elapsed(fmt.Sprintf("synthesizing %s %s", c.Preset, c.Type))
	defer stop()
	err = safefile.Write(c.Out, func(w io.Writer) error {
		return synth.Write(&progressWriter{w: w, total: size, first: stop, prog: progressBar("writing " + c.Out)}, o)
	}, c.Vocab)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s (%s %s, seed %d, %d bytes)\n", c.Out, c.Preset, c.Type, c.Seed, size)
	return nil
}
