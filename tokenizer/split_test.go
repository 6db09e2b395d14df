package tokenizer

import (
	"slices"
	"testing"
)

// refMatch is a straightforward ordered-alternation (backtracking regex
// semantics) matcher for the Llama-3 / Qwen2 pattern
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// written independently of the cursor-based splitter, to check it.
func refMatch(c []rune, p, maxN int) int {
	end := len(c)
	is := func(i int, f uint8) bool { return i < end && class(c[i])&f != 0 }
	other := func(i int) bool { return i < end && class(c[i])&(clsLetter|clsNumber|clsSpace) == 0 }
	nl := func(i int) bool { return i < end && (c[i] == '\r' || c[i] == '\n') }
	if c[p] == '\'' && p+1 < end {
		a := lowerASCII(c[p+1])
		if a == 's' || a == 't' || a == 'm' || a == 'd' {
			return 2
		}
		if p+2 < end {
			b := lowerASCII(c[p+2])
			if (a == 'r' || a == 'v') && b == 'e' || a == 'l' && b == 'l' {
				return 3
			}
		}
	}
	letters := func(i int) int {
		j := i
		for is(j, clsLetter) {
			j++
		}
		return j - i
	}
	if !nl(p) && !is(p, clsLetter|clsNumber) && letters(p+1) > 0 {
		return 1 + letters(p+1)
	}
	if n := letters(p); n > 0 {
		return n
	}
	if is(p, clsNumber) {
		n := 0
		for n < maxN && is(p+n, clsNumber) {
			n++
		}
		return n
	}
	for _, sp := range []int{1, 0} {
		if sp == 1 && c[p] != ' ' {
			continue
		}
		i := p + sp
		if !other(i) {
			continue
		}
		for other(i) {
			i++
		}
		for nl(i) {
			i++
		}
		return i - p
	}
	n := 0
	for is(p+n, clsSpace) {
		n++
	}
	for k := n; k >= 0; k-- {
		if nl(p + k) {
			j := p + k
			for nl(j) {
				j++
			}
			return j - p
		}
	}
	if n > 0 && p+n == end {
		return n
	}
	if n > 1 {
		return n - 1
	}
	return n
}

func refSplit(c []rune, maxN int) []int {
	var out []int
	gap := 0
	for p := 0; p < len(c); {
		m := refMatch(c, p, maxN)
		if m == 0 {
			gap++
			p++
			continue
		}
		if gap > 0 {
			out = append(out, gap)
			gap = 0
		}
		out = append(out, m)
		p += m
	}
	if gap > 0 {
		out = append(out, gap)
	}
	return out
}

func checkSplit(t *testing.T, s string) {
	c := decodeCpts(s, nil)
	for _, maxN := range []int{1, 3} {
		got := splitLlama3(maxN)(c, []int{len(c)}, nil)
		if len(c) == 0 {
			got = nil
		}
		want := refSplit(c, maxN)
		if !slices.Equal(got, want) {
			t.Fatalf("maxN=%d split(%q) = %v, want %v", maxN, s, got, want)
		}
	}
}

var splitSeeds = []string{
	"", " ", "  ", "a", " a", "  a", "\n", "\n\n a", " \n \n  x", "'s", "'S 'Ll 're", "x'd", "12345", " 1234",
	"½3", "Hello, y'all! How are you 😁 ?我想在apple工作1314151天～", "\t\t\t", " !!\n\n", " \u00a0x", "a\u2003 b",
	"3..3", "!!\r\n", " \r", "'", "''", "' ", "\xff\xfe", "\u0301a", "  \u0301",
}

func TestSplitLlama3Reference(t *testing.T) {
	for _, s := range splitSeeds {
		checkSplit(t, s)
	}
}

func FuzzSplitLlama3(f *testing.F) {
	for _, s := range splitSeeds {
		f.Add(s)
	}
	f.Fuzz(checkSplit)
}

func TestClass(t *testing.T) {
	for _, tc := range []struct {
		r    rune
		want uint8
	}{
		{'a', clsLetter}, {'7', clsNumber}, {' ', clsSpace}, {'\u00a0', clsSpace}, {'\u3000', clsSpace},
		{'\u00bd', clsNumber}, {0x2EBF0, clsLetter}, {0x1C, 0}, {'\u0301', 0}, {'!', clsPunct},
	} {
		if got := class(tc.r); got != tc.want {
			t.Errorf("class(%U) = %b, want %b", tc.r, got, tc.want)
		}
	}
}

func TestDecodeCpts(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []rune
	}{
		{"a\xffb", []rune{'a', 0xFFFD, 'b'}},
		{"\xc0\x80", []rune{0}},              // overlong, accepted by llama.cpp
		{"\xed\xa0\x80", []rune{0xD800}},     // surrogate, accepted
		{"\xe2\x82", []rune{0xFFFD, 0xFFFD}}, // truncated
		{"\xf8\x80", []rune{0xFFFD, 0xFFFD}},
	} {
		if got := decodeCpts(tc.in, nil); !slices.Equal(got, tc.want) {
			t.Errorf("decodeCpts(%q) = %U, want %U", tc.in, got, tc.want)
		}
	}
}

func TestCleanSpaces(t *testing.T) {
	for in, want := range map[string]string{
		"Hello , world !": "Hello, world!",
		"it ' s":          "it's",
		"he 's we 're":    "he's we're",
		"don 't you 'll":  "don 't you 'll",
		"a ' b":           "a'b",
		"":                "",
		" .":              ".",
		"x  .":            "x .",
	} {
		if got := string(cleanSpaces([]byte(in))); got != want {
			t.Errorf("cleanSpaces(%q) = %q, want %q", in, got, want)
		}
	}
}
