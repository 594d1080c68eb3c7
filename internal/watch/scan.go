package watch

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/openhuman/openhuman-core/internal/ingest"
)

// maxDepth bounds folder nesting, as ingest does.
const maxDepth = 64

// snapshot is one walk of a root: its files (by path relative to the root; a
// root that is a file has one entry, its base name) and its folders (absolute,
// to watch).
type snapshot struct {
	files map[string]fileState
	dirs  []string
}

// scanRoot walks root the way ingest does: symbolic links are not followed,
// hidden entries are skipped (but for Maildir++ subfolders, ".Sent" inside a
// Maildir), and a Maildir's tmp/ is left out (deliveries in progress; a message
// counts once it is in new/ or cur/). A root that is gone yields no files.
func scanRoot(root string) snapshot {
	s := snapshot{files: map[string]fileState{}}
	st, err := os.Stat(root)
	if err != nil {
		return s
	}
	if !st.IsDir() {
		if !st.Mode().IsRegular() {
			return s // a FIFO or device: ingest names it as skipped; nothing to follow
		}
		s.files[filepath.Base(root)] = stateOf(st)
		s.dirs = append(s.dirs, filepath.Dir(root))
		return s
	}
	s.walk(root, root, 0)
	return s
}

func (s *snapshot) walk(root, dir string, depth int) {
	if depth > maxDepth {
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	s.dirs = append(s.dirs, dir)
	maildir := isDir(filepath.Join(dir, "cur")) || isDir(filepath.Join(dir, "new"))
	for _, e := range entries {
		name := e.Name()
		p := filepath.Join(dir, name)
		if e.Type()&os.ModeSymlink != 0 {
			continue
		}
		if e.IsDir() {
			switch {
			case name == "__MACOSX":
			case strings.HasPrefix(name, ".") && !maildir:
			case name == "tmp" && maildir:
			default:
				s.walk(root, p, depth+1)
			}
			continue
		}
		if strings.HasPrefix(name, ".") || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // gone since the listing
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			continue
		}
		s.files[rel] = stateOf(info)
	}
}

func stateOf(fi os.FileInfo) fileState {
	return fileState{Size: fi.Size(), MtimeNS: fi.ModTime().UnixNano()}
}

func isDir(p string) bool {
	st, err := os.Lstat(p)
	return err == nil && st.IsDir()
}

// unitKind says how much a changed file makes the loop read again.
type unitKind int

const (
	// unitDocument: the file alone (a document is one source of its own).
	unitDocument unitKind = iota
	// unitMail: every mail folder and mbox of the watched roots, together: mail is
	// threaded across files (a reply in one Maildir file joins a thread stored from
	// others), so a thread is only whole when all of them are read in one run.
	unitMail
	// unitRoot: the whole root (export folders read as one: Slack, Telegram).
	unitRoot
)

// classify finds the unit a file of root belongs to: for mail, the Maildir (the
// outermost one, holding its Maildir++ subfolders) or the mbox file.
func classify(root, kind, p string) (unitKind, string) {
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		if b := filepath.Base(d); b == "cur" || b == "new" {
			md := filepath.Dir(d)
			if ingest.IsMaildir(md) {
				for within(root, filepath.Dir(md)) && ingest.IsMaildir(filepath.Dir(md)) {
					md = filepath.Dir(md)
				}
				return unitMail, md
			}
		}
		if d == root || !within(root, d) || d == filepath.Dir(d) {
			break
		}
	}
	switch {
	case kind == ingest.KindMbox || kind == ingest.KindMaildir:
		return unitMail, root
	case kind != "" && kind != ingest.KindDocs:
		return unitRoot, root
	case ingest.IsDocumentFile(p):
		return unitDocument, p
	case ingest.IsMbox(p):
		return unitMail, p
	}
	return unitRoot, root
}

// within reports whether p is root or under it.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// included reports whether the folder p (under root) is one ingest reads: no
// part of it from root down is skipped by scanRoot's rules.
func included(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return false
	}
	if rel == "." {
		return true
	}
	parent := root
	for _, name := range strings.Split(rel, string(filepath.Separator)) {
		maildir := isDir(filepath.Join(parent, "cur")) || isDir(filepath.Join(parent, "new"))
		switch {
		case name == "__MACOSX":
			return false
		case strings.HasPrefix(name, ".") && !maildir:
			return false
		case name == "tmp" && maildir:
			return false
		}
		parent = filepath.Join(parent, name)
		if st, err := os.Lstat(parent); err == nil && st.Mode()&os.ModeSymlink != 0 {
			return false
		}
	}
	return true
}

// scanScopes walks the folders of root that scopes names: with their subtree
// (true) or alone (false). Folders that are gone or skipped yield nothing.
func scanScopes(root string, scopes map[string]bool) snapshot {
	s := snapshot{files: map[string]fileState{}}
	for dir, whole := range scopes {
		if !isDir(dir) || !included(root, dir) {
			continue
		}
		if whole {
			rel, _ := filepath.Rel(root, dir)
			s.walk(root, dir, strings.Count(rel, string(filepath.Separator)))
			continue
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		s.dirs = append(s.dirs, dir)
		for _, e := range entries {
			name := e.Name()
			if strings.HasPrefix(name, ".") || !e.Type().IsRegular() {
				continue
			}
			info, err := e.Info()
			if err != nil {
				continue
			}
			if rel, err := filepath.Rel(root, filepath.Join(dir, name)); err == nil {
				s.files[rel] = stateOf(info)
			}
		}
	}
	return s
}

// inScopes reports whether the file rel of root lies in scopes: in a folder named
// alone, or under one named with its subtree.
func inScopes(root, rel string, scopes map[string]bool) bool {
	p := filepath.Join(root, rel)
	if _, ok := scopes[filepath.Dir(p)]; ok {
		return true
	}
	for d := filepath.Dir(p); within(root, d); d = filepath.Dir(d) {
		if scopes[d] {
			return true
		}
		if d == root || d == filepath.Dir(d) {
			break
		}
	}
	return false
}
