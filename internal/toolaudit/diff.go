package toolaudit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/openhuman/openhuman-core/internal/textsafe"
)

// DiffSchema identifies the JSON layout of a Diff; it changes only when a field is
// removed or changes meaning (new fields and change kinds may be added).
const DiffSchema = "openhuman.audit-diff/1"

// Change kinds of a Diff, in the order a Diff lists them.
const (
	KindFile       = "file"       // size, sha256
	KindProducer   = "producer"   // the language and toolchain the module names or shows
	KindABI        = "abi"        // the manifest's abi
	KindManifest   = "manifest"   // the manifest as a whole (appeared, disappeared, became invalid)
	KindCapability = "capability" // a requested capability
	KindLimit      = "limit"      // a requested limit
	KindImport     = "import"     // an import, with its class
	KindExport     = "export"     // an export, with its type
	KindTool       = "tool"       // a [[tool]] entry
	KindToolField  = "tool_field" // title, description, export, annotations of a tool
	KindSchema     = "schema"     // one JSON pointer inside a tool's input or output schema
	KindSignature  = "signature"  // signature state or signer
	KindVerdict    = "verdict"    // the verdict under the policy in force
)

var kindOrder = []string{KindFile, KindProducer, KindABI, KindManifest, KindCapability, KindLimit, KindImport, KindExport,
	KindTool, KindToolField, KindSchema, KindSignature, KindVerdict}

// Change operations.
const (
	OpAdded   = "added"
	OpRemoved = "removed"
	OpChanged = "changed"
)

// Diff is what changed between two versions of a module, each audited under the
// same policy. Its JSON form is documented in sdk/AUTHORING.md.
type Diff struct {
	Schema  string   `json:"schema"`
	Old     DiffSide `json:"old"`
	New     DiffSide `json:"new"`
	Changes []Change `json:"changes"`
}

// DiffSide names one of the two modules compared.
type DiffSide struct {
	File   string `json:"file"`
	Size   int    `json:"size"`
	SHA256 string `json:"sha256"`
	Status string `json:"status"` // the verdict status
}

// Change is one difference. Subject names what changed (an import "module.name",
// a capability, "memory_mib", a tool name, "tool.title", "tool output_schema
// /properties/x"); Old and New are its values as text ("" when absent).
type Change struct {
	Kind    string `json:"kind"`
	Op      string `json:"op"`
	Subject string `json:"subject"`
	Old     string `json:"old,omitempty"`
	New     string `json:"new,omitempty"`
	// Note says why a reviewer should care (a new capability, a forbidden import, …).
	Note string `json:"note,omitempty"`
}

