package tokenizer

import "unicode"

// replacementChar is what llama.cpp substitutes for every byte that does not
// start a decodable UTF-8 sequence.
const replacementChar = 0xFFFD

// utf8Len returns the sequence length llama.cpp (unicode_len_utf8) assumes
// for a lead byte: it looks only at the high nibble, so continuation bytes and
// 0xF8..0xFF count as 1 and 4 bytes respectively.
func utf8Len(b byte) int {
	switch b >> 4 {
	case 0xC, 0xD:
		return 2
	case 0xE:
		return 3
	case 0xF:
		return 4
	default:
		return 1
	}
}

// decodeCpts splits s into code points the way llama.cpp's
// unicode_cpts_from_utf8 does. Its decoder is lenient: it checks only the
// lead-byte pattern and that continuation bytes look like 10xxxxxx, so
// overlong forms and surrogates decode to their (invalid) values. Any byte
// that cannot start a sequence becomes U+FFFD and consumes one byte.
func decodeCpts(s string, dst []rune) []rune {
	dst = dst[:0]
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c&0x80 == 0:
			dst = append(dst, rune(c))
			i++
			continue
		case c&0x40 == 0:
			// stray continuation byte
		case c&0x20 == 0:
			if i+1 < len(s) && isCont(s[i+1]) {
				dst = append(dst, rune(c&0x1F)<<6|rune(s[i+1]&0x3F))
				i += 2
				continue
			}
		case c&0x10 == 0:
			if i+2 < len(s) && isCont(s[i+1]) && isCont(s[i+2]) {
				dst = append(dst, rune(c&0x0F)<<12|rune(s[i+1]&0x3F)<<6|rune(s[i+2]&0x3F))
				i += 3
				continue
			}
		case c&0x08 == 0:
			if i+3 < len(s) && isCont(s[i+1]) && isCont(s[i+2]) && isCont(s[i+3]) {
				dst = append(dst, rune(c&0x07)<<18|rune(s[i+1]&0x3F)<<12|rune(s[i+2]&0x3F)<<6|rune(s[i+3]&0x3F))
				i += 4
				continue
			}
		}
		dst = append(dst, replacementChar)
		i++
	}
	return dst
}

func isCont(b byte) bool { return b&0xC0 == 0x80 }

// appendCpt appends the UTF-8 encoding of cpt exactly as llama.cpp's
// unicode_cpt_to_utf8 does (surrogates are encoded like any other 16-bit
// value). Code points above U+10FFFF, for which llama.cpp throws, are encoded
// as U+FFFD.
func appendCpt(dst []byte, cpt rune) []byte {
	switch {
	case cpt >= 0 && cpt <= 0x7F:
		return append(dst, byte(cpt))
	case cpt >= 0x80 && cpt <= 0x7FF:
		return append(dst, 0xC0|byte(cpt>>6&0x1F), 0x80|byte(cpt&0x3F))
	case cpt >= 0x800 && cpt <= 0xFFFF:
		return append(dst, 0xE0|byte(cpt>>12&0x0F), 0x80|byte(cpt>>6&0x3F), 0x80|byte(cpt&0x3F))
	case cpt >= 0x10000 && cpt <= 0x10FFFF:
		return append(dst, 0xF0|byte(cpt>>18&0x07), 0x80|byte(cpt>>12&0x3F), 0x80|byte(cpt>>6&0x3F), 0x80|byte(cpt&0x3F))
	default:
		return appendCpt(dst, replacementChar)
	}
}

// Code point classes used by the pre-tokenizers. llama.cpp derives them from
// Python's `regex` module: \p{L}, \p{N} and \s (the Unicode White_Space
// property). Its generated table (unicode-data.cpp) is Unicode 15.1; Go's
// unicode package is 15.0, and the one 15.1 addition that changes a class
// here, CJK Unified Ideographs Extension I, is added by hand.
const (
	clsLetter = 1 << iota
	clsNumber
	clsSpace
	clsPunct // \p{P}, only used by the "default" pre-tokenizer
)

var asciiClass [128]uint8

func init() {
	for c := rune(0); c < 128; c++ {
		asciiClass[c] = computeClass(c)
	}
}

func computeClass(c rune) uint8 {
	var f uint8
	if unicode.IsLetter(c) || (c >= 0x2EBF0 && c <= 0x2EE5D) {
		f |= clsLetter
	}
	if unicode.IsNumber(c) {
		f |= clsNumber
	}
	if unicode.Is(unicode.White_Space, c) {
		f |= clsSpace
	}
	if unicode.IsPunct(c) {
		f |= clsPunct
	}
	return f
}

// class returns the pre-tokenizer class bits of a code point.
func class(c rune) uint8 {
	if c >= 0 && c < 128 {
		return asciiClass[c]
	}
	if c < 0 || c > unicode.MaxRune {
		return 0
	}
	return computeClass(c)
}

// GPT-2 byte-level mapping (bytes_to_unicode): printable bytes map to
// themselves, the other 68 bytes to U+0100.. in byte order.
var (
	byteToRune  [256]rune
	byteEncoded [256]string
	runeToByte  map[rune]byte
)

func init() {
	runeToByte = make(map[rune]byte, 256)
	n := rune(0)
	for b := 0; b < 256; b++ {
		if (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = 256 + n
			n++
		}
		byteEncoded[b] = string(byteToRune[b])
		runeToByte[byteToRune[b]] = byte(b)
	}
}
