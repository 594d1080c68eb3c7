// Package sourcekind is the vocabulary of source kinds as people write them:
// the stored kinds, what people call them ("mail", "docs"), chat platforms
// ("slack", "telegram") and chat conversations (a source id without its month),
// resolved to stored values with the notes and hints a result gives. The store
// (browse's filters) and the read API (the sources list) share it.
package sourcekind

import (
	"fmt"
	"strings"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Aliases maps what people call a source kind to the stored kind.
var Aliases = map[string]string{
	"mail": "email", "mails": "email", "emails": "email", "e-mail": "email", "mbox": "email", "gmail": "email", "thread": "email", "threads": "email",
	"chats": "chat", "message": "chat", "messages": "chat", "im": "chat", "dm": "chat", "dms": "chat", "channel": "chat", "channels": "chat",
	"doc": "document", "docs": "document", "documents": "document", "note": "document", "notes": "document", "file": "document", "files": "document",
}

// Platforms maps a chat platform's names to the prefix of its source ids
// ("slack:#eng/2026-01", "telegram:4242/2020-01", "whatsapp:…", "discord:…").
var Platforms = map[string]string{
	"slack": "slack", "telegram": "telegram", "tg": "telegram", "whatsapp": "whatsapp", "wa": "whatsapp", "discord": "discord",
	"irc": "irc", "matrix": "matrix", "element": "matrix", "mattermost": "mattermost", "imessage": "imessage", "imsg": "imessage", "line": "line", "signal": "signal", "hangouts": "hangouts", "zulip": "zulip", "teams": "teams", "skype": "teams", "mm": "mattermost",
}

// Filter is source_kinds (or kinds) resolved: stored kinds, and chat platforms
// (source id prefixes) that also admit a source.
type Filter struct {
	Kinds     []string
	Platforms []string
	Hints     []string
	Resolved  []abi.Resolution
	None      bool // values were given and none is valid: nothing matches
}

// Resolve reads the values of the filter named filter (lowercased, trimmed).
func Resolve(filter string, vals []string) Filter {
	var f Filter
	var bad []string
	for _, v := range vals {
		v = strings.ToLower(strings.TrimSpace(v))
		switch {
		case v == "":
		case v == abi.KindChat || v == abi.KindEmail || v == abi.KindDocument:
			f.Kinds = append(f.Kinds, v)
		case Aliases[v] != "":
			f.Kinds = append(f.Kinds, Aliases[v])
			f.Resolved = append(f.Resolved, abi.Resolution{Filter: filter, Value: v, To: []string{Aliases[v]}})
		case Platforms[v] != "":
			f.Platforms = append(f.Platforms, Platforms[v])
			f.Resolved = append(f.Resolved, abi.Resolution{Filter: filter, Value: v, To: []string{abi.KindChat + " from " + Platforms[v]}})
		default:
			bad = append(bad, v)
			f.Resolved = append(f.Resolved, abi.Resolution{Filter: filter, Value: v, To: []string{}})
		}
	}
	if len(bad) > 0 {
		f.Hints = append(f.Hints, fmt.Sprintf("%s %s matches no kind of source; use chat, email or document (also mail; slack, telegram, whatsapp, discord for one chat platform)", filter, QuoteList(bad)))
		f.None = len(f.Kinds) == 0 && len(f.Platforms) == 0
	}
	return f
}

// Admits reports whether a source of kind with id sourceID passes the filter
// (an empty filter admits every source).
func (f Filter) Admits(kind, sourceID string) bool {
	if f.None {
		return false
	}
	if len(f.Kinds) == 0 && len(f.Platforms) == 0 {
		return true
	}
	for _, k := range f.Kinds {
		if k == kind {
			return true
		}
	}
	if kind == abi.KindChat {
		for _, p := range f.Platforms {
			if strings.HasPrefix(sourceID, p+":") {
				return true
			}
		}
	}
	return false
}

// Conversation splits a chat source id "<platform>:<conversation>/<YYYY-MM>"
// into the conversation and the month; ok is false for an id without a month.
func Conversation(sourceID string) (conv, month string, ok bool) {
	i := strings.LastIndexByte(sourceID, '/')
	if i < 0 || !strings.Contains(sourceID[:i], ":") {
		return "", "", false
	}
	m := sourceID[i+1:]
	if m != "" && !(len(m) == 7 && m[4] == '-' && allDigits(m[:4]) && allDigits(m[5:])) {
		return "", "", false
	}
	return sourceID[:i], m, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// QuoteList quotes values for a hint: "a", "b".
func QuoteList(vals []string) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, ", ")
}
