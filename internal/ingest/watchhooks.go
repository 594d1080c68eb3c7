package ingest

import (
	"path/filepath"
	"strings"

	"github.com/openhuman/openhuman-core/internal/ingest/mail"
	"github.com/openhuman/openhuman-core/internal/ingest/notes"
	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
)

// Hooks for the watch loop (internal/watch), which decides per changed file how
// much to read again: a document alone, a mail folder or mbox whole (mail is
// threaded across its files).

// IsDocumentFile reports whether p is read as a document (Markdown, plain text,
// Org): one source per file, whose id is its absolute path.
func IsDocumentFile(p string) bool {
	return notes.DocExts[strings.ToLower(filepath.Ext(p))]
}

// IsMaildir reports whether the folder p is a Maildir as ingest detects one.
func IsMaildir(p string) bool { return mail.IsMaildir(p) }

// IsMbox reports whether the file p is an mbox as ingest detects one (by its
// name or its first line).
func IsMbox(p string) bool {
	return mail.MboxReader{}.Detect(p, false, readkit.ReadHead(p))
}
