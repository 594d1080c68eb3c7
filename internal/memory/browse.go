package memory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/openhuman/openhuman-core/internal/analysis"
	"github.com/openhuman/openhuman-core/internal/fit"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// ListChunks browses chunks with AND-combined filters, newest first (the store's
// Browse reads the page), with snippets cut from the chunks' texts (starting
// near the query, when one is given) and the page kept within
// abi.MaxResultBytes.
func (a *API) ListChunks(ctx context.Context, req abi.ChunksListRequest) (*abi.ListResult, error) {
	if err := abi.CheckK("list chunks", req.K); err != nil {
		return nil, err
	}
	if req.Offset < 0 || req.Offset > abi.MaxOffset {
		return nil, fmt.Errorf("list chunks: offset must be 0..%d, got %d: %w", abi.MaxOffset, req.Offset, abi.ErrInvalid)
	}
	if err := abi.CheckFilter("list chunks", "source_kinds", req.SourceKinds, abi.MaxKindChars); err != nil {
		return nil, err
	}
	if err := abi.CheckFilter("list chunks", "source_ids", req.SourceIDs, abi.MaxIDChars); err != nil {
		return nil, err
	}
	if err := abi.CheckFilter("list chunks", "entity_ids", req.EntityIDs, abi.MaxIDChars); err != nil {
		return nil, err
	}
	if n := utf8.RuneCountInString(req.Query); n > abi.MaxQueryChars {
		return nil, fmt.Errorf("list chunks: query has %d characters, at most %d are allowed: %w", n, abi.MaxQueryChars, abi.ErrInvalid)
	}
	if req.SinceMS != nil && req.UntilMS != nil && *req.SinceMS > *req.UntilMS {
		return nil, fmt.Errorf("list chunks: since_ms %d is after until_ms %d: %w", *req.SinceMS, *req.UntilMS, abi.ErrInvalid)
	}
	page, err := a.store.Browse(ctx, req)
	if errors.Is(err, index.ErrEmpty) {
		return &abi.ListResult{Chunks: []abi.ChunkHit{}, Hint: abi.EmptyHint}, nil
	}
	if err != nil {
		return nil, err
	}
	var near []string
	if q := strings.ToLower(strings.TrimSpace(req.Query)); q != "" {
		near = []string{q}
	}
	res := &abi.ListResult{Chunks: make([]abi.ChunkHit, len(page.Hits)), Total: page.Total, Hint: page.Hint, Resolved: page.Resolved}
	for i, h := range page.Hits {
		res.Chunks[i] = h.ChunkHit
		res.Chunks[i].Snippet = analysis.PlainSnippet(h.Text, near)
	}
	n := fit.Count(res.Chunks, fit.ResultBase+fit.StrLen(res.Hint), fit.HitSize)
	had := len(res.Chunks)
	res.Chunks = res.Chunks[:n]
	res.Next = fit.NextOffset(req.Offset, n, had, res.Total)
	return res, nil
}