// Compare lists what changed from old to new, grouped by kind in a fixed order
// and sorted by subject within a kind, so that equal inputs give equal output.
func Compare(old, new *Report) *Diff {
	d := &Diff{Schema: DiffSchema, Old: side(old), New: side(new), Changes: []Change{}}
	add := func(kind, op, subject, o, n, note string) {
		d.Changes = append(d.Changes, Change{Kind: kind, Op: op, Subject: subject, Old: o, New: n, Note: note})
	}
	if old.SHA256 != new.SHA256 {
		add(KindFile, OpChanged, "sha256", old.SHA256, new.SHA256, "a new pin is needed in policy.toml")
	}
	if old.Size != new.Size {
		add(KindFile, OpChanged, "size", strconv.Itoa(old.Size), strconv.Itoa(new.Size), "")
	}
	if old.ABI != new.ABI {
		add(KindABI, OpChanged, "abi", old.ABI, new.ABI, "")
	}
	switch {
	case old.Manifest == nil && new.Manifest != nil:
		add(KindManifest, OpAdded, "manifest", old.ManifestError, "valid", "")
	case old.Manifest != nil && new.Manifest == nil:
		add(KindManifest, OpRemoved, "manifest", "valid", new.ManifestError, "the new module cannot load without a valid manifest")
	}
	om, nm := manifestOrEmpty(old.Manifest), manifestOrEmpty(new.Manifest)
	setDiff(om.Capabilities, nm.Capabilities, func(c string) {
		add(KindCapability, OpAdded, c, "", c, "requests a new capability: the policy must grant it")
	}, func(c string) { add(KindCapability, OpRemoved, c, c, "", "") })
	for _, l := range []struct {
		name string
		o, n int
	}{
		{"timeout_ms", om.Limits.TimeoutMS, nm.Limits.TimeoutMS},
		{"memory_mib", om.Limits.MemoryMiB, nm.Limits.MemoryMiB},
		{"max_result_bytes", om.Limits.MaxResultBytes, nm.Limits.MaxResultBytes},
	} {
		if l.o != l.n {
			add(KindLimit, OpChanged, l.name, limitText(l.o), limitText(l.n), "")
		}
	}
	oi, ni := importMap(old.Imports), importMap(new.Imports)
	for _, k := range unionKeys(oi, ni) {
		o, okO := oi[k]
		n, okN := ni[k]
		switch {
		case !okO:
			add(KindImport, OpAdded, k, "", importText(n), importNote(n))
		case !okN:
			add(KindImport, OpRemoved, k, importText(o), "", "")
		case o.Class != n.Class || o.Type != n.Type || o.Kind != n.Kind:
			add(KindImport, OpChanged, k, importText(o), importText(n), importNote(n))
		}
	}
	oe, ne := exportMap(old.Exports), exportMap(new.Exports)
	for _, k := range unionKeys(oe, ne) {
		o, okO := oe[k]
		n, okN := ne[k]
		switch {
		case !okO:
			add(KindExport, OpAdded, k, "", n, "")
		case !okN:
			add(KindExport, OpRemoved, k, o, "", "")
		case o != n:
			add(KindExport, OpChanged, k, o, n, "")
		}
	}
	ot, nt := toolMap(om.Tools), toolMap(nm.Tools)
	names := unionKeys(ot, nt)
	for _, k := range names {
		_, okO := ot[k]
		n, okN := nt[k]
		switch {
		case !okO:
			add(KindTool, OpAdded, k, "", n.Title, "")
		case !okN:
			add(KindTool, OpRemoved, k, ot[k].Title, "", "clients calling it get `unknown tool`")
		}
	}
	for _, k := range names {
		o, okO := ot[k]
		n, okN := nt[k]
		if !okO || !okN {
			continue
		}
		for _, f := range []struct{ name, o, n string }{
			{"title", o.Title, n.Title},
			{"description", o.Description, n.Description},
			{"export", o.Export, n.Export},
			{"annotations", annotationsText(o), annotationsText(n)},
		} {
			if f.o != f.n {
				add(KindToolField, OpChanged, k+"."+f.name, f.o, f.n, "")
			}
		}
	}
	for _, k := range names {
		o, okO := ot[k]
		n, okN := nt[k]
		if !okO || !okN {
			continue
		}
		for _, s := range []struct {
			name string
			o, n json.RawMessage
		}{{"input_schema", o.InputSchema, n.InputSchema}, {"output_schema", o.OutputSchema, n.OutputSchema}} {
			for _, c := range schemaChanges(s.o, s.n) {
				c.Kind, c.Subject = KindSchema, k+" "+s.name+" "+c.Subject
				d.Changes = append(d.Changes, c)
			}
		}
	}
	if o, n := old.Producer.text(), new.Producer.text(); o != n {
		add(KindProducer, OpChanged, "producer", o, n, "built by another language or toolchain version")
	}
	if oldSig, newSig := sigText(old), sigText(new); oldSig != newSig {
		add(KindSignature, OpChanged, "signature", oldSig, newSig, "")
	}
	if old.Verdict.Status != new.Verdict.Status {
		add(KindVerdict, OpChanged, "status", old.Verdict.Status, new.Verdict.Status, strings.Join(new.Verdict.Reasons, "; "))
	}
	// Stable order: by kind, then as found (each kind was added in sorted order).
	sort.SliceStable(d.Changes, func(i, j int) bool {
		return slices.Index(kindOrder, d.Changes[i].Kind) < slices.Index(kindOrder, d.Changes[j].Kind)
	})
	return d
}

// Differs reports whether anything a reviewer sees changed.
func (d *Diff) Differs() bool { return len(d.Changes) > 0 }

