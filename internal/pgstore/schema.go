package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Migrations are plain SQL, embedded in the binary and applied in order, one
// transaction each, under an advisory lock (two processes opening one new
// database migrate it once), with the version kept in schema_version. A
// migration tool would add a dependency and a second source of truth for a
// schema this small; append-only SQL in Go is what the SQLite backend does too
// (internal/memtree/schema.go).
//
// migrations[i] brings a database from version i to i+1. Append only; never edit
// a released entry.
var migrations = []string{
	// Version 1. Chunks keep their analyzed terms as a tsvector built from
	// internal/analysis's stems (never PostgreSQL's parser or stemmer: see
	// terms.go), under a GIN index; term_df keeps each term's document frequency
	// and is the vocabulary (PostgreSQL has no fts5vocab); store_stats keeps the
	// chunk count, the total of the chunks' term counts (BM25's average length)
	// and the write generation, all maintained by the writer in the same
	// transaction as the chunks.
	`CREATE TABLE sources(
		key bigserial PRIMARY KEY,
		kind text NOT NULL,
		source_id text NOT NULL,
		title text NOT NULL DEFAULT '',
		provider text NOT NULL DEFAULT '',
		tags_json text NOT NULL DEFAULT '[]',
		origin text NOT NULL DEFAULT '',
		chunk_count integer NOT NULL DEFAULT 0,
		first_ms bigint NOT NULL DEFAULT 0,
		last_ms bigint NOT NULL DEFAULT 0,
		updated_ms bigint NOT NULL DEFAULT 0,
		UNIQUE(kind, source_id));
	CREATE INDEX sources_recent ON sources(last_ms DESC, source_id);
	CREATE TABLE chunks(
		key bigserial PRIMARY KEY,
		id text NOT NULL UNIQUE,
		source_key bigint NOT NULL REFERENCES sources(key) ON DELETE CASCADE,
		kind text NOT NULL,
		source_id text NOT NULL,
		seq integer NOT NULL,
		ts bigint NOT NULL,
		ts_start bigint NOT NULL,
		ts_end bigint NOT NULL,
		title text NOT NULL DEFAULT '',
		text text NOT NULL,
		tags_json text NOT NULL DEFAULT '[]',
		source_ref text,
		source_refs_json text NOT NULL DEFAULT '[]',
		ref_spans_json text NOT NULL DEFAULT '[]',
		attachments_json text NOT NULL DEFAULT '[]',
		token_count integer NOT NULL,
		created_ms bigint NOT NULL,
		terms tsvector NOT NULL,
		term_count integer NOT NULL);
	CREATE INDEX chunks_terms ON chunks USING gin(terms);
	CREATE INDEX chunks_ts ON chunks(ts DESC, id);
	CREATE INDEX chunks_source ON chunks(source_key, seq);
	CREATE TABLE term_df(
		term text PRIMARY KEY,
		df integer NOT NULL CHECK (df > 0));
	CREATE TABLE entities(
		id text PRIMARY KEY,
		kind text NOT NULL,
		surface text NOT NULL,
		ref_count integer NOT NULL DEFAULT 0,
		last_seen bigint NOT NULL DEFAULT 0);
	CREATE INDEX entities_kind ON entities(kind, ref_count DESC, last_seen DESC, id);
	CREATE TABLE chunk_entities(
		entity_id text NOT NULL,
		chunk_key bigint NOT NULL REFERENCES chunks(key) ON DELETE CASCADE,
		PRIMARY KEY(entity_id, chunk_key));
	CREATE INDEX chunk_entities_chunk ON chunk_entities(chunk_key);
	CREATE TABLE store_stats(
		one boolean PRIMARY KEY DEFAULT true CHECK (one),
		chunks bigint NOT NULL,
		term_total bigint NOT NULL,
		generation bigint NOT NULL);
	INSERT INTO store_stats VALUES (true, 0, 0, 0);`,
	// Version 2. The messages of sources ingested with SourceInput.Merge (chat
	// exports), one row each, so that a later export of the same source merges
	// with them as on SQLite (internal/memtree/merge.go: ref is the message's key,
	// hash 63 bits of the SHA-256 of msg_json, the whole message).
	`CREATE TABLE source_messages(
		source_key bigint NOT NULL REFERENCES sources(key) ON DELETE CASCADE,
		ref text NOT NULL,
		ts bigint NOT NULL,
		hash bigint NOT NULL,
		msg_json text NOT NULL,
		PRIMARY KEY(source_key, ref));`,
	// Version 3. Chunk vectors of the optional dense embedder (vectors.go): one
	// row per (model, dimension) in embed_models, as on SQLite, and one vector
	// per chunk and model, stored as bytea of little-endian float32s (the SQLite
	// store's blob format, internal/embed.EncodeBlob: 4 bytes a dimension, read
	// in one copy; real[] costs a header and a per-element decode, and nothing
	// ranks on the server: there is no pgvector, vectors are ranked in memory as
	// on SQLite). STORAGE EXTERNAL: floats do not compress, so a vector over
	// TOAST's 2 kB threshold is moved out of line without a compression attempt.
	// Keyed by the chunk's key, so that forgetting or replacing a chunk deletes
	// its vectors (ON DELETE CASCADE, through chunk_vectors_chunk), while a chunk
	// an ingest keeps (same id) keeps them.
	`CREATE TABLE embed_models(
		key serial PRIMARY KEY,
		model text NOT NULL,
		dim integer NOT NULL CHECK (dim > 0),
		UNIQUE(model, dim));
	CREATE TABLE chunk_vectors(
		model_key integer NOT NULL REFERENCES embed_models(key) ON DELETE CASCADE,
		chunk_key bigint NOT NULL REFERENCES chunks(key) ON DELETE CASCADE,
		vec bytea NOT NULL,
		PRIMARY KEY(model_key, chunk_key));
	ALTER TABLE chunk_vectors ALTER COLUMN vec SET STORAGE EXTERNAL;
	CREATE INDEX chunk_vectors_chunk ON chunk_vectors(chunk_key);`,
}

