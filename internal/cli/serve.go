package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/minfer/minfer/backends/cpu"
	"github.com/minfer/minfer/chat"
	"github.com/minfer/minfer/serve"
)

// ServeCmd is `minfer serve`: the OpenAI-compatible HTTP server
// (docs/SERVING.md).
type ServeCmd struct {
	Model         string        `arg:"" help:"plan.bin, or a GGUF model (compiled in memory)." type:"existingfile"`
	Addr          string        `help:"Address to listen on (host:port; a port 0 picks one)." default:"127.0.0.1:8080"`
	Alias         string        `help:"Model name in /v1/models, the one requests must give (default: the file name without extension)." short:"a"`
	APIKey        string        `help:"Require \"Authorization: Bearer KEY\" on every endpoint but /health ." name:"api-key" env:"MINFER_API_KEY"`
	Queue         int           `help:"Requests that may wait for a slot; more get 503 with Retry-After." default:"32"`
	PrefillChunk  int           `help:"Most prompt tokens of one request evaluated per step, so a long prompt does not stall the streams of others." default:"128" name:"prefill-chunk"`
	PrefillBatch  int           `help:"Most prompt tokens of all requests together evaluated per step: prompts arriving together are prefilled in one pass (as llama-server's -ub)." default:"512" name:"prefill-batch" aliases:"ubatch-size"`
	CachePrompt   bool          `help:"Keep each slot's KV cache after a request: a request sharing a prefix with it (a conversation's earlier turns) prefills only the rest." default:"true" negatable:"" name:"cache-prompt"`
	NPredict      int           `short:"n" help:"Most tokens per answer when a request sets no max_tokens (-1: until end of generation or a full slot)." default:"-1" name:"n-predict"`
	Threads       int           `short:"t" help:"Worker threads (0: all CPUs this process may use)."`
	NoVerify      bool          `help:"Skip the weights checksum and source hash at load (plan)." name:"no-verify"`
	NCtx          int           `short:"c" help:"KV cache positions per slot for a GGUF (0: the model's, at most 4096)." name:"n-ctx" aliases:"ctx-size"`
	Parallel      int           `help:"Slots (sequences decoded together) for a GGUF; a plan has the slots it was compiled with (minferc compile --slots N)." default:"4" name:"parallel" aliases:"np"`
	KVType        string        `help:"KV cache type for a GGUF: f16 (default, as llama.cpp), f32, q8_0." default:"f16" name:"kv-type" enum:"f32,f16,q8_0"`
	FlashAttn     string        `help:"Flash attention for a GGUF (also -fa): auto, on or off (see minferc compile)." default:"auto" name:"flash-attn" enum:"auto,on,off"`
	PackWeights   string        `help:"Weight layouts for a SIMD tier for a GGUF, packed at load into memory: none, avx2, r8vnni, kquant (Q4_K, Q5_K and Q6_K eight rows together for the AVX2 kernels, which every tier from AVX2 up runs), or avx512 (Q8_0, Q5_0 and Q4_0 sixteen rows together for the AVX-512 VNNI kernels: their mat-muls about 2x faster in prefill and batched decode, another float order; see minferc compile --pack-weights)." default:"none" name:"pack-weights" enum:"none,avx2,avx512,kquant,r8vnni"`
	MaxBody       int64         `help:"Largest request body in bytes (more: 413)." default:"8388608" name:"max-body"`
	WriteTimeout  time.Duration `help:"A client that takes longer than this to accept one write is cut off and its slot freed." default:"30s" name:"write-timeout"`
	ShutdownGrace time.Duration `help:"On SIGTERM or SIGINT, how long in-flight requests may take to finish before they are cancelled." default:"10s" name:"shutdown-grace"`
	LogFormat     string        `help:"Log format on stderr: text or json." default:"text" enum:"text,json" name:"log-format"`
	TemplateFlags
	SamplingFlags

	ctx   context.Context   // tests: stop the server when done (default: on SIGTERM/SIGINT)
	ready func(addr string) // tests: called with the address once listening
	logw  io.Writer         // tests: where the log goes (default stderr)
}

