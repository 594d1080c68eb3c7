package toolaudit

import (
	"encoding/json"

	"github.com/openhuman/openhuman-core/internal/textsafe"
	"github.com/openhuman/openhuman-core/internal/wasmbin"
)

// escaped is a copy of r for the text report: every string that came from the
// module (names, manifest text, import and export names, reasons quoting them)
// or from the command line has its control characters escaped
// (internal/textsafe), so that an export name made of terminal control
// sequences cannot rewrite what the reviewer sees. The JSON report is encoded
// by encoding/json, which escapes them already.
func (r *Report) escaped() *Report {
	c := *r
	e := textsafe.String
	c.File, c.Origin, c.SHA256, c.Error, c.ABI, c.ManifestError = e(r.File), e(r.Origin), e(r.SHA256), textsafe.Text(r.Error), e(r.ABI), textsafe.Text(r.ManifestError)
	if r.Manifest != nil {
		m := *r.Manifest
		m.ABI, m.Capabilities = e(m.ABI), textsafe.Strings(m.Capabilities)
		m.Tools = make([]Tool, len(r.Manifest.Tools))
		for i, t := range r.Manifest.Tools {
			t.Name, t.Title, t.Description, t.Export = e(t.Name), e(t.Title), e(t.Description), e(t.Export)
			t.InputSchema, t.OutputSchema = rawEscaped(t.InputSchema), rawEscaped(t.OutputSchema)
			m.Tools[i] = t
		}
		c.Manifest = &m
	}
	c.Imports = make([]Import, len(r.Imports))
	for i, im := range r.Imports {
		im.Module, im.Name, im.Kind, im.Type, im.Class, im.Capability, im.Note = e(im.Module), e(im.Name), e(im.Kind), e(im.Type), e(im.Class), e(im.Capability), e(im.Note)
		c.Imports[i] = im
	}
	c.Egress = make([]Egress, len(r.Egress))
	for i, g := range r.Egress {
		g.Import, g.Capability, g.Reaches = e(g.Import), e(g.Capability), e(g.Reaches)
		c.Egress[i] = g
	}
	c.Exports = make([]Export, len(r.Exports))
	for i, ex := range r.Exports {
		ex.Name, ex.Kind, ex.Type = e(ex.Name), e(ex.Kind), e(ex.Type)
		c.Exports[i] = ex
	}
	if r.Signature != nil {
		s := *r.Signature
		s.KeyID, s.PublicKey, s.Digest, s.Reason, s.State = e(s.KeyID), e(s.PublicKey), e(s.Digest), e(s.Reason), e(s.State)
		c.Signature = &s
	}
	if r.Producer != nil {
		p := *r.Producer
		esc := func(ps []wasmbin.Producer) []wasmbin.Producer {
			out := make([]wasmbin.Producer, len(ps))
			for i, v := range ps {
				out[i] = wasmbin.Producer{Name: e(v.Name), Version: e(v.Version)}
			}
			return out
		}
		p.Language, p.ProcessedBy, p.SDK, p.Evidence, p.Error = esc(p.Language), esc(p.ProcessedBy), esc(p.SDK), e(p.Evidence), e(p.Error)
		c.Producer = &p
	}
	c.Policy.File = e(r.Policy.File)
	c.Verdict.Reasons = make([]string, len(r.Verdict.Reasons))
	for i, reason := range r.Verdict.Reasons {
		c.Verdict.Reasons[i] = textsafe.Text(reason) // the renderer indents its lines
	}
	if r.Verdict.Grant != nil {
		g := *r.Verdict.Grant
		g.Capabilities, g.AllowedAgents = textsafe.Strings(g.Capabilities), textsafe.Strings(g.AllowedAgents)
		c.Verdict.Grant = &g
	}
	return &c
}

// rawEscaped escapes a JSON schema for the text report (it is printed raw).
func rawEscaped(m json.RawMessage) json.RawMessage {
	if m == nil {
		return nil
	}
	return json.RawMessage(textsafe.String(string(m)))
}
