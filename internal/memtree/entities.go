package memtree

import (
	"net/mail"
	"strings"

	"github.com/openhuman/openhuman-core/internal/analysis"
	"github.com/openhuman/openhuman-core/internal/entitykind"
	"github.com/openhuman/openhuman-core/internal/lazyre"
)

// Entity kinds this store extracts (internal/entitykind).
const (
	EntityEmail   = entitykind.Email
	EntityURL     = entitykind.URL
	EntityHandle  = entitykind.Handle
	EntityHashtag = entitykind.Hashtag
	EntityTopic   = entitykind.Topic
	EntityPerson  = entitykind.Person
)

// entityRef is one entity mentioned by a chunk.
type entityRef struct {
	Kind    string
	Surface string
}

var (
	reEmail   = analysis.EmailRE
	reURL     = lazyre.New(`https?://[^\s<>\[\]()]+`)
	reHandle  = lazyre.New(`(?:^|[\s(])@(\w[A-Za-z0-9_.-]+)`)
	reDiscord = lazyre.New(`\b([A-Za-z0-9_.-]{2,32}#[0-9]{4})\b`)
	// reHashtag keeps a nested Obsidian tag whole (#project/alpha); addHashtag trims
	// a trailing slash.
	reHashtag = lazyre.New(`(?:^|[\s(])#([A-Za-z][A-Za-z0-9_/-]+)`)
)

// canonicalID returns the canonical `kind:value` id of an entity: URLs are only
// trimmed; other kinds are trimmed, lowercased and stripped of a leading @ or #.
func canonicalID(kind, surface string) string {
	v := strings.TrimSpace(surface)
	if kind != EntityURL {
		v = strings.ToLower(strings.TrimLeft(v, "@#"))
		v = strings.Join(strings.Fields(v), " ")
	}
	return kind + ":" + v
}

// extractEntities finds e-mail addresses, URLs, @handles (and Discord name#1234),
// #hashtags and their topics in text (reference-behaviour §1.6). Each regex runs only
// when its marker character occurs, and then only over the space-separated fields
// holding the marker (regexes dominate ingest time otherwise; see fieldsWith).
func extractEntities(text string, add func(kind, surface string)) {
	extractAddresses(text, add)
	extractTags(text, add)
}

// extractDocEntities is extractEntities for a document chunk: addresses and URLs
// anywhere, but #tags (and name#1234) only in the prose, never in code blocks,
// inline code or a link's destination ("[see](#usage)" links to a heading), and
// each Obsidian / Logseq [[wikilink]] ([[Page]], [[Page|label]], [[Page#heading]],
// #[[Page]]) as the topic of the page it names. Both run only when the chunk holds
// their marker ('#' or "[["), and the prose is cut out only when the chunk holds
// code or a link destination.
func extractDocEntities(text string, add func(kind, surface string)) {
	extractAddresses(text, add)
	hasTag, hasLink := strings.IndexByte(text, '#') >= 0, strings.Contains(text, "[[")
	if !hasTag && !hasLink {
		return
	}
	prose := proseOf(text)
	if hasTag {
		extractTags(prose, add)
	}
	if hasLink {
		extractWikilinks(prose, add)
	}
}

// extractAddresses finds e-mail addresses, @handles and URLs.
func extractAddresses(text string, add func(kind, surface string)) {
	if strings.IndexByte(text, '@') >= 0 {
		fieldsWith(text, '@', func(f string) {
			for _, m := range reEmail.FindAllString(f, -1) {
				add(EntityEmail, m)
			}
		})
		fieldsWith(text, '@', func(f string) {
			for _, m := range reHandle.FindAllStringSubmatch(f, -1) {
				if h := strings.TrimRight(m[1], ".-"); len(h) >= 2 {
					add(EntityHandle, h)
				}
			}
		})
	}
	if strings.Contains(text, "http") {
		for _, m := range reURL.FindAllString(text, -1) {
			if m = strings.TrimRight(m, ".,;:!?"); len(m) > len("https://") {
				add(EntityURL, m)
			}
		}
	}
}

// extractTags finds Discord name#1234 handles and #hashtags (with their topics).
func extractTags(text string, add func(kind, surface string)) {
	if strings.IndexByte(text, '#') >= 0 {
		fieldsWith(text, '#', func(f string) {
			for _, m := range reDiscord.FindAllStringSubmatch(f, -1) {
				add(EntityHandle, m[1])
			}
		})
		fieldsWith(text, '#', func(f string) {
			for _, m := range reHashtag.FindAllStringSubmatch(f, -1) {
				addHashtag(m[1], add)
			}
		})
	}
}

// addHashtag adds one reHashtag match (without its #) as a hashtag and a topic: a
// nested tag is kept whole ("project/alpha"), a trailing slash dropped.
func addHashtag(tag string, add func(kind, surface string)) {
	if tag = strings.TrimRight(tag, "/"); len(tag) < 2 {
		return
	}
	add(EntityHashtag, tag)
	add(EntityTopic, strings.ToLower(tag))
}

