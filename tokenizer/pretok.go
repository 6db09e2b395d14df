package tokenizer

// Pre-tokenizers. Each splitter refines a list of chunk lengths (in code
// points) into smaller pieces, like llama.cpp's unicode_regex_split: every
// regex of a pre-tokenizer is applied in turn to the pieces produced by the
// previous one, and text not matched by a regex stays a piece of its own.
//
// The splitters are hand-written equivalents of the regexes llama.cpp uses
// (Go's regexp has no look-ahead), following llama.cpp's own custom splitters
// for the GPT-2 and Llama-3 patterns.

type splitter func(cpts []rune, chunks []int, out []int) []int

// cursor gives bounded access to one chunk of code points; positions outside
// the chunk read as "no code point, no class", like llama.cpp's OUT_OF_RANGE.
type cursor struct {
	cpts       []rune
	start, end int
	prev       int
	out        []int
}

const outOfRange = -1

func (c *cursor) cpt(pos int) rune {
	if pos >= c.start && pos < c.end {
		return c.cpts[pos]
	}
	return outOfRange
}

func (c *cursor) cls(pos int) uint8 {
	if pos >= c.start && pos < c.end {
		return class(c.cpts[pos])
	}
	return 0
}

// inRange reports whether pos holds a code point (every code point has at
// least one category flag in llama.cpp, so "flags != 0" means "in range").
func (c *cursor) inRange(pos int) bool { return pos >= c.start && pos < c.end }

// emit closes the current piece at end and returns its length.
func (c *cursor) emit(end int) int {
	n := end - c.prev
	if n > 0 {
		c.out = append(c.out, n)
	}
	c.prev = end
	return n
}

func lowerASCII(r rune) rune {
	if r >= 'A' && r <= 'Z' {
		return r + ('a' - 'A')
	}
	return r
}

// contraction returns the length (2 or 3) of a contraction starting with the
// apostrophe at pos ('s 't 're 've 'm 'll 'd), or 0. fold makes it case
// insensitive.
func (c *cursor) contraction(pos int, fold bool) int {
	if c.cpt(pos) != '\'' || pos+1 >= c.end {
		return 0
	}
	f := func(r rune) rune {
		if fold {
			return lowerASCII(r)
		}
		return r
	}
	n1 := f(c.cpt(pos + 1))
	if n1 == 's' || n1 == 't' || n1 == 'm' || n1 == 'd' {
		return 2
	}
	if pos+2 < c.end {
		n2 := f(c.cpt(pos + 2))
		if (n1 == 'r' && n2 == 'e') || (n1 == 'v' && n2 == 'e') || (n1 == 'l' && n2 == 'l') {
			return 3
		}
	}
	return 0
}

// splitGPT2 implements
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
//
// (text left unmatched by that regex, a lone whitespace before a non-space,
// becomes a piece of its own, which is what \s+ would give).
func splitGPT2(cpts []rune, chunks []int, out []int) []int {
	start := 0
	for _, n := range chunks {
		c := cursor{cpts: cpts, start: start, end: start + n, prev: start, out: out}
		for pos := c.start; pos < c.end; {
			if k := c.contraction(pos, false); k > 0 {
				pos += c.emit(pos + k)
				continue
			}
			cp := c.cpt(pos)
			p2 := pos
			if cp == ' ' {
				p2 = pos + 1
			}
			f2 := c.cls(p2)
			switch {
			case f2&clsLetter != 0:
				pos = p2
				for c.cls(pos)&clsLetter != 0 {
					pos++
				}
				c.emit(pos)
				continue
			case f2&clsNumber != 0:
				pos = p2
				for c.cls(pos)&clsNumber != 0 {
					pos++
				}
				c.emit(pos)
				continue
			case c.inRange(p2) && f2&(clsSpace|clsLetter|clsNumber) == 0:
				pos = p2
				for c.inRange(pos) && c.cls(pos)&(clsSpace|clsLetter|clsNumber) == 0 {
					pos++
				}
				c.emit(pos)
				continue
			}
			ws := 0
			for c.cls(pos+ws)&clsSpace != 0 {
				ws++
			}
			if ws > 1 && c.inRange(pos+ws) {
				pos += ws - 1
				c.emit(pos)
				continue
			}
			if ws > 0 {
				pos += ws
				c.emit(pos)
				continue
			}
			pos++
			c.emit(pos)
		}
		out = c.out
		start += n
	}
	return out
}

