// Command minferc compiles GGUF models into plan files, synthesizes
// random-weight models of real architectures, and inspects GGUF files.
package main

import (
	"github.com/alecthomas/kong"

	"github.com/minfer/minfer/internal/cli"
	"github.com/minfer/minfer/internal/safefile"
)

var app struct {
	Version kong.VersionFlag `help:"Print the version, commit, Go version and kernel tier, and exit."`

	Compile cli.CompileCmd `cmd:"" help:"Compile a GGUF model into a plan file."`
	Synth   cli.SynthCmd   `cmd:"" help:"Write a random-weight GGUF model of a real architecture."`
	Inspect cli.InspectCmd `cmd:"" help:"Show a GGUF file's metadata and tensors (like gguf-dump)."`
	Passes  cli.PassesCmd  `cmd:"" help:"List the compiler passes."`
}

func main() {
	cli.Main(&app, "minferc", "minfer's compiler: GGUF model → scheduled plan file.", func() { safefile.HandleInterrupts("minferc") })
}
