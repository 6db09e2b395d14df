package chat

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minfer/minfer/frontends/gguf"
	"github.com/minfer/minfer/internal/fixtures"
	"github.com/minfer/minfer/tokenizer"
)

// fixtureCase is one rendering in ../shared/fixtures/chat.
type fixtureCase struct {
	Template   string          `json:"template"`
	Messages   json.RawMessage `json:"messages"`
	AddGen     bool            `json:"add_generation_prompt"`
	Prompt     string          `json:"prompt"`
	Vocab      string          `json:"vocab"`
	RenderedOn string          `json:"rendered_on"`
}

// vocabOptions reads bos_token/eos_token and add_bos/add_eos from a vocab
// GGUF, as llama.cpp takes them from the model.
func vocabOptions(t *testing.T, path string) Options {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, err := gguf.LoadVocab(f)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := tokenizer.New(v)
	if err != nil {
		t.Fatal(err)
	}
	return Options{BOS: tk.TokenText(tk.BOS()), EOS: tk.TokenText(tk.EOS()), AddBOS: tk.AddBOS(), AddEOS: tk.AddEOS()}
}

// TestFixtures renders llama.cpp's fixture cases byte for byte, the render
// date fixed to the fixture's rendered_on.
func TestFixtures(t *testing.T) {
	dir := filepath.Dir(fixtures.Path(t, "chat", "README.md"))
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixture cases in %s (%v)", dir, err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var c fixtureCase
			if err := json.Unmarshal(b, &c); err != nil {
				t.Fatal(err)
			}
			src, err := os.ReadFile(filepath.Join(dir, "templates", c.Template+".jinja"))
			if err != nil {
				t.Fatal(err)
			}
			tmpl, err := Parse(string(src))
			if err != nil {
				t.Fatal(err)
			}
			o := vocabOptions(t, fixtures.Path(t, "tokenizer", c.Vocab))
			o.AddGenerationPrompt = c.AddGen
			o.Now, err = time.ParseInLocation("2006-01-02", c.RenderedOn, time.Local)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tmpl.Render(c.Messages, o)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.Prompt {
				t.Errorf("rendering differs from llama.cpp's\n got %q\nwant %q", got, c.Prompt)
			}
		})
	}
}

// conversation is the conversation of llama.cpp's test-chat-template.
var conversation = []Message{
	{"system", "You are a helpful assistant"},
	{"user", "Hello"},
	{"assistant", "Hi there"},
	{"user", "Who are you"},
	{"assistant", "   I am an assistant   "},
	{"user", "Another question"},
}

var fixedNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.Local)

func ptr[T any](v T) *T { return &v }

