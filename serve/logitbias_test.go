package serve

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestLogitBias: OpenAI's logit_bias is added to its tokens' logits before
// sampling, on both endpoints: +100 on one token makes greedy decoding
// pick it every step, -100 on the token greedy decoding picked first
// bans it; a bias of 0 changes nothing; bad entries are refused naming
// the entry.
func TestLogitBias(t *testing.T) {
	cfg := fakeConfig(t, newFake(2, 64, 1024))
	ts := startServer(t, cfg)
	ctx := context.Background()
	run := func(path string, bias map[string]any) string {
		t.Helper()
		req := map[string]any{"max_tokens": 5, "temperature": 0, "ignore_eos": true}
		if strings.Contains(path, "chat") {
			req["messages"] = []map[string]string{{"role": "user", "content": "hello"}}
		} else {
			req["prompt"] = "hello there"
		}
		if bias != nil {
			req["logit_bias"] = bias
		}
		o, err := ts.complete(ctx, path, req, 0)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return o.Text
	}
	// A token whose piece is plain text.
	var forced int32 = -1
	for id := int32(300); id < 1024; id++ {
		if p := string(cfg.Tokenizer.TokenPiece(id)); len(p) > 1 && strings.Trim(p, "abcdefghijklmnopqrstuvwxyz") == "" {
			forced = id
			break
		}
	}
	if forced < 0 {
		t.Fatal("no plain-text token among 300..1023")
	}
	piece := string(cfg.Tokenizer.TokenPiece(forced))
	for _, path := range []string{"/v1/completions", "/v1/chat/completions"} {
		plain := run(path, nil)
		if got := run(path, map[string]any{fmt.Sprint(forced): 0}); got != plain {
			t.Errorf("%s: a zero bias changed the text: %q, without %q", path, got, plain)
		}
		if got, want := run(path, map[string]any{fmt.Sprint(forced): 100}), strings.Repeat(piece, 5); got != want {
			t.Errorf("%s: +100 on %d (%q): %q, want %q", path, forced, piece, got, want)
		}
		// Ban every token whose piece starts the plain text's first piece.
		ban := map[string]any{}
		for id := int32(0); id < 1024; id++ {
			if p := string(cfg.Tokenizer.TokenPiece(id)); p != "" && strings.HasPrefix(plain, p) {
				ban[fmt.Sprint(id)] = -100
			}
		}
		if len(ban) == 0 {
			t.Fatalf("%s: no token begins %q", path, plain)
		}
		if got := run(path, ban); got == plain {
			t.Errorf("%s: banning the first token's candidates left the text as it was: %q", path, got)
		}
	}
	for _, c := range []struct{ body, msg string }{
		{`{"prompt": "a", "logit_bias": {"1024": 1}}`, `1024\" is not a token id`},
		{`{"prompt": "a", "logit_bias": {"-1": 1}}`, `-1\" is not a token id`},
		{`{"prompt": "a", "logit_bias": {"x": 1}}`, `x\" is not a token id`},
		{`{"prompt": "a", "logit_bias": {"5": 101}}`, "logit_bias[5]=101"},
		{`{"prompt": "a", "logit_bias": {"5": 1, "05": 2}}`, "token 5 given twice"},
		{`{"prompt": "a", "logit_bias": {"5": "x"}}`, "logit_bias"},
	} {
		status, _, body := ts.do(t, "POST", "/v1/completions", c.body)
		if status != 400 || !strings.Contains(string(body), c.msg) {
			t.Errorf("%s: %d %s, want 400 naming %q", c.body, status, body, c.msg)
		}
	}
}
