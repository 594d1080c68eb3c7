// Package retrieval is the ranking engine of the memory tree: the stages that turn
// a query into memory.search's and memory.recall's ordered hits. A backend
// (internal/memtree for SQLite) keeps the data and implements the contract of
// internal/retrieval/index this package reads through (term statistics,
// structured full-text queries, chunks by id, people and dates; paraphrases and
// vectors as optional interfaces); this package keeps what is decided about the
// data — the stages, the tunables (params.go, by value in an Engine, with their
// reasons in RATIONALE.md), how hits are fused and what a hit's score means.
//
// # How memory.search works, file by file
//
// Follow one call from the read API to SQL:
//
//  1. runtime/hostfuncs.go: a tool module's memory.search host call decodes an
//     abi.SearchRequest and calls the read API (runtime.Reader), internal/memory's
//     API.Search (search.go there). It checks k and the query, opens one read call
//     on the store (memory.Store's BeginRead: for SQLite, memtree rstore.go — a read
//     connection and the store generation's snapshot: chunk count, newest time,
//     people) and calls Engine.Search here with that index.Backend.
//  2. search.go (here): NewCall builds the per-call value, a Call carrying the
//     engine's parameters (engine.go, params.go): the query understood (query.go:
//     ParseQuery finds addresses, people the store knows and a date phrase;
//     QueryTerms gives the remaining content words with their document
//     frequencies), the terms rare enough to rank (PruneFrequent) and the reader of
//     chunk texts the later stages share (Messages). Call.Search runs the pipeline
//     under each restriction the query names (people and date together, each
//     alone, none), most specific first, until k hits are found.
//  3. candidates.go: Candidates asks the backend for the chunks saying all the
//     words (index.All), then coordination levels (index.AtLeast n−1, n−2, …),
//     then any of them (index.Any), then the common words (fill), each level below
//     the previous (levels.go names the levels). Each is one index.Match; the
//     SQLite backend turns it into an FTS5 expression (memtree fts.go) and runs it
//     as a bm25 query (memtree search.go: ftsRanked, under the window of
//     rankcap.go, remembered per read call by ftsmemo.go) — this is where the SQL is.
//  4. scoring.go: for a plain keyword query each level is reordered by its
//     chunks' best message (ByMessage: bm25 over the message, idf from the
//     backend), reading chunk texts through Backend.Texts once per call.
//  5. citation.go and cite.go: when most hits are chat, OrderByTurns scores every
//     turn (plus the chunk after each hit, Backend.Following, so an answer across a
//     chunk boundary is seen), passes a share of a question's score to its reply,
//     ranks chunks by their best turn and sets each chat hit's cited refs; the
//     other hits cite the messages that carry the match (CiteHits). A question
//     asking when favours the turns that tell a time (timeq.go), and a turn with
//     evidence that its hit does not cite ranks on its own, as a further hit on
//     its chunk (turnunits.go: turn units).
//  6. Back in internal/memory: the hits get their cited messages (the read call's
//     HitMessages: memtree hitmessages.go), the result stage (result.go: Monotone)
//     makes scores non-increasing down the list, and internal/fit keeps the result
//     within abi.MaxResultBytes.
//
// memory.recall (recall.go) starts from the same search list and adds the offline
// meaning signals — WordNet and paraphrase expansions (expansion.go) and the words
// the store itself associates with rare query words (associations.go), each a set
// ranking over postings — and the store's vectors when an embedder is configured;
// fusion.go fuses them by weighted reciprocal rank below the literal lead
// (levels.go: LiteralLead), so recall begins with search's hits wherever the query's
// words are evidence. internal/analysis is the analyzer every backend indexes with and
// the queries share (folding, word splitting, stopwords, the Porter stemmer).
package retrieval
