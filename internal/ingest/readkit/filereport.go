package readkit

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
)

// FileRead is one file or folder a run handed to a reader, with what it yielded
// (kept only when Options.Report asks for the per-file report).
type FileRead struct {
	Path, Kind string
	Yield      int // sources and mail messages read from it
}

// FileOutcome is what a run did with one file or folder: a row of the report
// that `ingest --report FILE` writes.
type FileOutcome struct {
	Path string `json:"path"`
	// Reader is the format the file was read as ("whatsapp", "mbox", "docs", ...).
	Reader string `json:"reader,omitempty"`
	// Status is "ingested", "partly ingested" (something was kept and something
	// failed), "failed", "skipped" or "nothing to ingest" (read, nothing in it;
	// the warnings say why).
	Status string `json:"status"`
	// Sources counts the sources (documents, chat months), mail messages and
	// contacts read.
	Sources  int      `json:"sources"`
	Reason   string   `json:"reason,omitempty"` // why it was skipped
	Errors   []string `json:"errors,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// Outcomes lists every file and folder of the run with what happened to it,
// sorted by path: each one read (when the run kept the list: Options.Report),
// skipped, failed or warned about.
func (s *Summary) Outcomes() []FileOutcome {
	by := map[string]*FileOutcome{}
	get := func(p string) *FileOutcome {
		o := by[p]
		if o == nil {
			o = &FileOutcome{Path: p}
			by[p] = o
		}
		return o
	}
	for _, rf := range s.ReadFiles {
		o := get(rf.Path)
		o.Reader = rf.Kind
		o.Sources += rf.Yield
	}
	for _, sk := range s.Skips {
		o := get(sk.Path)
		o.Reason = sk.Err.Error()
	}
	whereErr := func(fe FileError) string {
		if fe.Where == "" {
			return oneLine(fe.Err.Error())
		}
		return oneLine(fe.Where) + ": " + oneLine(fe.Err.Error())
	}
	for _, fe := range s.Errors {
		o := get(fe.Path)
		o.Errors = append(o.Errors, whereErr(fe))
	}
	for _, fe := range s.Unread {
		if o := by[fe.Path]; o == nil || o.Status == "" && len(o.Errors) == 0 && o.Reason == "" {
			get(fe.Path).Warnings = append(get(fe.Path).Warnings, oneLine(fe.Err.Error()))
		}
	}
	for _, fe := range s.Notes {
		o := get(fe.Path)
		o.Warnings = append(o.Warnings, whereErr(fe))
	}
	out := make([]FileOutcome, 0, len(by))
	for _, o := range by {
		switch {
		case o.Reason != "" && o.Reader == "":
			o.Status = "skipped"
		case len(o.Errors) > 0 && o.Sources > 0:
			o.Status = "partly ingested"
		case len(o.Errors) > 0:
			o.Status = "failed"
		case o.Sources > 0:
			o.Status = "ingested"
		default:
			o.Status = "nothing to ingest"
		}
		out = append(out, *o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// WriteReport writes the run's report as JSON: the summary's counts and every
// file's outcome (Outcomes).
func (s *Summary) WriteReport(w io.Writer) error {
	rep := struct {
		Summary struct {
			Files, Sources, Failures, Skipped, Warnings int
			Line                                        string
		} `json:"summary"`
		Files []FileOutcome `json:"files"`
	}{Files: s.Outcomes()}
	rep.Summary.Files, rep.Summary.Sources, rep.Summary.Failures = s.Files, s.Sources, s.Failures
	rep.Summary.Skipped, rep.Summary.Warnings, rep.Summary.Line = s.Skipped, s.Warnings, s.Line()
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	if err := enc.Encode(rep); err != nil {
		return fmt.Errorf("write the ingest report: %w", err)
	}
	return nil
}
