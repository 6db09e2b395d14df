// Package chat renders a model's chat template — the Jinja source a GGUF
// carries in tokenizer.chat_template — into the prompt text the model was
// trained on, as llama.cpp renders it (llama-server --jinja, POST
// /apply-template): the same variables (messages, add_generation_prompt,
// bos_token, eos_token, enable_thinking, tools, date_string, datetime,
// strftime_now, raise_exception), the same Jinja whitespace defaults
// (trim_blocks and lstrip_blocks on, one trailing newline of the source
// dropped), the same message fix-ups (a "developer" role becomes "system";
// a system message is merged into the next message when the template
// ignores system messages) and the same leading-BOS/trailing-EOS removal
// when the tokenizer adds those tokens itself.
//
// The Jinja engine is github.com/ardanlabs/jinja (pure Go, no
// dependencies, written for GGUF chat templates): its dicts keep insertion
// order and its tojson uses Python's ", " / ": " separators without HTML
// escaping, as llama.cpp's does.
package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ardanlabs/jinja"
)

// ChatML is the ChatML prompt format (the Qwen/OpenAI <|im_start|> turns),
// used when a model has no template and --chat-template chatml is given.
const ChatML = "{%- for message in messages -%}\n" +
	"{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' -}}\n" +
	"{%- endfor -%}\n" +
	"{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"

// Builtin returns the source of a named built-in template ("chatml").
func Builtin(name string) (string, bool) {
	switch strings.ToLower(name) {
	case "chatml":
		return ChatML, true
	}
	return "", false
}

// Message is one turn of a conversation.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Template is a parsed chat template.
type Template struct {
	Source string
	t      *jinja.Template
	// systemRole is false when the template drops or refuses a system
	// message (Gemma): the system text is then merged into the next turn.
	systemRole bool
	// typedContent is true when the template renders OpenAI content parts
	// ([{"type": "text", "text": ...}]) itself; otherwise their texts are
	// joined with newlines into a string first, as llama.cpp does.
	typedContent bool
}

// Parse compiles a chat template. Like Jinja's default
// (keep_trailing_newline=False) and llama.cpp, one trailing newline of the
// source is not part of the template.
func Parse(src string) (*Template, error) {
	if strings.TrimSpace(src) == "" {
		return nil, errors.New("chat template is empty")
	}
	if err := checkRecursion(src); err != nil {
		return nil, err
	}
	body := renameTojson(strings.TrimSuffix(src, "\n"))
	jt, err := compile(body)
	if err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	t := &Template{Source: src, t: jt}
	t.systemRole = t.probeSystemRole()
	t.typedContent = t.probeTypedContent()
	return t, nil
}

// probeTypedContent renders a user message whose content is a list of one
// text part and reports whether the text comes out by itself (not as the
// printed list).
func (t *Template) probeTypedContent() bool {
	const needle = "minfer-typed-probe-7f3a"
	part := jinja.NewDict()
	part.AsDict().Set("type", jinja.NewString("text"))
	part.AsDict().Set("text", jinja.NewString(needle))
	m := jinja.NewDict()
	m.AsDict().Set("role", jinja.NewString("user"))
	m.AsDict().Set("content", jinja.NewList([]jinja.Value{part}))
	out, err := t.render(jinja.NewList([]jinja.Value{m}), Options{AddGenerationPrompt: true}, false)
	return err == nil && strings.Contains(out, needle) && !strings.Contains(out, "'text'") && !strings.Contains(out, `"text"`)
}

// probeSystemRole renders a system+user conversation and reports whether
// the system text reaches the output (llama.cpp's capability check asks
// whether the template reads it; a template that raises on a system role
// fails both ways).
func (t *Template) probeSystemRole() bool {
	const needle = "minfer-system-probe-7f3a"
	msgs := []Message{{Role: "system", Content: needle}, {Role: "user", Content: "User message"}}
	out, err := t.render(messagesValue(msgs), Options{AddGenerationPrompt: true}, false)
	return err == nil && strings.Contains(out, needle)
}

