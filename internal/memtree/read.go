package memtree

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/openhuman/openhuman-core/internal/analysis"
	"github.com/openhuman/openhuman-core/internal/fit"
	"github.com/openhuman/openhuman-core/internal/lazyre"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// MaxK is the largest k (and page size) a read accepts.
const MaxK = abi.MaxK

// snippetChars bounds snippets built without FTS (analysis.SnippetChars).
const snippetChars = analysis.SnippetChars

func checkK(op string, k int) error { return abi.CheckK(op, k) }

// hitColumns are the chunk columns scanHit reads, in order.
const hitColumns = `c.id, c.kind, c.source_id, c.source_ref, c.source_refs_json, c.title, c.ts, c.seq, c.tags_json`

type rowScanner interface{ Scan(dest ...any) error }

// scanHit reads hitColumns plus any extra destinations.
func scanHit(r rowScanner, extra ...any) (abi.ChunkHit, error) {
	var h abi.ChunkHit
	var ref sql.NullString
	var refs, tags string
	dest := append([]any{&h.ID, &h.SourceKind, &h.SourceID, &ref, &refs, &h.Title, &h.TimestampMS, &h.Seq, &tags}, extra...)
	if err := r.Scan(dest...); err != nil {
		return h, err
	}
	h.SourceRef = ref.String
	h.Title = clipRunes(h.Title, hitTitleMaxChars)
	_ = json.Unmarshal([]byte(refs), &h.SourceRefs)
	_ = json.Unmarshal([]byte(tags), &h.Tags)
	if len(h.SourceRefs) == 0 {
		h.SourceRefs = nil
	}
	if len(h.Tags) == 0 {
		h.Tags = nil
	}
	return h, nil
}

// plainSnippet is analysis.PlainSnippet.
func plainSnippet(text string, terms []string) string { return analysis.PlainSnippet(text, terms) }

var reChunkID = lazyre.New(`^[0-9a-f]{32}$`)

// reWordsOnly matches a browse query made of letters, digits and spaces only.
var reWordsOnly = lazyre.New(`^[\p{L}\p{N} ]+$`)

// indexScanAbove is the match count above which ListChunks walks the time index.
const indexScanAbove = 2000

