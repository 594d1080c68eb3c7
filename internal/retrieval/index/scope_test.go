package index_test

import (
	"context"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/retrieval/index"
)

// The scope's own rule: a source is read when an allow pattern matches and no
// deny pattern does; "*" is any run, every other character itself (also the
// specials of SQLite's GLOB and PostgreSQL's LIKE); kinds match the kind only.
func TestScopeAllows(t *testing.T) {
	sc, err := index.ParseScope([]string{"doc:*", "slack:#eng*", "kind:email"}, []string{"doc:/home/ana/private/*", "email:*secret*"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		kind, id string
		want     bool
	}{
		{"document", "doc:/home/ana/notes/a.md", true},
		{"document", "doc:/home/ana/private/b.md", false},
		{"chat", "slack:#engineering/2026-01", true},
		{"chat", "slack:#general/2026-01", false},
		{"email", "email:abc@x", true},
		{"email", "email:a-secret-thread@x", false},
		{"document", "roam:graph#page", false},
		{"chat", "doc:x", true}, // globs read the id, not the kind
	} {
		if got := sc.Allows(c.kind, c.id); got != c.want {
			t.Errorf("Allows(%s, %s) = %v, want %v", c.kind, c.id, got, c.want)
		}
	}
	lit, _ := index.ParseScope([]string{"doc:a_b%[c]?*"}, nil)
	if !lit.Allows("document", "doc:a_b%[c]?d") || lit.Allows("document", "doc:aXb%[c]?d") || lit.Allows("document", "doc:a_b%c?d") {
		t.Error("_, %, [ and ? must be literal in a scope glob")
	}
	if !(index.Scope{}).Full() || sc.Full() || (index.Scope{}).Key() != "" || sc.Key() == "" {
		t.Error("the zero Scope reads everything and a parsed one does not")
	}
	if star, _ := index.ParseScope([]string{"doc:*", "*"}, nil); !star.Full() {
		t.Error("an allow of * without a deny is not the full scope")
	}
	if star, _ := index.ParseScope([]string{"*"}, []string{"kind:chat"}); star.Full() || star.Allows("chat", "slack:#x/2026-01") || !star.Allows("email", "email:x") {
		t.Error("* with a deny reads all but the denied")
	}
	other, _ := index.ParseScope([]string{"doc:*"}, nil)
	if other.Key() == sc.Key() {
		t.Error("two scopes share a cache key")
	}
	ctx := index.WithScope(context.Background(), sc)
	if index.ScopeFrom(ctx).Key() != sc.Key() || !index.ScopeFrom(context.Background()).Full() {
		t.Error("the scope does not ride the context")
	}
}

// Bad patterns are refused with what is wrong.
func TestParseScopeRefuses(t *testing.T) {
	long := strings.Repeat("x", index.MaxScopePatternBytes) + ":*"
	many := make([]string, index.MaxScopePatterns+1)
	for i := range many {
		many[i] = "doc:*"
	}
	for _, c := range []struct {
		allow, deny []string
		want        string
	}{
		{nil, nil, "no --allow"},
		{[]string{""}, nil, "empty"},
		{[]string{"kind:"}, nil, "names no kind"},
		{[]string{"kind:mail"}, nil, "names no kind"},
		{[]string{"notes"}, nil, "can match no source"},
		{[]string{"doc:*"}, []string{"\tdoc:x"}, "control character"},
		{[]string{"doc:\xff"}, nil, "UTF-8"},
		{[]string{long}, nil, "bytes"},
		{many, nil, "patterns, more than"},
	} {
		if _, err := index.ParseScope(c.allow, c.deny); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseScope(%q, %q) = %v, want an error with %q", c.allow, c.deny, err, c.want)
		}
	}
}

// SQL renders the rule with one placeholder per argument, in order.
func TestScopeSQL(t *testing.T) {
	sc, _ := index.ParseScope([]string{"kind:email", "doc:*"}, []string{"doc:x*"})
	n := 0
	cond, args := sc.SQL("c.kind", "c.source_id", func(col, ph, g string) (string, any) { return col + " LIKE " + ph, g }, func() string { n++; return "$" + string(rune('0'+n)) })
	if cond != "((c.kind = $1 OR c.source_id LIKE $2) AND NOT (c.source_id LIKE $3))" || len(args) != 3 || args[0] != "email" || args[2] != "doc:x*" {
		t.Errorf("SQL = %s %v", cond, args)
	}
	if c, a := (index.Scope{}).SQL("k", "s", nil, nil); c != "" || a != nil {
		t.Errorf("the zero Scope renders %q", c)
	}
}
