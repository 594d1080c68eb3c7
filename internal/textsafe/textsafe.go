// Package textsafe escapes text a module or a client supplied before it is
// shown to a person on a terminal: control characters (C0 but newline handling
// left to the caller's layout, DEL, C1), bidirectional overrides and invalid
// UTF-8 are written as Go-style escapes, so a module's names cannot move the
// cursor, clear lines or reorder what a reviewer reads.
package textsafe

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// String returns s with every control character (U+0000–U+001F, U+007F,
// U+0080–U+009F; tab and newline included: the caller's layout owns those),
// bidirectional formatting character (U+061C, U+200E, U+200F, U+202A–U+202E,
// U+2066–U+2069) and invalid UTF-8 byte escaped as \t, \n, \r, \xNN or \uNNNN.
// A string with none of them is returned as is.
func String(s string) string { return escape(s, false) }

// Text is String keeping newlines: for multi-line text the program itself
// composed around module-supplied parts (a caller indents the lines it shows).
func Text(s string) string { return escape(s, true) }

func escape(s string, keepNewlines bool) string {
	if !needs(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n' && keepNewlines:
			b.WriteByte('\n')
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case unsafe(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func needs(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < 0x80 {
			if c < 0x20 || c == 0x7f {
				return true
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || unsafe(r) {
			return true
		}
		i += n
	}
	return false
}

func unsafe(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// Strings escapes each element of list (a new slice; nil stays nil).
func Strings(list []string) []string {
	if list == nil {
		return nil
	}
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = String(s)
	}
	return out
}

// Name returns a file name fit for one output line: as it is when every
// character is printable, else Go-quoted (so a name holding a newline, an
// escape sequence or invalid UTF-8 shows as what it is).
func Name(p string) string {
	if !utf8.ValidString(p) {
		return strconv.Quote(p)
	}
	for _, r := range p {
		if !unicode.IsPrint(r) && r != ' ' {
			return strconv.Quote(p)
		}
	}
	return p
}
