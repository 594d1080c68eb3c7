package index

import (
	"context"
	"errors"
)

// The dense embedder is a network service: text sent to it leaves the process.
// A tool module granted only memory.read must not be able to send the store's
// text there by passing it back as a search query (issue 39). The runtime puts
// an EmbedGate in the context of a third-party module's search and recall; a
// Vectors backend embeds a query only when EmbedAllowed, and answers
// ErrEmbedRefused otherwise, so the query is ranked offline only.

// EmbedGate reports whether query may be sent to the embedder.
type EmbedGate func(query string) bool

type embedGateKey struct{}

// WithEmbedGate returns ctx under which Vectors.VectorList embeds only the
// queries gate allows.
func WithEmbedGate(ctx context.Context, gate EmbedGate) context.Context {
	return context.WithValue(ctx, embedGateKey{}, gate)
}

// EmbedAllowed reports whether query may be embedded under ctx's gate (no gate:
// yes).
func EmbedAllowed(ctx context.Context, query string) bool {
	gate, _ := ctx.Value(embedGateKey{}).(EmbedGate)
	return gate == nil || gate(query)
}

// ErrEmbedRefused is VectorList's answer to a query that may not leave the
// process for the embedder: a tool module's query that is not text of its
// client's arguments.
var ErrEmbedRefused = errors.New("query not sent to the embedder: it is not text of the client's arguments")
