package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildCommands builds minfer and minferc into a temporary directory.
func buildCommands(t *testing.T) (minfer, minferc string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the commands; skipped with -short")
	}
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	bin := t.TempDir()
	for _, name := range []string{"minfer", "minferc"} {
		cmd := osexec.Command(goBin, "build", "-o", filepath.Join(bin, name), "github.com/minfer/minfer/cmd/"+name)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", name, err, out)
		}
	}
	return filepath.Join(bin, "minfer"), filepath.Join(bin, "minferc")
}

// leftovers lists the entries of dir not in keep.
func leftovers(t *testing.T, dir string, keep ...string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var extra []string
	for _, e := range ents {
		found := false
		for _, k := range keep {
			found = found || e.Name() == k
		}
		if !found {
			extra = append(extra, e.Name())
		}
	}
	return extra
}

// interruptWhen starts cmd, waits until ready() holds (polling), sends
// SIGINT and returns the exit status (-1 if the command finished before the
// signal could be sent) and its stderr.
func interruptWhen(t *testing.T, cmd *osexec.Cmd, ready func() bool) (int, string) {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for !ready() {
		select {
		case err := <-done:
			t.Logf("%s finished before it could be interrupted (%v): %s", cmd.Args[1], err, stderr.String())
			return -1, stderr.String()
		default:
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-done
			t.Fatalf("%v: never got ready: %s", cmd.Args, stderr.String())
		}
		time.Sleep(200 * time.Microsecond)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%v: still running 30 s after SIGINT", cmd.Args)
	}
	var ee *osexec.ExitError
	if !errors.As(err, &ee) {
		return 0, stderr.String()
	}
	return ee.ExitCode(), stderr.String()
}

// hasTemp reports whether dir holds one of safefile's temporary files.
func hasTemp(dir string) func() bool {
	return func() bool {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".") && strings.HasSuffix(e.Name(), ".tmp") {
				return true
			}
		}
		return false
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestInterruptLeavesNoTrace (issue 13 item 9, and items 7 and 8 through a
// real process): Ctrl-C during synth, compile and exec — each with its
// outputs already present from an earlier run — exits with status 130,
// leaves no temporary file and the old outputs byte for byte; demo removes
// its temporary folder.
func TestInterruptLeavesNoTrace(t *testing.T) {
	minfer, minferc := buildCommands(t)
	dir := t.TempDir()
	model := filepath.Join(dir, "m.gguf")
	planPath := filepath.Join(dir, "m.plan")
	logits := filepath.Join(dir, "old.f32")
	prof := filepath.Join(dir, "old.prof")
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := osexec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	run(minferc, "synth", "--preset", "qwen2-tiny", "-o", model)
	run(minferc, "compile", model, "-o", planPath, "-q", "--n-ctx", "4096")
	if err := os.WriteFile(logits, []byte("old logits"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prof, []byte("old profile"), 0o644); err != nil {
		t.Fatal(err)
	}
	keep := []string{"m.gguf", "m.plan", "old.f32", "old.prof"}
	want := map[string][]byte{}
	for _, k := range keep {
		want[k] = mustRead(t, filepath.Join(dir, k))
	}
	check := func(what string, status int, stderr string) {
		t.Helper()
		if status != 130 {
			t.Errorf("%s: exit status %d after SIGINT, want 130: %s", what, status, stderr)
		}
		if extra := leftovers(t, dir, keep...); len(extra) > 0 {
			t.Errorf("%s: left %v behind", what, extra)
		}
		for _, k := range keep {
			if got := mustRead(t, filepath.Join(dir, k)); !bytes.Equal(got, want[k]) {
				t.Errorf("%s: %s changed (%d bytes, was %d)", what, k, len(got), len(want[k]))
			}
		}
	}

	// synth over an existing model: a big preset, so it is still generating
	// when the signal comes.
	status, stderr := interruptWhen(t, osexec.Command(minferc, "synth", "--preset", "qwen2-0.5b", "--type", "q4_0", "-o", model), hasTemp(dir))
	check("synth", status, stderr)

	// compile over an existing plan: it takes a few tries to land the signal
	// while the plan is being written, the window is milliseconds long.
	interrupted := false
	for try := 0; try < 40 && !interrupted; try++ {
		status, stderr := interruptWhen(t, osexec.Command(minferc, "compile", model, "-o", planPath, "-q", "--n-ctx", "4096"), hasTemp(dir))
		if status == -1 {
			// Finished first: the plan was replaced by a whole new one,
			// byte-identical apart from the compile time.
			if got := mustRead(t, planPath); len(got) != len(want["m.plan"]) {
				t.Fatalf("compile: uninterrupted run wrote %d bytes, first run %d", len(got), len(want["m.plan"]))
			}
			want["m.plan"] = mustRead(t, planPath)
			continue
		}
		interrupted = true
		t.Logf("compile: interrupted while writing at try %d", try+1)
		check("compile", status, stderr)
	}
	if !interrupted {
		t.Errorf("compile: never caught it while writing the plan in 40 tries")
	}

	// exec with both outputs present: 4000 teacher-forced tokens one at a
	// time take seconds.
	ids := make([]string, 4000)
	for i := range ids {
		ids[i] = fmt.Sprint(i % 1000)
	}
	cmd := osexec.Command(minfer, "exec", planPath, "-t", "1", "--batch", "1", "--tokens", strings.Join(ids, ","), "--logits-out", logits, "--cpuprofile", prof)
	status, stderr = interruptWhen(t, cmd, func() bool {
		ents, _ := os.ReadDir(dir)
		n := 0
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".tmp") {
				n++
			}
		}
		return n == 2
	})
	check("exec", status, stderr)

	// demo: its temporary folder goes too.
	tmp := t.TempDir()
	cmd = osexec.Command(minfer, "demo", "--n-predict=-1", "--ignore-eos")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	status, stderr = interruptWhen(t, cmd, func() bool {
		ents, _ := os.ReadDir(tmp)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "minfer-demo-") {
				sub, _ := os.ReadDir(filepath.Join(tmp, e.Name()))
				return len(sub) >= 2 // the model and (part of) the plan
			}
		}
		return false
	})
	if status != 130 {
		t.Errorf("demo: exit status %d after SIGINT, want 130: %s", status, stderr)
	}
	if extra := leftovers(t, tmp); len(extra) > 0 {
		t.Errorf("demo: left %v in TMPDIR", extra)
	}
}
