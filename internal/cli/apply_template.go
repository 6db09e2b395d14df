package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/minfer/minfer/chat"
	"github.com/minfer/minfer/compiler"
	"github.com/minfer/minfer/frontends/gguf"
	"github.com/minfer/minfer/plan"
	"github.com/minfer/minfer/tokenizer"
)

// TemplateFlags choose the chat template of chat and apply-template.
type TemplateFlags struct {
	ChatTemplateFile string `help:"Jinja chat template file, overriding the model's tokenizer.chat_template." name:"chat-template-file" type:"existingfile"`
	ChatTemplate     string `help:"Built-in template for a model without one: chatml." name:"chat-template"`
	NoThinking       bool   `help:"Render with enable_thinking=false (Qwen3 and other thinking templates)." name:"no-thinking"`
}

// maxTemplateBytes bounds a template file (real ones are a few KiB; the
// largest published ones under 64 KiB).
const maxTemplateBytes = 1 << 20

// template picks the template: --chat-template-file, else --chat-template
// NAME, else the model's own (fromModel, "" when it has none).
func (f TemplateFlags) template(model, fromModel string) (*chat.Template, error) {
	src := fromModel
	switch {
	case f.ChatTemplateFile != "":
		b, err := readText(f.ChatTemplateFile, maxTemplateBytes, "larger than 1 MiB: not a chat template")
		if err != nil {
			return nil, fmt.Errorf("--chat-template-file: %w", err)
		}
		src = b
	case f.ChatTemplate != "":
		b, ok := chat.Builtin(f.ChatTemplate)
		if !ok {
			return nil, fmt.Errorf("--chat-template %q: unknown built-in template (known: chatml); use --chat-template-file for a Jinja file", f.ChatTemplate)
		}
		src = b
	case src == "":
		return nil, fmt.Errorf("%s has no chat template (no %s key): give one with --chat-template-file FILE.jinja, or --chat-template chatml for the ChatML format", model, compiler.KeyChatTemplate)
	}
	t, err := chat.Parse(src)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// renderOptions are the template variables that come from the vocabulary.
func (f TemplateFlags) renderOptions(tok *tokenizer.Tokenizer) chat.Options {
	o := chat.Options{AddBOS: tok.AddBOS(), AddEOS: tok.AddEOS(), AddGenerationPrompt: true}
	if tok.BOS() >= 0 {
		o.BOS = tok.TokenText(tok.BOS())
	}
	if tok.EOS() >= 0 {
		o.EOS = tok.TokenText(tok.EOS())
	}
	if f.NoThinking {
		no := false
		o.EnableThinking = &no
	}
	return o
}

// modelTemplate reads the chat template and tokenizer of a GGUF or plan
// file without loading weights.
func modelTemplate(path string) (string, *tokenizer.Tokenizer, error) {
	kind, err := fileKind(path)
	if err != nil {
		return "", nil, err
	}
	var src string
	var v *tokenizer.Vocab
	if kind == "gguf" {
		f, err := gguf.Open(path)
		if err != nil {
			return "", nil, err
		}
		defer f.Close()
		if f.Has(compiler.KeyChatTemplate) {
			if src, err = f.String(compiler.KeyChatTemplate); err != nil {
				return "", nil, err
			}
		}
		if v, err = gguf.LoadVocab(f); err != nil {
			return "", nil, err
		}
	} else {
		l, err := plan.OpenWith(path, plan.OpenOptions{SkipWeightChecksum: true, SkipSourceHash: true})
		if err != nil {
			return "", nil, err
		}
		defer l.Close()
		if l.Vocab == nil {
			return "", nil, fmt.Errorf("%s: the plan has no tokenizer", path)
		}
		src, v = l.ChatTemplate, l.Vocab
	}
	tok, err := tokenizer.New(v)
	return src, tok, err
}

// ApplyTemplateCmd is `minfer apply-template`: the prompt a chat template
// makes of a conversation, as llama-server's POST /apply-template returns
// it.
type ApplyTemplateCmd struct {
	Model    string `arg:"" help:"GGUF model or plan.bin." type:"existingfile"`
	Messages string `help:"JSON file: an OpenAI-style array of {\"role\", \"content\"} (- for standard input)." required:""`
	Tools    string `help:"JSON file: an array of OpenAI tool definitions, for templates that render them." type:"existingfile"`
	NoAddGen bool   `help:"Leave out the assistant turn's opening (add_generation_prompt=false)." name:"no-generation-prompt"`
	Date     string `help:"Render as on this date (YYYY-MM-DD) instead of today, for strftime_now and date_string."`
	TemplateFlags
}

// maxMessagesBytes bounds the messages file.
const maxMessagesBytes = 64 << 20

// Run prints the rendered prompt, with no added newline.
func (c *ApplyTemplateCmd) Run() error {
	src, tok, err := modelTemplate(c.Model)
	if err != nil {
		return err
	}
	tmpl, err := c.template(c.Model, src)
	if err != nil {
		return err
	}
	msgs, err := readText(c.Messages, maxMessagesBytes, "larger than 64 MiB")
	if err != nil {
		return fmt.Errorf("--messages: %w", err)
	}
	o := c.renderOptions(tok)
	o.AddGenerationPrompt = !c.NoAddGen
	if c.Tools != "" {
		b, err := readText(c.Tools, maxMessagesBytes, "larger than 64 MiB")
		if err != nil {
			return fmt.Errorf("--tools: %w", err)
		}
		o.Tools = []byte(b)
	}
	if c.Date != "" {
		if o.Now, err = time.ParseInLocation("2006-01-02", c.Date, time.Local); err != nil {
			return fmt.Errorf("--date %q: want YYYY-MM-DD", c.Date)
		}
	}
	out, err := tmpl.Render([]byte(msgs), o)
	if err != nil {
		return fmt.Errorf("%s: %w", c.Messages, err)
	}
	_, err = os.Stdout.WriteString(out)
	return err
}
