package memtree

import "context"

// The dense embedder is a network service: text sent to it leaves the
// process. A tool module granted only memory.read must not be able to send
// the store's text there by passing it back as a search query (issue 39: 20
// requests carrying stored text in one call). The runtime therefore puts an
// EmbedGate in the context of a third-party module's search and recall: a
// query the gate refuses is ranked offline (lexical, expanded) only, and is
// never embedded.

// EmbedGate reports whether query may be sent to the embedder.
type EmbedGate func(query string) bool

type embedGateKey struct{}

// WithEmbedGate returns ctx under which VectorList embeds only queries gate
// allows.
func WithEmbedGate(ctx context.Context, gate EmbedGate) context.Context {
	return context.WithValue(ctx, embedGateKey{}, gate)
}

// embedAllowed reports whether query may be embedded under ctx's gate (no
// gate: yes).
func embedAllowed(ctx context.Context, query string) bool {
	gate, _ := ctx.Value(embedGateKey{}).(EmbedGate)
	return gate == nil || gate(query)
}
