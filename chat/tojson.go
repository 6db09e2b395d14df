package chat

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"
)

// The engine's own tojson formats indented JSON through encoding/json (keys
// sorted, < > & escaped), which is not what llama.cpp prints. Parse renames
// the tojson filter in the template source to tojsonFilter, a filter of
// ours that writes JSON exactly as llama.cpp's tojson does.
const tojsonFilter = "minfer_tojson"

var tojsonRE = regexp.MustCompile(`(\|\s*)tojson\b`)

func renameTojson(src string) string { return tojsonRE.ReplaceAllString(src, "${1}"+tojsonFilter) }

// tojson is llama.cpp's tojson filter: tojson(value, ensure_ascii=false,
// indent=none, separators=none, sort_keys=false). Keys keep their order;
// strings escape only ", \ and control characters (and non-ASCII with
// ensure_ascii); separators default to ", " (or "," with an indent) and
// ": "; with an indent every element goes on its own line (indent 0: no
// spaces); floats print as C++ streams do (6 significant digits);
// sort_keys is refused, as llama.cpp refuses it.
func tojson(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.Undefined(), errors.New("tojson: no value")
	}
	arg := func(name string, pos int) jinja.Value {
		if v, ok := kw[name]; ok {
			return v
		}
		if pos < len(args) {
			return args[pos]
		}
		return jinja.Undefined()
	}
	if s := arg("sort_keys", 4); s.IsTruthy() {
		return jinja.Undefined(), errors.New("tojson: sort_keys=true is not supported (nor by llama.cpp)")
	}
	indent := -1
	if v := arg("indent", 2); v.IsInt() {
		indent = int(v.AsInt())
		if indent < 0 || indent > 64 {
			return jinja.Undefined(), fmt.Errorf("tojson: indent %d out of range", indent)
		}
	}
	item, key := ", ", ": "
	if indent >= 0 {
		item = ","
	}
	if v := arg("separators", 3); v.IsList() {
		seps := v.AsList().Items
		if len(seps) > 0 && seps[0].IsString() {
			item = seps[0].AsString()
		}
		if len(seps) > 1 && seps[1].IsString() {
			key = seps[1].AsString()
		}
	}
	e := jsonEnc{indent: indent, item: item, key: key, ascii: arg("ensure_ascii", 1).IsTruthy()}
	if err := e.value(args[0], 0); err != nil {
		return jinja.Undefined(), err
	}
	return jinja.NewString(e.b.String()), nil
}

type jsonEnc struct {
	b         strings.Builder
	indent    int
	item, key string
	ascii     bool
}

func (e *jsonEnc) newline(level int) {
	if e.indent >= 0 {
		e.b.WriteByte('\n')
		e.b.WriteString(strings.Repeat(" ", level*e.indent))
	}
}

func (e *jsonEnc) value(v jinja.Value, level int) error {
	if level > maxDepth {
		return fmt.Errorf("tojson: nested deeper than %d", maxDepth)
	}
	switch {
	case v.IsNone() || v.IsUndefined():
		e.b.WriteString("null")
	case v.IsBool():
		e.b.WriteString(strconv.FormatBool(v.AsBool()))
	case v.IsInt():
		e.b.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		e.b.WriteString(strconv.FormatFloat(v.AsFloat(), 'g', 6, 64))
	case v.IsString():
		e.str(v.AsString())
	case v.IsList():
		items := v.AsList().Items
		e.b.WriteByte('[')
		for i, x := range items {
			e.newline(level + 1)
			if err := e.value(x, level+1); err != nil {
				return err
			}
			if i < len(items)-1 {
				e.b.WriteString(e.item)
			}
		}
		if len(items) > 0 {
			e.newline(level)
		}
		e.b.WriteByte(']')
	case v.IsDict():
		d := v.AsDict()
		e.b.WriteByte('{')
		for i, k := range d.Keys {
			e.newline(level + 1)
			e.str(k)
			e.b.WriteString(e.key)
			x, _ := d.Get(k)
			if err := e.value(x, level+1); err != nil {
				return err
			}
			if i < len(d.Keys)-1 {
				e.b.WriteString(e.item)
			}
		}
		if len(d.Keys) > 0 {
			e.newline(level)
		}
		e.b.WriteByte('}')
	default:
		e.b.WriteString("null")
	}
	return nil
}

func (e *jsonEnc) str(s string) {
	e.b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"':
			e.b.WriteString(`\"`)
		case c == '\\':
			e.b.WriteString(`\\`)
		case c == '\b':
			e.b.WriteString(`\b`)
		case c == '\f':
			e.b.WriteString(`\f`)
		case c == '\n':
			e.b.WriteString(`\n`)
		case c == '\r':
			e.b.WriteString(`\r`)
		case c == '\t':
			e.b.WriteString(`\t`)
		case c < 0x20:
			fmt.Fprintf(&e.b, `\u%04x`, c)
		case c >= 0x80 && e.ascii:
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				e.b.WriteString(`\ufffd`)
			} else if r >= 0x10000 {
				r -= 0x10000
				fmt.Fprintf(&e.b, `\u%04x\u%04x`, 0xd800+(r>>10)&0x3ff, 0xdc00+r&0x3ff)
			} else {
				fmt.Fprintf(&e.b, `\u%04x`, r)
			}
			i += n
			continue
		default:
			e.b.WriteByte(c)
		}
		i++
	}
	e.b.WriteByte('"')
}

// formatFilter is Jinja's format filter (value % args: "%s-%d"|format(a,
// b)), which the engine lacks: %s %d %i %f %x %% with no flags or widths
// beyond what Go's fmt shares with C for %f and %x.
func formatFilter(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 || !args[0].IsString() {
		return jinja.Undefined(), errors.New("format: the value must be a string")
	}
	f, rest := args[0].AsString(), args[1:]
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			b.WriteByte(f[i])
			continue
		}
		if i+1 == len(f) {
			return jinja.Undefined(), errors.New("format: incomplete format")
		}
		i++
		if f[i] == '%' {
			b.WriteByte('%')
			continue
		}
		if len(rest) == 0 {
			return jinja.Undefined(), errors.New("format: not enough arguments for format string")
		}
		a := rest[0]
		rest = rest[1:]
		switch f[i] {
		case 's':
			if a.IsString() {
				b.WriteString(a.AsString())
			} else {
				b.WriteString(a.String())
			}
		case 'd', 'i':
			switch {
			case a.IsInt():
				b.WriteString(strconv.FormatInt(a.AsInt(), 10))
			case a.IsFloat():
				b.WriteString(strconv.FormatInt(int64(a.AsFloat()), 10))
			default:
				return jinja.Undefined(), fmt.Errorf("format: %%%c needs a number", f[i])
			}
		case 'f', 'x':
			switch {
			case a.IsInt() && f[i] == 'x':
				fmt.Fprintf(&b, "%x", a.AsInt())
			case a.IsInt():
				fmt.Fprintf(&b, "%f", float64(a.AsInt()))
			case a.IsFloat() && f[i] == 'f':
				fmt.Fprintf(&b, "%f", a.AsFloat())
			default:
				return jinja.Undefined(), fmt.Errorf("format: %%%c needs a number", f[i])
			}
		default:
			return jinja.Undefined(), fmt.Errorf("format: %%%c is not supported (%%s %%d %%i %%f %%x %%%%)", f[i])
		}
	}
	if len(rest) > 0 {
		return jinja.Undefined(), errors.New("format: not all arguments converted during string formatting")
	}
	return jinja.NewString(b.String()), nil
}
