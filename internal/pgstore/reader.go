package pgstore

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/openhuman/openhuman-core/internal/analysis"
	"github.com/openhuman/openhuman-core/internal/embed"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// The backend's own cost bound, as the SQLite backend's (internal/memtree/fts.go):
// an unrestricted ranked query that may match more chunks ranks its maxRanked
// newest only (idf stays the store's).
const maxRanked = 2000

// reader is one read call on the store: index.Backend over the pool, at the
// generation snap.
type reader struct {
	s    *Store
	snap *snapshot
	// scope is what the call's principal may read (index.ScopeFrom of the
	// call's context): every query of the call carries it.
	scope index.Scope
	// emb is the store's embedder for this call, keeping the call's query
	// vectors (nil: no embedder).
	emb *embed.QueryEmbedder
}

var (
	_ index.Backend  = reader{}
	_ index.Messages = reader{}
)

// BeginRead opens one read call at the store's current generation; nil while
// the store holds no chunk.
func (s *Store) BeginRead(ctx context.Context) (index.Backend, error) {
	snap, err := s.current(ctx)
	if err != nil {
		return nil, err
	}
	if snap.n == 0 {
		return nil, nil
	}
	r := reader{s: s, snap: snap, scope: index.ScopeFrom(ctx)}
	if e := s.embedder(); e != nil {
		r.emb = embed.NewQueryEmbedder(e)
	}
	return r, nil
}

// Stats are the generation's counts.
func (r reader) Stats() index.Stats {
	return index.Stats{Chunks: r.snap.n, Latest: r.snap.latest, Generation: index.Generation{Store: r.s, ID: genID(r.snap.gen) + r.scope.Key()}}
}

// People returns the person ids with folded name.
func (r reader) People(name string) ([]string, bool) {
	ids, ok := r.snap.people[name]
	return ids, ok
}

// termDF is the document frequency of lexeme t (cached per generation).
func (r reader) termDF(ctx context.Context, t string) (int, error) {
	r.snap.mu.Lock()
	d, ok := r.snap.df[t]
	r.snap.mu.Unlock()
	if ok {
		return d, nil
	}
	err := r.s.rd.QueryRow(ctx, `SELECT coalesce((SELECT df FROM term_df WHERE term = $1), 0)`, t).Scan(&d)
	if err != nil {
		return 0, fmt.Errorf("document frequency of %q: %w", t, err)
	}
	r.snap.mu.Lock()
	r.snap.df[t] = d
	r.snap.mu.Unlock()
	return d, nil
}

// DocFreq is the number of chunks saying w's index term.
func (r reader) DocFreq(ctx context.Context, w string) (int, error) {
	return r.termDF(ctx, lexemeOf(analysis.Stem(w)))
}

// Vocabulary counts the distinct terms, up to upTo.
func (r reader) Vocabulary(ctx context.Context, upTo int) (int, error) {
	var n int
	if err := r.s.rd.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM term_df LIMIT $1) t`, upTo).Scan(&n); err != nil {
		return 0, fmt.Errorf("count the vocabulary: %w", err)
	}
	return n, nil
}

// KnownEntities keeps the ids the store holds, in order.
func (r reader) KnownEntities(ctx context.Context, ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := r.s.rd.Query(ctx, `SELECT id FROM entities WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("look up entities: %w", err)
	}
	have, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("look up entities: %w", err)
	}
	known := map[string]bool{}
	for _, id := range have {
		known[id] = true
	}
	var out []string
	for _, id := range ids {
		if known[id] {
			out = append(out, id)
		}
	}
	return out, nil
}

// args collects a statement's parameters, naming each $n.
type args []any

func (a *args) add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}

// scoped is sc as a condition on the kind and source_id of alias (" AND …",
// or "" for the zero Scope).
func (a *args) scoped(sc index.Scope, alias string) string {
	n := len(*a)
	c, vals := sc.SQL(alias+".kind", alias+".source_id", likeGlob, func() string { n++; return "$" + strconv.Itoa(n) })
	if c == "" {
		return ""
	}
	*a = append(*a, vals...) // in the order SQL named their placeholders
	return " AND " + c
}

