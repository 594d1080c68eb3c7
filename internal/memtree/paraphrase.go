package memtree

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/openhuman/openhuman-core/internal/lexicon"
	"github.com/openhuman/openhuman-core/internal/pivot"
)

// metaParaphraseSource is the meta key naming the dictionaries the paraphrase
// table was built from.
const metaParaphraseSource = "paraphrase_source"

// SetParaphrases replaces the store's paraphrase table (internal/pivot's bilingual
// pivot paraphrases) in one transaction and records source, the description of the
// dictionaries it came from (see ParaphraseSource). An empty table with an empty
// source removes it. Recall's offline expansion uses the table beside WordNet.
func (s *Store) SetParaphrases(ctx context.Context, source string, entries []pivot.Entry) error {
	if s.readOnly || s.w == nil {
		return fmt.Errorf("set paraphrases: %w", ErrReadOnly)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("set paraphrases: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM paraphrases`); err != nil {
		return fmt.Errorf("set paraphrases: clear: %w", err)
	}
	if err := insertParaphrases(ctx, tx, entries); err != nil {
		return fmt.Errorf("set paraphrases: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM meta WHERE key = ?`, metaParaphraseFile); err != nil {
		return fmt.Errorf("set paraphrases: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES(?, ?)
		ON CONFLICT(key) DO UPDATE SET value = excluded.value`, metaParaphraseSource, source); err != nil {
		return fmt.Errorf("set paraphrases: record source: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("set paraphrases: %w", err)
	}
	return nil
}

// ParaphraseSource returns the source recorded by the last SetParaphrases ("" when
// the store has no paraphrase table).
func (s *Store) ParaphraseSource(ctx context.Context) (string, error) {
	db := s.w
	if db == nil {
		var err error
		if db, err = s.readers(ctx); err != nil || db == nil {
			return "", err
		}
	}
	var v string
	err := db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, metaParaphraseSource).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("paraphrase source: %w", err)
	}
	return v, nil
}

// insertParaphrases adds entries to the paraphrases table of tx's database.
func insertParaphrases(ctx context.Context, tx *sql.Tx, entries []pivot.Entry) error {
	ins, err := tx.PrepareContext(ctx, `INSERT INTO paraphrases(word, terms) VALUES(?, ?)`)
	if err != nil {
		return err
	}
	defer ins.Close()
	var b strings.Builder
	for _, e := range entries {
		b.Reset()
		for i, p := range e.Paraphrases {
			if strings.ContainsAny(p.Term, "\t\n") || p.Term == "" {
				return fmt.Errorf("%q: bad term %q", e.Word, p.Term)
			}
			if i > 0 {
				b.WriteByte('\t')
			}
			b.WriteString(p.Term)
			b.WriteByte('\t')
			b.WriteString(strconv.FormatFloat(p.Weight, 'g', 3, 64))
		}
		if _, err := ins.ExecContext(ctx, e.Word, b.String()); err != nil {
			return fmt.Errorf("%q: %w", e.Word, err)
		}
	}
	return nil
}

// expand returns exp's expansions of word followed by the word's stored
// paraphrases that exp did not give.
func (s *Store) expand(ctx context.Context, db *sql.DB, exp Expander, word string) ([]Related, error) {
	tdb, err := paraphraseTable(ctx, db)
	if err != nil {
		return nil, err
	}
	return expandWith(ctx, tdb, exp, word)
}

// ExpandWithParaphraseFile is recall's expansion of word for a backend that keeps
// no paraphrase table of its own (PostgreSQL): the WordNet expander's terms, then
// the paraphrases of the machine-wide file at path (see WriteParaphraseFile) the
// expander did not give. path "" or a file that is gone: WordNet alone.
func ExpandWithParaphraseFile(ctx context.Context, path, word string) ([]Related, error) {
	var tdb *sql.DB
	if path != "" {
		var err error
		if tdb, err = paraphraseFileDB(path); err != nil {
			return nil, err
		}
	}
	return expandWith(ctx, tdb, lexiconExpander, word)
}

// expandWith is exp's terms for word, then the paraphrases of tdb's table (nil:
// none) exp did not give.
func expandWith(ctx context.Context, tdb *sql.DB, exp Expander, word string) ([]Related, error) {
	rs := slices.Clip(exp.Expand(word)) // appending must not write into the expander's array
	if tdb == nil {
		return rs, nil
	}
	ps, err := paraphrasesIn(ctx, tdb, word)
	if err != nil || len(ps) == 0 {
		return rs, err
	}
	seen := make(map[string]bool, len(rs))
	for _, r := range rs {
		seen[r.Term] = true
	}
	for _, p := range ps {
		if !seen[p.Term] {
			seen[p.Term] = true
			rs = append(rs, p)
		}
	}
	return rs, nil
}

// paraphrasesIn looks up word ("a_b" for a compound) and its WordNet base forms in
// the paraphrases table of db; terms come back in the expander's form
// ("blood_test").
func paraphrasesIn(ctx context.Context, db *sql.DB, word string) ([]Related, error) {
	// The word and its bases ("cars" → "car"; Base lists a lemma itself first),
	// each once, read in one statement.
	var keys []string
	var args []any
	for _, k := range append([]string{word}, lexicon.Base(word)...) {
		if k = strings.ReplaceAll(k, "_", " "); !slices.Contains(keys, k) {
			keys = append(keys, k)
			args = append(args, k)
		}
	}
	ph := strings.TrimSuffix(strings.Repeat("?,", len(keys)), ",")
	rows, err := db.QueryContext(ctx, `SELECT word, terms FROM paraphrases WHERE word IN (`+ph+`)`, args...)
	if err != nil {
		if strings.Contains(err.Error(), "no such table") {
			return nil, nil // a store written before schema version 3
		}
		return nil, fmt.Errorf("paraphrases of %q: %w", word, err)
	}
	defer rows.Close()
	stored := map[string]string{}
	for rows.Next() {
		var k, terms string
		if err := rows.Scan(&k, &terms); err != nil {
			return nil, fmt.Errorf("paraphrases of %q: %w", word, err)
		}
		stored[k] = terms
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("paraphrases of %q: %w", word, err)
	}
	var out []Related
	seen := map[string]bool{}
	for _, key := range keys {
		terms, ok := stored[key]
		if !ok {
			continue
		}
		fields := strings.Split(terms, "\t")
		if len(fields)%2 != 0 {
			return nil, fmt.Errorf("paraphrases of %q: stored terms %q are not term/weight pairs", key, terms)
		}
		for i := 0; i < len(fields); i += 2 {
			w, err := strconv.ParseFloat(fields[i+1], 32)
			if err != nil {
				return nil, fmt.Errorf("paraphrases of %q: weight of %q: %w", key, fields[i], err)
			}
			t := strings.ReplaceAll(fields[i], " ", "_")
			if !seen[t] && w > 0 {
				seen[t] = true
				out = append(out, Related{Term: t, Weight: float32(min(w, 1))})
			}
		}
	}
	return out, nil
}
