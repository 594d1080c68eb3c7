package toolaudit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/openhuman/openhuman-core/internal/wasmbin"
)

// WriteJSON writes the report as indented JSON (stable field order) and a newline.
func (r *Report) WriteJSON(w io.Writer) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("encode audit report: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// WriteText writes the report for people.
func (r *Report) WriteText(w io.Writer) error {
	r = r.escaped() // module-supplied text never reaches the terminal raw
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "module\t%s (%s)\n", r.File, r.Origin)
	fmt.Fprintf(tw, "size\t%d bytes\n", r.Size)
	fmt.Fprintf(tw, "sha256\t%s\n", r.SHA256)
	if !r.Valid {
		tw.Flush()
		fmt.Fprintf(&b, "\nNOT A VALID MODULE: %s\n", r.Error)
		_, err := io.WriteString(w, b.String())
		return err
	}
	if r.Error != "" { // refused from a section's count, nothing decoded
		tw.Flush()
		fmt.Fprintf(&b, "\nnot decoded: %s\n", r.Error)
		fmt.Fprintf(&b, "\npolicy: %s\nverdict: NEVER LOADABLE as built: the module itself must change (no policy entry admits it)\n", r.Policy.File)
		for _, reason := range r.Verdict.Reasons {
			fmt.Fprintf(&b, "  - %s\n", reason)
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
	abiStr := r.ABI
	if abiStr == "" {
		abiStr = "(unknown: no valid manifest)"
	}
	fmt.Fprintf(tw, "abi\t%s\n", abiStr)
	if r.Signature != nil {
		fmt.Fprintf(tw, "signature\t%s\n", r.Signature)
	}
	fmt.Fprintf(tw, "producer\t%s\n", r.Producer.text())
	tw.Flush()

	b.WriteString("\nmanifest\n")
	if r.Manifest == nil {
		fmt.Fprintf(&b, "  MISSING OR INVALID: %s\n", r.ManifestError)
	} else {
		m := r.Manifest
		caps := "(none)"
		if len(m.Capabilities) > 0 {
			caps = strings.Join(m.Capabilities, ", ")
		}
		fmt.Fprintf(&b, "  requests capabilities: %s\n", caps)
		fmt.Fprintf(&b, "  requests limits: %s\n", limitsText(m.Limits.TimeoutMS, m.Limits.MemoryMiB, m.Limits.MaxResultBytes, "not set"))
		for _, t := range m.Tools {
			fmt.Fprintf(&b, "  tool %s", t.Name)
			if t.Title != "" {
				fmt.Fprintf(&b, " — %s", t.Title)
			}
			fmt.Fprintf(&b, " (export %s)\n", t.Export)
			fmt.Fprintf(&b, "    %s\n", t.Description)
			fmt.Fprintf(&b, "    annotations: readOnlyHint=%v openWorldHint=%v\n", t.Annotations.ReadOnlyHint, t.Annotations.OpenWorldHint)
			fmt.Fprintf(&b, "    input schema:  %s\n", t.InputSchema)
			fmt.Fprintf(&b, "    output schema: %s\n", t.OutputSchema)
		}
	}

	fmt.Fprintf(&b, "\nimports (%d)\n", len(r.Imports))
	if len(r.Imports) == 0 {
		b.WriteString("  none: the module can call nothing outside itself\n")
	}
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, im := range r.Imports {
		label := map[string]string{
			ClassWASIBasic:          "WASI basic",
			ClassCapability:         "CAPABILITY " + im.Capability,
			ClassLog:                "log",
			ClassExtismPlumbing:     "Extism plumbing",
			ClassExtismNeverGranted: "Extism, NEVER GRANTED",
			ClassForbidden:          "FORBIDDEN",
		}[im.Class]
		fmt.Fprintf(tw, "  %s.%s\t%s\t%s\t%s\n", im.Module, im.Name, im.Type, label, im.Note)
	}
	tw.Flush()
	if len(r.Egress) > 0 {
		b.WriteString("\negress: calls that send data beyond the local store\n")
		for _, e := range r.Egress {
			fmt.Fprintf(&b, "  %s (%s) reaches %s\n", e.Import, e.Capability, e.Reaches)
		}
	}
	if c := r.LoadCost; c != nil {
		fmt.Fprintf(&b, "\nload cost: %d functions × %d types = %d function-type pairs compiled at every start (limit %d)\n",
			c.Functions, c.Types, c.FunctionTypePairs, c.MaxFunctionTypePair)
	}
	fmt.Fprintf(&b, "\nexports (%d)\n", len(r.Exports))
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, e := range r.Exports {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", e.Name, e.Kind, e.Type)
	}
	tw.Flush()

	pol := r.Policy.File
	if pol == "" {
		pol = "defaults (no policy file)"
	}
	fmt.Fprintf(&b, "\npolicy: %s (require_signature=%v, %d trusted keys)\n", pol, r.Policy.RequireSignature, r.Policy.TrustedKeys)
	if r.Verdict.WouldLoad {
		g := r.Verdict.Grant
		caps := "nothing"
		if g != nil && len(g.Capabilities) > 0 {
			caps = strings.Join(g.Capabilities, ", ")
		}
		fmt.Fprintf(&b, "verdict: WOULD LOAD, granted %s", caps)
		if g != nil {
			fmt.Fprintf(&b, "; limits %s; agents %s", limitsText(g.Limits.TimeoutMS, g.Limits.MemoryMiB, g.Limits.MaxResultBytes, "default"), strings.Join(g.AllowedAgents, ", "))
		}
		b.WriteString("\n")
	} else if r.Verdict.Status == StatusNeverLoadable {
		b.WriteString("verdict: NEVER LOADABLE as built: the module itself must change (no policy entry admits it)\n")
		writeReasons(&b, r.Verdict.Reasons)
	} else {
		b.WriteString("verdict: REFUSED until the policy admits it (the module itself is loadable)\n")
		writeReasons(&b, r.Verdict.Reasons)
		if r.Verdict.Fix != "" {
			fmt.Fprintf(&b, "to allow it %s\n", r.Verdict.Fix)
			if r.Origin == OriginDirectory {
				fmt.Fprintf(&b, "(or let `openhuman-core tools install %s` pin, grant and copy it in one step)\n", r.File)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeReasons(b *strings.Builder, reasons []string) {
	for _, reason := range reasons {
		fmt.Fprintf(b, "  - %s\n", strings.ReplaceAll(reason, "\n", "\n      "))
	}
}

func limitsText(timeout, mem, result int, unset string) string {
	f := func(v int, unit string) string {
		if v <= 0 {
			return unset
		}
		return fmt.Sprintf("%d %s", v, unit)
	}
	return fmt.Sprintf("timeout %s, memory %s, result %s", f(timeout, "ms"), f(mem, "MiB"), f(result, "bytes"))
}

// text is the producer line of the text report.
func (p *Producer) text() string {
	if p == nil {
		return "not declared (no producers section)"
	}
	if p.Error != "" {
		return "UNREADABLE producers section: " + p.Error
	}
	list := func(ps []wasmbin.Producer) string {
		var out []string
		for _, v := range ps {
			out = append(out, strings.TrimSpace(v.Name+" "+v.Version))
		}
		return strings.Join(out, ", ")
	}
	s := list(p.Language)
	if s == "" {
		s = "language not named"
	}
	if by := list(p.ProcessedBy); by != "" {
		s += ", built with " + by
	}
	if sdk := list(p.SDK); sdk != "" {
		s += ", SDK " + sdk
	}
	if p.Source == ProducerInferred {
		return s + " (guessed: no producers section; " + p.Evidence + ")"
	}
	return s + " (its producers section: the module's own claim)"
}
