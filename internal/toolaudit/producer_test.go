package toolaudit

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/wasmbin"
)

// producerModule is a minimal module with a producers section of p (raw bytes).
func producerModule(t *testing.T, payload []byte) []byte {
	t.Helper()
	var b wasmbin.Builder
	i32, i64 := wasmbin.I32, wasmbin.I64
	b.Memory(1)
	b.Func("oh_alloc", wasmbin.FuncType{Params: []wasmbin.ValType{i32}, Results: []wasmbin.ValType{i32}}, []byte{0x41, 0})
	b.Func("oh_call", wasmbin.FuncType{Params: []wasmbin.ValType{i32, i32}, Results: []wasmbin.ValType{i64}}, []byte{0x42, 0})
	if payload == nil {
		return b.Bytes()
	}
	mod, err := wasmbin.SetCustomSection(b.Bytes(), wasmbin.ProducersSection, payload)
	if err != nil {
		t.Fatal(err)
	}
	return mod
}

// TestAuditShowsProducer: the language and toolchain a module's producers
// section names appear in the text and JSON reports, escaped in text; a
// malformed section is named as such; without one the report says so.
func TestAuditShowsProducer(t *testing.T) {
	text := func(mod []byte) (string, *Report) {
		t.Helper()
		rep, err := Audit(mod, Options{Name: "m.wasm"})
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		rep.WriteText(&out)
		return out.String(), rep
	}
	rust := wasmbin.AppendProducers(nil, wasmbin.Producers{Language: []wasmbin.Producer{{Name: "Rust"}}, ProcessedBy: []wasmbin.Producer{{Name: "rustc", Version: "1.63.0"}}})
	out, rep := text(producerModule(t, rust))
	if !strings.Contains(out, "producer   Rust, built with rustc 1.63.0 (its producers section: the module's own claim)") {
		t.Errorf("text report:\n%s", out)
	}
	var js bytes.Buffer
	rep.WriteJSON(&js)
	var doc struct {
		Producer *Producer `json:"producer"`
	}
	json.Unmarshal(js.Bytes(), &doc)
	if doc.Producer == nil || doc.Producer.Source != ProducerSection || doc.Producer.ProcessedBy[0].Version != "1.63.0" {
		t.Errorf("JSON producer: %s", js.String())
	}

	evil := wasmbin.AppendProducers(nil, wasmbin.Producers{Language: []wasmbin.Producer{{Name: "C\x1b[2J\rverdict: WOULD LOAD"}}})
	if out, _ := text(producerModule(t, evil)); strings.Contains(out, "\x1b") || !strings.Contains(out, `C\u001b[2J\rverdict: WOULD LOAD`) {
		t.Errorf("control characters in a producer name reached the text report:\n%s", out)
	}
	if out, _ := text(producerModule(t, []byte{5, 1})); !strings.Contains(out, "UNREADABLE producers section") {
		t.Errorf("malformed section:\n%s", out)
	}
	if out, rep := text(producerModule(t, nil)); !strings.Contains(out, "producer   not declared (no producers section)") || rep.Producer != nil {
		t.Errorf("no section:\n%s", out)
	}
}

// TestDiffShowsProducerChange: a module rebuilt with another toolchain version
// shows a producer change in `tools audit --diff`.
func TestDiffShowsProducerChange(t *testing.T) {
	mk := func(version string) *Report {
		t.Helper()
		p := wasmbin.AppendProducers(nil, wasmbin.Producers{Language: []wasmbin.Producer{{Name: "Rust"}}, ProcessedBy: []wasmbin.Producer{{Name: "rustc", Version: version}}})
		rep, err := Audit(producerModule(t, p), Options{Name: "m.wasm"})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	d := Compare(mk("1.63.0"), mk("1.95.0"))
	var found *Change
	for i := range d.Changes {
		if d.Changes[i].Kind == KindProducer {
			found = &d.Changes[i]
		}
	}
	if found == nil || !strings.Contains(found.Old, "rustc 1.63.0") || !strings.Contains(found.New, "rustc 1.95.0") {
		t.Errorf("changes %+v lack the producer change", d.Changes)
	}
	if d := Compare(mk("1.63.0"), mk("1.63.0")); d.Differs() {
		t.Errorf("the same module differs: %+v", d.Changes)
	}
}

// TestDiffTextEscapesModuleText: module-supplied text in the text diff (here a
// producer name carrying terminal control sequences) is escaped.
func TestDiffTextEscapesModuleText(t *testing.T) {
	evil := wasmbin.AppendProducers(nil, wasmbin.Producers{Language: []wasmbin.Producer{{Name: "C\x1b[2J\u202e"}}})
	old, _ := Audit(producerModule(t, nil), Options{Name: "m.wasm"})
	new, _ := Audit(producerModule(t, evil), Options{Name: "m\x1b[1A.wasm"})
	var out strings.Builder
	if err := Compare(old, new).WriteText(&out); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); strings.ContainsAny(s, "\x1b\u202e") || !strings.Contains(s, `C\u001b[2J\u202e`) || !strings.Contains(s, `m\u001b[1A.wasm`) {
		t.Errorf("text diff:\n%s", s)
	}
}
