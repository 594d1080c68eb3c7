package jsoncheck

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

var seeds = []string{
	``, ` `, `{}`, `[]`, `""`, `0`, `-0`, `1.5e+10`, `-1E-2`, `01`, `1.`, `.5`, `-`, `1e`, `+1`,
	`true`, `false`, `null`, `tru`, `nul`, `nulll`, `{"a":1}`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `[1,]`, `[,1]`,
	`{"a":[1,2,{"b":null}],"c":"d"}`, " {\"a\" : [ 1 , 2 ] }\n", "[1,\t2]", `"\u00e9\n\t\"\\\/"`, `"\u12G4"`, `"\x"`,
	"\"a\x01b\"", "\"\xff\xfe\"", `"unterminated`, `{"a":"b"}}`, `[1][2]`, `{"a":1} `, "\ufeff{}",
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000),
	strings.Repeat(`{"a":`, 10001) + "1" + strings.Repeat("}", 10001),
}

func check(t *testing.T, b []byte) {
	t.Helper()
	valid, compact := Check(b)
	if want := json.Valid(b); valid != want {
		t.Fatalf("Check(%.80q) valid = %v, json.Valid says %v", b, valid, want)
	}
	if !valid {
		return
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatal(err)
	}
	if want := bytes.Equal(buf.Bytes(), b); compact != want {
		t.Fatalf("Check(%.80q) compact = %v, json.Compact says %v", b, compact, want)
	}
}

func TestCheckSeeds(t *testing.T) {
	for _, s := range seeds {
		check(t, []byte(s))
	}
}

func FuzzCheck(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { check(t, b) })
}

func BenchmarkCheck(b *testing.B) {
	doc := []byte(`{"chunks":[` + strings.TrimSuffix(strings.Repeat(`{"id":"6925fbd8bb6fc3ef648ecf66662f2203","source_kind":"email","title":"water \"dravuzesko\" it","timestamp_ms":1766297694000,"score":3.5615154094100525,"messages":[{"author":"Pavel Garcia \u003cpavel@bench.example\u003e","text":"Hi Keiko,\n\nof.\ntold had — should the big along should it Chiara Costa. country mozuvuvi of totavuke.\n\nbumokali vusi. of about loviruzu rudra sitakima the it what all no went in be the"}]},`, 20), ",") + `]}`)
	b.Run("jsoncheck", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for range b.N {
			if v, c := Check(doc); !v || !c {
				b.Fatal("doc not valid and compact")
			}
		}
	})
	b.Run("encoding-json-Valid", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for range b.N {
			if !json.Valid(doc) {
				b.Fatal("doc not valid")
			}
		}
	})
}