// GetChunk returns one chunk with its full text, entities and attachments.
func (s *Store) GetChunk(ctx context.Context, req abi.ChunkGetRequest) (*abi.ChunkResult, error) {
	id := strings.ToLower(strings.TrimSpace(req.ID))
	if !reChunkID.MatchString(id) {
		return nil, fmt.Errorf("get chunk: id %q is not a chunk id (32 hex characters, as returned in `id` by search, recall or browse): %w", req.ID, ErrInvalid)
	}
	db, err := s.readers(ctx)
	if err != nil {
		return nil, err
	}
	if db == nil {
		return nil, fmt.Errorf("get chunk %s: the memory tree is empty (ingest with: openhuman-core ingest PATH...): %w", id, ErrNotFound)
	}
	var c abi.Chunk
	var ref sql.NullString
	var refs, tags, atts string
	var rowid int64
	err = db.QueryRowContext(ctx, `SELECT rowid, id, kind, source_id, source_ref, source_refs_json, title, ts, ts_start, ts_end,
		seq, token_count, text, tags_json, attachments_json FROM chunks WHERE id=?`, id).
		Scan(&rowid, &c.ID, &c.SourceKind, &c.SourceID, &ref, &refs, &c.Title, &c.TimestampMS, &c.TimeRangeStartMS, &c.TimeRangeEndMS,
			&c.Seq, &c.TokenCount, &c.Text, &tags, &atts)
	if err == sql.ErrNoRows {
		return nil, fmt.Errorf("get chunk %s: no such chunk; chunk ids come from memory.search, memory.recall or tree.browse results of this store (a re-ingest of a changed source replaces its ids): %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get chunk %s: %w", id, err)
	}
	c.SourceRef = ref.String
	_ = json.Unmarshal([]byte(refs), &c.SourceRefs)
	_ = json.Unmarshal([]byte(tags), &c.Tags)
	_ = json.Unmarshal([]byte(atts), &c.Attachments)
	rows, err := db.QueryContext(ctx, `SELECT entity_id FROM chunk_entities WHERE chunk_rowid=? ORDER BY entity_id`, rowid)
	if err != nil {
		return nil, fmt.Errorf("get chunk %s: entities: %w", id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var e string
		if err := rows.Scan(&e); err != nil {
			return nil, fmt.Errorf("get chunk %s: entities: %w", id, err)
		}
		c.Entities = append(c.Entities, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("get chunk %s: entities: %w", id, err)
	}
	if len(c.SourceRefs) == 0 {
		c.SourceRefs = nil
	}
	if len(c.Tags) == 0 {
		c.Tags = nil
	}
	if len(c.Attachments) > maxChunkAttachments {
		c.Attachments = c.Attachments[:maxChunkAttachments]
	}
	for i := range c.Attachments {
		c.Attachments[i].Name = clipRunes(c.Attachments[i].Name, 255)
		c.Attachments[i].ContentType = clipRunes(c.Attachments[i].ContentType, 100)
	}
	if len(c.Attachments) == 0 {
		c.Attachments = nil
	}
	c.Title = clipRunes(c.Title, hitTitleMaxChars)
	fitChunk(&c)
	return &abi.ChunkResult{Chunk: c}, nil
}

// fitChunk keeps a chunk's JSON under abi.MaxResultBytes: its text is at most a
// chunk's size, so only its lists can outgrow it (a message with thousands of
// attachments, ids of pathological length); they are cut from the end —
// attachments, then entities, then source_refs (source_ref stays).
func fitChunk(c *abi.Chunk) {
	size := fit.ResultBase + fit.StrLen(c.ID) + fit.StrLen(c.SourceKind) + fit.StrLen(c.SourceID) + fit.StrLen(c.SourceRef) +
		fit.StrLen(c.Title) + fit.StrLen(c.Text) + fit.StrsLen(c.SourceRefs) + fit.StrsLen(c.Tags) + fit.StrsLen(c.Entities)
	for _, a := range c.Attachments {
		size += 64 + fit.StrLen(a.Name) + fit.StrLen(a.ContentType)
	}
	for size > abi.MaxResultBytes && len(c.Attachments) > 0 {
		a := c.Attachments[len(c.Attachments)-1]
		size -= 64 + fit.StrLen(a.Name) + fit.StrLen(a.ContentType)
		c.Attachments = c.Attachments[:len(c.Attachments)-1]
	}
	for size > abi.MaxResultBytes && len(c.Entities) > 0 {
		size -= fit.StrLen(c.Entities[len(c.Entities)-1]) + 1
		c.Entities = c.Entities[:len(c.Entities)-1]
	}
	for size > abi.MaxResultBytes && len(c.SourceRefs) > 1 {
		size -= fit.StrLen(c.SourceRefs[len(c.SourceRefs)-1]) + 1
		c.SourceRefs = c.SourceRefs[:len(c.SourceRefs)-1]
	}
	if len(c.Attachments) == 0 {
		c.Attachments = nil
	}
}

// maxChunkAttachments bounds the attachments GetChunk lists (the first ones noted).
const maxChunkAttachments = 100

// likeEscape escapes LIKE wildcards with backslash.
func likeEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(s)
}

// substringScanBudget bounds how many chunks a bare substring query (no other filter)
// may scan before giving up on more matches.
const substringScanBudget = 20000

// ListChunks browses chunks with AND-combined filters, newest first (timestamp DESC,
// id). The `query` filter: with another filter it is a case-insensitive substring
// match (LIKE, with % and _ escaped) over the full text of that filter's rows; alone,
// a query of words only is a full-text phrase match (stemmed: "forecast" also finds
// "forecasts"), and any other query first finds candidates with the full-text index
// (every word must occur) and then checks the exact substring. With another filter,
// candidates are also prefiltered by the index (each word must begin a token; a
// substring that starts mid-word is not found). So no query scans the whole table,
// and `total` always counts what the page is drawn from.
func (s *Store) ListChunks(ctx context.Context, req abi.ChunksListRequest) (*abi.ListResult, error) {
	res, err := s.listChunks(ctx, req)
	if err != nil {
		return nil, err
	}
	n := fit.Count(res.Chunks, fit.ResultBase+fit.StrLen(res.Hint), fit.HitSize)
	had := len(res.Chunks)
	res.Chunks = res.Chunks[:n]
	res.Next = fit.NextOffset(req.Offset, n, had, res.Total)
	return res, nil
}

// checkFilter refuses an array filter with more than abi.MaxFilterItems values or a
// value longer than maxChars characters.
func checkFilter(op, name string, vals []string, maxChars int) error {
	if len(vals) > abi.MaxFilterItems {
		return fmt.Errorf("%s: %s has %d values, at most %d are allowed; narrow the listing in several calls: %w", op, name, len(vals), abi.MaxFilterItems, ErrInvalid)
	}
	for _, v := range vals {
		if n := utf8.RuneCountInString(v); n > maxChars {
			return fmt.Errorf("%s: a value of %s has %d characters, at most %d are allowed: %w", op, name, n, maxChars, ErrInvalid)
		}
	}
	return nil
}

func (s *Store) listChunks(ctx context.Context, req abi.ChunksListRequest) (out *abi.ListResult, _ error) {
	if err := checkK("list chunks", req.K); err != nil {
		return nil, err
	}
	if req.Offset < 0 || req.Offset > abi.MaxOffset {
		return nil, fmt.Errorf("list chunks: offset must be 0..%d, got %d: %w", abi.MaxOffset, req.Offset, ErrInvalid)
	}
	if err := checkFilter("list chunks", "source_kinds", req.SourceKinds, abi.MaxKindChars); err != nil {
		return nil, err
	}
	if err := checkFilter("list chunks", "source_ids", req.SourceIDs, abi.MaxIDChars); err != nil {
		return nil, err
	}
	if err := checkFilter("list chunks", "entity_ids", req.EntityIDs, abi.MaxIDChars); err != nil {
		return nil, err
	}
	if n := utf8.RuneCountInString(req.Query); n > abi.MaxQueryChars {
		return nil, fmt.Errorf("list chunks: query has %d characters, at most %d are allowed: %w", n, abi.MaxQueryChars, ErrInvalid)
	}
	if req.SinceMS != nil && req.UntilMS != nil && *req.SinceMS > *req.UntilMS {
		return nil, fmt.Errorf("list chunks: since_ms %d is after until_ms %d: %w", *req.SinceMS, *req.UntilMS, ErrInvalid)
	}
	db, err := s.readers(ctx)
	if err != nil {
		return nil, err
	}
	if db == nil {
		return &abi.ListResult{Chunks: []abi.ChunkHit{}, Hint: EmptyHint}, nil
	}
	// Values people type (filters.go): aliases, names, conversations without month.
	kindCond, kindArgs, resolved, hints, err := s.browseFilters(ctx, db, &req)
	if err != nil {
		return nil, fmt.Errorf("list chunks: %w", err)
	}
	defer func() {
		if out != nil {
			out.Resolved, out.Hint = resolved, withHints(out.Hint, hints)
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
	cond := ""
	if len(where) > 0 {
		cond = " WHERE " + strings.Join(where, " AND ")
	}
	res := &abi.ListResult{Chunks: []abi.ChunkHit{}}
	if q == "" && (entIn != "" || ftsOnly != "") && len(req.SourceKinds) == 0 && len(req.SourceIDs) == 0 {
		// Entity and/or word filters (and a time window): the matching rowids come
		// from the link or full-text index and are ordered by the cached chunk times.
		if err := s.listByIndex(ctx, db, req, entIn, entArgs, ftsOnly, res); err != nil {
			return nil, err
		}
		return res, nil
	}
	countSQL, countArgs := `SELECT count(*) FROM chunks c`+cond, args
	switch {
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
	qterms := []string{}
	if q != "" {
		qterms = append(qterms, strings.ToLower(q))
	}
	for rows.Next() {
		var text string
		h, err := scanHit(rows, &text)
		if err != nil {
			return nil, fmt.Errorf("list chunks: %w", err)
		}
		h.Snippet = plainSnippet(text, qterms)
		res.Chunks = append(res.Chunks, h)
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
func (s *Store) listByIndex(ctx context.Context, db *sql.DB, req abi.ChunksListRequest, entIn string, entArgs []any, fts string, res *abi.ListResult) error {
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

// listPage reads one ListChunks page (hit columns and text) into res.Chunks.
func (s *Store) listPage(ctx context.Context, db *sql.DB, res *abi.ListResult, q string, args ...any) error {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("list chunks: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var text string
		h, err := scanHit(rows, &text)
		if err != nil {
			return fmt.Errorf("list chunks: %w", err)
		}
		h.Snippet = plainSnippet(text, []string{})
		res.Chunks = append(res.Chunks, h)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("list chunks: %w", err)
	}
	return nil
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

// TopEntities lists the most referenced entities (optionally of one kind), by
// reference count, then most recently seen.
func (s *Store) TopEntities(ctx context.Context, req abi.EntitiesTopRequest) (*abi.EntitiesResult, error) {
	if err := checkK("top entities", req.K); err != nil {
		return nil, err
	}
	if req.Offset < 0 || req.Offset > abi.MaxOffset {
		return nil, fmt.Errorf("top entities: offset must be 0..%d, got %d: %w", abi.MaxOffset, req.Offset, ErrInvalid)
	}
	if n := utf8.RuneCountInString(req.Kind); n > abi.MaxKindChars {
		return nil, fmt.Errorf("top entities: kind has %d characters, at most %d are allowed: %w", n, abi.MaxKindChars, ErrInvalid)
	}
	db, err := s.readers(ctx)
	if err != nil {
		return nil, err
	}
	res := &abi.EntitiesResult{Entities: []abi.Entity{}}
	if db == nil {
		res.Hint = EmptyHint
		return res, nil
	}
	kind, resolved, kindHint := resolveEntityKind(req.Kind) // filters.go
	res.Resolved = resolved
	if kindHint != "" {
		res.Hint = withHints("", []string{kindHint})
	}
	if res.Total, err = s.entityTotal(ctx, db, kind); err != nil {
		return nil, fmt.Errorf("top entities: %w", err)
	}
	// An address book's contacts are listed as one person each, under the
	// contact's name, standing for their stored names, addresses and handles.
	contacts, err := s.contactEntities(ctx, db, kind)
	if err != nil {
		return nil, fmt.Errorf("top entities: contacts: %w", err)
	}
	if contacts == nil {
		res.Entities, err = listEntities(ctx, db, kind, nil, req.Offset, req.K)
	} else {
		merged := make([]string, 0, len(contacts.merged))
		for id := range contacts.merged {
			merged = append(merged, id)
		}
		stored := res.Total - len(merged)
		res.Total = stored + len(contacts.rows)
		res.Entities, err = mergeContactPage(contacts, req.Offset, req.K, stored, func(from, n int) ([]abi.Entity, error) {
			return listEntities(ctx, db, kind, merged, from, n)
		})
	}
	if err != nil {
		return nil, fmt.Errorf("top entities: %w", err)
	}
	for i := range res.Entities {
		res.Entities[i].Surface = clipRunes(res.Entities[i].Surface, hitTitleMaxChars)
	}
	if res.Entities == nil {
		res.Entities = []abi.Entity{}
	}
	n := fit.Count(res.Entities, fit.ResultBase+fit.StrLen(res.Hint), func(e *abi.Entity) int {
		return 128 + fit.StrLen(e.EntityID) + fit.StrLen(e.Kind) + fit.StrLen(e.Surface)
	})
	had := len(res.Entities)
	res.Entities = res.Entities[:n]
	res.Next = fit.NextOffset(req.Offset, n, had, res.Total)
	if res.Total == 0 && kindHint == "" {
		if err := s.emptyHint(ctx, db, &res.Hint); err != nil {
			return nil, err
		}
	}
	return res, nil
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

// DisplayName applies reference-behaviour §2.6 to a source id: drop everything up to
// the first ':'; a '|'-joined participant list drops the parts equal to the user's
// address hint (joined with ", " when something was removed and something remains),
// else is joined with " ↔ ". A non-empty title names threads and documents better
// than their id, so it wins for those (not for participant lists or chat channels).
func DisplayName(kind, sourceID, title, userEmailHint string) string {
	rest := sourceID
	if i := strings.IndexByte(rest, ':'); i >= 0 {
		rest = rest[i+1:]
	}
	if strings.Contains(rest, "|") {
		parts := strings.Split(rest, "|")
		hint := strings.TrimSpace(userEmailHint)
		if hint != "" {
			var kept []string
			for _, p := range parts {
				if !strings.EqualFold(strings.TrimSpace(p), hint) {
					kept = append(kept, p)
				}
			}
			if len(kept) < len(parts) && len(kept) > 0 {
				return strings.Join(kept, ", ")
			}
		}
		return strings.Join(parts, " ↔ ")
	}
	if t := strings.TrimSpace(title); t != "" && kind != KindChat {
		return t
	}
	return rest
}

// sortHits orders hits by score descending, then timestamp descending, then id.
