// Package memory is the memory tree's read API, the one the tool modules' host
// functions call (it implements runtime.Reader): memory.search and memory.recall
// ranked by the engine (internal/retrieval) over a backend's read call
// (internal/retrieval/index), with their hits' cited messages, scores that never
// contradict the order and results kept within abi.MaxResultBytes; and the
// plain reads (a chunk, browse, the top entities, the sources) shaped here from
// the store's rows (index.Plain; plain.go, browse.go, sources.go: request
// checks, kind resolution, display names, snippets, clipping, fitting, hints;
// browse's filter values are resolved by the store, which looks them up).
//
// It links no store: internal/memtree (SQLite) or any other backend is its Store.
//
// # How memory.search works, file by file
//
// A tool call's line on stdin reaches the runtime (runtime/hostfuncs.go decodes
// the module's memory.search request) and API.Search here, which opens a read
// call on the store (Store.BeginRead: memtree/rstore.go, one connection and the
// store generation's snapshot), ranks with the engine (retrieval's search.go,
// candidates.go, …; each full-text query is an index.Match, run through
// snippets.go's match, which cuts the hits' snippets from the texts the backend
// returns: memtree/rstore.go Match → fts.go ftsExpr → rankcap.go rankWindow →
// search.go ftsRanked, the SQL), then adds the hits' cited messages
// (hitmessages.go, over the backend's index.Messages: memtree/hitmessages.go) and
// fits the result (internal/fit).
package memory

import (
	"context"

	"github.com/openhuman/openhuman-core/internal/retrieval"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
)

// Store is what the read API needs of a backend store (memtree.Store).
type Store interface {
	// BeginRead opens one read call: the backend over one connection and store
	// generation, which must also implement index.Messages; nil while the store
	// holds nothing.
	BeginRead(ctx context.Context) (index.Backend, error)

	// The rows of the plain reads this API shapes (plain.go, browse.go,
	// sources.go).
	index.Plain
}

// API is the read API over one store and one engine. It is safe for concurrent
// use.
type API struct {
	store   Store
	engine  *retrieval.Engine
	sources namedLists // the store's sources named per hint (sources.go)
}

// New returns the read API over store, ranking with parameters p
// (retrieval.DefaultParams: the chosen values).
func New(store Store, p retrieval.Params) *API {
	return &API{store: store, engine: retrieval.New(p)}
}

// Default is New with retrieval.DefaultParams.
func Default(store Store) *API { return New(store, retrieval.DefaultParams()) }

// Params returns the parameters the API ranks with.
func (a *API) Params() retrieval.Params { return a.engine.Params() }
