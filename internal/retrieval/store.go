package retrieval

import (
	"context"
	"errors"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Store is what the ranking reads from the memory store (internal/memtree
// implements it, one value per read call, over that call's read connection and
// store generation). Full-text expressions are FTS5 syntax built by this package
// (AndExpr, OrExpr, QuorumExpr: every user word quoted); hits carry the chunk's id,
// source, time and a snippet, and Score is the negated bm25 (higher is better).
type Store interface {
	// Term statistics and what the query may name (cached per store generation).

	// Chunks is the number of chunks in the store.
	Chunks() int
	// Latest is the newest chunk time (epoch ms; 0 for none).
	Latest() int64
	// People returns the person entity ids whose folded name is name.
	People(name string) ([]string, bool)
	// DocFreq returns the number of chunks saying stemmed term t.
	DocFreq(ctx context.Context, t string) (int, error)
	// KnownEntities keeps the entity ids the store holds, in order.
	KnownEntities(ctx context.Context, ids []string) ([]string, error)
	// Generation identifies the store and its write generation (caches of what
	// is derived from the whole store are kept per generation).
	Generation() Generation
	// Vocabulary counts the distinct word stems the store says, up to upTo.
	Vocabulary(ctx context.Context, upTo int) (int, error)

	// Full-text queries and chunks by id.

	// Match ranks the chunks matching the full-text expression m.Expr under
	// m.Filter by bm25 (see Match).
	Match(ctx context.Context, m Match) ([]abi.ChunkHit, error)
	// FirstMatches lists up to limit chunks matching expr under f, newest rowids
	// first, without ranking (for words too common to rank), skipping ids in skip.
	FirstMatches(ctx context.Context, expr string, f Filter, limit int, skip map[string]bool) ([]abi.ChunkHit, error)
	// Recent lists up to limit chunks under f newest first, skipping ids in skip,
	// with snippets around snippetTerms.
	Recent(ctx context.Context, f Filter, limit int, skip map[string]bool, snippetTerms []string) ([]abi.ChunkHit, error)
	// ChunkTexts reads the title, text and message spans of the chunks with ids,
	// in one query; a missing chunk is left out.
	ChunkTexts(ctx context.Context, ids []string) (map[string]ChunkText, error)
	// NextChunks returns the chunk that follows each chat hit in its source
	// without a pause, when it is not among the hits already (at most one per
	// hit, in hit order), with snippets around snipTerms and no score.
	NextChunks(ctx context.Context, hits []abi.ChunkHit, snipTerms []string) ([]abi.ChunkHit, error)

	// Postings, for recall's set ranking and associations.

	// MatchRowids returns the rowids of up to limit chunks matching expr.
	MatchRowids(ctx context.Context, expr string, limit int) ([]int64, error)
	// TermRowids reads, in one query, up to perTerm rowids of the chunks matching
	// each expression, tagged with the expression's index.
	TermRowids(ctx context.Context, exprs []string, perTerm int) ([]TermRow, error)
	// HitsByRowid reads the hits of rowids with a plain snippet (a missing chunk
	// is left out).
	HitsByRowid(ctx context.Context, rowids []int64) (map[int64]abi.ChunkHit, error)
	// Sample returns the texts of the n chunks matching expr best (bm25).
	Sample(ctx context.Context, expr string, n int) ([]string, error)

	// Meaning: expansions and vectors, when the store has them configured.

	// Expands reports whether an expander is configured.
	Expands() bool
	// Expand returns the expander's terms related to word, then the word's
	// stored paraphrases the expander did not give.
	Expand(ctx context.Context, word string) ([]Related, error)
	// VectorModel names the embedder, ok false when none is configured.
	VectorModel() (model string, ok bool)
	// VectorList embeds query and ranks chunks by cosine similarity (Hits nil:
	// no vectors stored for the model yet).
	// A query the caller may not send to the embedder (memtree.EmbedGate) is
	// ErrEmbedRefused.
	VectorList(ctx context.Context, query string) (List, error)
}

// Generation identifies one store (Store: any comparable value the store picks)
// at one write generation.
type Generation struct {
	Store any
	ID    string
}

// TermRow is one match of TermRowids: the expression's index and the chunk's rowid.
type TermRow struct {
	Term int
	ID   int64
}

// Related is a term related to a query word, with a weight in (0, 1]: synonyms
// about 1, near hypernyms lower.
type Related struct {
	Term   string
	Weight float32
}

// Match is one ranked full-text query.
type Match struct {
	// Expr is the FTS5 expression.
	Expr string
	// Filter restricts the chunks.
	Filter Filter
	// Estimate bounds Expr's matches (from document frequencies: AndEstimate,
	// OrEstimate): an unrestricted query that may match more than
	// Default.MaxRanked chunks ranks only the MaxRanked newest. 0: rank all.
	Estimate int
	// Limit is the most hits returned; ids in Skip are passed over.
	Limit int
	Skip  map[string]bool
	// Plain, when not nil, cuts each snippet from the chunk's text around the
	// first of these words instead of by the full-text index's snippet (cheaper
	// for long lists).
	Plain []string
}

// Filter restricts candidate chunks. The zero Filter restricts nothing.
type Filter struct {
	// People: chunks linked to one of these entity ids or saying one of these
	// folded names as a phrase.
	EntityIDs, Names []string
	// Time: chunks whose time range overlaps [From, To) (epoch ms); To == 0: none.
	From, To int64
}

// Restricts reports whether f restricts anything.
func (f Filter) Restricts() bool {
	return len(f.EntityIDs) > 0 || len(f.Names) > 0 || f.To != 0
}

// Term is one query word with its stem and document frequency (chunks saying it).
type Term struct {
	Word   string
	Stem   string
	DF     int
	Weight float64
}

// ChunkText is a chunk's title and text with the byte spans of its messages, one
// per source ref (nil when the chunk has none or they are damaged).
type ChunkText struct {
	Title, Text string
	Spans       [][2]int
}

// Message returns the text of message i, false when its span is out of range.
func (c ChunkText) Message(i int) (string, bool) {
	sp := c.Spans[i]
	if sp[0] < 0 || sp[1] > len(c.Text) || sp[0] > sp[1] {
		return "", false
	}
	return c.Text[sp[0]:sp[1]], true
}

// ErrEmbedRefused is VectorList's answer to a query that may not leave the
// process for the embedder: a tool module's query that is not text of its
// client's arguments (memtree.EmbedGate).
var ErrEmbedRefused = errors.New("query not sent to the embedder: it is not text of the client's arguments")
