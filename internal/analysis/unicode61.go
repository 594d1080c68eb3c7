package analysis

import "slices"

//go:generate go run ./gen

// This file is SQLite's FTS5 unicode61 tokenizer with remove_diacritics 2 and
// the default categories ("L* N* Co"), restated in Go: which code points make
// words, how a word's code points fold, and how bytes decode to code points, all
// as ext/fts5/fts5_tokenize.c and fts5_unicode2.c of the linked SQLite do it. The
// character tables are generated from that SQLite (fts5tables.go, by ./gen);
// internal/memtree's TestFTSTokenizerEveryCodePoint proves the whole equal to
// FTS5 for every code point.

// MaxTermBytes is the longest term FTS5 indexes or matches (FTS5_MAX_TOKEN_SIZE):
// longer words are cut to their first MaxTermBytes bytes.
const MaxTermBytes = 32768

// isTokenASCII reports the ASCII token characters of unicode61: letters and digits.
func isTokenASCII(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// isTokenRune reports whether code point c (≥ 0x80) starts or continues a word:
// its category is a letter, a number or private use, or SQLite's table does not
// list it (so emoji and other symbols assigned after the table was made, and
// everything from U+100000, are word characters).
func isTokenRune(c uint32) bool {
	if c >= 1<<20 {
		return true
	}
	return tokenBits[tokenIndex[c>>8]][c>>6&3]&(1<<(c&63)) != 0
}

// isDiacritic is sqlite3Fts5UnicodeIsdiacritic: the combining marks of
// U+0300–U+0331 that continue a word (and fold to nothing) though they are not
// word characters themselves.
func isDiacritic(c uint32) bool {
	const mask0, mask1 = 0x08029FDF, 0x000361F8
	switch {
	case c < 0x300 || c > 0x331:
		return false
	case c < 0x320:
		return mask0&(1<<(c-0x300)) != 0
	default:
		return mask1&(1<<(c-0x320)) != 0
	}
}

// foldRune is sqlite3Fts5UnicodeFold(c, 2): the lower case of c without
// diacritics, 0 for a diacritic. Only the BMP and Deseret fold.
func foldRune(c uint32) uint32 {
	if c < 0x10000 {
		if p := foldIndex[c>>8]; p != noFold {
			return uint32(foldPages[p][c&0xFF])
		}
		return c
	}
	if c >= 0x10400 && c < 0x10428 { // Deseret capitals
		return c + 40
	}
	return c
}

// utf8Trans1 gives the payload bits of a UTF-8 lead byte ≥ 0xC0 (sqlite3Utf8Trans1).
var utf8Trans1 = [64]byte{
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
	0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
	0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17,
	0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f,
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
	0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
	0x00, 0x01, 0x02, 0x03, 0x00, 0x01, 0x00, 0x00,
}

// decode reads the code point at s[i] (s[i] ≥ 0x80) as SQLite's READ_UTF8 does,
// returning it and the index after it. On valid UTF-8 it is the standard decoding
// except that U+FFFE and U+FFFF read as U+FFFD; on invalid bytes it follows
// SQLite (a lead byte takes every continuation byte after it; a stray
// continuation byte is the code point of its value).
func decode(s string, i int) (uint32, int) {
	c := uint32(s[i])
	i++
	if c >= 0xC0 {
		c = uint32(utf8Trans1[c-0xC0])
		for i < len(s) && s[i]&0xC0 == 0x80 {
			c = c<<6 + uint32(s[i]&0x3F)
			i++
		}
		if c < 0x80 || c&0xFFFFF800 == 0xD800 || c&0xFFFFFFFE == 0xFFFE {
			c = 0xFFFD
		}
	}
	return c, i
}

// appendCode writes c as SQLite's WRITE_UTF8 does (standard UTF-8 for every code
// point; the bits above U+1FFFFF, which only invalid input can produce, are lost).
func appendCode(b []byte, c uint32) []byte {
	switch {
	case c < 0x80:
		return append(b, byte(c))
	case c < 0x800:
		return append(b, 0xC0+byte(c>>6&0x1F), 0x80+byte(c&0x3F))
	case c < 0x10000:
		return append(b, 0xE0+byte(c>>12&0x0F), 0x80+byte(c>>6&0x3F), 0x80+byte(c&0x3F))
	default:
		return append(b, 0xF0+byte(c>>18&0x07), 0x80+byte(c>>12&0x3F), 0x80+byte(c>>6&0x3F), 0x80+byte(c&0x3F))
	}
}

// unicodeWords appends to dst the words of s (any bytes) as unicode61 with
// remove_diacritics 2 makes them, folded and cut to MaxTermBytes.
func unicodeWords(dst []string, s string) []string {
	buf := make([]byte, 0, len(s))
	var endsBuf [64]int
	ends := endsBuf[:0] // end of each word in buf
	for i := 0; i < len(s); {
		// Skip separators up to the first character of a word.
		start := len(buf)
		c := s[i]
		if c < 0x80 {
			i++
			if !isTokenASCII(c) {
				continue
			}
			buf = append(buf, lowerASCII(c))
		} else {
			var r uint32
			r, i = decode(s, i)
			if !isTokenRune(r) {
				continue
			}
			if f := foldRune(r); f != 0 {
				buf = appendCode(buf, f)
			}
		}
		// The rest of the word: token characters and diacritics.
		for i < len(s) {
			c := s[i]
			if c < 0x80 {
				if !isTokenASCII(c) {
					break
				}
				buf = append(buf, lowerASCII(c))
				i++
				continue
			}
			r, next := decode(s, i)
			i = next // a non-ASCII separator is consumed with the word; it would be skipped anyway
			if !isTokenRune(r) && !isDiacritic(r) {
				break
			}
			if f := foldRune(r); f != 0 {
				buf = appendCode(buf, f)
			}
		}
		if len(buf)-start > MaxTermBytes {
			buf = buf[:start+MaxTermBytes]
		}
		if len(buf) == start {
			continue // a word whose every character folded away: FTS5 indexes nothing
		}
		ends = append(ends, len(buf))
	}
	all := string(buf)
	dst = slices.Grow(dst, len(ends))
	start := 0
	for _, e := range ends {
		dst = append(dst, all[start:e])
		start = e
	}
	return dst
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// Tokens splits s as Words does, calling fn with each folded word (in a buffer
// reused for the next) and the byte offsets of its first character and past its
// last in s, as FTS5's unicode61 tokenizer reports them. It repeats
// unicodeWords' loop with offsets: unicodeWords written over it measured 40 %
// slower on non-ASCII text (BenchmarkWords/unicode, 4.1 → 5.9 µs).
func Tokens(s string, fn func(word []byte, start, end int)) {
	buf := make([]byte, 0, 32)
	for i := 0; i < len(s); {
		buf = buf[:0]
		start := i
		c := s[i]
		if c < 0x80 {
			i++
			if !isTokenASCII(c) {
				continue
			}
			buf = append(buf, lowerASCII(c))
		} else {
			var r uint32
			r, i = decode(s, i)
			if !isTokenRune(r) {
				continue
			}
			if f := foldRune(r); f != 0 {
				buf = appendCode(buf, f)
			}
		}
		end := i
		for i < len(s) {
			c := s[i]
			if c < 0x80 {
				if !isTokenASCII(c) {
					break
				}
				buf = append(buf, lowerASCII(c))
				i++
				end = i
				continue
			}
			r, next := decode(s, i)
			i = next // a non-ASCII separator is consumed with the word, not part of it
			if !isTokenRune(r) && !isDiacritic(r) {
				break
			}
			if f := foldRune(r); f != 0 {
				buf = appendCode(buf, f)
			}
			end = i
		}
		if len(buf) > MaxTermBytes {
			buf = buf[:MaxTermBytes]
		}
		if len(buf) == 0 {
			continue
		}
		fn(buf, start, end)
	}
}
