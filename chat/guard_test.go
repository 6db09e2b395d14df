package chat

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGuards: templates that crashed or would crash the process (a panic
// in the engine, a list of 10^12 items, unbounded recursion) give an error
// naming the problem, and the guards leave ordinary templates alone.
func TestGuards(t *testing.T) {
	cases := []struct {
		name, src string
		parseErr  string // Parse's error, "" for none
		renderErr string // Render's error, "" for none
		want      string // the rendering when there is no error
	}{
		{"negative-repeat", "{{ 'a' * -1 }}", "", "template engine failed", ""},
		{"negative-indent", "{{ 'x'|indent(-5) }}", "", "template engine failed", ""},
		{"huge-range", "{% for i in range(1000000000000) %}{% endfor %}", "", "more than the 1048576", ""},
		{"huge-negative-range", "{{ range(0, -9223372036854775807, -1)|length }}", "", "more than", ""},
		{"widest-range", "{{ range(-9223372036854775807 - 1, 9223372036854775807, 2)|length }}", "", "more than", ""},
		{"range-not-int", "{{ range('a') }}", "", "not an integer", ""},
		{"range-step-zero", "{{ range(1, 5, 0) }}", "", "step must not be zero", ""},
		{"self-recursion", "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "macro f calls itself (f → f)", "", ""},
		{"mutual-recursion", "{%- macro a() -%}{{ b() }}{%- endmacro -%}{%- macro b() -%}{% call a() %}{% endcall %}{%- endmacro -%}{{ a() }}",
			"macro a calls itself (a → b → a)", "", ""},
		{"and-recursion", "{% macro f(n) %}{{ n > 0 and f(n - 1) }}{% endmacro %}{{ f(3) }}", "macro f calls itself", "", ""},
		{"filter-recursion", "{% macro format(x) %}{{ '%d'|format(x) }}{% endmacro %}{{ format(7) }}", "macro format calls itself", "", ""},
		{"filter-recursion-no-args", "{% macro shout(x) %}{{ x|shout }}{% endmacro %}{{ shout('a') }}", "macro shout calls itself", "", ""},
		{"method-not-a-call", "{% macro items(d) %}{% for k, v in d. items() %}{{ k }}{% endfor %}{% endmacro %}{{ items({'a': 1}) }}", "", "", "a"},
		{"range", "{% for i in range(3) %}{{ i }}{% endfor %}|{{ range(5, 0, -2)|join(',') }}|{{ range(2, 4)|list|length }}|{{ range(0)|length }}", "", "", "012|5,3,1|2|0"},
		{"macros", "{% macro item(x) %}[{{ x.item }}]{% endmacro %}{% macro all(ms) %}{% for m in ms %}{{ item(m) }}{% endfor %}{% endmacro %}{{ all([{'item': 1}, {'item': 2}]) }}", "", "", "[1][2]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tmpl, err := Parse(c.src)
			if c.parseErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.parseErr) {
					t.Fatalf("Parse error %v, want one containing %q", err, c.parseErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			out, err := tmpl.Render([]byte(`[{"role":"user","content":"hi"}]`), Options{})
			if c.renderErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.renderErr) {
					t.Fatalf("Render = %q, %v; want an error containing %q", out, err, c.renderErr)
				}
				return
			}
			if err != nil || out != c.want {
				t.Fatalf("Render = %q, %v; want %q", out, err, c.want)
			}
		})
	}
}

// FuzzTemplate compiles and renders arbitrary template sources: no input
// may panic or kill the process. Sources with '*' are skipped (string
// repetition and powers are the guards' known gap, see guard.go), as are
// integer literals past 4 digits (filters such as center and indent build
// strings that wide); range is capped at 16 items so nested loops stay
// short.
//
//	go test ./chat -run '^$' -fuzz FuzzTemplate -fuzztime 2m
func FuzzTemplate(f *testing.F) {
	f.Add(ChatML)
	f.Add("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}")
	f.Add("{{ 'x'|indent(-5) }}{{ range(3)|join }}{{ messages[0]['content']|tojson }}")
	if paths, err := filepath.Glob(filepath.Join("testdata", "*.jinja")); err == nil {
		for _, p := range paths {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(string(b))
			}
		}
	}
	old := maxRangeItems
	maxRangeItems = 16
	defer func() { maxRangeItems = old }()
	msgs := []byte(`[{"role":"system","content":"s"},{"role":"user","content":"u"},{"role":"assistant","content":"a"}]`)
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 1<<16 || strings.Contains(src, "*") || longNumber(src) {
			t.Skip()
		}
		tmpl, err := Parse(src)
		if err != nil {
			return
		}
		tmpl.Render(msgs, Options{BOS: "<s>", EOS: "</s>", AddGenerationPrompt: true, Tools: []byte(`[{"type":"function"}]`)})
	})
}

// longNumber reports whether s has a run of more than 4 digits.
func longNumber(s string) bool {
	run := 0
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			if run++; run > 4 {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
}
