package ingest

import (
	"path/filepath"

	"github.com/openhuman/openhuman-core/internal/ingest/archive"
	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
)

// skipHidden names a hidden entry (".DS_Store", ".git/") as skipped.
func (r *runner) skipHidden(p, name string, dir bool) {
	switch {
	case name == ".mh_sequences":
		r.rep.Skip(p, readkit.ReasonMHSequences)
	case name == "__MACOSX":
		r.rep.Skip(p, "macOS archive metadata folder (__MACOSX): not read")
	case dir:
		r.rep.Skip(p, readkit.ReasonHiddenFolder)
	default:
		r.rep.Skip(p, readkit.ReasonHiddenFile)
	}
}

// skipTree names every file under p (or p itself) as skipped for reason.
func (r *runner) skipTree(p, reason string, depth int) {
	st, err := archive.Lstat(p)
	if err != nil || !st.IsDir() || depth > readkit.MaxWalkDepth {
		r.rep.Skip(p, reason)
		return
	}
	es, err := archive.ReadDir(p)
	if err != nil {
		r.rep.Skip(p, reason)
		return
	}
	for _, e := range es {
		r.skipTree(filepath.Join(p, e.Name()), reason, depth+1)
	}
}

// appleMailAttachments returns the entries of an Apple Mail "Attachments" folder
// that belong to a message beside it ("Attachments/1234/2/report.txt" belongs to
// "Messages/1234.partial.emlx"). Their files are parts of the message, not
// documents of their own.
func appleMailAttachments(dir string) map[string]bool {
	if filepath.Base(dir) != "Attachments" {
		return nil
	}
	msgs := filepath.Join(filepath.Dir(dir), "Messages")
	es, err := archive.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out map[string]bool
	for _, e := range es {
		for _, suffix := range []string{".partial.emlx", ".emlx"} {
			m := filepath.Join(msgs, e.Name()+suffix)
			if _, err := archive.Lstat(m); err == nil {
				if out == nil {
					out = map[string]bool{}
				}
				out[e.Name()] = true
				break
			}
		}
	}
	return out
}