// Run loads the model and serves until SIGTERM or SIGINT.
func (c *ServeCmd) Run() error {
	g := GenFlags{Threads: c.Threads}
	if err := g.check(); err != nil {
		return err
	}
	switch {
	case c.Queue < 0:
		return fmt.Errorf("--queue %d: give 0 or more", c.Queue)
	case c.Parallel < 0:
		return fmt.Errorf("--parallel %d: give 1 or more slots", c.Parallel)
	case c.PrefillChunk < 1:
		return fmt.Errorf("--prefill-chunk %d: give 1 or more", c.PrefillChunk)
	case c.PrefillBatch < 0:
		return fmt.Errorf("--prefill-batch %d: give 1 or more (0: 512)", c.PrefillBatch)
	case c.NPredict < -1 || c.NPredict == 0:
		return fmt.Errorf("-n %d: give a token count, or -1 for until end of generation", c.NPredict)
	case c.MaxBody < 1024:
		return fmt.Errorf("--max-body %d: at least 1024 bytes", c.MaxBody)
	}
	logw := c.logw
	if logw == nil {
		logw = os.Stderr
	}
	var h slog.Handler = slog.NewTextHandler(logw, nil)
	if c.LogFormat == "json" {
		h = slog.NewJSONHandler(logw, nil)
	}
	log := slog.New(h)
	t0 := time.Now()
	fa, err := flashOn(c.FlashAttn, c.KVType)
	if err != nil {
		return err
	}
	cm, err := loadChatModel(c.Model, c.NoVerify, c.NCtx, c.KVType, fa, g.threads(), c.Parallel, false, c.PackWeights)
	if err != nil {
		return err
	}
	defer cm.close()
	var tmpl *chat.Template
	if cm.template != "" || c.ChatTemplateFile != "" || c.ChatTemplate != "" {
		if tmpl, err = c.template(c.Model, cm.template); err != nil {
			return err
		}
	} else {
		log.Warn("the model has no chat template: /v1/chat/completions answers 400; give --chat-template-file or --chat-template chatml", "model", c.Model)
	}
	// Defaults for what requests leave out: the plan's sampling defaults
	// and the flags. --seed -1: a random seed per request.
	flags := c.SamplingFlags
	randomSeed := flags.Seed != nil && *flags.Seed == -1
	if randomSeed {
		flags.Seed = nil
	}
	samp, err := flags.params(cm.samp, os.Stderr)
	if err != nil {
		return err
	}
	id := c.Alias
	if id == "" {
		id = strings.TrimSuffix(filepath.Base(c.Model), filepath.Ext(c.Model))
	}
	eng := &serve.ExecEngine{M: cm.m}
	srv, err := serve.New(serve.Config{
		Engine: eng, Tokenizer: cm.tok, NVocab: cm.nvocab, Template: tmpl, TemplateOptions: c.renderOptions(cm.tok),
		ModelID: id, Defaults: samp, RandomSeed: randomSeed, MaxTokens: c.NPredict, APIKey: c.APIKey,
		MaxBodyBytes: c.MaxBody, Queue: c.Queue, PrefillChunk: c.PrefillChunk, PrefillBatch: c.PrefillBatch, CachePrompt: c.CachePrompt, WriteTimeout: c.WriteTimeout, Logger: log,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		srv.Close()
		return err
	}
	ctx := c.ctx
	if ctx == nil {
		// SIGTERM/SIGINT start a graceful shutdown; a second signal ends
		// the process at once (the default action, restored by stop).
		signal.Reset(os.Interrupt, syscall.SIGTERM)
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		go func() { <-ctx.Done(); stop() }()
	}
	log.Info("serving", "addr", "http://"+ln.Addr().String(), "model", id, "file", c.Model, "slots", eng.Slots(), "n_ctx_slot", eng.SlotContext(),
		"threads", cm.m.Threads(), "kernels", cpu.Features(), "chat_template", tmpl != nil, "load_ms", time.Since(t0).Milliseconds())
	if c.ready != nil {
		c.ready(ln.Addr().String())
	}
	err = srv.Serve(ctx, ln, c.ShutdownGrace)
	log.Info("stopped")
	return err
}