// TestFamilies renders the published templates of other model families
// (chat/testdata, each as its model ships it in tokenizer.chat_template)
// with the special tokens of their vocabs. The expected strings were
// written from reading each template under llama.cpp's rules (trim_blocks,
// lstrip_blocks, BOS removed when the vocab adds it, system merged into
// the first user turn when the template has no system role).
func TestFamilies(t *testing.T) {
	const qwenTools = `[{"type": "function", "function": {"name": "get_weather", "description": "Weather <now> & later", "parameters": {"type": "object", "properties": {"zip": {"type": "string"}, "city": {"type": "string"}}, "required": ["city"]}}}]`
	qwenOpts := Options{BOS: "<|endoftext|>", EOS: "<|im_end|>"}
	cases := []struct {
		name, file string
		msgs       []Message
		o          Options
		want       string
	}{
		{"qwen3", "Qwen-Qwen3-0.6B.jinja", conversation, qwenOpts,
			"<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n<|im_start|>assistant\n   I am an assistant   <|im_end|>\n<|im_start|>user\nAnother question<|im_end|>\n<|im_start|>assistant\n"},
		{"qwen3-no-thinking", "Qwen-Qwen3-0.6B.jinja", conversation[5:], Options{BOS: "<|endoftext|>", EOS: "<|im_end|>", EnableThinking: ptr(false)},
			"<|im_start|>user\nAnother question<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"},
		{"qwen3-tools", "Qwen-Qwen3-0.6B.jinja", conversation[5:], Options{BOS: "<|endoftext|>", EOS: "<|im_end|>", Tools: json.RawMessage(qwenTools)},
			"<|im_start|>system\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" +
				`{"type": "function", "function": {"name": "get_weather", "description": "Weather <now> & later", "parameters": {"type": "object", "properties": {"zip": {"type": "string"}, "city": {"type": "string"}}, "required": ["city"]}}}` +
				"\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n<|im_start|>user\nAnother question<|im_end|>\n<|im_start|>assistant\n"},
		{"llama-3.1", "meta-llama-Llama-3.1-8B-Instruct.jinja", conversation, Options{BOS: "<|begin_of_text|>", EOS: "<|eot_id|>", AddBOS: true},
			"<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 01 Dec 2026\n\nYou are a helpful assistant<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWho are you<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nI am an assistant<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nAnother question<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
		{"llama-3.1-tools", "meta-llama-Llama-3.1-8B-Instruct.jinja", conversation[5:], Options{BOS: "<|begin_of_text|>", EOS: "<|eot_id|>", AddBOS: true, Tools: json.RawMessage(qwenTools)},
			"<|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\nCutting Knowledge Date: December 2023\nToday Date: 01 Dec 2026\n\n<|eot_id|>" +
				"<|start_header_id|>user<|end_header_id|>\n\nGiven the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.\n\n" +
				`Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.Do not use variables.` + "\n\n" +
				"{\n    \"type\": \"function\",\n    \"function\": {\n        \"name\": \"get_weather\",\n        \"description\": \"Weather <now> & later\",\n" +
				"        \"parameters\": {\n            \"type\": \"object\",\n            \"properties\": {\n                \"zip\": {\n                    \"type\": \"string\"\n                },\n" +
				"                \"city\": {\n                    \"type\": \"string\"\n                }\n            },\n            \"required\": [\n                \"city\"\n            ]\n        }\n    }\n}" +
				"\n\nAnother question<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
		{"mistral-nemo", "mistralai-Mistral-Nemo-Instruct-2407.jinja", conversation, Options{BOS: "<s>", EOS: "</s>", AddBOS: true},
			"[INST]Hello[/INST]Hi there</s>[INST]Who are you[/INST]   I am an assistant   </s>[INST]You are a helpful assistant\n\nAnother question[/INST]"},
		{"phi-3.5", "microsoft-Phi-3.5-mini-instruct.jinja", conversation, Options{BOS: "<s>", EOS: "<|endoftext|>", AddBOS: true},
			"<|system|>\nYou are a helpful assistant<|end|>\n<|user|>\nHello<|end|>\n<|assistant|>\nHi there<|end|>\n<|user|>\nWho are you<|end|>\n<|assistant|>\n   I am an assistant   <|end|>\n<|user|>\nAnother question<|end|>\n<|assistant|>\n"},
		{"gemma-2", "google-gemma-2-2b-it.jinja", conversation, Options{BOS: "<bos>", EOS: "<eos>", AddBOS: true},
			"<start_of_turn>user\nYou are a helpful assistant\nHello<end_of_turn>\n<start_of_turn>model\nHi there<end_of_turn>\n<start_of_turn>user\nWho are you<end_of_turn>\n<start_of_turn>model\nI am an assistant<end_of_turn>\n<start_of_turn>user\nAnother question<end_of_turn>\n<start_of_turn>model\n"},
		{"deepseek-r1-distill", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", conversation, Options{BOS: "<｜begin▁of▁sentence｜>", EOS: "<｜end▁of▁sentence｜>", AddBOS: true},
			"You are a helpful assistant<｜User｜>Hello<｜Assistant｜>Hi there<｜end▁of▁sentence｜><｜User｜>Who are you<｜Assistant｜>   I am an assistant   <｜end▁of▁sentence｜><｜User｜>Another question<｜Assistant｜><think>\n"},
		{"granite-3.3", "ibm-granite-granite-3.3-2B-Instruct.jinja", conversation, Options{BOS: "<|end_of_text|>", EOS: "<|end_of_text|>"},
			"<|start_of_role|>system<|end_of_role|>You are a helpful assistant<|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Hello<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>Hi there<|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Who are you<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>   I am an assistant   <|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Another question<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>"},
		{"granite-3.3-default-system", "ibm-granite-granite-3.3-2B-Instruct.jinja", conversation[5:], Options{BOS: "<|end_of_text|>", EOS: "<|end_of_text|>"},
			"<|start_of_role|>system<|end_of_role|>Knowledge Cutoff Date: April 2024. Today's Date: December 01, 2026. You are Granite, developed by IBM. You are a helpful AI assistant.<|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Another question<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>"},
		{"smollm3", "HuggingFaceTB-SmolLM3-3B.jinja", conversation, Options{BOS: "<|im_start|>", EOS: "<|im_end|>"},
			"<|im_start|>system\n## Metadata\n\nKnowledge Cutoff Date: June 2025\nReasoning Mode: /think\n\n## Custom Instructions\n\nYou are a helpful assistant\n\n<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n<|im_start|>assistant\n   I am an assistant   <|im_end|>\n<|im_start|>user\nAnother question<|im_end|>\n<|im_start|>assistant\n"},
		{"smollm3-no-thinking", "HuggingFaceTB-SmolLM3-3B.jinja", conversation[5:], Options{BOS: "<|im_start|>", EOS: "<|im_end|>", EnableThinking: ptr(false)},
			"<|im_start|>system\n## Metadata\n\nKnowledge Cutoff Date: June 2025\nReasoning Mode: /no_think\n\n## Custom Instructions\n\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face.\n\n<|im_end|>\n<|im_start|>user\nAnother question<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n"},
		{"chatml", "", conversation[:2], qwenOpts,
			"<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := ChatML
			if c.file != "" {
				b, err := os.ReadFile(filepath.Join("testdata", c.file))
				if err != nil {
					t.Fatal(err)
				}
				src = string(b)
			}
			tmpl, err := Parse(src)
			if err != nil {
				t.Fatal(err)
			}
			o := c.o
			o.AddGenerationPrompt = true
			o.Now = fixedNow
			got, err := tmpl.RenderMessages(c.msgs, o)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("\n got %q\nwant %q", got, c.want)
			}
		})
	}
}

