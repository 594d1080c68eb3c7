package memtree

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
)

// schemaVersion is the version migrate brings a store to.
const schemaVersion = 6

// migration moves a store from version N-1 to N (its index + 1) inside one transaction.
type migration func(ctx context.Context, tx *sql.Tx) error

// migrations[i] brings a store from version i to i+1. Append only; never edit a
// released entry.
var migrations = []migration{
	execAll(schemaV1...),
	// Version 2: ingest indexes a batch's new chunks and summaries in FTS5 with one
	// statement before the batch commits (see pendingFTS), instead of an insert
	// trigger per row: with a trigger every insert used a statement journal and
	// FTS5 flushed a new segment per chunk. A binary that still expects the
	// triggers refuses a version-2 store instead of writing unindexed chunks.
	execAll(`DROP TRIGGER IF EXISTS chunks_ai`, `DROP TRIGGER IF EXISTS summaries_ai`),
	// Version 3: English paraphrases pivoted through translating dictionaries
	// (internal/pivot), which recall's expansion uses beside WordNet. terms holds
	// tab-separated term, weight pairs ("cert\t1\tattestation\t0.395").
	execAll(`CREATE TABLE paraphrases(word TEXT PRIMARY KEY, terms TEXT NOT NULL) WITHOUT ROWID`),
	// Version 4: the messages of sources ingested with SourceInput.Merge (chat
	// exports), one row each, so that a later export of the same source can be
	// merged with them: chunk rows cannot give the messages back (a chat chunk keeps
	// "author (YYYY-MM-DD HH:MM): text" and loses the seconds, the author's address
	// and each message's attachments). ref is the message's Ref (a message without
	// one gets a key made of its content's hash and its occurrence, see mergeKeys);
	// hash is 63 bits of the SHA-256 of msg_json, which the writer compares to tell
	// an unchanged message without reading it; msg_json is the whole MessageInput.
	// Only Merge sources have rows here; deleting a source deletes them (cascade).
	execAll(`CREATE TABLE source_messages(
		source_rowid INTEGER NOT NULL REFERENCES sources(rowid) ON DELETE CASCADE,
		ref TEXT NOT NULL,
		ts INTEGER NOT NULL,
		hash INTEGER NOT NULL,
		msg_json TEXT NOT NULL,
		PRIMARY KEY(source_rowid, ref)) WITHOUT ROWID`),
	// Version 5: the sources tree.list_sources lists (those with chunks), newest
	// first, with their kind: pages and per-kind totals are read from this index
	// alone (at 68k sources, counting through the table took 100+ ms a generation).
	execAll(`CREATE INDEX IF NOT EXISTS sources_listed ON sources(last_ms DESC, source_id, kind, chunk_count) WHERE chunk_count > 0`),
	// Version 6: contacts (vCard, Google Contacts) as people: each of a contact's
	// names, nicknames, addresses, handles and phone numbers, as the entity id it
	// would have (alias: "person:micah", "email:micah@example.com",
	// "phone:15551234567"), names the contact's person entity (person: "person:micah
	// stubbs"), so that entity_ids resolve any of them to all of them (see
	// contacts.go). An alias may name several people (two Micahs).
	execAll(`CREATE TABLE person_aliases(
		alias TEXT NOT NULL,
		person TEXT NOT NULL,
		PRIMARY KEY(alias, person)) WITHOUT ROWID`,
		`CREATE INDEX person_aliases_person ON person_aliases(person, alias)`),
}

const ftsTokenizer = `porter unicode61 remove_diacritics 2`

