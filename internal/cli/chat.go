package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"time"

	"github.com/minfer/minfer/chat"
	"github.com/minfer/minfer/compiler"
	"github.com/minfer/minfer/exec"
	"github.com/minfer/minfer/frontends/gguf"
	"github.com/minfer/minfer/generate"
	"github.com/minfer/minfer/internal/safefile"
	"github.com/minfer/minfer/plan"
	"github.com/minfer/minfer/promptcache"
	"github.com/minfer/minfer/sample"
	"github.com/minfer/minfer/tokenizer"
)

// FixSingleDashFlags rewrites llama.cpp's single-dash long flag -sys as
// --sys, which the flag parser knows, in `minfer chat` command lines.
func FixSingleDashFlags(args []string) {
	if len(args) < 2 || args[1] != "chat" {
		return
	}
	for i, a := range args {
		if a == "-sys" {
			args[i] = "--sys"
		} else if strings.HasPrefix(a, "-sys=") {
			args[i] = "-" + a
		}
	}
}

// chatModel is a loaded model ready for chat: the compiled executor, its
// tokenizer, the template source it carries and the identity prompt caches
// are checked against.
type chatModel struct {
	m        *exec.Model
	tok      *tokenizer.Tokenizer
	template string
	owner    promptcache.Owner
	nctx     int
	nvocab   int
	samp     sample.Params
	inputs   []string // files read: never an output
	close    func()
}

// loadChatModel opens a plan, or compiles a GGUF in memory.
func loadChatModel(path string, noVerify bool, nctx int, kv string, fa bool, threads, slots int, withCache bool, pack string) (*chatModel, error) {
	kind, err := fileKind(path)
	if err != nil {
		return nil, err
	}
	if kind == "gguf" {
		f, err := gguf.Open(path)
		if err != nil {
			return nil, err
		}
		s, closeFn, err := ggufSession(f, false, nctx, kv, fa, threads, slots, pack)
		if err != nil {
			f.Close()
			return nil, err
		}
		if s.tok == nil {
			closeFn()
			f.Close()
			return nil, fmt.Errorf("%s has no tokenizer: chat needs one", path)
		}
		cm := &chatModel{m: s.compute, tok: s.tok, nctx: s.nctx, nvocab: s.nvocab, samp: s.samp, inputs: []string{path},
			close: func() { closeFn(); f.Close() }}
		if withCache {
			// Hashing reads the whole file: only a prompt cache needs it.
			src, err := plan.HashSource(path)
			if err != nil {
				cm.close()
				return nil, err
			}
			cm.owner = promptcache.Owner{Name: path, ID: fmt.Sprintf("GGUF sha256 %s compiled in memory by %s, n_ctx %d, kv %s", src.SHA256, compiler.Tool(), s.nctx, kv)}
		}
		if f.Has(compiler.KeyChatTemplate) {
			cm.template, _ = f.String(compiler.KeyChatTemplate)
		}
		return cm, nil
	}
	l, err := plan.OpenWith(path, plan.OpenOptions{SkipWeightChecksum: noVerify, SkipSourceHash: noVerify})
	if err != nil {
		return nil, err
	}
	if l.Vocab == nil {
		l.Close()
		return nil, fmt.Errorf("%s: the plan has no tokenizer: chat needs one", path)
	}
	files := path
	inputs := []string{path}
	if l.Mode == plan.Ref {
		files = l.Source.Path
		inputs = append(inputs, files)
	}
	m, err := exec.New(l.Graph, l.Memory, l, exec.Config{Threads: threads, WeightFiles: files})
	if err != nil {
		l.Close()
		return nil, err
	}
	tok, err := l.Tokenizer()
	if err == nil && tok == nil {
		err = fmt.Errorf("%s has no tokenizer: chat needs one", path)
	}
	if err != nil {
		m.Close()
		l.Close()
		return nil, err
	}
	return &chatModel{m: m, tok: tok, template: l.ChatTemplate, nctx: l.Graph.Params.NCtx, nvocab: l.Graph.Params.NVocab,
		samp: l.Sampling, inputs: inputs, owner: planOwner(path, l), close: func() { m.Close(); l.Close() }}, nil
}

// planOwner is the identity of a plan for prompt caches: what it computes
// (compiler, compile time, source GGUF) and its cache layout.
func planOwner(path string, l *plan.Loaded) promptcache.Owner {
	return promptcache.Owner{Name: path, ID: fmt.Sprintf("plan compiled %s by %s from GGUF sha256 %s, n_ctx %d, kv %s",
		l.Options.Compiled.UTC().Format(time.RFC3339Nano), l.Options.Tool, l.Source.SHA256, l.Options.NCtx, l.Options.KVType)}
}

