package readkit

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/openhuman/openhuman-core/internal/ingest/archive"
	"github.com/openhuman/openhuman-core/internal/textsafe"
)

// Skip reasons of files that no reader reads (see UnknownReason).
const (
	ReasonNestedArchive  = "archive inside an archive: not read (unpack the outer archive and ingest the inner one)"
	ReasonUnknownText    = "text of no known mail, chat or document format (use --kind docs to read it as a document)"
	ReasonHiddenFile     = "hidden file: not read"
	ReasonHiddenFolder   = "hidden folder: not read"
	ReasonMHSequences    = "MH sequences file: folder metadata, not a message"
	ReasonTextBundleInfo = "TextBundle metadata: its dates are read with the note's text"
	// ReasonAppleAttachment: Apple Mail keeps a message's attachments in
	// Attachments/<n>/ beside Messages/<n>.partial.emlx.
	ReasonAppleAttachment = "attachment of the Apple Mail message Messages/<n>.partial.emlx beside it: part of that message, not a document of its own"
)

// UnknownReason says why a file no reader recognised is skipped. Formats people
// often have that are not read get their own reason, with what to do instead;
// --kind is suggested only for text, which --kind docs would read.
func UnknownReason(p string, head []byte) string {
	base := strings.ToLower(filepath.Base(p))
	ext := path.Ext(base)
	switch {
	case bytes.HasPrefix(head, []byte("\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1")):
		if ext == ".msg" {
			return "Outlook .msg message: not read (save it as .eml, or export the folder as mbox)"
		}
		return "OLE compound file (Outlook .msg, Office 97-2003): not read (save mail as .eml, documents as .txt or .md)"
	case ext == ".pst" || ext == ".ost" || bytes.HasPrefix(head, []byte("!BDN")):
		return "Outlook data file: not read (export the folders as mbox or .eml)"
	case strings.HasPrefix(base, "messages") && strings.HasSuffix(base, ".html"):
		return "Telegram HTML export: not read (export again with \"Machine-readable JSON\")"
	case base == "info.json" && strings.EqualFold(filepath.Ext(filepath.Dir(p)), ".textbundle"):
		return ReasonTextBundleInfo
	case ext == ".svg" || mediaExts[ext] || isMediaHead(head):
		return ReasonMedia
	case ext == ".html" || ext == ".htm" || ext == ".xhtml" || ext == ".xml":
		return "HTML or XML markup: not read (no reader turns a page into text; save its text as .txt or .md)"
	case bytes.HasPrefix(head, []byte("%PDF-")):
		return "PDF: not read (save its text as .txt or .md)"
	case ZipDocumentExts[ext]:
		return "office or e-book document (" + ext + "): not read (save it as .txt or .md)"
	case ext == ".tar" || ext == ".gz" || ext == ".tgz" || ext == ".7z" || ext == ".rar" || ext == ".bz2" || ext == ".xz":
		return "archive of a kind not read in place (only .zip is): unpack it first"
	case archive.IsZipHead(head):
		return "zip archive: not read"
	}
	if len(head) > 0 && IsText(head) {
		return ReasonUnknownText
	}
	return ReasonUnknown
}

// ReasonMedia is the skip reason of images, audio and video.
const ReasonMedia = "image, audio or video: media are not ingested"

// mediaExts are media file name extensions sniffing may not recognise.
var mediaExts = map[string]bool{".heic": true, ".heif": true, ".opus": true, ".m4a": true, ".mov": true, ".mkv": true, ".tif": true, ".tiff": true, ".ico": true}

// isMediaHead reports whether a file's first bytes sniff as an image, audio or
// video (net/http's content sniffing, the WHATWG algorithm).
func isMediaHead(head []byte) bool {
	ct := http.DetectContentType(head)
	return strings.HasPrefix(ct, "image/") || strings.HasPrefix(ct, "audio/") || strings.HasPrefix(ct, "video/")
}

// ZipDocumentExts are formats stored as zip files that are documents, not
// exports to walk.
var ZipDocumentExts = map[string]bool{".docx": true, ".xlsx": true, ".pptx": true, ".odt": true, ".ods": true, ".odp": true,
	".epub": true, ".pages": true, ".numbers": true, ".key": true, ".jar": true, ".apk": true, ".ipa": true, ".xpi": true, ".whl": true}

// IsText reports whether head looks like text: valid UTF-8 (a rune cut at the
// end aside) without NUL bytes.
func IsText(head []byte) bool {
	if bytes.IndexByte(head, 0) >= 0 {
		return false
	}
	for len(head) > 0 {
		r, n := utf8.DecodeRune(head)
		if r == utf8.RuneError && n == 1 {
			return len(head) < utf8.UTFMax && !utf8.FullRune(head)
		}
		head = head[n:]
	}
	return true
}

// SkipListEach is how many skipped files SkipLines names per reason before it
// writes the rest to a list file: a few files are named one by one, a Maildir of
// 10,000 files not.
const SkipListEach = 10

// SkipLines returns the lines that name the run's skipped files on stderr: every
// file when a reason holds at most SkipListEach, else the first SkipListEach and a
// count. When any reason holds more, every skipped file is written to listPath
// (one "reason<TAB>path" line each; listPath "" writes none) and the last line
// says where. Paths are quoted when they hold non-printable characters.
func (s *Summary) SkipLines(listPath string) ([]string, error) {
	if len(s.Skips) == 0 {
		return nil, nil
	}
	by := map[string][]string{}
	var reasons []string
	for _, sk := range s.Skips {
		why := sk.Err.Error()
		if _, ok := by[why]; !ok {
			reasons = append(reasons, why)
		}
		by[why] = append(by[why], sk.Path)
	}
	sort.Strings(reasons)
	var lines []string
	long := false
	for _, why := range reasons {
		ps := by[why]
		for i, p := range ps {
			if i == SkipListEach {
				long = true
				lines = append(lines, fmt.Sprintf("skipped: ... and %d more (ingest --report FILE lists every file): %s", len(ps)-i, why))
				break
			}
			lines = append(lines, fmt.Sprintf("skipped: %s: %s", textsafe.Name(p), why))
		}
	}
	if !long || listPath == "" {
		return lines, nil
	}
	f, err := os.Create(listPath)
	if err != nil {
		return lines, fmt.Errorf("write the list of skipped files: %w", err)
	}
	w := bufio.NewWriter(f)
	for _, sk := range s.Skips {
		fmt.Fprintf(w, "%s\t%s\n", sk.Err.Error(), textsafe.Name(sk.Path))
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return lines, fmt.Errorf("write the list of skipped files: %w", err)
	}
	if err := f.Close(); err != nil {
		return lines, fmt.Errorf("write the list of skipped files: %w", err)
	}
	return append(lines, fmt.Sprintf("skipped: all %d skipped files are listed in %s", len(s.Skips), textsafe.Name(listPath))), nil
}
