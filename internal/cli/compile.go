package cli

import (
	"fmt"

	"os"
	"strings"

	"github.com/minfer/minfer/alloc"
	"github.com/minfer/minfer/backends/cpu"

	"github.com/minfer/minfer/compiler"
	"github.com/minfer/minfer/frontends/gguf"
	"github.com/minfer/minfer/internal/safefile"
	"github.com/minfer/minfer/passes"
	"github.com/minfer/minfer/plan"
	"github.com/minfer/minfer/quant"
)

// CompileCmd is `minferc compile`.
type CompileCmd struct {
	Model       string   `arg:"" help:"GGUF model." type:"existingfile"`
	Out         string   `short:"o" help:"Plan file to write." default:"plan.bin"`
	NCtx        int      `short:"c" help:"KV cache positions (0: the model's context, at most 4096); also --ctx-size." name:"n-ctx" aliases:"ctx-size"`
	MaxBatch    int      `help:"Largest prompt chunk evaluated at once." default:"512" name:"max-batch"`
	Slots       int      `help:"Sequences served at once (minfer serve): a KV cache of --n-ctx positions for each; KV memory = slots × n-ctx." default:"1"`
	KVType      string   `help:"KV cache type: f16 (llama.cpp's default), f32 or q8_0." default:"f16" name:"kv-type" enum:"f32,f16,q8_0"`
	Weights     string   `help:"embed: copy weights into the plan; ref: reference the GGUF by path, size and hash." default:"embed" enum:"embed,ref"`
	FlashAttn   string   `help:"Flash attention (also -fa): on compiles attention to the tiled online-softmax kernels (f32, f16 and q8_0 caches), off to llama.cpp's non-flash arithmetic; auto: on for an f16 or q8_0 cache, off for f32 (the path that matches llama.cpp's f32-cache logits exactly)." default:"auto" name:"flash-attn" enum:"auto,on,off"`
	DisablePass []string `help:"Switch off a pass by name (repeatable; see minferc passes)." name:"disable-pass"`
	PackWeights string   `help:"Weight layouts for a SIMD tier (the pack-weights pass): avx2 stores Q5_0, Q4_0, Q5_1, Q4_1 and the K-quants (Q2_K to Q6_K) mat-mul weights eight rows together for the AVX2 kernels (such a plan needs AVX2 to run); avx512 stores Q8_0, Q5_0 and Q4_0 mat-mul weights sixteen rows together for the AVX-512 VNNI kernels (their mat-muls about 2x faster with 8 or more rows: prefill and batched decode; such a plan needs AVX-512 VNNI), and Q4_K, Q5_K and Q6_K as avx2 does; kquant stores only Q4_K, Q5_K and Q6_K eight rows together (K-quant decode at the memory's rate on every tier from AVX2 up); r8vnni stores what avx2 does but Q3_K and Q2_K (whose GGUF-layout AVX-512 VNNI kernels decode them 12-16% faster, and prefill them at 0.6-0.7 of the speed: Zen 5); the sixteen- and eight-row layouts have llama.cpp's repacked-kernel float order instead of its vec_dot order; none keeps the GGUF's layouts, which every tier reads; auto: avx2 when this CPU runs the AVX2 tier (no AVX-512 VNNI, or MINFER_NO_AVX512=1) or runs 512-bit operations at full rate (Zen 5), kquant on the other AVX-512 VNNI CPUs (Zen 4), when the weights are embedded." default:"auto" name:"pack-weights" enum:"auto,avx2,avx512,kquant,r8vnni,none"`
	Quiet       bool     `short:"q" help:"No progress output."`
	CacheTypeFlags
}

// Validate refuses contradicting cache types while the command line is
// parsed (a usage error).
func (c *CompileCmd) Validate() error {
	if c.Slots < 1 || c.Slots > alloc.MaxSlots {
		return fmt.Errorf("--slots %d: must be 1..%d", c.Slots, alloc.MaxSlots)
	}
	_, err := c.kvType(c.KVType)
	return err
}

