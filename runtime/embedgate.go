package runtime

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/openhuman/openhuman-core/internal/retrieval/index"
)

// Egress belongs to whoever asked (issue 39): a tool module's memory_search
// or memory_recall reaches the dense embedder — a network service — only
// with text its client sent in the current call's arguments. Any other query
// (text the module read from the store, say) is ranked offline and never
// leaves the process. A module that needs to send other text somewhere needs
// a capability the policy grants and audit shows; memory.read is not one.

// withClientEmbedGate puts cs's gate in ctx.
func withClientEmbedGate(ctx context.Context, cs *callState) context.Context {
	return index.WithEmbedGate(ctx, cs.clientWrote)
}

// clientWrote reports whether query is text of the call's arguments: a
// substring of one of their string values (or keys). Outside a call
// nothing is.
func (cs *callState) clientWrote(query string) bool {
	if cs == nil {
		return false
	}
	query = strings.TrimSpace(query)
	if query == "" {
		return true
	}
	cs.argsOnce.Do(func() {
		var v any
		if json.Unmarshal(cs.args, &v) == nil {
			cs.argText = collectStrings(v, nil)
		}
	})
	for _, s := range cs.argText {
		if strings.Contains(s, query) {
			return true
		}
	}
	return false
}

// collectStrings appends every string (and object key) in v to out.
func collectStrings(v any, out []string) []string {
	switch x := v.(type) {
	case string:
		out = append(out, x)
	case []any:
		for _, e := range x {
			out = collectStrings(e, out)
		}
	case map[string]any:
		for k, e := range x {
			out = append(out, k)
			out = collectStrings(e, out)
		}
	}
	return out
}
