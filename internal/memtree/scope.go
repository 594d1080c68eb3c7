package memtree

import (
	"strings"

	"github.com/openhuman/openhuman-core/internal/retrieval/index"
)

// scopeCond is sc (index.Scope, the principal's read scope) as a condition on
// the kind and source_id columns of alias (chunks or sources), "" for the zero
// Scope. Every read of a scoped call carries it, so a chunk outside the scope is
// as absent as one that does not exist.
func scopeCond(sc index.Scope, alias string) (string, []any) {
	return sc.SQL(alias+".kind", alias+".source_id", sqliteGlob, func() string { return "?" })
}

// sqliteGlob is a scope glob as SQLite's GLOB (case-sensitive, as the scope's
// own matcher): "*" stays, and GLOB's other specials, "?" and "[", are made
// literal.
func sqliteGlob(col, ph, g string) (string, any) {
	r := strings.NewReplacer("[", "[[]", "?", "[?]")
	return col + " GLOB " + ph, r.Replace(g)
}

// andScope is " AND "+scopeCond, or "" for the zero Scope.
func andScope(sc index.Scope, alias string) (string, []any) {
	c, args := scopeCond(sc, alias)
	if c == "" {
		return "", nil
	}
	return " AND " + c, args
}
