package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minfer/minfer/internal/fixtures"
)

// chatPlan builds the commands and a synthetic qwen2-tiny model and plan
// (its vocab carries a ChatML tokenizer.chat_template).
func chatPlan(t *testing.T) (minfer, dir, gguf, planPath string) {
	t.Helper()
	minfer, _ = buildCommands(t)
	dir = t.TempDir()
	cmd := osexec.Command(minfer, "demo", "--dir", dir, "-n", "1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	return minfer, dir, filepath.Join(dir, "qwen2-tiny-q8_0.gguf"), filepath.Join(dir, "qwen2-tiny-q8_0.plan")
}

func run(t *testing.T, stdin string, name string, args ...string) (string, string, error) {
	t.Helper()
	cmd := osexec.Command(name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// TestApplyTemplateFixtures: `minfer apply-template` prints exactly
// llama.cpp's rendering of each fixture case (the vocab GGUF as the model,
// the fixture's template file, the render date).
func TestApplyTemplateFixtures(t *testing.T) {
	dir := filepath.Dir(fixtures.Path(t, "chat", "README.md"))
	minfer, _ := buildCommands(t)
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) == 0 {
		t.Fatal("no fixture cases")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			var c struct {
				Template, Vocab, Prompt string
				Messages                json.RawMessage
				RenderedOn              string `json:"rendered_on"`
			}
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &c); err != nil {
				t.Fatal(err)
			}
			msgs := filepath.Join(t.TempDir(), "m.json")
			if err := os.WriteFile(msgs, c.Messages, 0o644); err != nil {
				t.Fatal(err)
			}
			out, stderr, err := run(t, "", minfer, "apply-template", fixtures.Path(t, "tokenizer", c.Vocab), "--messages", msgs,
				"--chat-template-file", filepath.Join(dir, "templates", c.Template+".jinja"), "--date", c.RenderedOn)
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			if out != c.Prompt {
				t.Errorf("\n got %q\nwant %q", out, c.Prompt)
			}
		})
	}
}

// TestApplyTemplateNoTemplate: a model without a template is refused with
// an error naming the flags; --chat-template chatml renders ChatML; the
// plan carries the GGUF's template.
func TestApplyTemplateNoTemplate(t *testing.T) {
	minfer, dir, gguf, planPath := chatPlan(t)
	msgs := filepath.Join(dir, "m.json")
	os.WriteFile(msgs, []byte(`[{"role":"user","content":"Hi"}]`), 0o644)
	vocab := fixtures.Path(t, "tokenizer", "ggml-vocab-gpt-2.gguf") // has no template
	_, stderr, err := run(t, "", minfer, "apply-template", vocab, "--messages", msgs)
	if err == nil || !strings.Contains(stderr, "--chat-template-file") || !strings.Contains(stderr, "has no chat template") {
		t.Fatalf("no template: err %v, stderr %q", err, stderr)
	}
	const want = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
	for _, args := range [][]string{{vocab, "--chat-template", "chatml"}, {gguf}, {planPath}} {
		out, stderr, err := run(t, "", minfer, append([]string{"apply-template", "--messages", msgs}, args...)...)
		if err != nil || out != want {
			t.Errorf("%v: %q, %v %s", args, out, err, stderr)
		}
	}
}

var statsRE = regexp.MustCompile(`prompt: (\d+) tokens, (\d+) reused from the ([^,]+), (\d+) prefilled`)

type turnStats struct {
	total, reused, prefilled int
	from                     string
}

func parseStats(t *testing.T, stderr string) []turnStats {
	t.Helper()
	var st []turnStats
	for _, m := range statsRE.FindAllStringSubmatch(stderr, -1) {
		a, _ := strconv.Atoi(m[1])
		b, _ := strconv.Atoi(m[2])
		c, _ := strconv.Atoi(m[4])
		st = append(st, turnStats{a, b, c, m[3]})
	}
	return st
}

