package memtree

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/openhuman/openhuman-core/internal/analysis"
	"github.com/openhuman/openhuman-core/internal/lazyre"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// MaxK is the largest k (and page size) a read accepts.
const MaxK = abi.MaxK

// snippetChars bounds snippets built without FTS (analysis.SnippetChars).
const snippetChars = analysis.SnippetChars

func checkK(op string, k int) error { return abi.CheckK(op, k) }

// reWordsOnly matches a browse query made of letters, digits and spaces only.
var reWordsOnly = lazyre.New(`^[\p{L}\p{N} ]+$`)

// indexScanAbove is the match count above which ListChunks walks the time index.
const indexScanAbove = 2000

// Chunk reads chunk id whole, with its entity ids in order (index.Plain; the
// read API shapes it): nil when there is none, index.ErrEmpty when the store
// has no file yet.
func (s *Store) Chunk(ctx context.Context, id string) (*abi.Chunk, error) {
	db, err := s.plainReaders(ctx)
	if err != nil {
		return nil, err
	}
	var c abi.Chunk
	var ref sql.NullString
	var refs, tags, atts string
	var rowid int64
	sc, scArgs := andScope(index.ScopeFrom(ctx), "c") // out of scope: as absent as an unknown id
	err = db.QueryRowContext(ctx, `SELECT rowid, id, kind, source_id, source_ref, source_refs_json, title, ts, ts_start, ts_end,
		seq, token_count, text, tags_json, attachments_json FROM chunks c WHERE id=?`+sc, append([]any{id}, scArgs...)...).
		Scan(&rowid, &c.ID, &c.SourceKind, &c.SourceID, &ref, &refs, &c.Title, &c.TimestampMS, &c.TimeRangeStartMS, &c.TimeRangeEndMS,
			&c.Seq, &c.TokenCount, &c.Text, &tags, &atts)
	if err == sql.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	c.SourceRef = ref.String
	_ = json.Unmarshal([]byte(refs), &c.SourceRefs)
	_ = json.Unmarshal([]byte(tags), &c.Tags)
	_ = json.Unmarshal([]byte(atts), &c.Attachments)
	rows, err := db.QueryContext(ctx, `SELECT entity_id FROM chunk_entities WHERE chunk_rowid=? ORDER BY entity_id`, rowid)
	if err != nil {
		return nil, fmt.Errorf("entities: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var e string
		if err := rows.Scan(&e); err != nil {
			return nil, fmt.Errorf("entities: %w", err)
		}
		c.Entities = append(c.Entities, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("entities: %w", err)
	}
	return &c, nil
}

// likeEscape escapes LIKE wildcards with backslash.
func likeEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(s)
}

// substringScanBudget bounds how many chunks a bare substring query (no other filter)
// may scan before giving up on more matches.
const substringScanBudget = 20000

// Browse reads a tree.browse page (index.Plain): chunks with AND-combined filters, newest first (timestamp DESC,
// id). The `query` filter: with another filter it is a case-insensitive substring
// match (LIKE, with % and _ escaped) over the full text of that filter's rows; alone,
// a query of words only is a full-text phrase match (stemmed: "forecast" also finds
// "forecasts"), and any other query first finds candidates with the full-text index
// (every word must occur) and then checks the exact substring. With another filter,
// candidates are also prefiltered by the index (each word must begin a token; a
// substring that starts mid-word is not found). So no query scans the whole table,
// and `total` always counts what the page is drawn from.
func (s *Store) Browse(ctx context.Context, req abi.ChunksListRequest) (*index.BrowsePage, error) {
	return s.listChunks(ctx, req)
}

func (s *Store) listChunks(ctx context.Context, req abi.ChunksListRequest) (out *index.BrowsePage, _ error) {
	db, err := s.plainReaders(ctx)
	if err != nil {
		return nil, err
	}
	// Values people type (filters.go): aliases, names, conversations without month.
	kindCond, kindArgs, resolved, hints, err := s.browseFilters(ctx, db, &req)
	if err != nil {
		return nil, fmt.Errorf("list chunks: %w", err)
	}
	defer func() {
		if out != nil {
			out.Resolved, out.Hint = resolved, abi.WithHints(out.Hint, hints)
			out.Hits = nonNilHits(out.Hits)
		}
	}()
	var where []string
	var args []any
	entIn := ""
	in := func(col string, vals []string, lower bool) {
		var ph []string
		for _, v := range vals {
			v = strings.TrimSpace(v)
			if lower {
				v = strings.ToLower(v)
			}
			ph = append(ph, "?")
			args = append(args, v)
		}
		where = append(where, col+" IN ("+strings.Join(ph, ",")+")")
	}
	if kindCond != "" {
		where = append(where, kindCond)
		args = append(args, kindArgs...)
	}
	if len(req.SourceIDs) > 0 {
		in("c.source_id", req.SourceIDs, false)
	}
	var entArgs []any
	if len(req.EntityIDs) > 0 {
		var ph []string
		for _, e := range req.EntityIDs {
			ph = append(ph, "?")
			entArgs = append(entArgs, strings.ToLower(strings.TrimSpace(e)))
		}
		entIn = "entity_id IN (" + strings.Join(ph, ",") + ")"
		where = append(where, "c.rowid IN (SELECT chunk_rowid FROM chunk_entities WHERE "+entIn+")")
		args = append(args, entArgs...)
	}
	if req.SinceMS != nil {
		where = append(where, "c.ts >= ?")
		args = append(args, *req.SinceMS)
	}
	if req.UntilMS != nil {
		where = append(where, "c.ts <= ?")
		args = append(args, *req.UntilMS)
	}
	narrowed := len(where) > 0
	entityOnly := len(where) == 1 && entIn != ""
	q := strings.TrimSpace(req.Query)
	wordsOnly := q != "" && reWordsOnly.MatchString(q)
	ftsOnly := ""
	if q != "" && wordsOnly && !narrowed {
		// Words only, nothing else to narrow by: the full-text index answers it (a
		// phrase match, with stemming) without reading chunk text.
		ftsOnly = quoteFTS(strings.Join(words(q), " "))
		where = append(where, "c.rowid IN (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?)")
		args = append(args, ftsOnly)
		q = ""
	}
	if q != "" && narrowed {
		if ws := words(q); len(ws) > 0 {
			// Prefilter with the index: every word of the substring must start a
			// token (a substring beginning mid-word is not found).
			var parts []string
			for _, w := range ws {
				parts = append(parts, quoteFTS(w)+"*")
			}
			where = append(where, "c.rowid IN (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?)")
			args = append(args, strings.Join(parts, " AND "))
		}
	}
	if q != "" {
		if !narrowed {
			ws := words(q)
			if len(ws) == 0 {
				// Punctuation only: no index can help; scan a bounded window.
				where = append(where, "c.rowid IN (SELECT rowid FROM chunks ORDER BY ts DESC LIMIT ?)")
				args = append(args, substringScanBudget)
			} else {
				var parts []string
				for _, w := range ws {
					parts = append(parts, `"`+strings.ReplaceAll(w, `"`, `""`)+`"`)
				}
				// The porter tokenizer stems both sides, so this finds a superset.
				where = append(where, "c.rowid IN (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?)")
				args = append(args, strings.Join(parts, " AND "))
			}
		}
		where = append(where, `c.text LIKE ? ESCAPE '\'`)
		args = append(args, "%"+likeEscape(q)+"%")
	}
	scope := index.ScopeFrom(ctx)
	if c, a := scopeCond(scope, "c"); c != "" { // the principal's scope, in every form below
		where = append(where, c)
		args = append(args, a...)
	}
	cond := ""
	if len(where) > 0 {
		cond = " WHERE " + strings.Join(where, " AND ")
	}
	res := &index.BrowsePage{}
	if scope.Full() && q == "" && (entIn != "" || ftsOnly != "") && len(req.SourceKinds) == 0 && len(req.SourceIDs) == 0 {
		// Entity and/or word filters (and a time window): the matching rowids come
		// from the link or full-text index and are ordered by the cached chunk times.
		if err := s.listByIndex(ctx, db, req, entIn, entArgs, ftsOnly, res); err != nil {
			return nil, err
		}
		return res, nil
	}
	countSQL, countArgs := `SELECT count(*) FROM chunks c`+cond, args
	switch {
	case !scope.Full(): // the counts below read indexes the scope cannot restrict
	case entityOnly && q == "":
		// Index-only count from the links.
		countSQL, countArgs = `SELECT count(DISTINCT chunk_rowid) FROM chunk_entities WHERE `+entIn, entArgs
	case ftsOnly != "":
		countSQL, countArgs = `SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?`, []any{ftsOnly}
	}
	if err := db.QueryRowContext(ctx, countSQL, countArgs...).Scan(&res.Total); err != nil {
		return nil, fmt.Errorf("list chunks: count: %w", err)
	}
	if res.Total == 0 || req.Offset >= res.Total {
		if err := s.emptyHint(ctx, db, &res.Hint); err != nil {
			return nil, err
		}
		return res, nil
	}
	from := ` FROM chunks c`
	if res.Total > indexScanAbove {
		// Many matches: walk the time index and stop after the page, instead of
		// loading and sorting every match.
		from = ` FROM chunks c INDEXED BY chunks_ts`
	}
	rows, err := db.QueryContext(ctx, `SELECT `+hitColumns+`, c.text`+from+cond+` ORDER BY c.ts DESC, c.id LIMIT ? OFFSET ?`,
		append(args, req.K, req.Offset)...)
	if err != nil {
		return nil, fmt.Errorf("list chunks: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var h index.Hit
		if h.ChunkHit, err = ScanHit(rows, &h.Text); err != nil {
			return nil, fmt.Errorf("list chunks: %w", err)
		}
		res.Hits = append(res.Hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list chunks: %w", err)
	}
	return res, nil
}

// listByIndex answers ListChunks when the only filters are entity ids, a words-only
// query (a full-text phrase match) and a time window: it reads the matching rowids
// from the index (entity links and/or chunks_fts), filters and orders them by the
// chunk times cached for this store generation, and reads only the page's rows (plus
// rows tied on time at its edges, so the order is exactly timestamp DESC, id).
func (s *Store) listByIndex(ctx context.Context, db *sql.DB, req abi.ChunksListRequest, entIn string, entArgs []any, fts string, res *index.BrowsePage) error {
	gen, err := generation(ctx, db)
	if err != nil {
		return fmt.Errorf("list chunks: %w", err)
	}
	times, err := s.chunkTimes(ctx, db, gen)
	if err != nil {
		return fmt.Errorf("list chunks: %w", err)
	}
	readIDs := func(q string, args ...any) (map[int64]bool, error) {
		rows, err := db.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		out := map[int64]bool{}
		for rows.Next() {
			var rid int64
			if err := rows.Scan(&rid); err != nil {
				return nil, err
			}
			out[rid] = true
		}
		return out, rows.Err()
	}
	if entIn != "" && fts == "" && req.SinceMS == nil && req.UntilMS == nil {
		// Entities only: count from the aggregates or links, then either walk the time
		// index checking each chunk's links, stopping after the page (cheap when the
		// entities are frequent), or read the links and order them here (when rare).
		// One entity: its ref_count, which ingest keeps equal to its link count.
		countSQL := `SELECT coalesce((SELECT ref_count FROM entities WHERE id=?), 0)`
		if len(entArgs) > 1 {
			countSQL = `SELECT count(DISTINCT chunk_rowid) FROM chunk_entities WHERE ` + entIn
		}
		if err := db.QueryRowContext(ctx, countSQL, entArgs...).Scan(&res.Total); err != nil {
			return fmt.Errorf("list chunks: count: %w", err)
		}
		if res.Total == 0 || req.Offset >= res.Total {
			return s.emptyHint(ctx, db, &res.Hint)
		}
		walk := float64(req.Offset+req.K) * float64(len(times)) / float64(res.Total)
		if walk < 4*float64(res.Total) {
			return s.listPage(ctx, db, res, `SELECT `+hitColumns+`, c.text FROM chunks c INDEXED BY chunks_ts
				WHERE EXISTS (SELECT 1 FROM chunk_entities WHERE `+entIn+` AND chunk_rowid=c.rowid)
				ORDER BY c.ts DESC, c.id LIMIT ? OFFSET ?`, append(append([]any(nil), entArgs...), req.K, req.Offset)...)
		}
	}
	var set map[int64]bool
	if entIn != "" {
		if set, err = readIDs(`SELECT chunk_rowid FROM chunk_entities WHERE `+entIn, entArgs...); err != nil {
			return fmt.Errorf("list chunks: entity links: %w", err)
		}
	}
	if fts != "" && (set == nil || len(set) > 0) {
		m, err := readIDs(`SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?`, fts)
		if err != nil {
			return fmt.Errorf("list chunks: full-text match: %w", err)
		}
		if set == nil {
			set = m
		} else {
			for rid := range set {
				if !m[rid] {
					delete(set, rid)
				}
			}
		}
	}
	type cand struct{ rid, ts int64 }
	cands := make([]cand, 0, len(set))
	for rid := range set {
		if rid < 0 || rid >= int64(len(times)) || times[rid] == tsMissing {
			continue // written after this generation's times were read
		}
		t := times[rid]
		if (req.SinceMS != nil && t < *req.SinceMS) || (req.UntilMS != nil && t > *req.UntilMS) {
			continue
		}
		cands = append(cands, cand{rid, t})
	}
	res.Total = len(cands)
	if res.Total == 0 || req.Offset >= res.Total {
		return s.emptyHint(ctx, db, &res.Hint)
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].ts > cands[j].ts })
	end := min(req.Offset+req.K, len(cands))
	hiTS, loTS := cands[req.Offset].ts, cands[end-1].ts
	// Every candidate with a time in [loTS, hiTS]: the page and its ties; skip those
	// newer than hiTS, which come before the page in any order.
	var ids []int64
	before := 0
	for _, c := range cands {
		switch {
		case c.ts > hiTS:
			before++
		case c.ts >= loTS:
			ids = append(ids, c.rid)
		}
	}
	idsJSON, err := json.Marshal(ids)
	if err != nil {
		return fmt.Errorf("list chunks: %w", err)
	}
	return s.listPage(ctx, db, res, `SELECT `+hitColumns+`, c.text FROM chunks c
		WHERE c.rowid IN (SELECT value FROM json_each(?)) ORDER BY c.ts DESC, c.id LIMIT ? OFFSET ?`,
		string(idsJSON), end-req.Offset, req.Offset-before)
}

// listPage reads one browse page (hit columns and text) into res.Hits.
func (s *Store) listPage(ctx context.Context, db *sql.DB, res *index.BrowsePage, q string, args ...any) error {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("list chunks: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var h index.Hit
		if h.ChunkHit, err = ScanHit(rows, &h.Text); err != nil {
			return fmt.Errorf("list chunks: %w", err)
		}
		res.Hits = append(res.Hits, h)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("list chunks: %w", err)
	}
	return nil
}

// nonNilHits is hs, or an empty list for none.
func nonNilHits(hs []index.Hit) []index.Hit {
	if hs == nil {
		return []index.Hit{}
	}
	return hs
}

// emptyHint sets hint to EmptyHint when the store holds no chunk.
func (s *Store) emptyHint(ctx context.Context, db *sql.DB, hint *string) error {
	var one int
	err := db.QueryRowContext(ctx, `SELECT 1 FROM chunks LIMIT 1`).Scan(&one)
	if err == sql.ErrNoRows {
		*hint = EmptyHint
		return nil
	}
	if err != nil {
		return fmt.Errorf("check for an empty store: %w", err)
	}
	return nil
}

// Entities lists up to k entities of kind ("": any) from offset, by reference
// count, then most recently seen, then id, with the count of that kind
// (index.Plain; the read API shapes them); index.ErrEmpty when the store has no
// file yet.
func (s *Store) Entities(ctx context.Context, kind string, k, offset int) ([]abi.Entity, int, error) {
	db, err := s.plainReaders(ctx)
	if err != nil {
		return nil, 0, err
	}
	if scope := index.ScopeFrom(ctx); !scope.Full() {
		return s.scopedEntities(ctx, db, scope, kind, abi.EntitiesTopRequest{K: k, Offset: offset}) // scope.go
	}
	total, err := s.entityTotal(ctx, db, kind)
	if err != nil {
		return nil, 0, err
	}
	// An address book's contacts are listed as one person each, under the
	// contact's name, standing for their stored names, addresses and handles.
	contacts, err := s.contactEntities(ctx, db, kind)
	if err != nil {
		return nil, 0, fmt.Errorf("contacts: %w", err)
	}
	var out []abi.Entity
	if contacts == nil {
		out, err = listEntities(ctx, db, kind, nil, offset, k)
	} else {
		merged := make([]string, 0, len(contacts.merged))
		for id := range contacts.merged {
			merged = append(merged, id)
		}
		stored := total - len(merged)
		total = stored + len(contacts.rows)
		out, err = mergeContactPage(contacts, offset, k, stored, func(from, n int) ([]abi.Entity, error) {
			return listEntities(ctx, db, kind, merged, from, n)
		})
	}
	if err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// listEntities reads the rows [offset, offset+k) of the entity listing of kind
// ("" for all), leaving out the ids in except.
func listEntities(ctx context.Context, db *sql.DB, kind string, except []string, offset, k int) ([]abi.Entity, error) {
	where, args := "", []any{}
	if kind != "" {
		where, args = "WHERE kind=?", append(args, kind)
	}
	if len(except) > 0 {
		b, err := json.Marshal(except)
		if err != nil {
			return nil, err
		}
		if where == "" {
			where = "WHERE "
		} else {
			where += " AND "
		}
		where += "id NOT IN (SELECT value FROM json_each(?))"
		args = append(args, string(b))
	}
	rows, err := db.QueryContext(ctx, `SELECT id, kind, surface, ref_count, last_seen FROM entities `+where+`
		ORDER BY ref_count DESC, last_seen DESC, id LIMIT ? OFFSET ?`, append(args, k, offset)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []abi.Entity
	for rows.Next() {
		var e abi.Entity
		if err := rows.Scan(&e.EntityID, &e.Kind, &e.Surface, &e.Count, &e.LastSeenMS); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// HoldsChunks reports whether the store holds any chunk (index.Plain).
func (s *Store) HoldsChunks(ctx context.Context) (bool, error) {
	db, err := s.readers(ctx)
	if err != nil || db == nil {
		return false, err
	}
	var one int
	err = db.QueryRowContext(ctx, `SELECT 1 FROM chunks LIMIT 1`).Scan(&one)
	if err == sql.ErrNoRows {
		return false, nil
	}
	return err == nil, err
}

// sortHits orders hits by score descending, then timestamp descending, then id.
