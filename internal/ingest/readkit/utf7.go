package readkit

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	mcharset "github.com/emersion/go-message/charset"
	"golang.org/x/text/encoding"
	"golang.org/x/text/transform"
)

// UTF-7 (RFC 2152) is on the IANA list and in old mail (Outlook Express, some
// mobile clients) but neither x/text nor go-message decode it: without this a
// body reads "ungl+APw-cklich". Registered under its IANA names for mail bodies
// and RFC 2047 words; decoding only, never used to write.
func init() {
	for _, name := range []string{"utf-7", "utf7", "unicode-1-1-utf-7", "csunicode11utf7", "x-utf-7"} {
		mcharset.RegisterEncoding(name, UTF7Encoding{})
	}
}

type UTF7Encoding struct{}

func (UTF7Encoding) NewDecoder() *encoding.Decoder {
	return &encoding.Decoder{Transformer: &utf7Decoder{}}
}

// NewEncoder is not needed (ingest only reads) and refuses every input.
func (UTF7Encoding) NewEncoder() *encoding.Encoder {
	return encoding.Replacement.NewEncoder()
}

// utf7Decoder turns UTF-7 into UTF-8: direct characters as they are, "+-" as
// '+', and "+<modified base64>[-]" as the UTF-16 code units it holds (a pair of
// surrogates as one rune; what cannot be read becomes U+FFFD).
type utf7Decoder struct {
	inB64 bool
	bits  uint32
	nbits uint
	high  rune // a high surrogate waiting for its low half (0 when none)
}

func (d *utf7Decoder) Reset() { *d = utf7Decoder{} }

func utf7B64(c byte) (uint32, bool) {
	switch {
	case c >= 'A' && c <= 'Z':
		return uint32(c - 'A'), true
	case c >= 'a' && c <= 'z':
		return uint32(c-'a') + 26, true
	case c >= '0' && c <= '9':
		return uint32(c-'0') + 52, true
	case c == '+':
		return 62, true
	case c == '/':
		return 63, true
	}
	return 0, false
}

func (d *utf7Decoder) Transform(dst, src []byte, atEOF bool) (nDst, nSrc int, err error) {
	emit := func(r rune) {
		nDst += utf8.EncodeRune(dst[nDst:], r)
	}
	for nSrc < len(src) {
		if len(dst)-nDst < 2*utf8.UTFMax {
			return nDst, nSrc, transform.ErrShortDst
		}
		c := src[nSrc]
		if d.inB64 {
			if v, ok := utf7B64(c); ok {
				d.bits = d.bits<<6 | v
				d.nbits += 6
				nSrc++
				if d.nbits >= 16 {
					d.nbits -= 16
					u := rune(d.bits>>d.nbits) & 0xFFFF
					d.bits &= 1<<d.nbits - 1
					switch {
					case utf16.IsSurrogate(u) && u < 0xDC00:
						if d.high != 0 {
							emit(utf8.RuneError)
						}
						d.high = u
					case utf16.IsSurrogate(u):
						if d.high == 0 {
							emit(utf8.RuneError)
						} else {
							emit(utf16.DecodeRune(d.high, u))
							d.high = 0
						}
					default:
						if d.high != 0 {
							emit(utf8.RuneError)
							d.high = 0
						}
						emit(u)
					}
				}
				continue
			}
			// the shifted sequence ends; '-' is absorbed
			if d.high != 0 {
				emit(utf8.RuneError)
			}
			d.inB64, d.bits, d.nbits, d.high = false, 0, 0, 0
			if c == '-' {
				nSrc++
			}
			continue
		}
		if c == '+' {
			if nSrc+1 == len(src) && !atEOF {
				return nDst, nSrc, transform.ErrShortSrc
			}
			if nSrc+1 < len(src) && src[nSrc+1] == '-' {
				dst[nDst] = '+'
				nDst++
				nSrc += 2
				continue
			}
			d.inB64 = true
			nSrc++
			continue
		}
		if c >= 0x80 {
			emit(utf8.RuneError)
		} else {
			dst[nDst] = c
			nDst++
		}
		nSrc++
	}
	if atEOF && d.high != 0 {
		if len(dst)-nDst < utf8.UTFMax {
			return nDst, nSrc, transform.ErrShortDst
		}
		emit(utf8.RuneError)
		d.high = 0
	}
	return nDst, nSrc, nil
}

// charsetChecked caches CheckCharset's answers by lower-case name.
var charsetChecked sync.Map

// CheckCharset reports whether a declared charset can be decoded: go-message
// knows it (x/text's IANA and WHATWG indexes and its own additions, UTF-7
// included) and it is not WHATWG's "replacement" encoding, which the HTML index
// gives ISO-2022-CN, ISO-2022-KR and others and which turns a whole
// text into one U+FFFD. Such a charset is unknown: its text is read by
// DecodeFallback and a warning names it.
func CheckCharset(cs string) error {
	key := strings.ToLower(strings.Trim(strings.TrimSpace(cs), `"'`))
	if v, ok := charsetChecked.Load(key); ok {
		if v == nil {
			return nil
		}
		return v.(error)
	}
	var err error
	if r, rerr := mcharset.Reader(key, strings.NewReader("ab")); rerr != nil {
		err = rerr
	} else if b, rerr := io.ReadAll(r); rerr != nil || string(b) == "\uFFFD" {
		err = fmt.Errorf("charset %q: %w", cs, errNoDecoder)
	}
	if err == nil {
		charsetChecked.Store(key, nil)
	} else {
		charsetChecked.Store(key, err)
	}
	return err
}

var errNoDecoder = errors.New("no decoder for it (only the WHATWG replacement encoding)")
