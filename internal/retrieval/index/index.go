// Package index is the contract between the ranking engine (internal/retrieval)
// and a storage backend (internal/memtree over SQLite's FTS5; any other backend
// implements the same): what the engine asks of the data, in the engine's terms.
//
// Everything here speaks the one analyzer's output (internal/analysis): a query
// names folded words (analysis.Words), and a backend matches a word where a
// chunk says a word with the same index term (analysis.Stem); how the backend
// indexes and matches is its own business, and indextest proves it consistent.
// Queries are structured (phrases, all/any/at least m of n), never a backend's
// query syntax. Chunk ids are opaque strings; a Key is an opaque number a backend
// gives a chunk within one generation, for compact posting lists. A backend score
// is only "higher is better within one call". Ranking parameters, fusion and
// snippets stay in the engine: a backend returns each hit's chunk text (Hit) and
// the engine cuts the snippet from it.
package index

import (
	"context"
	"errors"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

// ErrTooBroad is returned (wrapped) by a backend that cannot run a query of this
// shape within its own cost bounds (e.g. an at-least-m-of-n query over too many
// subsets): the engine passes over that query.
var ErrTooBroad = errors.New("query too broad for this backend")

// Op is how a Query combines its phrases.
type Op int

const (
	// All matches chunks saying every phrase.
	All Op = iota
	// Any matches chunks saying at least one phrase.
	Any
	// AtLeast matches chunks saying at least Query.M of the phrases.
	AtLeast
)

// Phrase is a run of folded words (analysis.Words) matched in order, adjacent; a
// one-word phrase matches the word's index term anywhere.
type Phrase []string

// Query is a structured full-text query.
type Query struct {
	Op      Op
	M       int // for AtLeast
	Phrases []Phrase
}

// Words is a Query of one-word phrases combined by op.
func Words(op Op, words ...string) Query {
	q := Query{Op: op, Phrases: make([]Phrase, len(words))}
	for i, w := range words {
		q.Phrases[i] = Phrase{w}
	}
	return q
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

// Match is one ranked (or, Unranked, listed) full-text query.
type Match struct {
	Query  Query
	Filter Filter
	// Unranked lists matches newest first (by chunk time, ties by id) without
	// scoring them (for words too common to rank): Score is 0.
	Unranked bool
	// Limit is the most hits returned; ids in Skip are passed over.
	Limit int
	Skip  map[string]bool
}

// Hit is a chunk a backend read returns: its hit fields (Snippet left empty, as
// are Messages) and its whole text, from which the engine cuts the snippet.
type Hit struct {
	abi.ChunkHit
	Text string
}

// Key is a backend's compact number for a chunk within one generation (opaque:
// neither an order nor stable across generations).
type Key int64

// Posting is one match of Postings: the query's index and the chunk's key.
type Posting struct {
	Query int
	Key   Key
}

// Generation identifies one store (any comparable value the backend picks) at
// one write generation: what the engine derives from the whole store is cached
// per generation.
type Generation struct {
	Store any
	ID    string
}

// Stats are a generation's counts.
type Stats struct {
	Chunks     int        // chunks in the store
	Latest     int64      // the newest chunk time (epoch ms; 0 for none)
	Generation Generation // what the counts are of
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

// Backend is what the ranking reads from a store, one value per read call (over
// that call's connection and generation). Hits carry the chunk's id, source, time,
// text and a backend score; no backend makes snippets.
type Backend interface {
	// Stats are the generation's counts (cached by the backend).
	Stats() Stats
	// DocFreq returns the number of chunks saying folded word w's index term.
	DocFreq(ctx context.Context, w string) (int, error)
	// Vocabulary counts the distinct index terms the store says, up to upTo.
	Vocabulary(ctx context.Context, upTo int) (int, error)

	// People returns the person entity ids whose folded name is name.
	People(name string) ([]string, bool)
	// KnownEntities keeps the entity ids the store holds, in order.
	KnownEntities(ctx context.Context, ids []string) ([]string, error)

	// Match ranks the chunks matching m.Query under m.Filter, best first (or
	// lists them newest first when m.Unranked).
	Match(ctx context.Context, m Match) ([]Hit, error)
	// Recent lists up to limit chunks under f newest first (by chunk time, ties
	// by id), skipping ids in skip.
	Recent(ctx context.Context, f Filter, limit int, skip map[string]bool) ([]Hit, error)
	// Postings reads, in one round trip, the keys of up to perQuery chunks
	// matching each query, tagged with the query's index (unranked).
	Postings(ctx context.Context, qs []Query, perQuery int) ([]Posting, error)
	// Sample returns the texts of the n chunks matching q best.
	Sample(ctx context.Context, q Query, n int) ([]string, error)

	// Texts reads the title, text and message spans of the chunks with ids; a
	// missing chunk is left out.
	Texts(ctx context.Context, ids []string) (map[string]ChunkText, error)
	// Hits reads the hits of keys (a missing chunk is left out).
	Hits(ctx context.Context, keys []Key) (map[Key]Hit, error)
	// Following returns the chunk that follows each chat hit in its source
	// without a pause, when it is not among the hits already (at most one per
	// hit, in hit order), with no score.
	Following(ctx context.Context, hits []abi.ChunkHit) ([]Hit, error)
}

// Related is a term related to a query word, with a weight in (0, 1]: synonyms
// about 1, near hypernyms lower.
type Related struct {
	Term   string
	Weight float32
}

// Paraphrases is a Backend that also keeps paraphrases of words (optional).
type Paraphrases interface {
	// Expands reports whether the backend has an expander configured.
	Expands() bool
	// Expand returns the expander's terms related to word, then the word's
	// stored paraphrases the expander did not give.
	Expand(ctx context.Context, word string) ([]Related, error)
}

// Contacts is a Backend that also keeps an address book (optional): the people
// whose names, nicknames, addresses and handles a query may name.
type Contacts interface {
	// Contact returns the contacts (their person ids, "person:micah stubbs")
	// that key names, and every stored entity of theirs (names, addresses and
	// handles their messages are stored under); both are empty when key names
	// no contact. key is a folded name ("micah", "m stubbs") or an address id
	// ("email:micah@home.example"). Under a narrowed scope (ScopeFrom of ctx)
	// only the ids linked to a chunk the scope reads are returned: the
	// address book names no one and nothing the scope does not hold.
	Contact(ctx context.Context, key string) (people, ids []string, err error)
}

// Vectors is a Backend that also keeps chunk vectors (optional).
type Vectors interface {
	// VectorModel names the embedder, ok false when none is configured.
	VectorModel() (model string, ok bool)
	// VectorList embeds query and returns up to depth chunks by cosine
	// similarity, nearest first (nil: no vectors stored for the model yet;
	// ErrEmbedRefused when ctx's EmbedGate refuses query).
	VectorList(ctx context.Context, query string, depth int) ([]Hit, error)
}

// ChunkVectors is a Vectors backend that also embeds a query on its own and
// measures it against chosen chunks' stored vectors (optional): recall ranks the
// chunks of the person a question names by the embedder's meaning (the meaning
// list, issue 36). A backend without it gets no such list; nothing else changes.
type ChunkVectors interface {
	Vectors
	// QueryVector embeds query with the embedder, L2-normalised (nil when no
	// embedder is configured; ErrEmbedRefused when ctx's EmbedGate refuses
	// query). A query VectorList embedded is not sent to the embedder again.
	QueryVector(ctx context.Context, query string) ([]float32, error)
	// Similarities returns the cosine of q to the stored vector of each chunk of
	// ids that has one for the embedder's model (a chunk without one is left out).
	Similarities(ctx context.Context, q []float32, ids []string) (map[string]float32, error)
}
