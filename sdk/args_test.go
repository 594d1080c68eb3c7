package sdk

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/openhuman/openhuman-core/sdk/abi"
	"strings"
	"time"
)

// wantInvalid checks that err is an invalid_params *abi.Error with exactly msg.
func wantInvalid(t *testing.T, err error, msg string) {
	t.Helper()
	var e *abi.Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v (%T), want *abi.Error %q", err, err, msg)
	}
	if e.Code != abi.CodeInvalidParams || e.Message != msg {
		t.Fatalf("error = %s: %q, want invalid_params: %q", e.Code, e.Message, msg)
	}
}

func TestParseArgsShape(t *testing.T) {
	cases := []struct {
		raw, msg string
	}{
		{`"q"`, "arguments must be an object, got string"},
		{`[1]`, "arguments must be an object, got array"},
		{`3`, "arguments must be an object, got number"},
		{`true`, "arguments must be an object, got bool"},
		{`{"limit":5,"query":"x","a":1}`, "unexpected argument `a`, `limit`"},
		{`{"limit":null}`, "unexpected argument `limit`"},
	}
	for _, c := range cases {
		_, err := ParseArgs(json.RawMessage(c.raw), "query", "k")
		wantInvalid(t, err, c.msg)
	}
	for _, raw := range []string{``, `null`, ` {} `, `{"k":null}`} {
		a, err := ParseArgs(json.RawMessage(raw), "query", "k")
		if err != nil {
			t.Fatalf("ParseArgs(%q): %v", raw, err)
		}
		if a.Has("k") || a.Has("query") {
			t.Fatalf("ParseArgs(%q): null or absent keys must read as absent", raw)
		}
	}
}

func TestRequiredString(t *testing.T) {
	cases := []struct {
		raw, want, msg string
	}{
		{`{}`, "", "missing required argument `query`"},
		{`{"query":null}`, "", "missing required argument `query`"},
		{`{"query":7}`, "", "argument `query` must be a string"},
		{`{"query":"   "}`, "", "argument `query` must not be empty"},
		{`{"query":"  phoenix launch \n"}`, "phoenix launch", ""},
	}
	for _, c := range cases {
		a, err := ParseArgs(json.RawMessage(c.raw), "query")
		if err != nil {
			t.Fatal(err)
		}
		got, err := a.RequiredString("query")
		if c.msg != "" {
			wantInvalid(t, err, c.msg)
			continue
		}
		if err != nil || got != c.want {
			t.Fatalf("RequiredString(%s) = %q, %v; want %q", c.raw, got, err, c.want)
		}
	}
}

func TestOptionalString(t *testing.T) {
	cases := []struct {
		raw, want string
		given     bool
		msg       string
	}{
		{`{}`, "", false, ""},
		{`{"kind":null}`, "", false, ""},
		{`{"kind":" person "}`, "person", true, ""},
		{`{"kind":["person"]}`, "", false, "argument `kind` must be a string"},
		{`{"kind":""}`, "", false, "argument `kind` must not be empty when provided"},
		{`{"kind":" \t"}`, "", false, "argument `kind` must not be empty when provided"},
	}
	for _, c := range cases {
		a, _ := ParseArgs(json.RawMessage(c.raw), "kind")
		got, given, err := a.OptionalString("kind")
		if c.msg != "" {
			wantInvalid(t, err, c.msg)
			continue
		}
		if err != nil || got != c.want || given != c.given {
			t.Fatalf("OptionalString(%s) = %q, %v, %v; want %q, %v", c.raw, got, given, err, c.want, c.given)
		}
	}
}

