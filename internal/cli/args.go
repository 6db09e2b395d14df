package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/minfer/minfer/backends/cpu"
	"github.com/minfer/minfer/frontends/gguf"
	"github.com/minfer/minfer/plan"
)

// habitFlags maps llama.cpp's multi-letter single-dash flags, which people
// type from habit, to minfer's long names. kong reads "-ctk" as the short
// flags c, t, k, so these are rewritten before it parses.
var habitFlags = map[string]string{
	"-ctk": "--cache-type-k",
	"-ctv": "--cache-type-v",
	"-np":  "--parallel",
	"-fa":  "--flash-attn",
}

// negativeNumber matches a negative integer or decimal ("-1", "-0.5").
var negativeNumber = regexp.MustCompile(`^-[0-9]+(\.[0-9]+)?$`)

// RewriteArgs returns args with llama.cpp habits put in the form kong
// parses:
//   - "-ctk f16", "-ctk=f16" become "--cache-type-k f16", "--cache-type-k=f16"
//     (habitFlags);
//   - a flag followed by a negative number ("-n -1", "--seed -1") is joined
//     to it ("-n-1", "--seed=-1"): kong would read "-1" as a flag.
//
// Everything after "--" is left alone.
func RewriteArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		name, value, hasValue := strings.Cut(a, "=")
		if long, ok := habitFlags[name]; ok {
			a = long
			if hasValue {
				a += "=" + value
			}
		}
		if i+1 < len(args) && negativeNumber.MatchString(args[i+1]) && !strings.Contains(a, "=") {
			switch {
			case strings.HasPrefix(a, "--") && len(a) > 2:
				out = append(out, a+"="+args[i+1])
				i++
				continue
			case len(a) == 2 && a[0] == '-' && a[1] != '-':
				out = append(out, a+args[i+1])
				i++
				continue
			}
		}
		out = append(out, a)
	}
	return out
}

// Version describes this build: module version, VCS commit, Go version and
// the kernel tier this CPU runs.
func Version(name string) string {
	version, commit := "(unknown)", "commit unknown (built outside a git checkout, or with -buildvcs=false)"
	if bi, ok := debug.ReadBuildInfo(); ok {
		version = bi.Main.Version
		var rev, at, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					modified = ", modified"
				}
			}
		}
		if rev != "" {
			commit = "commit " + rev + " (" + at + modified + ")"
		}
	}
	tier, _, _ := strings.Cut(cpu.Features(), " (")
	return fmt.Sprintf("%s %s, %s\n%s %s/%s, kernel tier %s", name, version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH, tier)
}

// Parser builds the kong parser of a command line application (the struct
// of commands app), with --version.
func Parser(app any, name, description string, opts ...kong.Option) (*kong.Kong, error) {
	return kong.New(app, append([]kong.Option{
		kong.Name(name),
		kong.Description(description),
		kong.Vars{"version": Version(name)},
	}, opts...)...)
}

// usageHint is the line printed after a usage error: where the help of the
// command the user was typing is.
func usageHint(name string, err error) string {
	var pe *kong.ParseError
	cmd := name
	if errors.As(err, &pe) && pe.Context != nil {
		for i := len(pe.Context.Path) - 1; i >= 0; i-- {
			if n := pe.Context.Path[i].Command; n != nil {
				var parts []string
				for ; n != nil && n.Type == kong.CommandNode; n = n.Parent {
					parts = append([]string{n.Name}, parts...)
				}
				cmd = name + " " + strings.Join(parts, " ")
				break
			}
		}
	}
	return fmt.Sprintf("run '%s --help' for usage", cmd)
}

// ExitUsage is the exit status of a command line that does not parse, as
// for Go's flag package and most Unix tools.
const ExitUsage = 2

// Parse parses args (without the program name) into app after
// RewriteArgs. A usage error is printed to stderr as the error and a
// one-line hint (not the whole help), and the returned code is ExitUsage;
// otherwise the code is 0.
func Parse(app any, name, description string, args []string, stderr io.Writer, opts ...kong.Option) (*kong.Context, int) {
	k, err := Parser(app, name, description, opts...)
	if err != nil {
		panic(err) // a malformed command struct: a programming error
	}
	ctx, err := k.Parse(RewriteArgs(args))
	if err != nil {
		fmt.Fprintf(stderr, "%s: error: %v\n%s\n", name, err, usageHint(name, err))
		return nil, ExitUsage
	}
	return ctx, 0
}