// TestChatPipe: two turns through a pipe; the second prefills only what
// the first turn's cache does not hold (at least the whole first prompt is
// reused), on a plan and on the GGUF.
func TestChatPipe(t *testing.T) {
	minfer, _, gguf, planPath := chatPlan(t)
	for _, model := range []string{planPath, gguf} {
		out, stderr, err := run(t, "Hello there\nAnd a second question\n", minfer, "chat", model, "-sys", "Be terse.", "--stats", "-n", "6", "--temp", "0")
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		st := parseStats(t, stderr)
		if len(st) != 2 || out == "" {
			t.Fatalf("want 2 turns, got stats %v, output %q, stderr %s", st, out, stderr)
		}
		if st[0].reused != 0 || st[0].prefilled != st[0].total {
			t.Errorf("turn 1: %+v", st[0])
		}
		if st[1].reused < st[0].total || st[1].prefilled != st[1].total-st[1].reused || st[1].from != "conversation" {
			t.Errorf("turn 2 reuses %d tokens, want at least turn 1's prompt (%d): %+v", st[1].reused, st[0].total, st[1])
		}
	}
}

// TestChatContextFull: a message that does not fit is refused with a
// message, the session goes on, /reset and /exit work.
func TestChatContextFull(t *testing.T) {
	minfer, _, _, planPath := chatPlan(t)
	long := strings.Repeat("word ", 1000)
	out, stderr, err := run(t, long+"\n/reset\nHi\n/exit\nnever\n", minfer, "chat", planPath, "--stats", "-n", "3")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "[context full: the conversation with this message is") || !strings.Contains(stderr, "[conversation reset]") {
		t.Errorf("stderr %q", stderr)
	}
	if st := parseStats(t, stderr); len(st) != 1 || out == "" {
		t.Errorf("want one answered turn, got %v, output %q", st, out)
	}
}

// TestPromptCache: exec and chat with --prompt-cache: the second run
// reuses the saved prefix and gives the same text as without a cache; a
// cache of another plan, a truncated or a bit-flipped one is refused.
func TestPromptCache(t *testing.T) {
	minfer, dir, _, planPath := chatPlan(t)
	pc := filepath.Join(dir, "p.cache")
	args := []string{"exec", planPath, "-p", "The quick brown fox jumps over the lazy dog", "-n", "8", "--temp", "0", "--stats"}
	plain, _, err := run(t, "", minfer, args...)
	if err != nil {
		t.Fatal(err)
	}
	reuseRE := regexp.MustCompile(`prompt cache \S+: (\d+) of (\d+) prompt tokens reused, (\d+) prefilled`)
	for i, want := range []string{"0", ""} {
		out, stderr, err := run(t, "", minfer, append(args, "--prompt-cache", pc)...)
		if err != nil {
			t.Fatalf("run %d: %v\n%s", i, err, stderr)
		}
		if out != plain {
			t.Errorf("run %d: %q, without cache %q", i, out, plain)
		}
		m := reuseRE.FindStringSubmatch(stderr)
		if m == nil {
			t.Fatalf("run %d: no reuse line in %s", i, stderr)
		}
		n, _ := strconv.Atoi(m[2])
		if want == "" {
			want = strconv.Itoa(n - 1) // all but the last token
		}
		if m[1] != want {
			t.Errorf("run %d: reused %s of %d, want %s", i, m[1], n, want)
		}
	}
	if extra := leftovers(t, dir, "p.cache", "qwen2-tiny-q8_0.gguf", "qwen2-tiny-q8_0.plan"); len(extra) > 0 {
		t.Errorf("left behind: %v", extra)
	}
	// chat reuses the cache exec wrote only as far as the prompts agree;
	// its own cache, on the next run, up to the last prompt token.
	cpc := filepath.Join(dir, "chat.cache")
	for i := range 2 {
		_, stderr, err := run(t, "Hello\n", minfer, "chat", planPath, "--prompt-cache", cpc, "--stats", "-n", "4")
		if err != nil {
			t.Fatalf("chat %d: %v\n%s", i, err, stderr)
		}
		st := parseStats(t, stderr)
		if len(st) != 1 {
			t.Fatalf("chat %d: %s", i, stderr)
		}
		if i == 1 && (st[0].reused != st[0].total-1 || !strings.HasPrefix(st[0].from, "prompt cache")) {
			t.Errorf("chat %d: %+v", i, st[0])
		}
	}

	// Refusals: nothing is loaded, the run fails with a clear message.
	other := filepath.Join(dir, "other")
	if out, err := osexec.Command(minfer, "demo", "--dir", other, "--preset", "qwen3-tiny", "-n", "1").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	good, err := os.ReadFile(pc)
	if err != nil {
		t.Fatal(err)
	}
	trunc := filepath.Join(dir, "trunc.cache")
	os.WriteFile(trunc, good[:len(good)/2], 0o644)
	flip := filepath.Join(dir, "flip.cache")
	bad := bytes.Clone(good)
	bad[len(bad)-100] ^= 1
	os.WriteFile(flip, bad, 0o644)
	junk := filepath.Join(dir, "junk.cache")
	os.WriteFile(junk, []byte("not a cache at all"), 0o644)
	for _, c := range []struct{ plan, cache, want string }{
		{filepath.Join(other, "qwen3-tiny-q8_0.plan"), pc, "made for another plan"},
		{planPath, trunc, "checksum mismatch"},
		{planPath, flip, "checksum mismatch"},
		{planPath, junk, "not a minfer prompt cache"},
	} {
		before, _ := os.ReadFile(c.cache)
		out, stderr, err := run(t, "", minfer, "exec", c.plan, "-p", "x", "-n", "1", "--prompt-cache", c.cache)
		if err == nil || !strings.Contains(stderr, c.want) || out != "" {
			t.Errorf("%s with %s: err %v, out %q, stderr %q; want %q", filepath.Base(c.plan), filepath.Base(c.cache), err, out, stderr, c.want)
		}
		if after, _ := os.ReadFile(c.cache); !bytes.Equal(before, after) {
			t.Errorf("%s was changed by a refused run", c.cache)
		}
	}
}

