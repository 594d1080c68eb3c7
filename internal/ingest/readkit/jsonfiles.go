package readkit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/openhuman/openhuman-core/internal/ingest/archive"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// ReadFileLimited reads a whole file, refusing files over MaxFileBytes.
func ReadFileLimited(path string) ([]byte, error) {
	b, ok, err := archive.ReadAll(path, MaxFileBytes)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("file larger than %d MiB: not ingested; split it", MaxFileBytes>>20)
	}
	return b, nil
}

// ReadJSONExport reads one JSON export file, its BOM dropped and its JSON
// checked; ok is false when it holds nothing to read, which rep then says (an
// empty file is a warning, anything else a failure).
func ReadJSONExport(path string, rep *Report) (b []byte, ok bool) {
	b, err := ReadFileLimited(path)
	if err == nil {
		b = TrimUTF8BOM(b)
		err = checkJSON(b)
	}
	switch {
	case errors.Is(err, ErrEmpty):
		rep.Warn(path, "", "empty file: nothing to ingest")
		return nil, false
	case err != nil:
		rep.Fail(FileError{Path: path, Err: err})
		return nil, false
	}
	return b, true
}

// DecodeJSONExport reads one JSON export file as ReadJSONExport does and
// decodes it into v with DecodeStrict; ok is false when there is nothing to
// read or it does not decode, which rep then says.
func DecodeJSONExport(path string, rep *Report, v any) (ok bool) {
	b, ok := ReadJSONExport(path, rep)
	if !ok {
		return false
	}
	if err := DecodeStrict(b, v); err != nil {
		rep.Fail(FileError{Path: path, Err: err})
		return false
	}
	return true
}

// ReadJSONFile reads, guards and strictly decodes one JSON file into v.
func ReadJSONFile(path string, v any) error {
	b, err := ReadFileLimited(path)
	if err != nil {
		return err
	}
	b = TrimUTF8BOM(b)
	if err := checkJSON(b); err != nil {
		return err
	}
	return DecodeStrict(b, v)
}

func TrimUTF8BOM(b []byte) []byte {
	if len(b) >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF {
		return b[3:]
	}
	return b
}

// FlexTime reads a time given as epoch milliseconds (number or numeric string) or
// an RFC 3339 string. Empty or null reports ok=false with no error.
func FlexTime(raw json.RawMessage) (ms int64, ok bool, err error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return 0, false, nil
	}
	if s[0] == '"' {
		var str string
		if err := json.Unmarshal(raw, &str); err != nil {
			return 0, false, err
		}
		str = strings.TrimSpace(str)
		if str == "" {
			return 0, false, nil
		}
		if t, err := time.Parse(time.RFC3339Nano, str); err == nil {
			return t.UnixMilli(), true, nil
		}
		s = str
	}
	f, perr := strconv.ParseFloat(s, 64)
	if perr != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 1e14 {
		return 0, false, fmt.Errorf("%s is not epoch milliseconds or an RFC 3339 time", string(raw))
	}
	return int64(f), true, nil
}

// AttachmentOf builds an attachment note.
func AttachmentOf(name, ctype string, size int) abi.Attachment {
	return abi.Attachment{Name: name, ContentType: ctype, Size: size}
}

// tgHead is what the first bytes of a JSON document show: whether the top-level
// value is an object, its keys (with the value when it is a string) and, for
// object values, their keys.
type tgHead struct {
	Object bool
	Keys   map[string]string
	Sub    map[string]map[string]bool
}