// commonPrefix is the number of leading tokens a and b share.
func commonPrefix(a, b []int32) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// ChatCmd is `minfer chat`.
type ChatCmd struct {
	Model       string        `arg:"" help:"plan.bin, or a GGUF model (compiled in memory)." type:"existingfile"`
	System      string        `help:"System prompt (also -sys)." name:"sys"`
	NPredict    int           `short:"n" help:"Most tokens per answer (-1: until end of turn or a full context)." default:"-1" name:"n-predict"`
	Threads     int           `short:"t" help:"Worker threads (0: all CPUs this process may use)."`
	Stats       bool          `help:"After each answer, print prefilled and reused prompt tokens and speeds on stderr."`
	PromptCache string        `help:"Load the KV state of the longest matching prompt prefix from this file, and save the state after each prompt to it." name:"prompt-cache"`
	NoVerify    bool          `help:"Skip the weights checksum and source hash at load (plan)." name:"no-verify"`
	NCtx        int           `help:"KV cache positions for a GGUF (0: the model's, at most 4096)." name:"n-ctx"`
	KVType      string        `help:"KV cache type for a GGUF: f16 (default, as llama.cpp), f32, q8_0." default:"f16" name:"kv-type" enum:"f32,f16,q8_0"`
	FlashAttn   string        `help:"Flash attention for a GGUF (also -fa): auto, on or off (see minferc compile)." default:"auto" name:"flash-attn" enum:"auto,on,off"`
	PackWeights string        `help:"Weight layouts for a SIMD tier for a GGUF, packed at load into memory: none, avx2, avx512, kquant or r8vnni (see minferc compile --pack-weights)." default:"none" name:"pack-weights" enum:"none,avx2,avx512,kquant,r8vnni"`
	TokenDelay  time.Duration `help:"Pause after each streamed piece (demos and the Ctrl-C test)." name:"token-delay" hidden:""`
	TemplateFlags
	SamplingFlags
}

// delayWriter pauses after each write.
type delayWriter struct {
	w io.Writer
	d time.Duration
}

func (d delayWriter) Write(b []byte) (int, error) {
	n, err := d.w.Write(b)
	time.Sleep(d.d)
	return n, err
}

// chatSession is a conversation and the cache state behind it.
type chatSession struct {
	cm     *chatModel
	tmpl   *chat.Template
	opts   chat.Options
	system string
	msgs   []chat.Message
	cached []int32 // the tokens whose positions the KV cache holds
	samp   sample.Params
	c      *ChatCmd
	stop   atomic.Bool // set by Ctrl-C while an answer is generated
	busy   atomic.Bool
	cache  *promptcache.File // loaded once, used for the first turn
	out    io.Writer
	errw   io.Writer
}

// Run runs the chat loop until /exit or the end of the input.
func (c *ChatCmd) Run() error {
	if c.Threads < 0 {
		return fmt.Errorf("-t %d: the thread count must be positive (0: all CPUs)", c.Threads)
	}
	if c.NPredict < -1 || c.NPredict == 0 {
		return fmt.Errorf("-n %d: give a token count, or -1 for until end of turn", c.NPredict)
	}
	g := GenFlags{Threads: c.Threads}
	if err := g.check(); err != nil {
		return err
	}
	fa, err := flashOn(c.FlashAttn, c.KVType)
	if err != nil {
		return err
	}
	cm, err := loadChatModel(c.Model, c.NoVerify, c.NCtx, c.KVType, fa, g.threads(), 1, c.PromptCache != "", c.PackWeights)
	if err != nil {
		return err
	}
	defer cm.close()
	tmpl, err := c.template(c.Model, cm.template)
	if err != nil {
		return err
	}
	if c.PromptCache != "" {
		if err := safefile.CheckTarget(c.PromptCache, cm.inputs...); err != nil {
			return fmt.Errorf("--prompt-cache: %w", err)
		}
	}
	samp, err := c.params(cm.samp, os.Stderr)
	if err != nil {
		return err
	}
	s := &chatSession{cm: cm, tmpl: tmpl, opts: c.renderOptions(cm.tok), system: c.System, samp: samp, c: c, out: os.Stdout, errw: os.Stderr}
	if c.TokenDelay > 0 {
		s.out = delayWriter{os.Stdout, c.TokenDelay}
	}
	s.reset()
	if c.PromptCache != "" {
		f, err := promptcache.Open(c.PromptCache, cm.owner, cm.m, cm.nvocab, cm.nctx)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return err
		default:
			s.cache = f
		}
	}

	// Ctrl-C stops the answer being generated and keeps the session; at
	// the input prompt it ends the program as everywhere else (status
	// 130, unfinished outputs removed).
	signal.Reset(os.Interrupt)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	defer signal.Stop(sigs)
	go func() {
		for range sigs {
			if s.busy.Load() {
				s.stop.Store(true)
				continue
			}
			fmt.Fprintln(os.Stderr)
			safefile.Cleanup()
			os.Exit(130)
		}
	}()
	return s.loop(os.Stdin, isTerminal(os.Stdin))
}

func (s *chatSession) reset() {
	s.msgs = s.msgs[:0]
	if s.system != "" {
		s.msgs = append(s.msgs, chat.Message{Role: "system", Content: s.system})
	}
}

// maxLine bounds one input line (one user turn).
const maxLine = 16 << 20

