// Package retrieval is the ranking side of the memory tree: the stages that turn a
// query into memory.search's and memory.recall's ordered hits. The store
// (internal/memtree) keeps the data and implements the Store interface this
// package reads through (term statistics, full-text queries, chunks by id,
// people and dates, expansions and vectors); this package keeps what is decided
// about the data — the stages, the tunables (params.go, with their reasons in
// RATIONALE.md), how hits are fused and what a hit's score means.
//
// # How memory.search works, file by file
//
// Follow one call from the read API to SQL:
//
//  1. runtime/hostfuncs.go: a tool module's memory.search host call decodes an
//     abi.SearchRequest and calls the store's Search (internal/memtree,
//     search.go). Search checks k and the query, takes a read connection and the
//     store generation's snapshot (memtree dfcache.go: chunk count, newest time,
//     people), and calls retrieval.Search with the store as a Store
//     (memtree rstore.go: storeReader, one per call).
//  2. search.go (here): NewCall builds the per-call value, a Call: the query
//     understood (query.go: ParseQuery finds addresses, people the store knows
//     and a date phrase; QueryTerms gives the remaining content words with their
//     document frequencies), the terms rare enough to rank (PruneFrequent) and
//     the reader of chunk texts the later stages share (Messages). Call.Search
//     runs the pipeline under each restriction the query names (people and date
//     together, each alone, none), most specific first, until k hits are found.
//  3. candidates.go: Candidates asks the store for the chunks saying all the
//     words (AND), then coordination levels (n−1, n−2, … of the words), then any
//     of them (OR), then the common words (fill), each level below the previous
//     (levels.go names the levels). Each is one Store.Match: an FTS5 expression
//     built here (AndExpr, QuorumExpr, OrExpr), which the store runs as a bm25
//     query (memtree search.go: ftsRanked, under the window of rankcap.go; in a
//     recall call, remembered by ftsmemo.go) — this is where the SQL is.
//  4. scoring.go: for a plain keyword query each level is reordered by its
//     chunks' best message (ByMessage: bm25 over the message, idf from the
//     store), reading chunk texts through Store.ChunkTexts once per call.
//  5. citation.go and cite.go: when most hits are chat, OrderByTurns scores every
//     turn (plus the chunk after each hit, Store.NextChunks, so an answer across a
//     chunk boundary is seen), passes a share of a question's score to its reply,
//     ranks chunks by their best turn and sets each chat hit's cited refs; the
//     other hits cite the messages that carry the match (CiteHits). A question
//     asking when favours the turns that tell a time (timeq.go), and a turn with
//     evidence that its hit does not cite ranks on its own, as a further hit on
//     its chunk (turnunits.go: turn units).
//  6. Back in memtree (search.go, hitmessages.go): the hits get their cited
//     messages' text, the result stage (result.go: Monotone) makes scores
//     non-increasing down the list, and the result is bounded in size.
//
// memory.recall (recall.go) starts from the same search list and adds the offline
// meaning signals — WordNet and paraphrase expansions (expansion.go) and the words
// the store itself associates with rare query words (associations.go), each a set
// ranking over postings — and the store's vectors when an embedder is configured;
// fusion.go fuses them by weighted reciprocal rank below the literal lead
// (levels.go: LiteralLead), so recall begins with search's hits wherever the query's
// words are evidence. text.go is the analyzer the index and the queries share
// (folding, word splitting, stopwords, the Porter stemmer).
package retrieval