// ScanTopKeys reads the top two levels of a JSON object from head, which may be cut
// anywhere: it stops quietly at the first token it cannot read. The Discord reader
// uses it too.
func ScanTopKeys(head []byte) tgHead {
	h := tgHead{Keys: map[string]string{}, Sub: map[string]map[string]bool{}}
	dec := json.NewDecoder(bytes.NewReader(TrimUTF8BOM(head)))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return h
	}
	h.Object = true
	type frame struct {
		obj       bool
		expectKey bool
		top       string // the top-level key this container is the value of ("" for the top object)
	}
	stack := []frame{{obj: true, expectKey: true}}
	curKey := ""
	for len(stack) > 0 {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		f := &stack[len(stack)-1]
		depth := len(stack)
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			if len(stack) > 0 && stack[len(stack)-1].obj {
				stack[len(stack)-1].expectKey = true
			}
			continue
		}
		if f.obj && f.expectKey {
			k, _ := tok.(string)
			f.expectKey = false
			switch depth {
			case 1:
				curKey = k
				h.Keys[k] = ""
			case 2:
				if f.top != "" {
					if h.Sub[f.top] == nil {
						h.Sub[f.top] = map[string]bool{}
					}
					h.Sub[f.top][k] = true
				}
			}
			continue
		}
		if d, ok := tok.(json.Delim); ok {
			top := f.top
			if depth == 1 {
				top = curKey
			}
			stack = append(stack, frame{obj: d == '{', expectKey: d == '{', top: top})
			continue
		}
		if depth == 1 {
			if s, ok := tok.(string); ok {
				h.Keys[curKey] = s
			}
		}
		if f.obj {
			f.expectKey = true
		}
	}
	return h
}

// ExportFileName is the base name of an exported file path, or "" when the export did
// not include the file ("(File not included. Change data exporting settings to
// download.)").
func ExportFileName(p string) string {
	p = strings.TrimSpace(p)
	if p == "" || strings.HasPrefix(p, "(") {
		return ""
	}
	return CleanText(path.Base(filepath.ToSlash(p)))
}

// MimeType is the given content type, else the one the file name's extension implies.
func MimeType(name, ctype string) string {
	if ctype = strings.TrimSpace(ctype); ctype != "" {
		return ctype
	}
	if ext := path.Ext(name); ext != "" {
		if t := mime.TypeByExtension(strings.ToLower(ext)); t != "" {
			if i := strings.IndexByte(t, ';'); i >= 0 {
				t = t[:i]
			}
			return t
		}
	}
	return ""
}

// RawString reads a raw JSON scalar as a string: a string's value, a number's or
// boolean's literal; "" for null, objects and arrays.
func RawString(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || IsNull(raw) {
		return ""
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return ""
		}
		return s
	case '{', '[':
		return ""
	}
	return string(raw)
}

// RawInt reads a raw JSON number (or numeric string) as an int; 0 when it is not one.
func RawInt(raw json.RawMessage) int {
	n, err := strconv.ParseInt(strings.TrimSpace(RawString(raw)), 10, 64)
	if err != nil || n < 0 || n > 1<<40 {
		return 0
	}
	return int(n)
}

func IsNull(raw json.RawMessage) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}

// CleanText makes text from an export safe to store: valid UTF-8, LF line ends, no
// control characters, no surrounding space. The WhatsApp and Discord readers use it.
func CleanText(s string) string {
	return strings.TrimSpace(StripControls(SanitizeUTF8(NormalizeNewlines([]byte(s)))))
}

// DecodeErr describes an error decoding part of a file (no byte offset: the
// decoder's offset would be relative to that part).
func DecodeErr(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "(value)"
		}
		return fmt.Errorf("field %q is a JSON %s, expected %s: not ingested", field, te.Value, te.Type)
	}
	return fmt.Errorf("not readable: %v", err)
}

// ChatTimeOK reports whether ms is a plausible message time: 1980 to 2200 (an
// export's zero or garbage never dates a message to 1970).
func ChatTimeOK(ms int64) bool {
	return ms >= chatMinMS && ms < chatMaxMS
}

// Clip returns the first n characters of s on one line, "…" marking a cut.
func Clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n])) + "…"
}

func FirstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if strings.TrimSpace(s) != "" {
			return strings.TrimSpace(s)
		}
	}
	return ""
}

// JSONHead is what the start of a JSON file shows of its shape: the top-level
// object's keys and the keys of its first message, or the keys of the first element
// of a top-level array. The start may be cut anywhere: ScanJSONHead stops quietly
// at the first token it cannot read.
type JSONHead struct {
	Object, Array bool
	Keys          map[string]bool // top-level keys (of the first element for an array)
	First         map[string]bool // keys of the first entry of "messages"
	AuthorString  bool            // the first message's author is a string
	tooDeep       bool            // nested deeper than maxJSONDepth
}