// likeGlob is a scope glob as LIKE (case-sensitive, as the scope's own
// matcher): "*" is "%", and LIKE's "%", "_" and the escape are literal.
func likeGlob(col, ph, g string) (string, any) {
	r := strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`, "*", "%")
	return col + ` LIKE ` + ph + ` ESCAPE '\'`, r.Replace(g)
}

// where is f as conditions on chunks c (" AND …", or "").
func (a *args) where(f index.Filter) string {
	var conds []string
	if len(f.EntityIDs) > 0 || len(f.Names) > 0 {
		var people []string
		if len(f.EntityIDs) > 0 {
			people = append(people, "c.key IN (SELECT chunk_key FROM chunk_entities WHERE entity_id = ANY("+a.add(f.EntityIDs)+"))")
		}
		if len(f.Names) > 0 {
			var ps []index.Phrase
			for _, n := range f.Names {
				ps = append(ps, index.Phrase{n})
			}
			if c, err := compile(index.Query{Op: index.Any, Phrases: ps}); err == nil && c.tsquery != "" {
				people = append(people, "c.terms @@ "+a.add(c.tsquery)+"::tsquery")
			}
		}
		if len(people) == 0 {
			people = append(people, "false")
		}
		conds = append(conds, "("+strings.Join(people, " OR ")+")")
	}
	if f.To != 0 {
		conds = append(conds, "c.ts_end >= "+a.add(f.From)+" AND c.ts_start < "+a.add(f.To))
	}
	if len(conds) == 0 {
		return ""
	}
	return " AND " + strings.Join(conds, " AND ")
}

// hitColumns are the columns scanHit reads (the SQLite backend's).
const hitColumns = memtree.HitColumns

// scanHit reads hitColumns plus any extra destinations into a hit shaped as
// the SQLite backend shapes it (memtree.ScanHit).
func scanHit(row pgx.Row, extra ...any) (abi.ChunkHit, error) { return memtree.ScanHit(row, extra...) }

// candidate is a matched chunk with what scoring needs (the whole title: the
// hit's is clipped).
type candidate struct {
	hit         abi.ChunkHit
	title, text string
	score       float64
}

// candidateColumns are what candidates reads.
const candidateColumns = hitColumns + `, c.text, c.title`

// Match ranks the chunks matching m.Query by FTS5's BM25 (or lists them newest
// first, unranked).
func (r reader) Match(ctx context.Context, m index.Match) ([]index.Hit, error) {
	c, err := compile(m.Query)
	if err != nil {
		return nil, err
	}
	if c.tsquery == "" || m.Limit <= 0 {
		return nil, nil
	}
	if m.Unranked {
		var a args
		q := `SELECT ` + candidateColumns + ` FROM chunks c WHERE c.terms @@ ` + a.add(c.tsquery) + `::tsquery` + a.where(m.Filter) + a.scoped(r.scope, "c") +
			` ORDER BY c.ts DESC, c.id LIMIT ` + a.add(m.Limit+len(m.Skip))
		cs, err := r.candidates(ctx, q, a, m.Skip)
		if err != nil {
			return nil, err
		}
		return hitsOf(cs, m.Limit), nil
	}
	cs, err := r.ranked(ctx, c, m.Filter, m.Skip, m.Limit)
	if err != nil {
		return nil, err
	}
	return hitsOf(cs, m.Limit), nil
}