func TestStringArray(t *testing.T) {
	cases := []struct {
		raw  string
		want []string
		msg  string
	}{
		{`{}`, nil, ""},
		{`{"source_kinds":null}`, nil, ""},
		{`{"source_kinds":["","email","  "]}`, []string{"email"}, ""},
		{`{"source_kinds":[" chat ","email"]}`, []string{"chat", "email"}, ""},
		{`{"source_kinds":["", " "]}`, []string{}, ""},
		{`{"source_kinds":"email"}`, nil, "argument `source_kinds` must be an array of strings, got string"},
		{`{"source_kinds":{"a":1}}`, nil, "argument `source_kinds` must be an array of strings, got object"},
		{`{"source_kinds":["email",3]}`, nil, "argument `source_kinds` must contain only strings, got number entry"},
		{`{"source_kinds":[null]}`, nil, "argument `source_kinds` must contain only strings, got null entry"},
		{`{"source_kinds":[["x"]]}`, nil, "argument `source_kinds` must contain only strings, got array entry"},
	}
	for _, c := range cases {
		a, _ := ParseArgs(json.RawMessage(c.raw), "source_kinds")
		got, err := a.StringArray("source_kinds")
		if c.msg != "" {
			wantInvalid(t, err, c.msg)
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Fatalf("StringArray(%s) = %#v, %v; want %#v", c.raw, got, err, c.want)
		}
	}
}

func TestK(t *testing.T) {
	cases := []struct {
		raw  string
		want int
		msg  string
	}{
		{`{}`, 10, ""},
		{`{"k":null}`, 10, ""},
		{`{"k":1}`, 1, ""},
		{`{"k":50}`, 50, ""},
		{`{"k":7.0}`, 7, ""},
		{`{"k":50.000}`, 50, ""},
		{`{"k":0.5e1}`, 5, ""},
		{`{"k":2E+1}`, 20, ""},
		{`{"k":-0}`, 0, "argument `k` must be greater than zero"},
		{`{"k":0.0}`, 0, "argument `k` must be greater than zero"},
		{`{"k":5e-1}`, 0, "argument `k` must be a positive integer"},
		{`{"k":51}`, 0, "argument `k` must not exceed 50 (got 51)"},
		{`{"k":18446744073709551616}`, 0, "argument `k` must not exceed 50 (got 18446744073709551616)"},
		{`{"k":1e3}`, 0, "argument `k` must not exceed 50 (got 1000)"},
		{`{"k":0}`, 0, "argument `k` must be greater than zero"},
		{`{"k":-1}`, 0, "argument `k` must be a positive integer"},
		{`{"k":2.5}`, 0, "argument `k` must be a positive integer"},
		{`{"k":"5"}`, 0, "argument `k` must be a positive integer"},
		{`{"k":true}`, 0, "argument `k` must be a positive integer"},
		{`{"k":[5]}`, 0, "argument `k` must be a positive integer"},
		{`{"k":1e999999}`, 0, "argument `k` must be a positive integer"},
	}
	for _, c := range cases {
		a, err := ParseArgs(json.RawMessage(c.raw), "k")
		if err != nil {
			t.Fatalf("ParseArgs(%s): %v", c.raw, err)
		}
		got, err := a.K()
		if c.msg != "" {
			wantInvalid(t, err, c.msg)
			continue
		}
		if err != nil || got != c.want {
			t.Fatalf("K(%s) = %d, %v; want %d", c.raw, got, err, c.want)
		}
	}
}

func TestPositiveIntOptional(t *testing.T) {
	a, _ := ParseArgs(json.RawMessage(`{"max_results":null}`), "max_results")
	if n, given, err := a.PositiveInt("max_results", 50); n != 0 || given || err != nil {
		t.Fatalf("null max_results = %d, %v, %v; want absent", n, given, err)
	}
	a, _ = ParseArgs(json.RawMessage(`{"max_results":51}`), "max_results")
	_, _, err := a.PositiveInt("max_results", 50)
	wantInvalid(t, err, "argument `max_results` must not exceed 50 (got 51)")
	a, _ = ParseArgs(json.RawMessage(`{"max_results":0}`), "max_results")
	_, _, err = a.PositiveInt("max_results", 50)
	wantInvalid(t, err, "argument `max_results` must be greater than zero")
	a, _ = ParseArgs(json.RawMessage(`{"max_results":"ten"}`), "max_results")
	_, _, err = a.PositiveInt("max_results", 50)
	wantInvalid(t, err, "argument `max_results` must be a positive integer")
	a, _ = ParseArgs(json.RawMessage(`{"max_results":20}`), "max_results")
	if n, given, err := a.PositiveInt("max_results", 50); n != 20 || !given || err != nil {
		t.Fatalf("max_results 20 = %d, %v, %v", n, given, err)
	}
}

