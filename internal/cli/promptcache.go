package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/minfer/minfer/generate"
	"github.com/minfer/minfer/internal/safefile"
	"github.com/minfer/minfer/plan"
	"github.com/minfer/minfer/promptcache"
)

// runCached is `minfer exec --prompt-cache FILE`: the prompt's longest
// prefix saved in FILE (by an earlier run of the same plan) is loaded
// instead of prefilled, and the state after this prompt is saved back.
func (c *ExecCmd) runCached(s *session, l *plan.Loaded) error {
	g := &c.GenFlags
	if g.Tokens != "" || g.LogitsOut != "" {
		return fmt.Errorf("--prompt-cache works with a text prompt, not --tokens/--logits-out")
	}
	if s.tok == nil {
		return fmt.Errorf("the model has no tokenizer: --prompt-cache needs a text prompt")
	}
	if err := safefile.CheckTarget(c.PromptCache, c.inputs...); err != nil {
		return fmt.Errorf("--prompt-cache: %w", err)
	}
	owner := planOwner(c.Plan, l)
	text, err := g.prompt(s.tok, s.nctx)
	if err != nil {
		return err
	}
	ids := s.tok.Encode(text, true, g.ParseSpecial)
	if len(ids) == 0 {
		return fmt.Errorf("the prompt is empty after tokenization; give some text")
	}
	if len(ids) >= s.nctx {
		return fmt.Errorf("the prompt is %d tokens but the context holds %d: shorten it or compile with a larger --n-ctx", len(ids), s.nctx)
	}
	samp, err := g.params(s.samp, os.Stderr)
	if err != nil {
		return err
	}
	keep := 0
	f, err := promptcache.Open(c.PromptCache, owner, s.compute, s.nvocab, s.nctx)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	default:
		keep = min(commonPrefix(f.Tokens, ids), len(ids)-1)
		if keep > 0 {
			if err := f.Restore(s.compute, keep); err != nil {
				return err
			}
		}
	}
	fmt.Fprint(os.Stdout, text)
	res, err := generate.RunTokens(s.model, s.tok, ids, generate.Options{
		NPredict: g.NPredict, NCtx: s.nctx, Batch: g.Batch, Sampling: samp,
		IgnoreEOS: g.IgnoreEOS, Out: os.Stdout, Keep: keep,
		AfterPrefill: func() error {
			return promptcache.Save(c.PromptCache, owner, s.compute, ids, c.inputs...)
		},
	})
	fmt.Fprintln(os.Stdout)
	if err != nil {
		return err
	}
	if g.Stats {
		fmt.Fprintf(os.Stderr, "prompt cache %s: %d of %d prompt tokens reused, %d prefilled\n", c.PromptCache, keep, len(ids), len(ids)-keep)
	}
	s.printStats(g, res)
	return nil
}