// Shape names the input shape the head shows ("" for none). An object of a Telegram
// export (a chat with type and id, or a whole export) or of a Discord export (guild)
// is none: their readers own them.
func (h *JSONHead) Shape() string {
	if !h.Object {
		return ""
	}
	has := func(k string) bool { return h.Keys[k] }
	switch {
	case has("guild") || has("chats") || has("left_chats") || has("personal_information") || has("messages") && has("type") && has("id"):
		return ""
	case has("thread_subject"):
		return "emailthread"
	case has("messages") && (has("platform") || has("channel_label")):
		return "chat"
	case has("messages") && h.First["sent_at"]:
		return "emailthread"
	case has("messages") && h.First["author"] && h.AuthorString && h.First["timestamp"] && h.First["text"]:
		return "chat"
	case has("body") || has("title") && has("modified_at"):
		return "document"
	}
	return ""
}

// Claimed says the reference reader should read a file with this head: it has one
// of the shapes, or it is a top-level array of such objects or nests too deep, which
// read then fails with the reason (a .json file meant as input, wrongly made).
func (h *JSONHead) Claimed() bool {
	if h.Shape() != "" || h.tooDeep {
		return true
	}
	if !h.Array {
		return false
	}
	for _, k := range []string{"platform", "channel_label", "thread_subject", "messages", "body", "modified_at"} {
		if h.Keys[k] {
			return true
		}
	}
	return false
}

// ScanJSONHead reads the shape of the JSON text that head starts.
func ScanJSONHead(head []byte) JSONHead {
	h := JSONHead{Keys: map[string]bool{}, First: map[string]bool{}}
	head = TrimUTF8BOM(head)
	depth, inStr, esc := 0, false, false
	for _, c := range head {
		switch {
		case inStr:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '[' || c == '{':
			if depth++; depth > maxJSONDepth {
				h.tooDeep = true
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	dec := json.NewDecoder(bytes.NewReader(head))
	tok, err := dec.Token()
	if err != nil {
		return h
	}
	switch tok {
	case json.Delim('{'):
		h.Object = true
		_ = scanObjectKeys(dec, func(k string) bool {
			h.Keys[k] = true
			if k != "messages" {
				return false
			}
			t, err := dec.Token()
			if err != nil || t != json.Delim('[') {
				if err == nil {
					skipJSONValueRest(dec, t)
				}
				return true
			}
			if t, err = dec.Token(); err != nil || t == json.Delim(']') {
				return true
			}
			if t != json.Delim('{') {
				if !skipJSONValueRest(dec, t) {
					return true
				}
			} else if scanObjectKeys(dec, func(k string) bool {
				h.First[k] = true
				if k == "author" {
					t, err := dec.Token()
					_, h.AuthorString = t.(string)
					if err == nil && !h.AuthorString {
						skipJSONValueRest(dec, t)
					}
					return true
				}
				return false
			}); err != nil {
				return true
			}
			skipJSONValueRest(dec, json.Delim('[')) // the other messages
			return true
		})
	case json.Delim('['):
		h.Array = true
		if t, err := dec.Token(); err == nil && t == json.Delim('{') {
			_ = scanObjectKeys(dec, func(k string) bool { h.Keys[k] = true; return false })
		}
	}
	return h
}

// scanObjectKeys walks the keys of the object whose '{' dec just read, calling key
// for each; key returns true when it consumed the key's value itself. It reads the
// object's '}' and returns nil, or stops at the first token it cannot read.
func scanObjectKeys(dec *json.Decoder, key func(string) bool) error {
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		k, ok := t.(string)
		if !ok {
			return errors.New("not a key")
		}
		if key(k) {
			continue
		}
		v, err := dec.Token()
		if err != nil {
			return err
		}
		if !skipJSONValueRest(dec, v) {
			return io.ErrUnexpectedEOF
		}
	}
	_, err := dec.Token()
	return err
}

// skipJSONValueRest skips the rest of a value whose first token is t; false when the
// input ends first.
func skipJSONValueRest(dec *json.Decoder, t json.Token) bool {
	if t != json.Delim('{') && t != json.Delim('[') {
		return true
	}
	for depth := 1; depth > 0; {
		t, err := dec.Token()
		if err != nil {
			return false
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return true
}

var (
	chatMinMS = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	chatMaxMS = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
)
