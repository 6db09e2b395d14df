package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/minfer/minfer/internal/fixtures"
)

// TestPlanOnARM64 cross-builds minfer and minferc for arm64 and runs them
// under qemu-user (issue 11): plans compiled here (amd64) must give, when
// executed by the arm64 binary, logits bit-identical to this process's —
// on the dotprod tier for every quantized weight type of the synthetic
// fixtures, and on the base NEON tier (MINFER_NO_DOTPROD=1) and pure Go
// (MINFER_NO_NEON=1) for the Qwen fixtures (Q4_K, Q5_0, Q6_K, Q8_0),
// prefill and decode (the kernel tests call both tiers on every type); and a plan compiled by the arm64 minferc
// must run here with the same logits. Each child's --stats line names the
// tier that ran. Under CI=true a missing qemu-aarch64 is a failure.
func TestPlanOnARM64(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: cross-builds and emulates")
	}
	if runtime.GOARCH != "amd64" {
		t.Skipf("runs the arm64 build from an amd64 host; this is %s", runtime.GOARCH)
	}
	qemu, err := exec.LookPath("qemu-aarch64")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("qemu-aarch64 not found (Debian: apt-get install qemu-user); CI must run the arm64 end-to-end test")
		}
		t.Skip("qemu-aarch64 not found (Debian: apt-get install qemu-user)")
	}
	dir := t.TempDir()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	start := time.Now()
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", dir+string(filepath.Separator), "./cmd/minfer", "./cmd/minferc")
	build.Dir = root
	build.Env = append(os.Environ(), "GOARCH=arm64", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("arm64 build: %v\n%s", err, out)
	}
	t.Logf("arm64 build: %v", time.Since(start).Round(time.Millisecond))
	minfer, minferc := filepath.Join(dir, "minfer"), filepath.Join(dir, "minferc")

	// run executes an arm64 binary under qemu with extra environment and
	// returns its combined output.
	run := func(env []string, args ...string) string {
		t.Helper()
		cmd := exec.Command(qemu, append([]string{"-cpu", "max"}, args...)...)
		for _, e := range os.Environ() {
			if !strings.HasPrefix(e, "MINFER_NO_") {
				cmd.Env = append(cmd.Env, e)
			}
		}
		cmd.Env = append(cmd.Env, env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("qemu %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	// here runs the plan in this (amd64) process and returns the logits.
	here := func(planPath string, batch int) []byte {
		t.Helper()
		out := filepath.Join(dir, "here.f32")
		ec := ExecCmd{Plan: planPath, GenFlags: GenFlags{Tokens: fixtureTokens, LogitsOut: out, Batch: batch, Threads: 2}}
		if err := ec.Run(); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	type tier struct{ name, env, want string }
	dotprod := tier{"dotprod", "", "kernels: dotprod"}
	neon := tier{"neon", "MINFER_NO_DOTPROD=1", "kernels: neon"}
	pure := tier{"pure Go", "MINFER_NO_NEON=1", "kernels: pure Go"}
	cases := []struct {
		model string
		batch int
		tiers []tier
	}{
		{"qwen3-synth-q4_k_m", 0, []tier{dotprod, neon, pure}},
		{"qwen3-synth-q4_k_m", 1, []tier{dotprod, neon}},
		{"qwen2-synth-q4_k_m", 1, []tier{dotprod, neon}},
		{"qwen2-synth-q8_0", 0, []tier{dotprod, neon}},
	}
	for _, q := range []string{"q2_k", "q3_k", "q4_0", "q4_1", "q4_k", "q5_0", "q5_1", "q5_k", "q6_k", "q8_0"} {
		cases = append(cases, struct {
			model string
			batch int
			tiers []tier
		}{"llama-synth-" + q, 0, []tier{dotprod}})
	}
	plans := map[string]string{}
	for _, c := range cases {
		planPath, ok := plans[c.model]
		if !ok {
			planPath = filepath.Join(dir, c.model+".plan")
			cc := CompileCmd{Model: fixtures.Path(t, "models", c.model+".gguf"), Out: planPath, MaxBatch: 512, KVType: "f32", Weights: "embed", Quiet: true}
			if err := cc.Run(); err != nil {
				t.Fatal(err)
			}
			plans[c.model] = planPath
		}
		want := here(planPath, c.batch)
		for _, tr := range c.tiers {
			got := filepath.Join(dir, "arm64.f32")
			os.Remove(got)
			var env []string
			if tr.env != "" {
				env = []string{tr.env}
			}
			out := run(env, minfer, "exec", planPath, "--tokens", fixtureTokens, "--logits-out", got,
				"--batch", fmt.Sprint(c.batch), "-t", "2", "--stats")
			if !strings.Contains(out, tr.want) {
				t.Fatalf("%s on %s: the arm64 run did not report %q:\n%s", c.model, tr.name, tr.want, out)
			}
			gb, err := os.ReadFile(got)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(gb, want) {
				t.Errorf("%s batch=%d: arm64 %s logits differ from amd64's", c.model, c.batch, tr.name)
				continue
			}
			t.Logf("%s batch=%d: amd64 plan on arm64 %s: %d logits bit-identical", c.model, c.batch, tr.name, len(gb)/4)
		}
	}

	// The other way round: a plan compiled by the arm64 minferc runs here.
	model := fixtures.Path(t, "models", "qwen3-synth-q4_k_m.gguf")
	armPlan := filepath.Join(dir, "arm64-compiled.plan")
	run(nil, minferc, "compile", model, "-o", armPlan, "-q", "--max-batch", "512", "--kv-type", "f32", "--weights", "embed")
	if !bytes.Equal(here(armPlan, 0), here(plans["qwen3-synth-q4_k_m"], 0)) {
		t.Errorf("the arm64-compiled plan gives other logits here than the amd64-compiled one")
	} else {
		t.Logf("qwen3-synth-q4_k_m: arm64-compiled plan on amd64: logits bit-identical")
	}

	// A plan with weights packed for the AVX2 kernels is refused on arm64,
	// naming the option that writes a plan every CPU runs.
	packed := filepath.Join(dir, "packed.plan")
	cc := CompileCmd{Model: fixtures.Path(t, "models", "llama-synth-q4_0.gguf"), Out: packed, MaxBatch: 512, KVType: "f32", Weights: "embed", PackWeights: "avx2", Quiet: true}
	if err := cc.Run(); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(qemu, "-cpu", "max", minfer, "exec", packed, "--tokens", fixtureTokens).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--pack-weights none") {
		t.Fatalf("a plan packed for AVX2 on arm64: err %v, want a refusal naming --pack-weights none:\n%s", err, out)
	}
	t.Logf("a plan packed for AVX2 on arm64: refused (%s)", strings.TrimSpace(string(out)))
	t.Logf("total %v", time.Since(start).Round(time.Millisecond))
}