// ranked scores the chunks matching c under f (all of them, or, unrestricted
// and possibly matching more than maxRanked, the maxRanked newest) by FTS5's
// BM25 from the positions of the query's terms in their tsvectors (no text is
// read to score), and returns the best n not in skip, best first, with their
// hit columns and text.
func (r reader) ranked(ctx context.Context, c compiled, f index.Filter, skip map[string]bool, n int) ([]candidate, error) {
	var terms []string
	seen := map[string]bool{}
	for _, p := range c.scored {
		for _, t := range p {
			if !seen[t] {
				seen[t] = true
				terms = append(terms, t)
			}
		}
	}
	var a args
	inner := `SELECT c.key, c.id, c.ts, c.term_count, c.terms FROM chunks c WHERE c.terms @@ ` + a.add(c.tsquery) + `::tsquery` + a.where(f) + a.scoped(r.scope, "c")
	if !f.Restricts() && r.scope.Full() { // as the SQLite backend: a restricted query ranks every match
		est, err := r.estimate(ctx, c)
		if err != nil {
			return nil, err
		}
		if est > maxRanked {
			inner += ` ORDER BY c.ts DESC, c.id LIMIT ` + strconv.Itoa(maxRanked)
		}
	}
	rows, done, err := r.positions(ctx, inner, a, terms)
	if err != nil {
		return nil, err
	}
	type match struct {
		key   int64
		id    string
		ts    int64
		count int
		pos   map[string][]int16
		score float64
	}
	byKey := map[int64]*match{}
	for rows.Next() {
		var key, ts int64
		var id, lexeme string
		var count int32
		var pos []int16
		if err := rows.Scan(&key, &id, &ts, &count, &lexeme, &pos); err != nil {
			rows.Close()
			done()
			return nil, fmt.Errorf("full-text query: %w", err)
		}
		m := byKey[key]
		if m == nil {
			m = &match{key: key, id: id, ts: ts, count: int(count), pos: map[string][]int16{}}
			byKey[key] = m
		}
		m.pos[lexeme] = pos
	}
	rows.Close()
	done()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("full-text query: %w", err)
	}
	idfs := make([]float64, len(c.scored))
	for i, p := range c.scored {
		hits, err := r.phraseDF(ctx, p)
		if err != nil {
			return nil, err
		}
		idfs[i] = idf(r.snap.n, hits)
	}
	avgdl := r.snap.avgdl
	if avgdl <= 0 {
		avgdl = 1
	}
	ms := make([]*match, 0, len(byKey))
	for _, m := range byKey {
		if skip[m.id] {
			continue
		}
		m.score = bm25(float64(m.count), func(p []string) int { return phraseFreq(m.pos, p) }, c, idfs, avgdl)
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool {
		if ms[i].score != ms[j].score {
			return ms[i].score > ms[j].score
		}
		if ms[i].ts != ms[j].ts {
			return ms[i].ts > ms[j].ts
		}
		return ms[i].id < ms[j].id
	})
	if len(ms) > n {
		ms = ms[:n]
	}
	if len(ms) == 0 {
		return nil, nil
	}
	keys := make([]int64, len(ms))
	for i, m := range ms {
		keys[i] = m.key
	}
	rows, err = r.s.rd.Query(ctx, `SELECT `+candidateColumns+`, c.key FROM chunks c WHERE c.key = ANY($1)`, keys)
	if err != nil {
		return nil, fmt.Errorf("read ranked chunks: %w", err)
	}
	defer rows.Close()
	read := map[int64]candidate{}
	for rows.Next() {
		var cd candidate
		var key int64
		if cd.hit, err = scanHit(rows, &cd.text, &cd.title, &key); err != nil {
			return nil, fmt.Errorf("read ranked chunks: %w", err)
		}
		read[key] = cd
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read ranked chunks: %w", err)
	}
	out := make([]candidate, 0, len(ms))
	for _, m := range ms {
		if cd, ok := read[m.key]; ok { // a chunk removed meanwhile is left out
			cd.score = m.score
			out = append(out, cd)
		}
	}
	return out, nil
}