// TestChatCtrlC drives `minfer chat` in a pseudo-terminal (tmux): Ctrl-C
// while an answer streams stops that answer and the session goes on to the
// next message; Ctrl-C at the prompt exits with status 130.
func TestChatCtrlC(t *testing.T) {
	tmux, err := osexec.LookPath("tmux")
	if err != nil {
		t.Skip("tmux is not installed: the pseudo-terminal test needs it")
	}
	minfer, dir, _, planPath := chatPlan(t)
	sock := filepath.Join(dir, "tmux.sock")
	status := filepath.Join(dir, "status")
	tm := func(args ...string) string {
		out, err := osexec.Command(tmux, append([]string{"-S", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v %s", args, err, out)
		}
		return string(out)
	}
	// The trap keeps the shell alive through the Ctrl-C (its child resets it).
	shell := fmt.Sprintf("trap true INT; %s chat %s --stats -n 60 --token-delay 20ms; echo status=$? > %s; sleep 60", minfer, planPath, status)
	tm("new-session", "-d", "-x", "200", "-y", "50", "sh", "-c", shell)
	defer osexec.Command(tmux, "-S", sock, "kill-server").Run()
	pane := func() string { return tm("capture-pane", "-p", "-S", "-200") }
	wait := func(what string, ok func(string) bool) string {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if p := pane(); ok(p) {
				return p
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("timed out waiting for %s; pane:\n%s", what, pane())
		return ""
	}
	promptRE := regexp.MustCompile(`(?m)^>\s*$`)
	wait("the prompt", promptRE.MatchString)
	tm("send-keys", "Tell me a long story", "Enter")
	// Wait until the answer streams (the line after the question grows).
	wait("the answer", func(p string) bool {
		i := strings.Index(p, "Tell me a long story")
		return i >= 0 && len(strings.TrimSpace(strings.SplitN(p[i:], "\n", 3)[1])) > 5
	})
	tm("send-keys", "C-c")
	wait("the stopped answer", func(p string) bool { return strings.Contains(p, "[answer stopped]") })
	tm("send-keys", "Second", "Enter")
	p := wait("the second answer", func(p string) bool { return strings.Count(p, "prompt: ") >= 2 })
	if st := parseStats(t, p); len(st) < 2 || st[1].reused == 0 {
		t.Errorf("second turn did not reuse the session's cache: %v\n%s", st, p)
	}
	wait("the prompt again", func(p string) bool { return promptRE.MatchString(p[strings.LastIndex(p, "prompt: "):]) })
	tm("send-keys", "C-c")
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(status); err == nil {
			if strings.TrimSpace(string(b)) != "status=130" {
				t.Errorf("exit: %s", b)
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("chat did not exit on Ctrl-C at the prompt; pane:\n%s", pane())
}
