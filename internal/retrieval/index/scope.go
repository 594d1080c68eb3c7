package index

import (
	"context"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Scope is what one principal may read: the chunks whose source matches one of
// Allow and none of Deny. A pattern is either "kind:K" (every source of kind K:
// email, chat or document) or a glob over source ids in which "*" matches any
// run of characters and every other character is itself ("doc:*",
// "slack:#eng*", "email:*"). The zero Scope reads everything (the operator, the
// stdio server and the command line).
//
// A backend applies a read call's Scope inside every query it runs for that
// call (a condition on the chunk's kind and source id), so a chunk outside it is
// exactly as absent as a chunk that does not exist; the statistics that only
// weigh scores (document frequencies, chunk counts) stay the whole store's.
type Scope struct {
	allow, deny []ScopeTerm
	full        bool // the zero Scope reads everything; a parsed one never
	set         bool
}

// ScopeTerm is one pattern of a Scope: a kind, or a source-id glob.
type ScopeTerm struct {
	Kind string // non-empty: every source of this kind
	Glob string // otherwise: the source-id glob ("*" any run, all else literal)
}

// Scope limits (hostile input: a token file or flags must not make every query
// huge).
const (
	// MaxScopePatterns bounds the patterns of one scope (allow plus deny).
	MaxScopePatterns = 64
	// MaxScopePatternBytes bounds one pattern.
	MaxScopePatternBytes = 512
)

// scopeKinds are the source kinds a "kind:" pattern may name.
var scopeKinds = map[string]bool{"email": true, "chat": true, "document": true}

// ParseScope checks allow and deny patterns and returns their Scope. An error
// names the pattern and what is wrong with it. At least one allow pattern is
// required ("*" allows every source).
func ParseScope(allow, deny []string) (Scope, error) {
	if len(allow) == 0 {
		return Scope{}, fmt.Errorf("scope: no --allow pattern: name what the token may read (e.g. --allow 'doc:*', --allow kind:email, or --allow '*' for everything)")
	}
	if n := len(allow) + len(deny); n > MaxScopePatterns {
		return Scope{}, fmt.Errorf("scope: %d patterns, more than the %d allowed: use globs (e.g. 'slack:#eng*') rather than listing sources", n, MaxScopePatterns)
	}
	s := Scope{set: true}
	for _, p := range allow {
		t, err := parseScopeTerm(p)
		if err != nil {
			return Scope{}, fmt.Errorf("scope: --allow %w", err)
		}
		s.allow = append(s.allow, t)
	}
	for _, p := range deny {
		t, err := parseScopeTerm(p)
		if err != nil {
			return Scope{}, fmt.Errorf("scope: --deny %w", err)
		}
		s.deny = append(s.deny, t)
	}
	if len(s.deny) == 0 {
		for _, t := range s.allow {
			if t.Kind == "" && strings.Trim(t.Glob, "*") == "" {
				return Scope{}, nil // "*" allows everything: the reads take their unscoped (faster) forms
			}
		}
	}
	return s, nil
}

func parseScopeTerm(p string) (ScopeTerm, error) {
	switch {
	case p == "":
		return ScopeTerm{}, fmt.Errorf("pattern is empty: give a source-id glob such as 'doc:*' or a kind such as kind:email")
	case len(p) > MaxScopePatternBytes:
		return ScopeTerm{}, fmt.Errorf("pattern %.40q… is %d bytes, more than %d", p, len(p), MaxScopePatternBytes)
	case !utf8.ValidString(p):
		return ScopeTerm{}, fmt.Errorf("pattern %q is not valid UTF-8", p)
	}
	for _, r := range p {
		if unicode.IsControl(r) {
			return ScopeTerm{}, fmt.Errorf("pattern %q holds a control character", p)
		}
	}
	if k, ok := strings.CutPrefix(p, "kind:"); ok {
		if !scopeKinds[k] {
			return ScopeTerm{}, fmt.Errorf("pattern %q names no kind: the kinds are kind:email, kind:chat and kind:document", p)
		}
		return ScopeTerm{Kind: k}, nil
	}
	if strings.Trim(p, "*") != "" && !strings.Contains(p, ":") {
		return ScopeTerm{}, fmt.Errorf("pattern %q can match no source: source ids start with their kind of source and a colon (doc:/path, email:…, slack:#channel/2026-01); write e.g. %q", p, p+":*")
	}
	return ScopeTerm{Glob: p}, nil
}

// Full reports whether s reads everything (the zero Scope).
func (s Scope) Full() bool { return !s.set }

// Allow and Deny are s's patterns (nil for the zero Scope).
func (s Scope) Allow() []ScopeTerm { return s.allow }

// Deny: see Allow.
func (s Scope) Deny() []ScopeTerm { return s.deny }

// Key is a string that differs between scopes that read different sources
// ("" for the zero Scope): caches of what is derived from a read call's chunks
// are kept per Key.
func (s Scope) Key() string {
	if s.Full() {
		return ""
	}
	var b strings.Builder
	for _, t := range s.allow {
		b.WriteString("+" + t.String() + "\x00")
	}
	for _, t := range s.deny {
		b.WriteString("-" + t.String() + "\x00")
	}
	return b.String()
}

// String is the term as written ("kind:email", "doc:*").
func (t ScopeTerm) String() string {
	if t.Kind != "" {
		return "kind:" + t.Kind
	}
	return t.Glob
}

// Allows reports whether s reads a chunk of kind from source sourceID (the rule
// the backends' SQL applies, for checks outside a query).
func (s Scope) Allows(kind, sourceID string) bool {
	if s.Full() {
		return true
	}
	in := func(ts []ScopeTerm) bool {
		for _, t := range ts {
			if t.matches(kind, sourceID) {
				return true
			}
		}
		return false
	}
	return in(s.allow) && !in(s.deny)
}

func (t ScopeTerm) matches(kind, sourceID string) bool {
	if t.Kind != "" {
		return t.Kind == kind
	}
	return globMatch(t.Glob, sourceID)
}

// globMatch matches s against glob g where "*" is any run of characters.
func globMatch(g, s string) bool {
	parts := strings.Split(g, "*")
	if len(parts) == 1 {
		return g == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return strings.HasSuffix(s, last)
}

// SQL renders s as a condition on a chunk's (or source's) kind and source id
// columns, with its arguments in placeholder order: "" for the zero Scope. arg
// names the next placeholder; glob renders one source-id glob as a condition
// on col with placeholder ph and the argument it binds (SQLite's GLOB and
// PostgreSQL's LIKE escape differently).
func (s Scope) SQL(kindCol, sourceCol string, glob func(col, ph, g string) (string, any), arg func() string) (string, []any) {
	if s.Full() {
		return "", nil
	}
	var args []any
	render := func(ts []ScopeTerm) string {
		parts := make([]string, 0, len(ts))
		for _, t := range ts {
			if t.Kind != "" {
				parts = append(parts, kindCol+" = "+arg())
				args = append(args, t.Kind)
				continue
			}
			if strings.Trim(t.Glob, "*") == "" {
				parts = append(parts, "TRUE")
				continue
			}
			cond, a := glob(sourceCol, arg(), t.Glob)
			parts = append(parts, cond)
			args = append(args, a)
		}
		return "(" + strings.Join(parts, " OR ") + ")"
	}
	cond := render(s.allow)
	if len(s.deny) > 0 {
		cond += " AND NOT " + render(s.deny)
	}
	return "(" + cond + ")", args
}

type scopeKey struct{}

// WithScope returns ctx carrying the scope of the principal a call runs for:
// the servers set it from the bearer token, and a backend's read call reads it
// (ScopeFrom) into every query. Tool modules cannot set it.
func WithScope(ctx context.Context, s Scope) context.Context {
	return context.WithValue(ctx, scopeKey{}, s)
}

// ScopeFrom is the scope ctx carries (the zero Scope, everything, when none).
func ScopeFrom(ctx context.Context) Scope {
	s, _ := ctx.Value(scopeKey{}).(Scope)
	return s
}
