package chat

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/ardanlabs/jinja"
)

// A chat template comes from the model file, so a broken or hostile GGUF
// brings its own code. The Jinja engine has no budgets of its own: some
// filters and operators panic on bad arguments ('a' * -1, indent(-1)),
// range(10**12) builds the whole list, and a macro that calls itself
// recurses until Go's stack limit kills the process (a fatal error, not a
// panic). The guards here turn those into errors naming the template:
//
//   - every compile and render runs under recover;
//   - range is ours (shadowing the engine's), refusing more than
//     maxRangeItems items;
//   - Parse refuses a template whose macros call one another in a cycle
//     by name (no chat template we know of recurses); a macro called
//     through a variable holding it is not followed.
//
// What they cannot stop without a budget inside the engine: string
// repetition by a huge count ('a' * 10**12) and loops nested deep enough
// to run for hours. Both need a template written to do it.

// maxRangeItems bounds the list one range() call builds: chat templates
// loop over messages and tools, thousands at most.
var maxRangeItems int64 = 1 << 20

// rangeFunc is Python's range, as the engine's, but refusing lists longer
// than maxRangeItems.
func rangeFunc(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	var start, stop, step int64 = 0, 0, 1
	for i, a := range args {
		if !a.IsInt() {
			return jinja.Undefined(), fmt.Errorf("range: argument %d is not an integer", i+1)
		}
	}
	switch len(args) {
	case 1:
		stop = args[0].AsInt()
	case 2:
		start, stop = args[0].AsInt(), args[1].AsInt()
	case 3:
		start, stop, step = args[0].AsInt(), args[1].AsInt(), args[2].AsInt()
	default:
		return jinja.Undefined(), fmt.Errorf("range: want 1 to 3 arguments, got %d", len(args))
	}
	if step == 0 {
		return jinja.Undefined(), fmt.Errorf("range: step must not be zero")
	}
	// The item count without overflow: the span as an unsigned distance
	// (two's complement subtraction is exact there), rounded up.
	var n uint64
	count := func(d, s uint64) uint64 {
		n := d / s
		if d%s != 0 {
			n++
		}
		return n
	}
	switch {
	case step > 0 && stop > start:
		n = count(uint64(stop)-uint64(start), uint64(step))
	case step < 0 && start > stop:
		n = count(uint64(start)-uint64(stop), -uint64(step))
	}
	if n > uint64(maxRangeItems) {
		return jinja.Undefined(), fmt.Errorf("range(%d, %d, %d): %d items, more than the %d a chat template may build", start, stop, step, n, maxRangeItems)
	}
	items := make([]jinja.Value, n)
	for i := range items {
		items[i] = jinja.NewInt(start + int64(i)*step)
	}
	return jinja.NewList(items), nil
}

// compile is jinja.Compile under recover.
func compile(src string) (t *jinja.Template, err error) {
	defer func() {
		if p := recover(); p != nil {
			t, err = nil, fmt.Errorf("chat template: the template engine failed: %v", p)
		}
	}()
	return jinja.Compile(src)
}

// renderValues is t.RenderValues under recover.
func renderValues(t *jinja.Template, data map[string]jinja.Value) (out string, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = "", fmt.Errorf("the template engine failed: %v", p)
		}
	}()
	return t.RenderValues(data)
}

var (
	macroDefRE = regexp.MustCompile(`\{%[-+]?\s*macro\s+([A-Za-z_][A-Za-z0-9_]*)`)
	macroEndRE = regexp.MustCompile(`\{%[-+]?\s*endmacro\b`)
	// callRE finds an identifier followed by "(": a call, unless a "."
	// comes before it (a method; see calledNames).
	callRE = regexp.MustCompile(`\b([A-Za-z_]\w*)\s*\(`)
	// filterRE finds a filter, with or without arguments (x|name).
	filterRE = regexp.MustCompile(`\|\s*([A-Za-z_]\w*)`)
)

// calledNames returns the names called in src: identifiers followed by
// "(" whose previous non-space character is not "." (x.items()), and
// filters (x|name, x|name(1)): the engine looks a filter it does not have
// up in the scope, where a macro of that name is.
func calledNames(src string) []string {
	var out []string
	for _, m := range filterRE.FindAllStringSubmatch(src, -1) {
		out = append(out, m[1])
	}
	for _, m := range callRE.FindAllStringSubmatchIndex(src, -1) {
		i := m[2] - 1
		for i >= 0 && (src[i] == ' ' || src[i] == '\t' || src[i] == '\n' || src[i] == '\r') {
			i--
		}
		if i >= 0 && src[i] == '.' {
			continue
		}
		out = append(out, src[m[2]:m[3]])
	}
	return out
}

// checkRecursion refuses a template whose macros call one another in a
// cycle (a macro's body is the text up to its endmacro; a call is its
// name called there). It reads the source, not the engine's
// tree, so it can refuse a template that never reaches such a call; a
// false alarm costs a clear error, a miss costs the process.
func checkRecursion(src string) error {
	defs := macroDefRE.FindAllStringSubmatchIndex(src, -1)
	if len(defs) == 0 {
		return nil
	}
	names := make(map[string]bool, len(defs))
	for _, d := range defs {
		names[src[d[2]:d[3]]] = true
	}
	calls := make(map[string][]string, len(defs))
	for _, d := range defs {
		name := src[d[2]:d[3]]
		body := src[d[3]:]
		if e := macroEndRE.FindStringIndex(body); e != nil {
			body = body[:e[0]]
		}
		for _, id := range calledNames(body) {
			if names[id] && !slices.Contains(calls[name], id) {
				calls[name] = append(calls[name], id)
			}
		}
	}
	// Depth-first search for a cycle, in source order for a stable message.
	const (
		unseen = iota
		open
		done
	)
	state := make(map[string]int, len(calls))
	var path []string
	var visit func(string) error
	visit = func(m string) error {
		switch state[m] {
		case open:
			i := slices.Index(path, m)
			return fmt.Errorf("chat template: macro %s calls itself (%s): recursive macros are not supported", m, strings.Join(append(path[i:], m), " → "))
		case done:
			return nil
		}
		state[m] = open
		path = append(path, m)
		for _, c := range calls[m] {
			if err := visit(c); err != nil {
				return err
			}
		}
		path = path[:len(path)-1]
		state[m] = done
		return nil
	}
	for _, d := range defs {
		if err := visit(src[d[2]:d[3]]); err != nil {
			return err
		}
	}
	return nil
}
