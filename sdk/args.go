package sdk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

// DefaultK is the number of results a tool returns when the caller gives no `k`.
const DefaultK = 10

// MaxK is the largest `k` (and `max_results`) a caller may ask for.
const MaxK = abi.MaxK

// MaxOffset is the largest `offset` the paged tools accept; deeper pages should be
// reached by narrowing the filters instead.
const MaxOffset = abi.MaxOffset

// Args is a tool's arguments object, parsed once and read with typed accessors that
// produce the argument error messages every tool shares. JSON null counts as absent
// for every key. The zero value is an empty arguments object.
type Args struct {
	m map[string]json.RawMessage
}

// ParseArgs parses raw (a JSON object; empty input or null means {}) and rejects keys
// not in allowed. Unknown keys are reported first, sorted, in one message:
// "unexpected argument `a`, `b`".
func ParseArgs(raw json.RawMessage, allowed ...string) (*Args, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return &Args{m: map[string]json.RawMessage{}}, nil
	}
	if t := jsonType(trimmed); t != "object" {
		return nil, InvalidParams("arguments must be an object, got %s", t)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &m); err != nil {
		return nil, InvalidParams("arguments are not valid JSON: %v", err)
	}
	var unknown []string
	for k := range m {
		if !slices.Contains(allowed, k) {
			unknown = append(unknown, "`"+k+"`")
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, InvalidParams("unexpected argument %s", strings.Join(unknown, ", "))
	}
	return &Args{m: m}, nil
}

// value returns the raw value of name, or nil when it is absent or null.
func (a *Args) value(name string) json.RawMessage {
	if a == nil || a.m == nil {
		return nil
	}
	v := bytes.TrimSpace(a.m[name])
	if len(v) == 0 || bytes.Equal(v, []byte("null")) {
		return nil
	}
	return v
}

// Has reports whether name is present with a non-null value.
func (a *Args) Has(name string) bool { return a.value(name) != nil }

// RequiredString returns the trimmed string value of name. Absent or null →
// "missing required argument `name`"; not a string → "argument `name` must be a
// string"; blank → "argument `name` must not be empty".
func (a *Args) RequiredString(name string) (string, error) {
	v := a.value(name)
	if v == nil {
		return "", InvalidParams("missing required argument `%s`", name)
	}
	var s string
	if jsonType(v) != "string" || json.Unmarshal(v, &s) != nil {
		return "", InvalidParams("argument `%s` must be a string", name)
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return "", InvalidParams("argument `%s` must not be empty", name)
	}
	return s, nil
}

// OptionalString returns the trimmed string value of name and whether it was given.
// Absent or null → ("", false, nil); not a string → "argument `name` must be a
// string"; blank → "argument `name` must not be empty when provided".
func (a *Args) OptionalString(name string) (string, bool, error) {
	v := a.value(name)
	if v == nil {
		return "", false, nil
	}
	var s string
	if jsonType(v) != "string" || json.Unmarshal(v, &s) != nil {
		return "", false, InvalidParams("argument `%s` must be a string", name)
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return "", false, InvalidParams("argument `%s` must not be empty when provided", name)
	}
	return s, true, nil
}