// maxWikiPage bounds the page name of a wikilink.
const maxWikiPage = 200

// extractWikilinks adds the page each [[wikilink]] of text names as a topic: the
// part before a "|" label and a "#heading" or "#^block" anchor, without a ".md"
// extension. A link stays on one line; a link to the page itself ([[#heading]]) and
// an embedded attachment (![[photo.png]], [[report.pdf]]) name no topic.
func extractWikilinks(text string, add func(kind, surface string)) {
	for i := 0; i < len(text); {
		j := strings.Index(text[i:], "[[")
		if j < 0 {
			return
		}
		start := i + j + 2
		end := strings.Index(text[start:], "]]")
		if end < 0 {
			return
		}
		inner := text[start : start+end]
		if k := strings.LastIndex(inner, "[["); k >= 0 {
			// "[[a [[b]]": the link is the innermost one.
			start += k + 2
			inner = inner[k+2:]
		}
		i = start + len(inner) + 2
		if strings.IndexByte(inner, '\n') >= 0 {
			continue
		}
		if page := wikiPage(inner); page != "" {
			add(EntityTopic, page)
		}
	}
}

// attachmentExts are file types a wikilink names as an attachment, not a page.
var attachmentExts = map[string]bool{
	"png": true, "jpg": true, "jpeg": true, "gif": true, "svg": true, "webp": true, "bmp": true, "avif": true,
	"pdf": true, "mp3": true, "wav": true, "ogg": true, "m4a": true, "flac": true, "webm": true, "mp4": true,
	"mov": true, "mkv": true, "ogv": true, "3gp": true,
}

// wikiPage returns the page a wikilink's inner text names ("" for none).
func wikiPage(inner string) string {
	if k := strings.IndexByte(inner, '|'); k >= 0 {
		inner = strings.TrimSuffix(inner[:k], "\\") // "[[Page\\|label]]" in a table
	}
	if k := strings.IndexByte(inner, '#'); k >= 0 {
		inner = inner[:k]
	}
	page := strings.TrimSpace(inner)
	if len(page) > 3 && strings.EqualFold(page[len(page)-3:], ".md") {
		page = strings.TrimSpace(page[:len(page)-3])
	}
	if page == "" || len(page) > maxWikiPage {
		return ""
	}
	if k := strings.LastIndexByte(page, '.'); k >= 0 && attachmentExts[strings.ToLower(page[k+1:])] {
		return ""
	}
	return page
}

// proseOf returns text with its Markdown code (fenced blocks, inline `code`) and
// link destinations ("](...)") blanked out with spaces, so the tags and links found
// in it are the ones a reader sees as such. It returns text itself when it holds
// none of their markers.
//
// A chunk is a run of a document's paragraphs, so it may start inside a fenced
// block whose opening fence is in the chunk before. Fences alternate open/close
// from the start of the chunk unless reading them so has an opening fence with an
// info string ("```go") inside an open block and reading the first fence as the
// close of a block begun before does not: an info string marks an opening fence.
func proseOf(text string) string {
	if !strings.ContainsAny(text, "`~") && !strings.Contains(text, "](") {
		return text
	}
	type fenceLine struct {
		char byte // '`' or '~'
		n    int  // its run length
		info bool // an info string follows ("```go")
	}
	var lines [][2]int
	var fences []fenceLine
	var isFence []int // the line index of each fence
	for off := 0; off < len(text); {
		e := strings.IndexByte(text[off:], '\n')
		if e < 0 {
			e = len(text)
		} else {
			e += off
		}
		t := strings.TrimLeft(text[off:e], " \t>")
		if len(t) >= 3 && (t[0] == '`' || t[0] == '~') {
			n := 0
			for n < len(t) && t[n] == t[0] {
				n++
			}
			info := strings.TrimSpace(t[n:])
			if n >= 3 && !(t[0] == '`' && strings.IndexByte(info, '`') >= 0) {
				fences = append(fences, fenceLine{t[0], n, info != ""})
				isFence = append(isFence, len(lines))
			}
		}
		lines = append(lines, [2]int{off, e})
		off = e + 1
	}
	// suspicious counts the opening fences (with an info string) that reading the
	// fences from the given start state meets inside an open block.
	suspicious := func(inside bool) int {
		var ch byte
		n, odd := 3, 0 // a block begun before the chunk: any bare fence closes it
		for _, f := range fences {
			switch {
			case !inside:
				inside, ch, n = true, f.char, f.n
			case !f.info && (ch == 0 || f.char == ch) && f.n >= n:
				inside = false
			case f.info:
				odd++
			}
		}
		return odd
	}
	startInside := false
	if len(fences) > 0 {
		startInside = suspicious(true) < suspicious(false)
	}
	b := []byte(text)
	blank := func(from, to int) {
		for k := from; k < to; k++ {
			if b[k] != '\n' {
				b[k] = ' '
			}
		}
	}
	// Blank the code lines, reading the fences from the chosen start state.
	inside := startInside
	var ch byte
	n := 0
	if inside {
		n = 3
	}
	fi := 0
	for li, ln := range lines {
		if fi < len(isFence) && isFence[fi] == li {
			f := fences[fi]
			fi++
			switch {
			case !inside:
				inside, ch, n = true, f.char, f.n
			case !f.info && (ch == 0 || f.char == ch) && f.n >= n:
				inside, ch = false, 0
			}
			blank(ln[0], ln[1])
			continue
		}
		if inside {
			blank(ln[0], ln[1])
			continue
		}
		blankInline(b, ln[0], ln[1])
	}
	return string(b)
}