// Main parses os.Args into app and runs the selected command: exit status 2
// for a usage error, 1 for a failed run.
func Main(app any, name, description string, beforeRun func()) {
	ctx, code := Parse(app, name, description, os.Args[1:], os.Stderr)
	if ctx == nil {
		os.Exit(code)
	}
	if beforeRun != nil {
		beforeRun()
	}
	if err := ctx.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

// CacheTypeFlags are llama.cpp's -ctk/-ctv (--cache-type-k/v). minfer has
// one KV cache type for keys and values (--kv-type): both flags map to it.
type CacheTypeFlags struct {
	CacheTypeK string `help:"KV cache type, as llama.cpp's -ctk, also accepted (minfer has one type for K and V: same as --kv-type)." name:"cache-type-k"`
	CacheTypeV string `help:"KV cache type, as llama.cpp's -ctv, also accepted (must equal -ctk if both are given)." name:"cache-type-v"`
}

// flashOn resolves --flash-attn (auto, on, off; "" is auto) for the cache
// type kv: auto is on for an f16 or q8_0 cache (the faster path for both,
// docs/PERFORMANCE.md) and off for f32 (whose non-flash path matches
// llama.cpp's f32-cache logits exactly).
func flashOn(mode, kv string) (bool, error) {
	if kv == "" {
		kv = defaultKVType
	}
	switch mode {
	case "", "auto":
		return kv == "f16" || kv == "q8_0", nil
	case "on":
		if kv != "f16" && kv != "f32" && kv != "q8_0" {
			return false, fmt.Errorf("--flash-attn on reads f16, f32 and q8_0 KV caches, not %s", kv)
		}
		return true, nil
	case "off":
		return false, nil
	}
	return false, fmt.Errorf("--flash-attn %q: auto, on or off", mode)
}

// defaultKVType is --kv-type's default, llama.cpp's (f16 keys and values).
const defaultKVType = "f16"

// kvTypes are the KV cache types minfer implements.
var kvTypes = []string{"f32", "f16", "q8_0"}

// kvType resolves --kv-type (kv, defaultKVType unless given) with -ctk/-ctv: they
// must agree with each other, and with --kv-type when it is not the default.
func (c CacheTypeFlags) kvType(kv string) (string, error) {
	k, v := strings.ToLower(c.CacheTypeK), strings.ToLower(c.CacheTypeV)
	if k != "" && v != "" && k != v {
		return "", fmt.Errorf("-ctk %s and -ctv %s differ: minfer has one KV cache type for keys and values (--kv-type); give the same type to both", c.CacheTypeK, c.CacheTypeV)
	}
	t := k
	if t == "" {
		t = v
	}
	if t == "" {
		return kv, nil
	}
	if !slices.Contains(kvTypes, t) {
		return "", fmt.Errorf("cache type %q: minfer's KV cache is one of %s", t, strings.Join(kvTypes, ", "))
	}
	if kv != "" && kv != defaultKVType && kv != t {
		return "", fmt.Errorf("--kv-type %s and cache type %s differ: give one of them", kv, t)
	}
	return t, nil
}

// warnContext warns on w when --n-ctx asks for more positions than the
// model was trained for; the run proceeds (as llama.cpp does).
func warnContext(w io.Writer, f *gguf.File, nctx int) {
	if nctx <= 0 {
		return
	}
	trained, err := f.Int(f.ArchKey("context_length"))
	if err != nil || trained <= 0 || nctx <= trained {
		return
	}
	fmt.Fprintf(w, "warning: --n-ctx %d is more than the %d positions %s was trained for: text past position %d may degrade\n", nctx, trained, f.Path, trained)
}

// planError names the plan file the user gave where package plan says
// "plan.bin".
type planError struct {
	path string
	err  error
}

func (e *planError) Error() string {
	return e.path + ": " + strings.TrimPrefix(e.err.Error(), "plan.bin: ")
}

func (e *planError) Unwrap() error { return e.err }

// openPlan opens the plan at path. A GGUF model given where a plan is
// expected gets an error that says what to do with it, and every error
// names path.
func openPlan(path string, o plan.OpenOptions) (*plan.Loaded, error) {
	if kind, err := fileKind(path); err == nil && kind == "gguf" {
		return nil, fmt.Errorf("%s is a GGUF model, not a compiled plan: compile it with 'minferc compile %s -o %s', or run it directly with 'minfer run %s'",
			path, path, strings.TrimSuffix(filepath.Base(path), ".gguf")+".plan", path)
	}
	l, err := plan.OpenWith(path, o)
	if err != nil {
		return nil, &planError{path, err}
	}
	return l, nil
}
