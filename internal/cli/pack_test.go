package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/minfer/minfer/backends/cpu"
	"github.com/minfer/minfer/internal/fixtures"
	"github.com/minfer/minfer/plan"
	"github.com/minfer/minfer/quant"
)

// TestPackedPlan: a plan compiled with --pack-weights avx2 (Q5_0, Q4_0 and
// the K-quants in their eight-row layouts) writes the same logits bit for
// bit, prefill (GEMM) and decode (row kernels), in this process, as the
// r8vnni plan of the same model, and in a child on the AVX2 tier
// (MINFER_NO_AVX512=1); a child without AVX2
// (MINFER_NO_AVX2=1) refuses it naming the recompile command; and weights
// referenced in the GGUF cannot be packed.
func TestPackedPlan(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	if runtime.GOARCH != "amd64" {
		t.Skip("Q5_0x4 has AVX2 kernels only: an amd64 test")
	}
	dir := t.TempDir()
	for _, name := range []string{"llama-synth-q5_0", "llama-synth-q4_0", "qwen2-synth-q4_k_m"} {
		model := fixtures.Path(t, "models", name+".gguf")
		plans := map[string]string{}
		for _, pack := range []string{"none", "avx2", "kquant", "r8vnni"} {
			plans[pack] = filepath.Join(dir, name+"."+pack+".plan")
			cc := CompileCmd{Model: model, Out: plans[pack], MaxBatch: 512, KVType: "f32", Weights: "embed", PackWeights: pack, Quiet: true}
			if err := cc.Run(); err != nil {
				t.Fatal(err)
			}
		}
		l, err := plan.Open(plans["avx2"])
		if err != nil {
			t.Fatal(err)
		}
		packed := 0
		for _, e := range l.Index {
			if e.Type == quant.Q5_0r8.String() || e.Type == quant.Q4_0r8.String() || e.Type == quant.Q4_Kr8.String() || e.Type == quant.Q6_Kr8.String() {
				packed++
			}
		}
		l.Close()
		if packed == 0 {
			t.Fatalf("%s: no weight packed", name)
		}
		t.Logf("%s: %d tensors packed", name, packed)
		for _, batch := range []int{0, 1} {
			logits := map[string][]byte{}
			for pack, p := range plans {
				out := filepath.Join(dir, name+"."+pack+".f32")
				ec := ExecCmd{Plan: p, GenFlags: GenFlags{Tokens: fixtureTokens, LogitsOut: out, Batch: batch, Threads: 2}}
				if err := ec.Run(); err != nil {
					t.Fatal(err)
				}
				b, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				logits[pack] = b
			}
			// these models have no Q3_K or Q2_K, so r8vnni packs what avx2
			// does (with the ZMM kernels where they run here: the same bits)
			if !bytes.Equal(logits["r8vnni"], logits["avx2"]) {
				t.Fatalf("%s batch=%d: the r8vnni plan's logits differ from the avx2 plan's", name, batch)
			}
			// Q5_0r8 and Q4_0r8 (the avx2 plans' legacy layouts) have the
			// sixteen-row layouts' float order, not vec_dot's, so the avx2
			// plan's bits are not the kquant plan's (TestR8MatchesLlamaCpp
			// checks them against llama.cpp's); below, they are the same
			// on the AVX2 tier as here
			got := filepath.Join(dir, name+".child.f32")
			for _, env := range []string{"MINFER_NO_AVX512=1", "MINFER_NO_AVX2=1"} {
				cmd := exec.Command(os.Args[0], "-test.run=^TestTierChild$", "-test.count=1")
				cmd.Env = append(os.Environ(), tierChildEnv+"="+plans["avx2"]+"|"+got+"|"+map[int]string{0: "0", 1: "1"}[batch], env)
				out, err := cmd.CombinedOutput()
				if env == "MINFER_NO_AVX2=1" {
					if err == nil || !bytes.Contains(out, []byte("--pack-weights none")) {
						t.Fatalf("%s without AVX2: want a refusal naming --pack-weights none, got err %v:\n%s", name, err, out)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s with %s: %v\n%s", name, env, err, out)
				}
				gb, err := os.ReadFile(got)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(gb, logits["avx2"]) {
					t.Fatalf("%s batch=%d with %s: the packed plan's logits differ", name, batch, env)
				}
			}
		}
	}
	cc := CompileCmd{Model: fixtures.Path(t, "models", "llama-synth-q5_0.gguf"), Out: filepath.Join(dir, "ref.plan"), MaxBatch: 512, KVType: "f32", Weights: "ref", PackWeights: "avx2", Quiet: true}
	if err := cc.Run(); err == nil || !strings.Contains(err.Error(), "embedded") {
		t.Fatalf("--pack-weights avx2 --weights ref: %v, want a refusal", err)
	}
}

// TestR16Plan: a plan compiled with --pack-weights avx512 holds Q5_0, Q4_0
// and Q8_0 mat-mul weights in the sixteen-row layouts and requires AVX-512
// VNNI; on a CPU with it the plan runs, the same logits at 1 and 2
// threads, and so does the GGUF compiled in memory with the weights packed
// at load (run --pack-weights avx512); a child on the AVX2 tier (MINFER_NO_AVX512=1) refuses it naming
// the recompile command, as a CPU without the features does at open; and
// weights referenced in the GGUF cannot be packed.
func TestR16Plan(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	if runtime.GOARCH != "amd64" {
		t.Skip("the sixteen-row layouts have AVX-512 VNNI kernels only: an amd64 test")
	}
	dir := t.TempDir()
	for _, name := range []string{"llama-synth-q5_0", "llama-synth-q4_0", "qwen3-synth-q8_0"} {
		model := fixtures.Path(t, "models", name+".gguf")
		p := filepath.Join(dir, name+".plan")
		cc := CompileCmd{Model: model, Out: p, MaxBatch: 512, KVType: "f16", Weights: "embed", PackWeights: "avx512", Quiet: true}
		if err := cc.Run(); err != nil {
			t.Fatal(err)
		}
		l, err := plan.Open(p)
		if err != nil {
			// A CPU without the tier refuses the plan at open.
			if !strings.Contains(err.Error(), "--pack-weights none") {
				t.Fatalf("%s: open: %v, want a refusal naming --pack-weights none", name, err)
			}
			t.Skipf("this CPU lacks the AVX-512 VNNI tier: %v", err)
		}
		packed := 0
		for _, e := range l.Index {
			if e.Type == quant.Q5_0r16.String() || e.Type == quant.Q8_0r16.String() || e.Type == quant.Q4_0r16.String() {
				packed++
			}
		}
		req := l.CPU.Required
		l.Close()
		if packed == 0 || !slices.Contains(req, "avx512vnni") {
			t.Fatalf("%s: %d tensors packed, required features %v", name, packed, req)
		}
		if _, err := cpu.NewMatMul(quant.Q8_0r16); err != nil {
			t.Skipf("no sixteen-row kernels in this process: %v", err)
		}
		var logits [][]byte
		for _, threads := range []int{1, 2} {
			out := filepath.Join(dir, fmt.Sprintf("%s.t%d.f32", name, threads))
			ec := ExecCmd{Plan: p, GenFlags: GenFlags{Tokens: fixtureTokens, LogitsOut: out, Threads: threads}}
			if err := ec.Run(); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			logits = append(logits, b)
		}
		if !bytes.Equal(logits[0], logits[1]) {
			t.Fatalf("%s: -t 1 and -t 2 logits differ", name)
		}
		// The GGUF compiled in memory with the weights packed at load
		// (minfer run/chat/serve --pack-weights avx512) computes the
		// plan's bits.
		runOut := filepath.Join(dir, name+".run.f32")
		rc := RunCmd{Model: model, KVType: "f16", FlashAttn: "auto", PackWeights: "avx512", GenFlags: GenFlags{Tokens: fixtureTokens, LogitsOut: runOut, Threads: 2}}
		if err := rc.Run(); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(runOut); err != nil || !bytes.Equal(b, logits[0]) {
			t.Fatalf("%s: minfer run --pack-weights avx512 logits differ from the plan's (%v)", name, err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestTierChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), tierChildEnv+"="+p+"|"+filepath.Join(dir, "child.f32")+"|0", "MINFER_NO_AVX512=1")
		out, err := cmd.CombinedOutput()
		if err == nil || !bytes.Contains(out, []byte("--pack-weights none")) || !bytes.Contains(out, []byte("AVX-512 VNNI")) {
			t.Fatalf("%s on the AVX2 tier: want a refusal naming AVX-512 VNNI and --pack-weights none, got err %v:\n%s", name, err, out)
		}
	}
	cc := CompileCmd{Model: fixtures.Path(t, "models", "llama-synth-q5_0.gguf"), Out: filepath.Join(dir, "ref.plan"), MaxBatch: 512, KVType: "f32", Weights: "ref", PackWeights: "avx512", Quiet: true}
	if err := cc.Run(); err == nil || !strings.Contains(err.Error(), "embedded") {
		t.Fatalf("--pack-weights avx512 --weights ref: %v, want a refusal", err)
	}
}

// TestPackWeightsRefusedWithoutTier: minfer run on a GGUF with
// --pack-weights for a tier whose kernels this process lacks (here the
// AVX2 tier of a child with MINFER_NO_AVX512=1 asked for avx512) fails at
// once naming --pack-weights none.
func TestPackWeightsRefusedWithoutTier(t *testing.T) {
	if os.Getenv("MINFER_TEST_PACK_CHILD") == "1" {
		rc := RunCmd{Model: fixtures.Path(t, "models", "llama-synth-q5_0.gguf"), KVType: "f16", FlashAttn: "auto", PackWeights: "avx512", GenFlags: GenFlags{Tokens: fixtureTokens, LogitsOut: filepath.Join(t.TempDir(), "x.f32"), Threads: 1}}
		err := rc.Run()
		if err == nil || !strings.Contains(err.Error(), "--pack-weights none") {
			t.Fatalf("run --pack-weights avx512 without the tier: %v, want a refusal naming --pack-weights none", err)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPackWeightsRefusedWithoutTier$", "-test.count=1")
	cmd.Env = append(os.Environ(), "MINFER_TEST_PACK_CHILD=1", "MINFER_NO_AVX512=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
}
