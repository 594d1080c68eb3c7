package memtree

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/openhuman/openhuman-core/internal/retrieval"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Recall finds chunks by meaning. Offline (no embedder, or the embedder failed) it
// fuses, by weighted reciprocal rank, bm25 over chunks, a coordination ranking over the query words'
// WordNet expansions, and one over the words the store itself associates with rare
// query words (retrieval/associations.go); the less literal evidence the query has in the
// store, the more the last two count (Mode "lexical"). Recall's list begins with
// exactly search's for the same k (same hits, cited refs and order) as far as the
// query's literal evidence reaches: when it is full, search's whole list
// (conversation-aware, retrieval/citation.go) leads and the fusion only adds below it; when it
// is partial, a share of search's hits that say the rarer query words leads and the
// rest of them is fused; the chunks saying only common query words come after the
// fusion. Near-duplicate hits are moved below distinct ones. With an
// embedder it fuses those with a vector scan, weighted by the literal evidence the
// query lacks, under the same rule (Mode "hybrid"; "semantic" when only vectors
// found anything).
func (s *Store) Recall(ctx context.Context, req abi.RecallRequest) (*abi.RecallResult, error) {
	if err := checkK("recall", req.K); err != nil {
		return nil, err
	}
	query := strings.TrimSpace(req.Query)
	if query == "" {
		return nil, fmt.Errorf("recall: empty query; describe what to remember: %w", ErrInvalid)
	}
	db, err := s.readers(ctx)
	if err != nil {
		return nil, err
	}
	res := &abi.RecallResult{Chunks: []abi.ChunkHit{}, Mode: abi.ModeLexical}
	if db == nil {
		res.Hint = EmptyHint
		return res, nil
	}
	snap, err := s.snapshot(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("recall: %w", err)
	}
	if snap.n == 0 {
		res.Hint = EmptyHint
		return res, nil
	}
	ctx = withFTSMemo(ctx)
	hits, mode, note, err := s.rankEngine().Recall(ctx, s.reader(db, snap), query, req.K)
	if err != nil {
		return nil, fmt.Errorf("recall %q: %w", query, err)
	}
	res.Chunks, res.Mode, res.Note = hits, mode, note
	return s.finishRecall(ctx, db, res)
}

// lexicalLists is the engine's LexicalLists over db at generation snap.
func (s *Store) lexicalLists(ctx context.Context, db *sql.DB, snap *dfCache, query string, k int) (lead, tail []abi.ChunkHit, lists []retrieval.List, stems []string, rho float64, err error) {
	return s.rankEngine().LexicalLists(ctx, s.reader(db, snap), query, k)
}