// blankInline blanks the inline code spans and link destinations of the line
// b[from:to].
func blankInline(b []byte, from, to int) {
	for k := from; k < to; k++ {
		switch {
		case b[k] == '`':
			n := 1
			for k+n < to && b[k+n] == '`' {
				n++
			}
			// the closing run has exactly n backticks
			closeAt := -1
			for j := k + n; j < to; {
				if b[j] != '`' {
					j++
					continue
				}
				m := 1
				for j+m < to && b[j+m] == '`' {
					m++
				}
				if m == n {
					closeAt = j + m
					break
				}
				j += m
			}
			if closeAt < 0 {
				k += n - 1
				continue
			}
			for j := k; j < closeAt; j++ {
				b[j] = ' '
			}
			k = closeAt - 1
		case b[k] == ']' && k+1 < to && b[k+1] == '(':
			end := -1
			for j := k + 2; j < to; j++ {
				if b[j] == ')' {
					end = j
					break
				}
			}
			if end < 0 {
				continue
			}
			for j := k + 2; j < end; j++ {
				b[j] = ' '
			}
			k = end
		}
	}
}

// fieldsWith calls fn, in text order, with each maximal run of text free of the
// regexp class \s (tab, newline, form feed, carriage return, space) that holds
// marker. No match of reEmail, reHandle, reDiscord or reHashtag spans such a
// character, and each sees one the way it sees the start or end of the text (a
// non-word character for \b; the leading (?:^|[\s(]) of a handle or hashtag matches
// either), so the matches in text are exactly the matches in its fields, in order.
func fieldsWith(text string, marker byte, fn func(field string)) {
	for i := 0; i < len(text); {
		j := strings.IndexByte(text[i:], marker)
		if j < 0 {
			return
		}
		j += i
		start := j
		for start > i && !isRegexpSpace(text[start-1]) {
			start--
		}
		end := j + 1
		for end < len(text) && !isRegexpSpace(text[end]) {
			end++
		}
		fn(text[start:end])
		i = end
	}
}

// isRegexpSpace reports whether c is in the regexp class \s.
func isRegexpSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'
}

// parseAddress splits "Name <addr>" or a bare address into name and address.
func parseAddress(s string) (name, addr string) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", ""
	}
	if a, err := mail.ParseAddress(s); err == nil {
		return strings.TrimSpace(a.Name), strings.TrimSpace(a.Address)
	}
	if i := strings.LastIndexByte(s, '<'); i >= 0 && strings.HasSuffix(s, ">") {
		return strings.Trim(strings.TrimSpace(s[:i]), `"' `), strings.TrimSpace(s[i+1 : len(s)-1])
	}
	if reEmail.MatchString(s) && !strings.ContainsAny(s, " \t") {
		return "", s
	}
	return strings.Trim(s, `"' `), ""
}

func isEmailAddr(s string) bool {
	loc := reEmail.FindStringIndex(s)
	return loc != nil && loc[0] == 0 && loc[1] == len(s)
}

// chunkEntities collects the entities of one chunk: regex matches in its text plus
// the people (and their addresses) of the messages it packs.
func chunkEntities(in *SourceInput, text string, msgs map[int]bool) map[string]entityRef {
	out := map[string]entityRef{}
	add := func(kind, surface string) {
		surface = strings.TrimSpace(surface)
		if surface == "" {
			return
		}
		if kind != EntityURL {
			surface = strings.TrimLeft(surface, "@#")
		}
		id := canonicalID(kind, surface)
		if id == kind+":" || len(id) > 512 {
			return
		}
		if _, ok := out[id]; !ok {
			out[id] = entityRef{Kind: kind, Surface: surface}
		}
	}
	if in.Kind == KindDocument {
		extractDocEntities(text, add)
	} else {
		extractEntities(text, add)
	}
	person := func(name, addr string) {
		name = strings.TrimSpace(name)
		if name != "" && !strings.Contains(name, "@") {
			add(EntityPerson, strings.Join(strings.Fields(name), " "))
		}
		if isEmailAddr(addr) {
			add(EntityEmail, addr)
		}
	}
	for mi := range msgs {
		m := in.Messages[mi]
		if in.Kind == KindEmail || in.Kind == KindChat {
			person(m.Author, strings.TrimSpace(m.AuthorAddr))
		}
		for _, r := range append(append([]string(nil), m.To...), m.Cc...) {
			person(parseAddress(r))
		}
	}
	return out
}
