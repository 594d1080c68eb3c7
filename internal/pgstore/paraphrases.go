package pgstore

import (
	"context"
	"sync/atomic"

	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
)

// Recall's offline expansion on this backend: the WordNet expander and the
// machine's paraphrase table (the FreeDict pivot, built once per machine by
// ingest into a file of its own: internal/ingest's MachineParaphraseFile). The
// table is query-side data, like WordNet, not the memory's: it is never stored
// in the database, and a server reads the file of the machine it runs on.

// paraphraseFile is the machine-wide paraphrase file the reads expand with ("":
// WordNet alone).
type paraphraseFile struct{ p atomic.Pointer[string] }

// SetParaphraseFile makes recall expand with the paraphrase file at path (see
// memtree.WriteParaphraseFile) besides WordNet; "" for WordNet alone. Safe to
// call concurrently with reads.
func (s *Store) SetParaphraseFile(path string) { s.para.p.Store(&path) }

func (s *Store) paraphrasePath() string {
	if p := s.para.p.Load(); p != nil {
		return *p
	}
	return ""
}

var _ index.Paraphrases = reader{}

// Expands reports that recall can expand query words here (WordNet is always
// there).
func (r reader) Expands() bool { return true }

// Expand is WordNet's terms related to word, then the paraphrases of the
// machine's table (memtree.ExpandWithParaphraseFile).
func (r reader) Expand(ctx context.Context, word string) ([]index.Related, error) {
	return memtree.ExpandWithParaphraseFile(ctx, r.s.paraphrasePath(), word)
}