// Options are the render inputs besides the messages.
type Options struct {
	BOS, EOS string // bos_token and eos_token: the vocab's token texts
	// AddBOS / AddEOS: the tokenizer adds BOS / EOS itself, so a leading
	// BOS / trailing EOS text is removed from the rendering.
	AddBOS, AddEOS      bool
	AddGenerationPrompt bool
	// EnableThinking is the template's enable_thinking (llama.cpp's
	// default: true); nil means true.
	EnableThinking *bool
	// Tools is a JSON array of OpenAI tool definitions, rendered when the
	// template prints them; nil or empty leaves `tools` undefined.
	Tools json.RawMessage
	// Now is the time strftime_now, date_string and datetime show; zero
	// means the current local time.
	Now time.Time
}

// Render renders messages (a JSON array of message objects with at least
// "role" and "content"; other fields such as tool_calls are passed through
// in their order).
func (t *Template) Render(messagesJSON []byte, o Options) (string, error) {
	v, err := decodeJSON(messagesJSON)
	if err != nil {
		return "", fmt.Errorf("messages: %w", err)
	}
	if !v.IsList() {
		return "", errors.New("messages: want a JSON array of {\"role\", \"content\"} objects")
	}
	for i, m := range v.AsList().Items {
		if !m.IsDict() {
			return "", fmt.Errorf("messages[%d]: want an object with \"role\" and \"content\"", i)
		}
		r, ok := m.AsDict().Get("role")
		if !ok || !r.IsString() {
			return "", fmt.Errorf("messages[%d]: no \"role\" string", i)
		}
		if c, ok := m.AsDict().Get("content"); ok && c.IsList() && !t.typedContent {
			text, err := joinParts(c)
			if err != nil {
				return "", fmt.Errorf("messages[%d].content: %w", i, err)
			}
			m.AsDict().Set("content", jinja.NewString(text))
		}
	}
	return t.render(v, o, true)
}

// RenderMessages renders a plain conversation.
func (t *Template) RenderMessages(msgs []Message, o Options) (string, error) {
	return t.render(messagesValue(msgs), o, true)
}