// TestRefused: template errors surface as errors naming the cause.
func TestRefused(t *testing.T) {
	gemma, err := os.ReadFile(filepath.Join("testdata", "google-gemma-2-2b-it.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, src, msgs, want string
	}{
		{"raise_exception", string(gemma), `[{"role":"user","content":"a"},{"role":"user","content":"b"}]`, "Conversation roles must alternate"},
		{"not-an-array", ChatML, `{"role":"user"}`, "JSON array"},
		{"no-role", ChatML, `[{"content":"x"}]`, `no "role"`},
		{"bad-json", ChatML, `[{"role":`, "messages"},
		{"syntax", "{% for m in messages %}", `[]`, "chat template"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tmpl, err := Parse(c.src)
			if err == nil {
				_, err = tmpl.Render([]byte(c.msgs), Options{AddGenerationPrompt: true})
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestStrftime(t *testing.T) {
	tm := time.Date(2026, 3, 7, 15, 4, 5, 0, time.UTC)
	for f, want := range map[string]string{
		"%d %b %Y": "07 Mar 2026", "%B %d, %Y": "March 07, 2026", "%Y-%m-%d %H:%M:%S": "2026-03-07 15:04:05",
		"%A %a %I%p %j %e %%": "Saturday Sat 03PM 066  7 %", "%F %T %q": "2026-03-07 15:04:05 %q",
	} {
		if got := Strftime(f, tm); got != want {
			t.Errorf("Strftime(%q) = %q, want %q", f, got, want)
		}
	}
}

// TestContentParts: OpenAI content parts become newline-joined text for a
// template that takes string content (as llama.cpp normalizes them);
// non-text parts are refused.
func TestContentParts(t *testing.T) {
	tmpl, err := Parse(ChatML)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tmpl.Render([]byte(`[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]`), Options{AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := "<|im_start|>user\na\nb<|im_end|>\n<|im_start|>assistant\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	_, err = tmpl.Render([]byte(`[{"role":"user","content":[{"type":"image_url","image_url":"x"}]}]`), Options{})
	if err == nil || !strings.Contains(err.Error(), "only") {
		t.Errorf("image part: %v", err)
	}
}

// TestTojson: tojson prints as llama.cpp's: key order kept, Python
// separators, indent layout (0: newlines only), no HTML escaping,
// ensure_ascii escapes, C++-stream floats, custom separators, inside a
// macro too; sort_keys is refused.
func TestTojson(t *testing.T) {
	data := `[{"role":"user","content":"x","z":1,"a":[1.5,1.0,1e-7,"é<&\"\n",true,null,{}, []],"m":{"k":"🐈"}}]`
	cases := []struct{ tmpl, want string }{
		{"{{ messages[0] | tojson }}", `{"role": "user", "content": "x", "z": 1, "a": [1.5, 1, 1e-07, "é<&\"\n", true, null, {}, []], "m": {"k": "🐈"}}`},
		{"{{ messages[0].m | tojson(indent=2) }}", "{\n  \"k\": \"🐈\"\n}"},
		{"{{ messages[0].a[4:] | tojson(indent=0) }}", "[\ntrue,\nnull,\n{},\n[]\n]"},
		{"{{ messages[0].m | tojson(ensure_ascii=true) }}", `{"k": "\ud83d\udc08"}`},
		{"{{ messages[0].a[:2] | tojson(separators=(',', ':')) }}", `[1.5,1]`},
		{"{% macro f(x) %}{{ x|tojson }}{% endmacro %}{{ f(messages[0].m) }}", `{"k": "🐈"}`},
		{`{{ "%s-%d %% %s"|format(messages[0].role, messages[0].z, messages[0].a[4]) }}`, "user-1 % True"},
	}
	for _, c := range cases {
		tmpl, err := Parse(c.tmpl)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tmpl.Render([]byte(data), Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.tmpl, err)
		}
		if got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.tmpl, got, c.want)
		}
	}
	tmpl, err := Parse("{{ messages | tojson(sort_keys=true) }}")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tmpl.Render([]byte(data), Options{}); err == nil || !strings.Contains(err.Error(), "sort_keys") {
		t.Errorf("sort_keys: %v", err)
	}
}
