package memory

import (
	"context"
	"fmt"
	"strings"

	"github.com/openhuman/openhuman-core/internal/fit"
	"github.com/openhuman/openhuman-core/internal/retrieval"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Search finds chunks by keywords: bm25 over the full text, all words first, then
// fewer, then any, the remaining places filled with chunks saying the common
// words, so k is filled whenever the store has candidates. A person or address
// the store knows restricts the search to chunks linked to them; a date or month
// phrase restricts it to chunks whose time range overlaps that window (relaxed,
// after the restricted hits, when they are fewer than k). Chat chunks are ranked
// and cited by turn, with the turns that answer a matching turn
// (retrieval/citation.go).
func (a *API) Search(ctx context.Context, req abi.SearchRequest) (*abi.SearchResult, error) {
	query, err := checkQuery("search", req.K, req.Query, "give some words to look for")
	if err != nil {
		return nil, err
	}
	res := &abi.SearchResult{Chunks: []abi.ChunkHit{}}
	b, err := a.store.BeginRead(ctx)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	if b == nil {
		res.Hint = abi.EmptyHint
		return res, nil
	}
	c, err := a.engine.NewCall(ctx, b, query, req.K)
	if err != nil {
		return nil, fmt.Errorf("search %q: %w", query, err)
	}
	hits, _, err := c.Ranked(ctx)
	if err != nil {
		return nil, fmt.Errorf("search %q: %w", query, err)
	}
	res.Resolved = c.Query.Resolved
	n, err := finish(ctx, b, hits)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	res.Chunks, res.MessageTextMaxChars = hits, n
	res.Chunks, res.Omitted = fit.Hits(res.Chunks, &res.MessageTextMaxChars, fit.ResultBase+fit.StrLen(res.Hint)+resolvedLen(res.Resolved))
	return res, nil
}

// Recall finds chunks by meaning. Offline (no embedder, or the embedder failed)
// it fuses, by weighted reciprocal rank, bm25 over chunks, a coordination ranking
// over the query words' WordNet expansions, and one over the words the store
// itself associates with rare query words (retrieval/associations.go); the less
// literal evidence the query has in the store, the more the last two count (Mode
// "lexical"). Recall's list begins with exactly search's for the same k (same
// hits, cited refs and order) as far as the query's literal evidence reaches;
// the chunks saying only common query words come after the fusion. With an
// embedder it fuses those with a vector scan, weighted by the literal evidence
// the query lacks, under the same rule (Mode "hybrid"; "semantic" when only
// vectors found anything).
func (a *API) Recall(ctx context.Context, req abi.RecallRequest) (*abi.RecallResult, error) {
	query, err := checkQuery("recall", req.K, req.Query, "describe what to remember")
	if err != nil {
		return nil, err
	}
	res := &abi.RecallResult{Chunks: []abi.ChunkHit{}, Mode: abi.ModeLexical}
	b, err := a.store.BeginRead(ctx)
	if err != nil {
		return nil, fmt.Errorf("recall: %w", err)
	}
	if b == nil {
		res.Hint = abi.EmptyHint
		return res, nil
	}
	hits, mode, note, err := a.engine.Recall(ctx, b, query, req.K)
	if err != nil {
		return nil, fmt.Errorf("recall %q: %w", query, err)
	}
	n, err := finish(ctx, b, hits)
	if err != nil {
		return nil, fmt.Errorf("recall: %w", err)
	}
	res.Chunks, res.Mode, res.Note, res.MessageTextMaxChars = hits, mode, note, n
	// the contacts the query named (search's Call parsed it too; parsing again
	// costs microseconds beside recall's lists)
	pq, err := retrieval.ParseQuery(ctx, query, b)
	if err != nil {
		return nil, fmt.Errorf("recall: %w", err)
	}
	res.Resolved = pq.Resolved
	res.Chunks, res.Omitted = fit.Hits(res.Chunks, &res.MessageTextMaxChars, fit.ResultBase+fit.StrLen(res.Hint)+fit.StrLen(res.Note)+resolvedLen(res.Resolved))
	return res, nil
}

// resolvedLen bounds the JSON size of a result's resolved notes.
func resolvedLen(rs []abi.Resolution) int {
	n := 0
	for _, r := range rs {
		n += 48 + fit.StrLen(r.Filter) + fit.StrLen(r.Value)
		for _, t := range r.To {
			n += 4 + fit.StrLen(t)
		}
	}
	return n
}

// checkQuery checks k and that query says something, returning it trimmed.
func checkQuery(op string, k int, query, what string) (string, error) {
	if err := abi.CheckK(op, k); err != nil {
		return "", err
	}
	query = strings.TrimSpace(query)
	if query == "" {
		return "", fmt.Errorf("%s: empty query; %s: %w", op, what, abi.ErrInvalid)
	}
	return query, nil
}

// finish adds the hits' cited messages (HitMessages, through b's
// index.Messages) and makes their scores non-increasing down the list
// (retrieval.Monotone), returning the bound applied to the messages' texts.
func finish(ctx context.Context, b index.Backend, hits []abi.ChunkHit) (int, error) {
	m, ok := b.(index.Messages)
	if !ok {
		return 0, fmt.Errorf("the store's read call %T reads no hit messages (index.Messages)", b)
	}
	n, err := HitMessages(ctx, m, hits)
	if err != nil {
		return 0, err
	}
	retrieval.Monotone(hits)
	return n, nil
}
