package ingest

import (
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/internal/memtree"
)

// frontMatter is the subset of YAML front matter a document may carry.
type frontMatter struct {
	title string
	date  time.Time
	tags  []string
}

// splitFrontMatter separates a leading "---" YAML block from the body. Only the
// simple forms are read: `key: value`, `key: "quoted"`, `tags: [a, b]` and a
// following `- item` list. A block without a closing line is treated as body.
func splitFrontMatter(text string) (frontMatter, string) {
	var fm frontMatter
	if !strings.HasPrefix(text, "---\n") {
		return fm, text
	}
	rest := text[4:]
	end := -1
	var after string
	for off := 0; off <= len(rest); {
		nl := strings.IndexByte(rest[off:], '\n')
		line := rest[off:]
		if nl >= 0 {
			line = rest[off : off+nl]
		}
		if t := strings.TrimRight(line, " \t"); t == "---" || t == "..." {
			end = off
			if nl >= 0 {
				after = rest[off+nl+1:]
			}
			break
		}
		if nl < 0 {
			break
		}
		off += nl + 1
	}
	if end < 0 {
		return fm, text
	}
	var listKey string
	for _, line := range strings.Split(rest[:end], "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "- ") && listKey != "" {
			if listKey == "tags" {
				if v := yamlScalar(t[2:]); v != "" {
					fm.tags = append(fm.tags, v)
				}
			}
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.HasPrefix(line, " ") {
			continue
		}
		key := strings.ToLower(strings.TrimSpace(k))
		v = strings.TrimSpace(v)
		listKey = ""
		if v == "" {
			listKey = key
			continue
		}
		switch key {
		case "title":
			fm.title = yamlScalar(v)
		case "date", "created", "modified", "updated":
			if t, ok := parseDocDate(yamlScalar(v)); ok && (key == "date" || fm.date.IsZero()) {
				fm.date = t
			}
		case "tags", "keywords", "categories":
			if strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]") {
				for _, p := range strings.Split(v[1:len(v)-1], ",") {
					if s := yamlScalar(p); s != "" {
						fm.tags = append(fm.tags, s)
					}
				}
			} else if s := yamlScalar(v); s != "" {
				for _, p := range strings.Split(s, ",") {
					if p = strings.TrimSpace(p); p != "" {
						fm.tags = append(fm.tags, p)
					}
				}
			}
		}
	}
	return fm, strings.TrimLeft(after, "\n")
}

// yamlScalar unquotes a simple YAML scalar.
func yamlScalar(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		if u, err := strconv.Unquote(s); err == nil {
			return u
		}
		return s[1 : len(s)-1]
	}
	if len(s) >= 2 && s[0] == '\'' && s[len(s)-1] == '\'' {
		return strings.ReplaceAll(s[1:len(s)-1], "''", "'")
	}
	if i := strings.Index(s, " #"); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return s
}

// parseDocDate reads the date forms documents use.
func parseDocDate(s string) (time.Time, bool) {
	for _, layout := range []string{"2006-01-02", time.RFC3339, "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02T15:04:05", "2006/01/02", "January 2, 2006", "2 January 2006"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

var reNameDate = regexp.MustCompile(`(^|[^0-9])(20\d\d|19\d\d)-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])([^0-9]|$)`)

// dateFromName finds a YYYY-MM-DD date in a file name.
func dateFromName(name string) (time.Time, bool) {
	m := reNameDate.FindStringSubmatch(name)
	if m == nil {
		return time.Time{}, false
	}
	return parseDocDate(m[2] + "-" + m[3] + "-" + m[4])
}

// firstHeading returns the text of the first "# " heading of a Markdown body.
func firstHeading(body string) string {
	inCode := false
	for _, l := range strings.Split(body, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			inCode = !inCode
			continue
		}
		if !inCode && strings.HasPrefix(t, "# ") {
			return strings.TrimSpace(strings.TrimRight(t[2:], "#"))
		}
	}
	return ""
}

// parseDocument turns a Markdown or text file into one document source. rel is the
// path relative to the ingest root (slash-separated): it is the SourceID suffix and
// the message's source_ref. The time is the front-matter date, else a YYYY-MM-DD in
// the file name, else mtime.
func parseDocument(text, rel string, mtime time.Time) (*memtree.SourceInput, error) {
	fm, body := splitFrontMatter(text)
	body = strings.TrimSpace(body)
	if body == "" && fm.title == "" {
		return nil, errEmpty
	}
	title := fm.title
	if title == "" {
		title = firstHeading(body)
	}
	base := path.Base(rel)
	if title == "" {
		title = strings.TrimSuffix(base, path.Ext(base))
	}
	ts := fm.date
	if ts.IsZero() {
		if t, ok := dateFromName(base); ok {
			ts = t
		} else {
			ts = mtime
		}
	}
	prov := "text"
	switch strings.ToLower(path.Ext(base)) {
	case ".md", ".markdown", ".mdown", ".mkd":
		prov = "markdown"
	}
	return &memtree.SourceInput{
		Kind: memtree.KindDocument, SourceID: "doc:" + rel, Title: title, Provider: prov, Tags: fm.tags,
		Messages: []memtree.MessageInput{{Ref: rel, Subject: title, TimestampMS: ts.UnixMilli(), Text: body + "\n"}},
	}, nil
}