func TestOffset(t *testing.T) {
	cases := []struct {
		raw  string
		want int
		msg  string
	}{
		{`{}`, 0, ""},
		{`{"offset":null}`, 0, ""},
		{`{"offset":0}`, 0, ""},
		{`{"offset":1000000}`, 1000000, ""},
		{`{"offset":1000001}`, 0, "argument `offset` must not exceed 1000000 (got 1000001); narrow the listing with the tool's filters instead of paging this deep"},
		{`{"offset":99999999999999999999999}`, 0, "argument `offset` must not exceed 1000000 (got 99999999999999999999999); narrow the listing with the tool's filters instead of paging this deep"},
		{`{"offset":-3}`, 0, "argument `offset` must be a non-negative integer"},
		{`{"offset":1.5}`, 0, "argument `offset` must be a non-negative integer"},
		{`{"offset":"2"}`, 0, "argument `offset` must be a non-negative integer"},
	}
	for _, c := range cases {
		a, _ := ParseArgs(json.RawMessage(c.raw), "offset")
		got, err := a.Offset()
		if c.msg != "" {
			wantInvalid(t, err, c.msg)
			continue
		}
		if err != nil || got != c.want {
			t.Fatalf("Offset(%s) = %d, %v; want %d", c.raw, got, err, c.want)
		}
	}
}

func TestMillis(t *testing.T) {
	cases := []struct {
		raw  string
		want *int64
		msg  string
	}{
		{`{}`, nil, ""},
		{`{"since_ms":null}`, nil, ""},
		{`{"since_ms":0}`, ptr(0), ""},
		{`{"since_ms":1767225600000}`, ptr(1767225600000), ""},
		{`{"since_ms":9223372036854775807}`, ptr(9223372036854775807), ""},
		{`{"since_ms":9223372036854775808}`, nil, "argument `since_ms` must be an integer in the i64 range"},
		{`{"since_ms":"yesterday"}`, nil, "argument `since_ms` must be an integer in the i64 range"},
		{`{"since_ms":1.5}`, nil, "argument `since_ms` must be an integer in the i64 range"},
		{`{"since_ms":-9223372036854775809}`, nil, "argument `since_ms` must be an integer in the i64 range"},
		{`{"since_ms":1.7672256e12}`, ptr(1767225600000), ""},
		{`{"since_ms":-0}`, ptr(0), ""},
		{`{"since_ms":-1}`, nil, "argument `since_ms` must be a non-negative integer (milliseconds since 1970-01-01 UTC)"},
	}
	for _, c := range cases {
		a, _ := ParseArgs(json.RawMessage(c.raw), "since_ms")
		got, err := a.Millis("since_ms")
		if c.msg != "" {
			wantInvalid(t, err, c.msg)
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Fatalf("Millis(%s) = %v, %v; want %v", c.raw, got, err, c.want)
		}
	}
}

func ptr(v int64) *int64 { return &v }

func TestErrorConstructors(t *testing.T) {
	for _, c := range []struct {
		err  *abi.Error
		code string
	}{
		{InvalidParams("bad %d", 1), abi.CodeInvalidParams},
		{NotFound("bad %d", 1), abi.CodeNotFound},
		{Unavailable("bad %d", 1), abi.CodeUnavailable},
		{Internal("bad %d", 1), abi.CodeInternal},
	} {
		if c.err.Code != c.code || c.err.Message != "bad 1" {
			t.Fatalf("got %+v, want code %s message %q", c.err, c.code, "bad 1")
		}
	}
}