// StringArray returns the trimmed, non-blank elements of the string array name (nil
// when absent or null; an all-blank array yields an empty, non-nil slice, which means
// "no filter"). Not an array → "argument `name` must be an array of strings, got
// <type>"; a non-string element → "argument `name` must contain only strings, got
// <type> entry".
func (a *Args) StringArray(name string) ([]string, error) {
	v := a.value(name)
	if v == nil {
		return nil, nil
	}
	if t := jsonType(v); t != "array" {
		return nil, InvalidParams("argument `%s` must be an array of strings, got %s", name, t)
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(v, &elems); err != nil {
		return nil, InvalidParams("argument `%s` must be an array of strings: %v", name, err)
	}
	out := make([]string, 0, len(elems))
	for _, e := range elems {
		e = bytes.TrimSpace(e)
		var s string
		if jsonType(e) != "string" || json.Unmarshal(e, &s) != nil {
			return nil, InvalidParams("argument `%s` must contain only strings, got %s entry", name, jsonType(e))
		}
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

// LimitedStringArray is StringArray for an array of at most maxItems elements of
// at most maxChars characters each (the input schema's maxItems and maxLength):
// "argument `name` has N items; at most M are allowed" and "an item of argument
// `name` has N characters; at most M are allowed".
func (a *Args) LimitedStringArray(name string, maxItems, maxChars int) ([]string, error) {
	if v := a.value(name); v != nil && jsonType(v) == "array" {
		if n := countItems(v); n > maxItems {
			return nil, InvalidParams("argument `%s` has %d items; at most %d are allowed (split the filter over several calls)", name, n, maxItems)
		}
	}
	out, err := a.StringArray(name)
	if err != nil {
		return nil, err
	}
	for _, s := range out {
		if n := utf8.RuneCountInString(s); n > maxChars {
			return nil, InvalidParams("an item of argument `%s` has %d characters; at most %d are allowed", name, n, maxChars)
		}
	}
	return out, nil
}

// countItems counts the elements of the JSON array v (already validated by
// ParseArgs) with one pass over its bytes and no allocation, so an argument of
// 100,000 values is refused quickly inside a guest.
func countItems(v json.RawMessage) int {
	n, depth, inStr, empty := 0, 0, false, true
	for i := 0; i < len(v); i++ {
		c := v[i]
		if inStr {
			switch c {
			case '\\':
				i++
			case '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		case ',':
			if depth == 1 {
				n++
			}
		case ' ', '\t', '\n', '\r':
			continue
		}
		if depth >= 1 && c != '[' || depth > 1 {
			empty = false
		}
	}
	if empty {
		return 0
	}
	return n + 1
}

// CheckLength refuses the string value s of argument name when it is longer than
// maxChars characters (the input schema's maxLength): "argument `name` has N
// characters; at most M are allowed".
func CheckLength(name, s string, maxChars int) error {
	if n := utf8.RuneCountInString(s); n > maxChars {
		return InvalidParams("argument `%s` has %d characters; at most %d are allowed", name, n, maxChars)
	}
	return nil
}

// K returns the `k` argument: absent or null → DefaultK; otherwise a positive integer
// no greater than MaxK (see PositiveInt for the messages).
func (a *Args) K() (int, error) {
	n, ok, err := a.PositiveInt("k", MaxK)
	if err != nil || !ok {
		return DefaultK, err
	}
	return n, nil
}

// PositiveInt returns the integer value of name in 1..max and whether it was given.
// Absent or null → (0, false, nil). Not a non-negative integer → "argument `name`
// must be a positive integer"; 0 → "argument `name` must be greater than zero";
// above max → "argument `name` must not exceed <max> (got N)".
func (a *Args) PositiveInt(name string, max int) (int, bool, error) {
	v := a.value(name)
	if v == nil {
		return 0, false, nil
	}
	mag, neg, ok := parseInteger(v)
	if !ok || (neg && mag != "0") {
		return 0, false, InvalidParams("argument `%s` must be a positive integer", name)
	}
	if mag == "0" {
		return 0, false, InvalidParams("argument `%s` must be greater than zero", name)
	}
	n, fits := fitsAtMost(mag, uint64(max))
	if !fits {
		return 0, false, InvalidParams("argument `%s` must not exceed %d (got %s)", name, max, mag)
	}
	return int(n), true, nil
}

// Offset returns the `offset` argument (0 when absent or null): a non-negative
// integer no greater than MaxOffset.
func (a *Args) Offset() (int, error) {
	const name = "offset"
	v := a.value(name)
	if v == nil {
		return 0, nil
	}
	mag, neg, ok := parseInteger(v)
	if !ok || (neg && mag != "0") {
		return 0, InvalidParams("argument `%s` must be a non-negative integer", name)
	}
	n, fits := fitsAtMost(mag, MaxOffset)
	if !fits {
		return 0, InvalidParams("argument `%s` must not exceed %d (got %s); narrow the listing with the tool's filters instead of paging this deep", name, MaxOffset, mag)
	}
	return int(n), nil
}

// Millis returns the timestamp argument name (milliseconds since 1970-01-01 UTC),
// nil when absent or null. Not an integer → "argument `name` must be an integer in
// the i64 range"; negative → "argument `name` must be a non-negative integer
// (milliseconds since 1970-01-01 UTC)".
func (a *Args) Millis(name string) (*int64, error) {
	v := a.value(name)
	if v == nil {
		return nil, nil
	}
	mag, neg, ok := parseInteger(v)
	if !ok {
		return nil, InvalidParams("argument `%s` must be an integer in the i64 range", name)
	}
	if neg {
		mag = "-" + mag
	}
	ms, err := strconv.ParseInt(mag, 10, 64)
	if err != nil {
		return nil, InvalidParams("argument `%s` must be an integer in the i64 range", name)
	}
	if ms < 0 {
		return nil, InvalidParams("argument `%s` must be a non-negative integer (milliseconds since 1970-01-01 UTC)", name)
	}
	return &ms, nil
}

// TimeBound returns the time argument name in milliseconds since 1970-01-01 UTC,
// nil when absent or null. It takes what people type as well as milliseconds:
// an RFC 3339 time ("2015-07-01T09:30:00Z", "2015-07-01T09:30:00+02:00"), a day
// ("2015-07-01") or a month ("2015-07"), a day or month read in UTC. A day or
// month stands for its first millisecond, or its last when end is true (an
// inclusive upper bound: until "2015-07" keeps all of July). Anything else is an
// error naming the forms it takes.
func (a *Args) TimeBound(name string, end bool) (*int64, error) {
	v := a.value(name)
	switch jsonType(v) {
	case "string":
	case "number":
		return a.Millis(name)
	default:
		if v == nil {
			return nil, nil
		}
		return nil, InvalidParams("argument `%s` must be milliseconds since 1970-01-01 UTC or a date as a string: "+
			"RFC 3339 (\"2015-07-01T09:30:00Z\"), \"YYYY-MM-DD\" or \"YYYY-MM\"", name)
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return nil, InvalidParams("argument `%s` must be a string or an integer", name)
	}
	ms, ok := parseTimeBound(strings.TrimSpace(s), end)
	if !ok {
		return nil, InvalidParams("argument `%s` must be milliseconds since 1970-01-01 UTC or a date: RFC 3339 (\"2015-07-01T09:30:00Z\"), "+
			"\"YYYY-MM-DD\" or \"YYYY-MM\" (got %q)", name, clipArg(s))
	}
	if ms < 0 {
		return nil, InvalidParams("argument `%s` must not be before 1970-01-01 (got %q)", name, clipArg(s))
	}
	return &ms, nil
}

// parseTimeBound reads s as TimeBound describes (digits alone: milliseconds).
func parseTimeBound(s string, end bool) (int64, bool) {
	if s == "" {
		return 0, false
	}
	if strings.Trim(s, "0123456789") == "" {
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMilli(), true
		}
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		if end {
			t = t.AddDate(0, 0, 1)
			return t.UnixMilli() - 1, true
		}
		return t.UnixMilli(), true
	}
	if t, err := time.Parse("2006-01", s); err == nil {
		if end {
			t = t.AddDate(0, 1, 0)
			return t.UnixMilli() - 1, true
		}
		return t.UnixMilli(), true
	}
	return 0, false
}

// clipArg shortens a client's value for an error message.
func clipArg(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// maxIntegerDigits bounds the magnitude parseInteger expands (absurd literals such
// as 1e999999 are refused instead of being written out).
const maxIntegerDigits = 400

// parseInteger parses a JSON number that is mathematically an integer (5, 5.0, 5e2).
// It returns the decimal digits of its absolute value without leading zeros ("0" for
// zero), whether the number was negative, and false when v is not a number, not
// integral, or longer than maxIntegerDigits.
func parseInteger(v json.RawMessage) (mag string, neg bool, ok bool) {
	if jsonType(v) != "number" {
		return "", false, false
	}
	s := string(v)
	if strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
	}
	mant, expPart, hasExp := strings.Cut(strings.ToLower(s), "e")
	exp := 0
	if hasExp {
		e, err := strconv.Atoi(strings.TrimPrefix(expPart, "+"))
		if err != nil || e > 10*maxIntegerDigits || e < -10*maxIntegerDigits {
			return "", false, false
		}
		exp = e
	}
	ip, fp, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(ip+fp, "0")
	exp -= len(fp) // value = digits × 10^exp
	for strings.HasSuffix(digits, "0") {
		digits, exp = digits[:len(digits)-1], exp+1
	}
	switch {
	case digits == "":
		return "0", neg, true
	case exp < 0 || len(digits)+exp > maxIntegerDigits:
		return "", false, false
	}
	return digits + strings.Repeat("0", exp), neg, true
}

// fitsAtMost reports whether the magnitude mag is at most max.
func fitsAtMost(mag string, max uint64) (uint64, bool) {
	n, err := strconv.ParseUint(mag, 10, 64)
	return n, err == nil && n <= max
}

// jsonType names the JSON type of v as the argument messages do: null, bool,
// number, string, array or object ("invalid" for bytes that are none of these).
func jsonType(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "null"
	}
	switch c := v[0]; {
	case c == 'n':
		return "null"
	case c == 't' || c == 'f':
		return "bool"
	case c == '"':
		return "string"
	case c == '[':
		return "array"
	case c == '{':
		return "object"
	case c == '-' || (c >= '0' && c <= '9'):
		return "number"
	}
	return "invalid"
}

// InvalidParams returns an invalid_params error with a formatted message.
func InvalidParams(format string, args ...any) *abi.Error {
	return &abi.Error{Code: abi.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// NotFound returns a not_found error with a formatted message.
func NotFound(format string, args ...any) *abi.Error {
	return &abi.Error{Code: abi.CodeNotFound, Message: fmt.Sprintf(format, args...)}
}

// Unavailable returns an unavailable error (a dependency such as SearXNG failed)
// with a formatted message.
func Unavailable(format string, args ...any) *abi.Error {
	return &abi.Error{Code: abi.CodeUnavailable, Message: fmt.Sprintf(format, args...)}
}

// Internal returns an internal error with a formatted message.
func Internal(format string, args ...any) *abi.Error {
	return &abi.Error{Code: abi.CodeInternal, Message: fmt.Sprintf(format, args...)}
}
