package memtree

import (
	"net/mail"
	"regexp"
	"strings"
)

// Entity kinds this store extracts.
const (
	EntityEmail   = "email"
	EntityURL     = "url"
	EntityHandle  = "handle"
	EntityHashtag = "hashtag"
	EntityTopic   = "topic"
	EntityPerson  = "person"
)

// entityRef is one entity mentioned by a chunk.
type entityRef struct {
	Kind    string
	Surface string
}

var (
	reEmail   = regexp.MustCompile(`(?i)\b[a-z0-9._%+-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}\b`)
	reURL     = regexp.MustCompile(`https?://[^\s<>\[\]()]+`)
	reHandle  = regexp.MustCompile(`(?:^|[\s(])@(\w[A-Za-z0-9_.-]+)`)
	reDiscord = regexp.MustCompile(`\b([A-Za-z0-9_.-]{2,32}#[0-9]{4})\b`)
	reHashtag = regexp.MustCompile(`(?:^|[\s(])#([A-Za-z][A-Za-z0-9_-]+)`)
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
	if strings.IndexByte(text, '#') >= 0 {
		fieldsWith(text, '#', func(f string) {
			for _, m := range reDiscord.FindAllStringSubmatch(f, -1) {
				add(EntityHandle, m[1])
			}
		})
		fieldsWith(text, '#', func(f string) {
			for _, m := range reHashtag.FindAllStringSubmatch(f, -1) {
				add(EntityHashtag, m[1])
				add(EntityTopic, strings.ToLower(m[1]))
			}
		})
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
	extractEntities(text, add)
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
