// Command minfer runs compiled plans (and GGUF models directly): generates
// text, tokenizes, dumps logits and graphs.
package main

import (
	"os"

	"github.com/alecthomas/kong"

	"github.com/minfer/minfer/internal/cli"
	"github.com/minfer/minfer/internal/safefile"
)

var app struct {
	Version kong.VersionFlag `help:"Print the version, commit, Go version and kernel tier, and exit."`

	Exec       cli.ExecCmd       `cmd:"" help:"Run a compiled plan: prefill the prompt, decode, stream text."`
	Run        cli.RunCmd        `cmd:"" help:"Run a GGUF model directly (compiled in memory, or --reference for the scalar oracle)."`
	Demo       cli.DemoCmd       `cmd:"" help:"Synthesize a small model, compile it, run it and print stats (no download)."`
	Bench      cli.BenchCmd      `cmd:"" help:"Measure prefill (pp) and decode (tg) tok/s on a plan, like llama-bench."`
	Tokenize   cli.TokenizeCmd   `cmd:"" help:"Print the token ids of a text."`
	Detokenize cli.DetokenizeCmd `cmd:"" help:"Print the text of token ids."`
	DumpGraph  cli.DumpGraphCmd  `cmd:"" name:"dump-graph" help:"Print a graph (GGUF: before passes; plan: after) as DOT or text."`
	Inspect    cli.InspectCmd    `cmd:"" help:"Show a GGUF file's metadata and tensors."`

	Chat          cli.ChatCmd          `cmd:"" help:"Chat with an instruct model in its chat template (terminal, or one turn per input line)."`
	ApplyTemplate cli.ApplyTemplateCmd `cmd:"" name:"apply-template" help:"Print the prompt a model's chat template makes of a JSON conversation."`
	Serve         cli.ServeCmd         `cmd:"" help:"Serve the OpenAI HTTP API (/v1/chat/completions, /v1/completions, ...) with continuous batching."`
	BenchServe    cli.BenchServeCmd    `cmd:"" name:"bench-serve" help:"Load an OpenAI-compatible server with 1, 4, 8 concurrent streaming clients: aggregate tok/s and time to first token."`
}

func main() {
	cli.FixSingleDashFlags(os.Args) // llama.cpp's -sys spelling on chat
	cli.Main(&app, "minfer", "minfer: run compiled LLM plans on the CPU.", func() { safefile.HandleInterrupts("minfer") })
}