// joinParts joins the texts of OpenAI content parts with newlines (what
// llama.cpp gives a template that takes string content only).
func joinParts(c jinja.Value) (string, error) {
	var b strings.Builder
	for i, p := range c.AsList().Items {
		if !p.IsDict() {
			return "", fmt.Errorf("part %d is not an object", i)
		}
		typ, _ := p.AsDict().Get("type")
		text, _ := p.AsDict().Get("text")
		if !typ.IsString() || typ.AsString() != "text" || !text.IsString() {
			return "", fmt.Errorf("part %d: only {\"type\": \"text\", \"text\": ...} parts are supported", i)
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(text.AsString())
	}
	return b.String(), nil
}

func messagesValue(msgs []Message) jinja.Value {
	items := make([]jinja.Value, len(msgs))
	for i, m := range msgs {
		d := jinja.NewDict()
		d.AsDict().Set("role", jinja.NewString(m.Role))
		d.AsDict().Set("content", jinja.NewString(m.Content))
		items[i] = d
	}
	return jinja.NewList(items)
}

func (t *Template) render(messages jinja.Value, o Options, fixups bool) (string, error) {
	if fixups {
		messages = t.fixMessages(messages)
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	now = now.Local()
	thinking := o.EnableThinking == nil || *o.EnableThinking
	data := map[string]jinja.Value{
		"messages":        messages,
		"bos_token":       jinja.NewString(o.BOS),
		"eos_token":       jinja.NewString(o.EOS),
		"enable_thinking": jinja.NewBool(thinking),
		"date_string":     jinja.NewString(Strftime("%d %b %Y", now)),
		"datetime":        jinja.NewString(Strftime("%b %d %Y", now)),
		tojsonFilter:      jinja.NewCallable(tojsonFilter, tojson),
		"format":          jinja.NewCallable("format", formatFilter), // the engine has none
		"range":           jinja.NewCallable("range", rangeFunc),     // bounded (guard.go)
		"strftime_now": jinja.NewCallable("strftime_now", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			if len(args) != 1 || !args[0].IsString() {
				return jinja.Undefined(), errors.New("strftime_now: want one format string")
			}
			return jinja.NewString(Strftime(args[0].AsString(), now)), nil
		}),
	}
	if o.AddGenerationPrompt {
		data["add_generation_prompt"] = jinja.NewBool(true)
	}
	if len(bytes.TrimSpace(o.Tools)) > 0 {
		tools, err := decodeJSON(o.Tools)
		if err != nil {
			return "", fmt.Errorf("tools: %w", err)
		}
		if !tools.IsList() {
			return "", errors.New("tools: want a JSON array")
		}
		if tools.AsList().Len() > 0 {
			data["tools"] = tools
		}
	}
	out, err := renderValues(t.t, data)
	if err != nil {
		return "", fmt.Errorf("chat template: %w", err)
	}
	if o.AddBOS && o.BOS != "" {
		out = strings.TrimPrefix(out, o.BOS)
	}
	if o.AddEOS && o.EOS != "" {
		out = strings.TrimSuffix(out, o.EOS)
	}
	return out, nil
}

// fixMessages applies llama.cpp's message fix-ups to a copy: "developer"
// becomes "system" (except for GPT-OSS templates, which know the role),
// and a leading system message is merged into the next message ("system
// \n next") when the template has no system role, or dropped when it is
// alone.
func (t *Template) fixMessages(v jinja.Value) jinja.Value {
	src := v.AsList().Items
	items := make([]jinja.Value, 0, len(src))
	for _, m := range src {
		items = append(items, copyDict(m))
	}
	if !strings.Contains(t.Source, "<|channel|>") {
		for _, m := range items {
			if r, _ := m.AsDict().Get("role"); r.IsString() && r.AsString() == "developer" {
				m.AsDict().Set("role", jinja.NewString("system"))
			}
		}
	}
	if !t.systemRole && len(items) > 0 {
		if r, _ := items[0].AsDict().Get("role"); r.IsString() && r.AsString() == "system" {
			if len(items) > 1 {
				sys, _ := items[0].AsDict().Get("content")
				next, _ := items[1].AsDict().Get("content")
				items[1].AsDict().Set("content", jinja.NewString(str(sys)+"\n"+str(next)))
			}
			items = items[1:]
		}
	}
	return jinja.NewList(items)
}

func str(v jinja.Value) string {
	if v.IsString() {
		return v.AsString()
	}
	return ""
}

func copyDict(m jinja.Value) jinja.Value {
	c := jinja.NewDict()
	for _, k := range m.AsDict().Keys {
		x, _ := m.AsDict().Get(k)
		c.AsDict().Set(k, x)
	}
	return c
}

// decodeJSON decodes JSON into template values, keeping object key order
// (tool schemas print in the order they were given, as in llama.cpp).
func decodeJSON(b []byte) (jinja.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return v, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return v, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

const maxDepth = 64

func decodeValue(dec *json.Decoder, depth int) (jinja.Value, error) {
	if depth > maxDepth {
		return jinja.Undefined(), fmt.Errorf("JSON nested deeper than %d", maxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return jinja.Undefined(), err
	}
	switch x := tok.(type) {
	case nil:
		return jinja.None(), nil
	case bool:
		return jinja.NewBool(x), nil
	case string:
		return jinja.NewString(x), nil
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return jinja.NewInt(i), nil
		}
		f, err := x.Float64()
		if err != nil {
			return jinja.Undefined(), err
		}
		return jinja.NewFloat(f), nil
	case json.Delim:
		switch x {
		case '[':
			var items []jinja.Value
			for dec.More() {
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return v, err
				}
				items = append(items, v)
			}
			if _, err := dec.Token(); err != nil {
				return jinja.Undefined(), err
			}
			if items == nil {
				items = []jinja.Value{}
			}
			return jinja.NewList(items), nil
		case '{':
			d := jinja.NewDict()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return jinja.Undefined(), err
				}
				k, ok := kt.(string)
				if !ok {
					return jinja.Undefined(), fmt.Errorf("object key %v is not a string", kt)
				}
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return v, err
				}
				d.AsDict().Set(k, v)
			}
			if _, err := dec.Token(); err != nil {
				return jinja.Undefined(), err
			}
			return d, nil
		}
	}
	return jinja.Undefined(), fmt.Errorf("unexpected JSON token %v", tok)
}