// FuzzArgs checks that no arguments object makes the helpers panic, and that every
// error they return is an invalid_params error.
func FuzzArgs(f *testing.F) {
	for _, seed := range []string{`{}`, `{"k":1e999}`, `{"k":-0.0e-0}`, `{"since_ms":"x","source_kinds":[1,null]}`,
		`{"offset":1e6,"query":"  "}`, `[`, `{"k":00}`, `{"k":1.}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		a, err := ParseArgs(json.RawMessage(raw), "k", "offset", "since_ms", "query", "source_kinds")
		if err != nil {
			return
		}
		check := func(err error) {
			var e *abi.Error
			if err != nil && (!errors.As(err, &e) || e.Code != abi.CodeInvalidParams) {
				t.Fatalf("%q: error %v is not invalid_params", raw, err)
			}
		}
		_, err = a.K()
		check(err)
		_, err = a.Offset()
		check(err)
		_, err = a.Millis("since_ms")
		check(err)
		_, _, err = a.OptionalString("query")
		check(err)
		_, err = a.StringArray("source_kinds")
		check(err)
	})
}

func TestCountItems(t *testing.T) {
	for raw, want := range map[string]int{
		`[]`: 0, `[ ]`: 0, `["a"]`: 1, `["a","b"]`: 2, `[ "a" , "b" ,"c"]`: 3, `[["x","y"],{"a":1,"b":2},"q,\"]"]`: 3, `[1]`: 1, `[{}]`: 1, `[[]]`: 1,
	} {
		if got := countItems(json.RawMessage(raw)); got != want {
			t.Errorf("countItems(%s) = %d, want %d", raw, got, want)
		}
	}
}

func TestTimeBound(t *testing.T) {
	day := func(s string) int64 { tm, _ := time.Parse(time.RFC3339, s); return tm.UnixMilli() }
	for _, c := range []struct {
		raw     string
		end     bool
		want    int64
		wantErr string
	}{
		{`{"t":1435708800000}`, false, 1435708800000, ""},
		{`{"t":"1435708800000"}`, false, 1435708800000, ""},
		{`{"t":"2015-07-01"}`, false, day("2015-07-01T00:00:00Z"), ""},
		{`{"t":"2015-07-01"}`, true, day("2015-07-02T00:00:00Z") - 1, ""},
		{`{"t":"2015-07"}`, false, day("2015-07-01T00:00:00Z"), ""},
		{`{"t":"2015-07"}`, true, day("2015-08-01T00:00:00Z") - 1, ""},
		{`{"t":"2015-12"}`, true, day("2016-01-01T00:00:00Z") - 1, ""},
		{`{"t":"2015-07-01T09:30:00Z"}`, true, day("2015-07-01T09:30:00Z"), ""},
		{`{"t":"2015-07-01T09:30:00+02:00"}`, false, day("2015-07-01T07:30:00Z"), ""},
		{`{"t":" 2015-07-01 "}`, false, day("2015-07-01T00:00:00Z"), ""},
		{`{"t":"yesterday"}`, false, 0, "argument `t` must be milliseconds since 1970-01-01 UTC or a date: RFC 3339 (\"2015-07-01T09:30:00Z\"), \"YYYY-MM-DD\" or \"YYYY-MM\" (got \"yesterday\")"},
		{`{"t":"2015-13"}`, false, 0, "(got \"2015-13\")"},
		{`{"t":"1969-12-31"}`, false, 0, "argument `t` must not be before 1970-01-01"},
		{`{"t":1.5}`, false, 0, "argument `t` must be an integer in the i64 range"},
		{`{"t":-5}`, false, 0, "argument `t` must be a non-negative integer"},
		{`{"t":true}`, false, 0, "argument `t` must be milliseconds since 1970-01-01 UTC or a date as a string"},
	} {
		a, _ := ParseArgs(json.RawMessage(c.raw), "t")
		got, err := a.TimeBound("t", c.end)
		switch {
		case c.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("TimeBound(%s, %v) = %v, %v; want error %q", c.raw, c.end, got, err, c.wantErr)
			}
		case err != nil || got == nil || *got != c.want:
			t.Errorf("TimeBound(%s, %v) = %v, %v; want %d", c.raw, c.end, got, err, c.want)
		}
	}
	a, _ := ParseArgs(json.RawMessage(`{}`), "t")
	if got, err := a.TimeBound("t", false); got != nil || err != nil {
		t.Errorf("absent: %v, %v", got, err)
	}
}