// Run compiles and writes the plan.
func (c *CompileCmd) Run() error {
	kv, err := c.kvType(c.KVType)
	if err != nil {
		return err
	}
	fa, err := flashOn(c.FlashAttn, kv)
	if err != nil {
		return err
	}
	if err := safefile.CheckTarget(c.Out, c.Model); err != nil {
		return err
	}
	f, err := gguf.Open(c.Model)
	if err != nil {
		return err
	}
	defer f.Close()
	warnContext(os.Stderr, f, c.NCtx)
	mode, err := plan.ParseWeights(c.Weights)
	if err != nil {
		return err
	}
	logf := func(format string, args ...any) {
		if !c.Quiet {
			fmt.Fprintf(os.Stderr, format+"\n", args...)
		}
	}
	pack := ""
	switch c.PackWeights {
	case "avx2", "avx512", "kquant", "r8vnni":
		if mode == plan.Ref {
			return fmt.Errorf("--pack-weights %s rewrites weights, so they must be embedded (--weights embed), not referenced in the GGUF", c.PackWeights)
		}
		pack = c.PackWeights
	case "auto":
		if mode == plan.Embed {
			pack = cpu.PackTier()
		}
	}
	switch pack {
	case "avx2":
		logf("pack-weights avx2: Q5_0, Q4_0, Q5_1, Q4_1 and Q2_K..Q6_K mat-mul weights in the eight-row layouts, which every tier from AVX2 up runs (--pack-weights none keeps the GGUF's)")
	case "avx512":
		logf("pack-weights avx512: Q8_0, Q5_0 and Q4_0 mat-mul weights in the AVX-512 VNNI tier's sixteen-row layouts, Q4_K..Q6_K in the eight-row ones (--pack-weights none for a plan every tier runs)")
	case "kquant":
		logf("pack-weights kquant: Q4_K..Q6_K mat-mul weights in the eight-row layouts, which every tier from AVX2 up runs (--pack-weights none keeps the GGUF's)")
	case "r8vnni":
		logf("pack-weights r8vnni: Q5_0, Q4_0, Q5_1, Q4_1 and Q4_K..Q6_K mat-mul weights in the eight-row layouts, which every tier from AVX2 up runs (--pack-weights none keeps the GGUF's)")
	}
	p, err := compiler.Compile(f, compiler.Options{NCtx: c.NCtx, MaxBatch: c.MaxBatch, KVType: kv, FlashAttn: fa, Slots: c.Slots, Disabled: c.DisablePass, PackWeights: pack, Weights: mode, Log: logf})
	if err != nil {
		return err
	}
	if c.PackWeights == "auto" && pack != "avx512" && mode == plan.Embed && cpu.PackTierRuns("avx512") {
		// Say what auto leaves on the table here, without choosing it: the
		// sixteen-row layouts change the float order.
		n := 0
		for _, v := range p.Graph.Weights() {
			if quant.PackedR16(v.DType) != 0 {
				n++
			}
		}
		if n > 0 {
			logf("hint: this CPU has AVX-512 VNNI and the model has %d Q8_0/Q5_0/Q4_0 weight tensors: --pack-weights avx512 makes their mat-muls about 2x faster in prefill and batched decode (llama.cpp's repacked-kernel float order; the plan then needs AVX-512 VNNI)", n)
		}
	}
	var prog func(done, total int64)
	if !c.Quiet {
		prog = progressBar("writing " + c.Out)
	}
	if err := plan.Write(c.Out, p, f, prog); err != nil {
		return err
	}
	st, err := os.Stat(c.Out)
	if err != nil {
		return err
	}
	logf("wrote %s: %d bytes, weights %s", c.Out, st.Size(), c.Weights)
	return nil
}

// PassesCmd is `minferc passes`.
type PassesCmd struct{}

// Run lists the pipeline.
func (PassesCmd) Run() error {
	for _, p := range passes.Pipeline {
		req := ""
		if p.Required {
			req = " (required)"
		}
		after := ""
		if len(p.After) > 0 {
			after = " [after " + strings.Join(p.After, ", ") + "]"
		}
		fmt.Printf("%-18s %s%s%s\n", p.Name, p.Doc, req, after)
	}
	return nil
}