// phraseFreq counts the occurrences of phrase p (terms) given the positions of
// its terms in a chunk's tsvector: positions x of its first term where term j
// is at x+j (the title's positions follow the text's after a gap, so no phrase
// spans the two, as in FTS5).
func phraseFreq(pos map[string][]int16, p []string) int {
	if len(p) == 1 {
		return len(pos[p[0]])
	}
	n := 0
	for _, x := range pos[p[0]] {
		ok := true
		for j := 1; j < len(p) && ok; j++ {
			_, ok = slices.BinarySearch(pos[p[j]], x+int16(j))
		}
		if ok {
			n++
		}
	}
	return n
}

// phraseDF is the number of chunks saying phrase p (a word's from term_df).
func (r reader) phraseDF(ctx context.Context, p []string) (int, error) {
	if len(p) == 1 {
		return r.termDF(ctx, p[0])
	}
	key := strings.Join(p, " ")
	r.snap.mu.Lock()
	d, ok := r.snap.df[key]
	r.snap.mu.Unlock()
	if ok {
		return d, nil
	}
	c, _ := compile(index.Query{Op: index.All, Phrases: []index.Phrase{p}})
	if err := r.s.rd.QueryRow(ctx, `SELECT count(*) FROM chunks WHERE terms @@ $1::tsquery`, c.tsquery).Scan(&d); err != nil {
		return 0, fmt.Errorf("count the chunks saying %q: %w", key, err)
	}
	r.snap.mu.Lock()
	r.snap.df[key] = d
	r.snap.mu.Unlock()
	return d, nil
}

// estimate bounds c's matches from document frequencies: the sum of its scored
// phrases' (a phrase counts as its rarest word).
func (r reader) estimate(ctx context.Context, c compiled) (int, error) {
	sum := 0
	for _, p := range c.scored {
		pdf := -1
		for _, t := range p {
			df, err := r.termDF(ctx, t)
			if err != nil {
				return 0, err
			}
			if pdf < 0 || df < pdf {
				pdf = df
			}
		}
		sum += max(pdf, 0)
	}
	return sum, nil
}