var schemaV1 = []string{
	`CREATE TABLE sources(
		rowid INTEGER PRIMARY KEY,
		kind TEXT NOT NULL,
		source_id TEXT NOT NULL,
		title TEXT NOT NULL DEFAULT '',
		provider TEXT NOT NULL DEFAULT '',
		tags_json TEXT NOT NULL DEFAULT '[]',
		origin TEXT NOT NULL DEFAULT '',
		chunk_count INTEGER NOT NULL DEFAULT 0,
		first_ms INTEGER NOT NULL DEFAULT 0,
		last_ms INTEGER NOT NULL DEFAULT 0,
		updated_ms INTEGER NOT NULL DEFAULT 0,
		UNIQUE(kind, source_id))`,
	`CREATE INDEX sources_recent ON sources(last_ms DESC, source_id)`,
	`CREATE TABLE chunks(
		rowid INTEGER PRIMARY KEY,
		id TEXT NOT NULL UNIQUE,
		source_rowid INTEGER NOT NULL REFERENCES sources(rowid) ON DELETE CASCADE,
		kind TEXT NOT NULL,
		source_id TEXT NOT NULL,
		seq INTEGER NOT NULL,
		ts INTEGER NOT NULL,
		ts_start INTEGER NOT NULL,
		ts_end INTEGER NOT NULL,
		title TEXT NOT NULL DEFAULT '',
		text TEXT NOT NULL,
		tags_json TEXT NOT NULL DEFAULT '[]',
		source_ref TEXT,
		source_refs_json TEXT NOT NULL DEFAULT '[]',
		ref_spans_json TEXT NOT NULL DEFAULT '[]',
		attachments_json TEXT NOT NULL DEFAULT '[]',
		token_count INTEGER NOT NULL,
		created_ms INTEGER NOT NULL)`,
	`CREATE INDEX chunks_ts ON chunks(ts DESC, id)`,
	`CREATE INDEX chunks_kind_ts ON chunks(kind, ts DESC, id)`,
	`CREATE INDEX chunks_source ON chunks(source_id, ts DESC, id)`,
	`CREATE INDEX chunks_source_rowid ON chunks(source_rowid, seq)`,
	`CREATE VIRTUAL TABLE chunks_fts USING fts5(text, title, content='chunks', content_rowid='rowid', tokenize='` + ftsTokenizer + `')`,
	`CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
		INSERT INTO chunks_fts(rowid, text, title) VALUES (new.rowid, new.text, new.title);
	END`,
	`CREATE TRIGGER chunks_ad AFTER DELETE ON chunks BEGIN
		INSERT INTO chunks_fts(chunks_fts, rowid, text, title) VALUES ('delete', old.rowid, old.text, old.title);
	END`,
	`CREATE VIRTUAL TABLE chunks_fts_vocab USING fts5vocab(chunks_fts, row)`,
	`CREATE TABLE entities(
		id TEXT PRIMARY KEY,
		kind TEXT NOT NULL,
		surface TEXT NOT NULL,
		ref_count INTEGER NOT NULL DEFAULT 0,
		last_seen INTEGER NOT NULL DEFAULT 0)`,
	`CREATE INDEX entities_top ON entities(ref_count DESC, last_seen DESC, id)`,
	`CREATE INDEX entities_kind_top ON entities(kind, ref_count DESC, last_seen DESC, id)`,
	`CREATE TABLE chunk_entities(
		entity_id TEXT NOT NULL,
		chunk_rowid INTEGER NOT NULL REFERENCES chunks(rowid) ON DELETE CASCADE,
		PRIMARY KEY(entity_id, chunk_rowid)) WITHOUT ROWID`,
	`CREATE INDEX chunk_entities_chunk ON chunk_entities(chunk_rowid)`,
	`CREATE TABLE summaries(
		rowid INTEGER PRIMARY KEY,
		id TEXT NOT NULL UNIQUE,
		source_rowid INTEGER NOT NULL REFERENCES sources(rowid) ON DELETE CASCADE,
		level INTEGER NOT NULL,
		idx INTEGER NOT NULL,
		text TEXT NOT NULL,
		child_ids_json TEXT NOT NULL,
		leaf_ids_json TEXT NOT NULL,
		ts_start INTEGER NOT NULL,
		ts_end INTEGER NOT NULL)`,
	`CREATE INDEX summaries_source ON summaries(source_rowid, level, idx)`,
	`CREATE VIRTUAL TABLE summaries_fts USING fts5(text, content='summaries', content_rowid='rowid', tokenize='` + ftsTokenizer + `')`,
	`CREATE TRIGGER summaries_ai AFTER INSERT ON summaries BEGIN
		INSERT INTO summaries_fts(rowid, text) VALUES (new.rowid, new.text);
	END`,
	`CREATE TRIGGER summaries_ad AFTER DELETE ON summaries BEGIN
		INSERT INTO summaries_fts(summaries_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
	END`,
	`CREATE TABLE embed_models(
		rowid INTEGER PRIMARY KEY,
		model TEXT NOT NULL,
		dim INTEGER NOT NULL,
		UNIQUE(model, dim))`,
	`CREATE TABLE vectors(
		model_rowid INTEGER NOT NULL REFERENCES embed_models(rowid) ON DELETE CASCADE,
		node_id TEXT NOT NULL,
		vec BLOB NOT NULL,
		PRIMARY KEY(model_rowid, node_id)) WITHOUT ROWID`,
	`CREATE INDEX vectors_node ON vectors(node_id)`,
}

func execAll(stmts ...string) migration {
	return func(ctx context.Context, tx *sql.Tx) error {
		for _, q := range stmts {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("%.60s…: %w", q, err)
			}
		}
		return nil
	}
}

// storeVersion reads the schema version (0 for a new, empty database).
func storeVersion(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int, error) {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type='table' AND name='meta'`).Scan(&n); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	if n == 0 {
		return 0, nil
	}
	var v string
	err := q.QueryRowContext(ctx, `SELECT value FROM meta WHERE key='schema_version'`).Scan(&v)
	if err == sql.ErrNoRows {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	ver, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("read schema version: meta.schema_version is %q, not a number: the store is damaged; move it aside and ingest again", v)
	}
	return ver, nil
}

// migrate brings db to schemaVersion, one transaction per step.
func migrate(ctx context.Context, db *sql.DB) error {
	return migrateTo(ctx, db, migrations)
}

func migrateTo(ctx context.Context, db *sql.DB, steps []migration) error {
	for {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("migrate schema: %w", err)
		}
		v, err := storeVersion(ctx, tx)
		if err != nil {
			tx.Rollback()
			return err
		}
		if v > len(steps) {
			tx.Rollback()
			return fmt.Errorf("schema version %d is newer than this binary supports (%d); upgrade openhuman-core", v, len(steps))
		}
		if v == len(steps) {
			return tx.Commit()
		}
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)`); err != nil {
			tx.Rollback()
			return fmt.Errorf("migrate schema: create meta: %w", err)
		}
		if err := steps[v](ctx, tx); err != nil {
			tx.Rollback()
			return fmt.Errorf("migrate schema from version %d to %d: %w", v, v+1, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES('schema_version', ?)
			ON CONFLICT(key) DO UPDATE SET value=excluded.value`, strconv.Itoa(v+1)); err != nil {
			tx.Rollback()
			return fmt.Errorf("migrate schema: record version %d: %w", v+1, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("migrate schema to version %d: %w", v+1, err)
		}
	}
}
