package readkit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// maxJSONDepth is the deepest nesting of arrays and objects accepted in input JSON.
// Real exports nest a handful of levels; the limit keeps hostile files from costing
// stack or time.
const maxJSONDepth = 64

// checkJSON verifies that b is well-formed-looking JSON text within the depth limit
// and valid UTF-8, before it is decoded. Errors name the byte offset.
func checkJSON(b []byte) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return ErrEmpty
	}
	if bytes.HasPrefix(b, []byte{0xFF, 0xFE}) || bytes.HasPrefix(b, []byte{0xFE, 0xFF}) {
		return errors.New("byte 0: UTF-16 byte-order mark: JSON must be UTF-8; re-save the file as UTF-8")
	}
	depth, inStr, esc := 0, false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '[', '{':
			depth++
			if depth > maxJSONDepth {
				return fmt.Errorf("byte %d: JSON nested deeper than %d levels: rejected (no chat, mail or document export nests this deep)", i, maxJSONDepth)
			}
		case ']', '}':
			depth--
		}
	}
	if !utf8.Valid(b) {
		_, info := replaceInvalidUTF8(b)
		return fmt.Errorf("byte %d: invalid UTF-8 in JSON: re-save the file as UTF-8", info.first)
	}
	return nil
}

// DescribeJSONError turns decoder errors into "byte N: ..." messages naming the
// field that had the wrong type.
func DescribeJSONError(err error, size int) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("byte %d: not valid JSON: %v", se.Offset, se)
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "(top level)"
		}
		return fmt.Errorf("byte %d: field %q is a JSON %s, expected %s: wrong schema, nothing ingested from this file", te.Offset, field, te.Value, te.Type)
	case errors.Is(err, ErrEmpty):
		return err
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("byte %d: not valid JSON: the file ends inside a value (truncated?)", size)
	}
	return fmt.Errorf("not valid JSON: %w", err)
}

// DecodeStrict decodes b into v, rejecting trailing data after the value.
func DecodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return DescribeJSONError(err, len(b))
	}
	if dec.More() {
		return fmt.Errorf("byte %d: extra data after the JSON value", dec.InputOffset())
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); err == nil {
		return fmt.Errorf("byte %d: extra data after the JSON value", dec.InputOffset())
	} else if se := (*json.SyntaxError)(nil); errors.As(err, &se) {
		return fmt.Errorf("byte %d: extra data after the JSON value: %v", se.Offset, se)
	}
	return nil
}