// candidates runs q (candidateColumns) and keeps the rows not in skip.
func (r reader) candidates(ctx context.Context, q string, a args, skip map[string]bool) ([]candidate, error) {
	rows, err := r.s.rd.Query(ctx, q, a...)
	if err != nil {
		return nil, fmt.Errorf("full-text query: %w", err)
	}
	defer rows.Close()
	var out []candidate
	for rows.Next() {
		var c candidate
		c.hit, err = scanHit(rows, &c.text, &c.title)
		if err != nil {
			return nil, fmt.Errorf("full-text query: %w", err)
		}
		if skip[c.hit.ID] {
			continue
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("full-text query: %w", err)
	}
	return out, nil
}

// hitsOf is the first limit candidates as hits with their texts.
func hitsOf(cs []candidate, limit int) []index.Hit {
	var out []index.Hit
	for _, c := range cs {
		if len(out) == limit {
			break
		}
		h := index.Hit{ChunkHit: c.hit, Text: c.text}
		h.Score = c.score
		out = append(out, h)
	}
	return out
}

// Recent lists up to limit chunks under f newest first.
func (r reader) Recent(ctx context.Context, f index.Filter, limit int, skip map[string]bool) ([]index.Hit, error) {
	var a args
	q := `SELECT ` + candidateColumns + ` FROM chunks c WHERE true` + a.where(f) + a.scoped(r.scope, "c") + ` ORDER BY c.ts DESC, c.id LIMIT ` + a.add(limit+len(skip))
	cs, err := r.candidates(ctx, q, a, skip)
	if err != nil {
		return nil, fmt.Errorf("list recent chunks: %w", err)
	}
	return hitsOf(cs, limit), nil
}

// Postings reads, in one statement, the keys of up to perQuery chunks matching
// each query, tagged with the query's index.
func (r reader) Postings(ctx context.Context, qs []index.Query, perQuery int) ([]index.Posting, error) {
	var a args
	var parts []string
	for i, q := range qs {
		c, err := compile(q)
		if err != nil {
			return nil, err
		}
		if c.tsquery == "" {
			continue
		}
		ts := a.add(c.tsquery)
		parts = append(parts, fmt.Sprintf(`(SELECT %d, key FROM chunks c WHERE terms @@ %s::tsquery%s LIMIT %d)`, i, ts, a.scoped(r.scope, "c"), perQuery))
	}
	if len(parts) == 0 {
		return nil, nil
	}
	rows, err := r.s.rd.Query(ctx, strings.Join(parts, " UNION ALL "), a...)
	if err != nil {
		return nil, fmt.Errorf("read postings: %w", err)
	}
	defer rows.Close()
	var out []index.Posting
	for rows.Next() {
		var p index.Posting
		var q int32
		var k int64
		if err := rows.Scan(&q, &k); err != nil {
			return nil, fmt.Errorf("read postings: %w", err)
		}
		p.Query, p.Key = int(q), index.Key(k)
		out = append(out, p)
	}
	return out, rows.Err()
}

// Sample returns the texts of the n chunks matching q best.
func (r reader) Sample(ctx context.Context, q index.Query, n int) ([]string, error) {
	c, err := compile(q)
	if err != nil || c.tsquery == "" {
		return nil, err
	}
	cs, err := r.ranked(ctx, c, index.Filter{}, nil, n)
	if err != nil {
		return nil, err
	}
	var out []string
	for i := 0; i < len(cs) && i < n; i++ {
		out = append(out, cs[i].text)
	}
	return out, nil
}

// Texts reads chunks' titles, texts and message spans.
func (r reader) Texts(ctx context.Context, ids []string) (map[string]index.ChunkText, error) {
	a := args{ids}
	rows, err := r.s.rd.Query(ctx, `SELECT id, title, text, ref_spans_json FROM chunks c WHERE id = ANY($1)`+a.scoped(r.scope, "c"), a...)
	if err != nil {
		return nil, fmt.Errorf("read chunk texts: %w", err)
	}
	defer rows.Close()
	return memtree.ReadTexts(rows, "read chunk texts", len(ids))
}

// Hits reads the hits of keys.
func (r reader) Hits(ctx context.Context, keys []index.Key) (map[index.Key]index.Hit, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	ks := make([]int64, len(keys))
	for i, k := range keys {
		ks[i] = int64(k)
	}
	a := args{ks}
	rows, err := r.s.rd.Query(ctx, `SELECT `+hitColumns+`, c.key, c.text FROM chunks c WHERE c.key = ANY($1)`+a.scoped(r.scope, "c"), a...)
	if err != nil {
		return nil, fmt.Errorf("read chunks by key: %w", err)
	}
	defer rows.Close()
	return memtree.ReadKeyedHits(rows, "read chunks by key")
}

// Following returns the chunk that follows each chat hit in its source without
// a pause (memtree.ChatChunkGapMS), when it is not among the hits already.
func (r reader) Following(ctx context.Context, hits []abi.ChunkHit) ([]index.Hit, error) {
	ids, have := index.ChatHits(hits)
	if len(ids) == 0 {
		return nil, nil
	}
	a := args{ids, int64(memtree.ChatChunkGapMS)}
	rows, err := r.s.rd.Query(ctx, `SELECT `+hitColumns+`, c.text, p.id FROM chunks p
		JOIN chunks c ON c.source_key = p.source_key AND c.seq = p.seq + 1
		WHERE p.id = ANY($1) AND c.ts_start - p.ts_end <= $2`+a.scoped(r.scope, "c"), a...)
	if err != nil {
		return nil, fmt.Errorf("read the next chunks: %w", err)
	}
	defer rows.Close()
	after, err := memtree.ReadFollowing(rows)
	if err != nil {
		return nil, err
	}
	return index.InHitOrder(ids, after, have), nil
}