// WriteJSON writes the diff as indented JSON and a newline.
func (d *Diff) WriteJSON(w io.Writer) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return fmt.Errorf("encode audit diff: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// WriteText writes the diff for people: one line a change, "+" added, "-"
// removed, "~" changed, grouped by kind.
func (d *Diff) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "old  %s  %s  %d bytes  %s\n", textsafe.String(d.Old.File), short(d.Old.SHA256), d.Old.Size, d.Old.Status)
	fmt.Fprintf(&b, "new  %s  %s  %d bytes  %s\n", textsafe.String(d.New.File), short(d.New.SHA256), d.New.Size, d.New.Status)
	if len(d.Changes) == 0 {
		b.WriteString("\nno differences\n")
	}
	last := ""
	for _, c := range d.Changes {
		if c.Kind != last {
			fmt.Fprintf(&b, "\n%s\n", c.Kind)
			last = c.Kind
		}
		mark := map[string]string{OpAdded: "+", OpRemoved: "-", OpChanged: "~"}[c.Op]
		var val string
		switch c.Op {
		case OpAdded:
			val = clip(c.New)
		case OpRemoved:
			val = clip(c.Old)
		default:
			val = clip(c.Old) + " → " + clip(c.New)
		}
		subject := textsafe.String(c.Subject)
		if c.Op != OpChanged && val == subject {
			fmt.Fprintf(&b, "  %s %s", mark, subject)
		} else {
			fmt.Fprintf(&b, "  %s %s: %s", mark, subject, val)
		}
		if c.Note != "" {
			fmt.Fprintf(&b, "  (%s)", clip(c.Note))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func side(r *Report) DiffSide {
	return DiffSide{File: r.File, Size: r.Size, SHA256: r.SHA256, Status: r.Verdict.Status}
}

func manifestOrEmpty(m *Manifest) *Manifest {
	if m == nil {
		return &Manifest{}
	}
	return m
}

func setDiff(old, new []string, added, removed func(string)) {
	for _, c := range sortedCopy(new) {
		if !slices.Contains(old, c) {
			added(c)
		}
	}
	for _, c := range sortedCopy(old) {
		if !slices.Contains(new, c) {
			removed(c)
		}
	}
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

func unionKeys[V any](a, b map[string]V) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

func importMap(imps []Import) map[string]Import {
	m := map[string]Import{}
	for _, i := range imps {
		m[i.Module+"."+i.Name] = i
	}
	return m
}

func importText(i Import) string {
	s := i.Kind
	if i.Type != "" {
		s += " " + i.Type
	}
	return s + " [" + i.Class + "]"
}

func importNote(i Import) string {
	switch i.Class {
	case ClassForbidden:
		return "FORBIDDEN: " + i.Note
	case ClassCapability:
		return "capability " + i.Capability
	case ClassExtismNeverGranted:
		return "never granted"
	}
	return ""
}

func exportMap(exps []Export) map[string]string {
	m := map[string]string{}
	for _, e := range exps {
		s := e.Kind
		if e.Type != "" {
			s += " " + e.Type
		}
		m[e.Name] = s
	}
	return m
}

func toolMap(tools []Tool) map[string]Tool {
	m := map[string]Tool{}
	for _, t := range tools {
		m[t.Name] = t
	}
	return m
}

func annotationsText(t Tool) string {
	return fmt.Sprintf("readOnlyHint=%v openWorldHint=%v", t.Annotations.ReadOnlyHint, t.Annotations.OpenWorldHint)
}

func limitText(v int) string {
	if v <= 0 {
		return "unset"
	}
	return strconv.Itoa(v)
}

func sigText(r *Report) string {
	if r.Signature == nil {
		return "none"
	}
	s := r.Signature.State
	if r.Signature.KeyID != "" {
		s += " " + r.Signature.KeyID
	}
	return s
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// clip keeps a value on one line of a screen.
// clip shortens a value for one line of the text diff, escaping what came from
// a module (control and bidirectional characters) so it cannot rewrite the screen.
func clip(s string) string {
	s = textsafe.String(strings.ReplaceAll(s, "\n", " "))
	if r := []rune(s); len(r) > 100 {
		return string(r[:99]) + "…"
	}
	return s
}

// schemaChanges compares two JSON Schemas leaf by leaf: each JSON pointer whose
// value appeared, disappeared or changed is one change (subject = the pointer).
func schemaChanges(old, new json.RawMessage) []Change {
	o, n := map[string]string{}, map[string]string{}
	flatten(old, "", o)
	flatten(new, "", n)
	var out []Change
	for _, k := range unionKeys(o, n) {
		ov, okO := o[k]
		nv, okN := n[k]
		ptr := k
		if ptr == "" {
			ptr = "/"
		}
		switch {
		case !okO:
			out = append(out, Change{Op: OpAdded, Subject: ptr, New: nv})
		case !okN:
			out = append(out, Change{Op: OpRemoved, Subject: ptr, Old: ov})
		case ov != nv:
			out = append(out, Change{Op: OpChanged, Subject: ptr, Old: ov, New: nv})
		}
	}
	return out
}

// flatten records every scalar (and empty object or array) of a JSON document
// under its JSON pointer. An array of scalars (an enum, "required") is one leaf.
func flatten(raw json.RawMessage, ptr string, out map[string]string) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		out[ptr] = string(raw)
		return
	}
	flattenValue(v, ptr, out)
}

func flattenValue(v any, ptr string, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			out[ptr] = "{}"
		}
		for k, e := range x {
			flattenValue(e, ptr+"/"+escapePointer(k), out)
		}
	case []any:
		scalar := true
		for _, e := range x {
			switch e.(type) {
			case map[string]any, []any:
				scalar = false
			}
		}
		if scalar {
			b, _ := json.Marshal(x)
			out[ptr] = string(b)
			return
		}
		for i, e := range x {
			flattenValue(e, ptr+"/"+strconv.Itoa(i), out)
		}
	default:
		b, _ := json.Marshal(x)
		out[ptr] = string(b)
	}
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