// migrateLock is the advisory lock key migrations hold ("ohcore" in ASCII).
const migrateLock = 0x6f68636f7265

// migrate brings the database to len(migrations), one transaction per step.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	for {
		done, err := migrateStep(ctx, pool)
		if err != nil || done {
			return err
		}
	}
}

// migrateStep applies the next migration, reporting done when none is left.
func migrateStep(ctx context.Context, pool *pgxpool.Pool) (done bool, err error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("migrate schema: %w", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrateLock)); err != nil {
		return false, fmt.Errorf("migrate schema: lock: %w", err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_version(version integer NOT NULL)`); err != nil {
		return false, fmt.Errorf("migrate schema: create schema_version: %w", err)
	}
	v := 0
	err = tx.QueryRow(ctx, `SELECT version FROM schema_version`).Scan(&v)
	if err == pgx.ErrNoRows {
		if _, err := tx.Exec(ctx, `INSERT INTO schema_version VALUES (0)`); err != nil {
			return false, fmt.Errorf("migrate schema: %w", err)
		}
	} else if err != nil {
		return false, fmt.Errorf("migrate schema: read version: %w", err)
	}
	if v > len(migrations) {
		return false, fmt.Errorf("schema version %d is newer than this binary supports (%d); upgrade openhuman-core", v, len(migrations))
	}
	if v == len(migrations) {
		return true, tx.Commit(ctx)
	}
	if _, err := tx.Exec(ctx, migrations[v]); err != nil {
		return false, fmt.Errorf("migrate schema from version %d to %d: %w", v, v+1, err)
	}
	if _, err := tx.Exec(ctx, `UPDATE schema_version SET version = $1`, v+1); err != nil {
		return false, fmt.Errorf("migrate schema: record version %d: %w", v+1, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("migrate schema to version %d: %w", v+1, err)
	}
	return false, nil
}