func (s *chatSession) loop(in io.Reader, interactive bool) error {
	r := bufio.NewReaderSize(in, 64<<10)
	if interactive {
		fmt.Fprintf(s.errw, "minfer chat: %s, context %d tokens. /reset starts over, /exit quits, Ctrl-C stops an answer.\n", s.c.Model, s.cm.nctx)
	}
	for {
		if interactive {
			fmt.Fprint(s.out, "> ")
		}
		line, err := readLine(r)
		if err == io.EOF && line == "" {
			if interactive {
				fmt.Fprintln(s.out)
			}
			return nil
		}
		if err != nil && err != io.EOF {
			return err
		}
		switch strings.TrimSpace(line) {
		case "":
			continue
		case "/exit", "/quit":
			return nil
		case "/reset":
			s.reset()
			fmt.Fprintln(s.errw, "[conversation reset]")
			continue
		}
		if err := s.turn(line); err != nil {
			return err
		}
	}
}

// readLine reads one line without its line ending, refusing absurdly long
// ones.
func readLine(r *bufio.Reader) (string, error) {
	var b strings.Builder
	for {
		frag, isPrefix, err := r.ReadLine()
		b.Write(frag)
		if b.Len() > maxLine {
			return "", fmt.Errorf("an input line is longer than %d bytes", maxLine)
		}
		if err != nil {
			if b.Len() > 0 && err == io.EOF {
				return b.String(), nil
			}
			return b.String(), err
		}
		if !isPrefix {
			return b.String(), nil
		}
	}
}

// turn answers one user message.
func (s *chatSession) turn(user string) error {
	cm := s.cm
	msgs := append(s.msgs[:len(s.msgs):len(s.msgs)], chat.Message{Role: "user", Content: user})
	prompt, err := s.tmpl.RenderMessages(msgs, s.opts)
	if err != nil {
		return err
	}
	ids := cm.tok.Encode(prompt, true, true)
	if len(ids) == 0 {
		return fmt.Errorf("the rendered prompt is empty")
	}
	if len(ids) >= cm.nctx {
		fmt.Fprintf(s.errw, "[context full: the conversation with this message is %d tokens and the context holds %d; the message was not sent. /reset to start over, or use a plan compiled with a larger --n-ctx]\n", len(ids), cm.nctx)
		return nil
	}
	// Reuse the longest prefix the cache holds (the conversation so far,
	// or on the first turn a prompt cache file); keep at least the last
	// prompt token to evaluate, for the logits.
	keep := commonPrefix(s.cached, ids) // s.cached has Filled() tokens
	from := "conversation"
	if s.cache != nil {
		if k := min(commonPrefix(s.cache.Tokens, ids), len(ids)-1); k > keep {
			if err := s.cache.Restore(cm.m, k); err != nil {
				return err
			}
			keep = k
			s.cached = append(s.cached[:0], ids[:keep]...)
			from = "prompt cache " + s.cache.Path
		}
		s.cache = nil
	}
	keep = min(keep, len(ids)-1)
	if err := cm.m.Truncate(keep); err != nil {
		return err
	}
	var afterPrefill func() error
	if s.c.PromptCache != "" {
		afterPrefill = func() error {
			return promptcache.Save(s.c.PromptCache, cm.owner, cm.m, ids, cm.inputs...)
		}
	}
	s.stop.Store(false)
	s.busy.Store(true)
	var text strings.Builder
	res, err := generate.RunTokens(cm.m, cm.tok, ids, generate.Options{
		NPredict: s.c.NPredict, NCtx: cm.nctx, Sampling: s.samp, ParseSpecial: true,
		Out: io.MultiWriter(s.out, &text), Keep: keep, AfterPrefill: afterPrefill, Stop: s.stop.Load,
	})
	s.busy.Store(false)
	if err != nil {
		return err
	}
	fmt.Fprintln(s.out)
	all := append(ids[:len(ids):len(ids)], res.Generated...)
	s.cached = append(s.cached[:0], all[:min(len(all), cm.m.Filled())]...)
	s.msgs = append(msgs, chat.Message{Role: "assistant", Content: text.String()})
	switch res.Stop {
	case "interrupted":
		fmt.Fprintln(s.errw, "[answer stopped]")
	case "context":
		fmt.Fprintf(s.errw, "[context full: %d tokens; the answer was cut there. /reset to start over]\n", cm.nctx)
	case "n_predict":
		fmt.Fprintf(s.errw, "[answer cut at -n %d tokens]\n", s.c.NPredict)
	}
	if s.c.Stats {
		fmt.Fprintf(s.errw, "prompt: %d tokens, %d reused from the %s, %d prefilled in %.1f ms (%.1f tok/s); answer: %d tokens, %.1f tok/s; context %d/%d\n",
			len(ids), keep, from, len(ids)-keep, ms(res.PrefillTime), tokRate(len(ids)-keep, res.PrefillTime), len(res.Generated), res.DecodeRate(), cm.m.Filled(), cm.nctx)
	}
	return nil
}

func tokRate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}