// splitLlama3 implements the Llama-3 regex
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// with maxDigits = 3; with maxDigits = 1 it is the Qwen2 regex (\p{N}
// instead of \p{N}{1,3}).
func splitLlama3(maxDigits int) splitter {
	return func(cpts []rune, chunks []int, out []int) []int {
		start := 0
		for _, n := range chunks {
			c := cursor{cpts: cpts, start: start, end: start + n, prev: start, out: out}
			for pos := c.start; pos < c.end; {
				if k := c.contraction(pos, true); k > 0 {
					pos += c.emit(pos + k)
					continue
				}
				cp := c.cpt(pos)
				f := c.cls(pos)
				// [^\r\n\p{L}\p{N}]?\p{L}+
				if !(cp == '\r' || cp == '\n' || f&clsNumber != 0) {
					if f&clsLetter != 0 || c.cls(pos+1)&clsLetter != 0 {
						pos++
						for c.cls(pos)&clsLetter != 0 {
							pos++
						}
						c.emit(pos)
						continue
					}
				}
				// \p{N}{1,maxDigits}
				if f&clsNumber != 0 {
					ini := pos
					for c.cls(pos)&clsNumber != 0 {
						pos++
						if pos-ini >= maxDigits {
							c.emit(pos)
							ini = pos
						}
					}
					c.emit(pos)
					continue
				}
				//  ?[^\s\p{L}\p{N}]+[\r\n]*
				p2 := pos
				if cp == ' ' {
					p2 = pos + 1
				}
				if c.cls(p2)&(clsSpace|clsLetter|clsNumber) == 0 && c.inRange(p2) {
					pos = p2
					for c.inRange(pos) && c.cls(pos)&(clsSpace|clsLetter|clsNumber) == 0 {
						pos++
					}
					for r := c.cpt(pos); r == '\r' || r == '\n'; r = c.cpt(pos) {
						pos++
					}
					c.emit(pos)
					continue
				}
				ws, lastNL := 0, 0
				for c.cls(pos+ws)&clsSpace != 0 {
					if r := c.cpt(pos + ws); r == '\r' || r == '\n' {
						lastNL = pos + ws + 1
					}
					ws++
				}
				// \s*[\r\n]+
				if lastNL > 0 {
					pos = lastNL
					c.emit(pos)
					continue
				}
				// \s+(?!\S)
				if ws > 1 && c.inRange(pos+ws) {
					pos += ws - 1
					c.emit(pos)
					continue
				}
				// \s+
				if ws > 0 {
					pos += ws
					c.emit(pos)
					continue
				}
				pos++
				c.emit(pos)
			}
			out = c.out
			start += n
		}
		return out
	}
}

// isolate builds a splitter from a regex-like matcher: match(cpts, pos, end)
// returns the length of the match starting at pos (0 for none). Matches are
// found leftmost-first and never overlap; the text between them stays as
// separate pieces, like llama.cpp's std::regex fallback.
func isolate(match func(cpts []rune, pos, end int) int) splitter {
	return func(cpts []rune, chunks []int, out []int) []int {
		start := 0
		for _, n := range chunks {
			end := start + n
			prev := start
			for pos := start; pos < end; {
				m := match(cpts, pos, end)
				if m == 0 {
					pos++
					continue
				}
				if pos > prev {
					out = append(out, pos-prev)
				}
				out = append(out, m)
				pos += m
				prev = pos
			}
			if prev < end {
				out = append(out, end-prev)
			}
			start = end
		}
		return out
	}
}

// runOf matches one or more consecutive code points accepted by ok.
func runOf(ok func(rune) bool) func([]rune, int, int) int {
	return func(cpts []rune, pos, end int) int {
		i := pos
		for i < end && ok(cpts[i]) {
			i++
		}
		return i - pos
	}
}

// Splitters for the regexes of llama.cpp's "default" and starcoder-style
// pre-tokenizers.
var (
	// \p{N}
	splitDigit = isolate(func(cpts []rune, pos, _ int) int {
		if class(cpts[pos])&clsNumber != 0 {
			return 1
		}
		return 0
	})
	// \p{N}+
	splitNumbers = isolate(runOf(func(r rune) bool { return class(r)&clsNumber != 0 }))
	// [\p{P}\$\+<=>\^~\|]+
	splitPunct = isolate(runOf(func(r rune) bool {
		switch r {
		case '$', '+', '<', '=', '>', '^', '~', '|':
			return true
		}
		return class(r)&clsPunct != 0
	}))
	// [0-9][0-9][0-9]
	splitThreeDigits = isolate(func(cpts []rune, pos, end int) int {
		if pos+3 <= end && isASCIIDigit(cpts[pos]) && isASCIIDigit(cpts[pos+1]) && isASCIIDigit(cpts[pos+2]) {
			return 3
		}
		return 0
	})
)

func isASCIIDigit(r rune) bool { return r >= '0' && r <= '9' }
