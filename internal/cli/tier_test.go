package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/minfer/minfer/backends/cpu"
	"github.com/minfer/minfer/internal/fixtures"
)

// The kernel tier is chosen once per process from the CPU and the
// MINFER_NO_AVX512 / MINFER_NO_AVX2 switches (arm64: MINFER_NO_DOTPROD /
// MINFER_NO_NEON), so a plan compiled on one
// tier and executed on another is tested by executing the same plan file in
// child processes (this test binary re-run with the switch set). Plans
// hold the GGUF block layouts, which every tier reads, so each child must
// run the plan and write the same logits bit for bit — prefill (the GEMM
// kernels) and decode (the row kernels) alike.

// tierChildEnv names the plan and output a child process executes.
const tierChildEnv = "MINFER_TEST_TIER_CHILD"

// TestTierChild is the child side of TestPlanAcrossTiers; it does nothing
// unless run by it.
func TestTierChild(t *testing.T) {
	spec := os.Getenv(tierChildEnv)
	if spec == "" {
		t.Skip("only runs as a child of TestPlanAcrossTiers")
	}
	f := strings.Split(spec, "|") // plan|out|batch
	if len(f) != 3 {
		t.Fatalf("bad %s=%q", tierChildEnv, spec)
	}
	batch := 0
	if f[2] == "1" {
		batch = 1
	}
	ec := ExecCmd{Plan: f[0], GenFlags: GenFlags{Tokens: fixtureTokens, LogitsOut: f[1], Batch: batch, Threads: 2}}
	if err := ec.Run(); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("TIER " + cpu.Features() + "\n")
}

func TestPlanAcrossTiers(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	type tier struct{ name, env string }
	tiers := []tier{{"avx2 (MINFER_NO_AVX512=1)", "MINFER_NO_AVX512=1"}, {"pure Go (MINFER_NO_AVX2=1)", "MINFER_NO_AVX2=1"}}
	if runtime.GOARCH == "arm64" {
		tiers = []tier{{"neon (MINFER_NO_DOTPROD=1)", "MINFER_NO_DOTPROD=1"}, {"pure Go (MINFER_NO_NEON=1)", "MINFER_NO_NEON=1"}}
	}
	here := cpu.Features()
	t.Logf("this process: %s", here)
	if strings.HasPrefix(here, "pure Go") {
		t.Skip("this CPU (or build) has no SIMD tier: nothing to compare across tiers")
	}
	if strings.HasPrefix(here, "avx2") {
		t.Logf("no AVX-512 tier on this CPU: comparing avx2 with pure Go only")
	}
	dir := t.TempDir()
	for _, name := range []string{"qwen3-synth-q4_k_m", "llama-synth-q4_0", "qwen2-synth-q8_0"} {
		model := fixtures.Path(t, "models", name+".gguf")
		planPath := filepath.Join(dir, name+".plan")
		cc := CompileCmd{Model: model, Out: planPath, MaxBatch: 512, KVType: "f32", Weights: "embed", Quiet: true}
		if err := cc.Run(); err != nil {
			t.Fatal(err)
		}
		for _, batch := range []string{"0", "1"} {
			want := filepath.Join(dir, name+".native.f32")
			ec := ExecCmd{Plan: planPath, GenFlags: GenFlags{Tokens: fixtureTokens, LogitsOut: want, Batch: map[string]int{"0": 0, "1": 1}[batch], Threads: 2}}
			if err := ec.Run(); err != nil {
				t.Fatal(err)
			}
			wb, err := os.ReadFile(want)
			if err != nil {
				t.Fatal(err)
			}
			for _, tr := range tiers {
				got := filepath.Join(dir, name+".child.f32")
				cmd := exec.Command(os.Args[0], "-test.run=^TestTierChild$", "-test.count=1")
				cmd.Env = append(os.Environ(), tierChildEnv+"="+planPath+"|"+got+"|"+batch, tr.env)
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("%s on %s: %v\n%s", name, tr.name, err, out)
				}
				if !bytes.Contains(out, []byte("TIER ")) {
					t.Fatalf("%s on %s: the child did not run:\n%s", name, tr.name, out)
				}
				gb, err := os.ReadFile(got)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(gb, wb) {
					t.Errorf("%s batch=%s: logits on %s differ from this process's (%s)", name, batch, tr.name, here)
				}
				line := out[bytes.Index(out, []byte("TIER "))+5:]
				if i := bytes.IndexByte(line, '\n'); i > 0 {
					line = line[:i]
				}
				if i := bytes.IndexByte(line, '('); i > 0 {
					line = line[:i]
				}
				t.Logf("%s batch=%s: %s plan ran on %s: logits bit-identical", name, batch, here[:strings.IndexByte(here+" ", ' ')], bytes.TrimSpace(line))
			}
		}
	}
}
