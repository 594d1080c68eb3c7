package pgstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Replicas: `[store] replicas = ["postgres://…"]` names hot standbys of the
// primary's database (streaming replication, e.g. set up with pg_basebackup -R).
// The tools' reads (every read call, chunk, browse, entities, sources) go to
// the first replica that answers, and to the primary when none does; ingest,
// forget and status go to the primary. A replica that fails to answer, or
// answers that it cannot serve now (shutting down, starting up, a query
// cancelled by a conflict with recovery), is passed over at once for the
// statement that met the failure, which runs again on the next replica or the
// primary — reads are single statements, safe to run twice — and for
// replicaRetry after, then tried again. A client sees no error from a standby
// going away.
//
// A standby lags the primary by its replay delay (milliseconds on a healthy
// local network; pg_stat_replication.replay_lag on the primary says it): a
// read may miss what an ingest committed that long ago, or still see a source
// forget has just deleted.

// Tunables of replica reads.
const (
	// replicaRetry is how long a replica that failed is passed over before a
	// read tries it again: long enough that a standby down for maintenance
	// costs one failed attempt every few seconds, short enough that one that
	// restarted takes its share of reads again promptly.
	replicaRetry = 3 * time.Second
	// replicaConnectTimeout bounds a connection attempt to a replica whose URL
	// sets none, so that an unreachable standby delays a read by at most this
	// before the primary answers.
	replicaConnectTimeout = 2 * time.Second
)

// replica is one standby's pool.
type replica struct {
	pool      *pgxpool.Pool
	where     string
	downUntil atomic.Int64 // unix ns before which reads pass it over
}

// readPool sends reads to the replicas in order, then the primary. It
// implements querier.
type readPool struct {
	primary  *pgxpool.Pool
	replicas []*replica
	log      *slog.Logger
}

// querier is what the store's reads run statements with: the primary's pool,
// or a readPool over replicas and the primary.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// openReplicas opens a pool per replica URL. A replica that does not answer
// now is not an error (reads go to the primary until it does); a malformed URL
// is.
func openReplicas(ctx context.Context, urls []string, log *slog.Logger) ([]*replica, error) {
	var out []*replica
	for i, u := range urls {
		cfg, err := pgxpool.ParseConfig(u)
		if err != nil {
			for _, r := range out {
				r.pool.Close()
			}
			return nil, fmt.Errorf("store replica %d: %w (want postgres://user@host:port/database)", i+1, redactErr(err))
		}
		if cfg.ConnConfig.ConnectTimeout == 0 {
			cfg.ConnConfig.ConnectTimeout = replicaConnectTimeout
		}
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("store replica %d: %w", i+1, err)
		}
		r := &replica{pool: pool, where: fmt.Sprintf("%s:%d", cfg.ConnConfig.Host, cfg.ConnConfig.Port)}
		if err := pool.Ping(ctx); err != nil {
			log.Warn("store replica does not answer now; reads go to the primary until it does", "replica", r.where, "err", err)
			r.downUntil.Store(time.Now().Add(replicaRetry).UnixNano())
		}
		out = append(out, r)
	}
	return out, nil
}

// failover reports whether err, met on a replica, means it cannot serve the
// statement now (rather than the statement being wrong): the connection
// failed, or the server said it is shutting down, starting up, in recovery
// conflict or out of connections.
func failover(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "08") || // connection exceptions
			strings.HasPrefix(pe.Code, "57P") || // admin shutdown, crash shutdown, cannot connect now
			pe.Code == "53300" || // too many connections
			pe.Code == "40001" // canceled by a conflict with recovery
	}
	return true // no answer from the server
}

// live lists the replicas to try now, in order.
func (p *readPool) live() []*replica {
	now := time.Now().UnixNano()
	var out []*replica
	for _, r := range p.replicas {
		if r.downUntil.Load() <= now {
			out = append(out, r)
		}
	}
	return out
}

func (p *readPool) down(r *replica, err error) {
	r.downUntil.Store(time.Now().Add(replicaRetry).UnixNano())
	p.log.Warn("store replica failed; reads go to the next replica or the primary", "replica", r.where, "retry_in", replicaRetry, "err", err)
}

// Query runs sql on the first replica that serves it, else on the primary.
// A replica's failure shows at the first row: the rows returned run the
// statement again elsewhere when it fails before giving one.
func (p *readPool) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	for _, r := range p.live() {
		rows, err := r.pool.Query(ctx, sql, args...)
		if failover(ctx, err) {
			p.down(r, err)
			continue
		}
		if err != nil {
			return nil, err
		}
		return &failoverRows{Rows: rows, p: p, r: r, ctx: ctx, sql: sql, args: args}, nil
	}
	return p.primary.Query(ctx, sql, args...)
}

// QueryRow is Query for one row.
func (p *readPool) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return failoverRow{p: p, ctx: ctx, sql: sql, args: args}
}

// BeginTx begins a read-only transaction on the first replica that answers,
// else on the primary.
func (p *readPool) BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error) {
	for _, r := range p.live() {
		tx, err := r.pool.BeginTx(ctx, opts)
		if failover(ctx, err) {
			p.down(r, err)
			continue
		}
		return tx, err
	}
	return p.primary.BeginTx(ctx, opts)
}

// failoverRow scans the row of the first replica that serves the statement,
// else the primary's.
type failoverRow struct {
	p    *readPool
	ctx  context.Context
	sql  string
	args []any
}

func (f failoverRow) Scan(dest ...any) error {
	for _, r := range f.p.live() {
		err := r.pool.QueryRow(f.ctx, f.sql, f.args...).Scan(dest...)
		if failover(f.ctx, err) {
			f.p.down(r, err)
			continue
		}
		return err
	}
	return f.p.primary.QueryRow(f.ctx, f.sql, f.args...).Scan(dest...)
}

// failoverRows are a replica's rows that, when the statement fails there
// before the first row, continue with the statement run on the next replica
// or the primary.
type failoverRows struct {
	pgx.Rows
	p       *readPool
	r       *replica
	ctx     context.Context
	sql     string
	args    []any
	started bool
	moved   bool // the statement runs elsewhere already (no second failover here)
	err     error
}

func (f *failoverRows) Next() bool {
	if f.err != nil {
		return false
	}
	if f.Rows.Next() {
		f.started = true
		return true
	}
	if err := f.Rows.Err(); !f.started && !f.moved && failover(f.ctx, err) {
		f.Rows.Close()
		f.p.down(f.r, err)
		f.moved = true
		rows, err := f.p.Query(f.ctx, f.sql, f.args...)
		if err != nil {
			f.err = err
			return false
		}
		f.Rows = rows
		return f.Next()
	}
	return false
}

func (f *failoverRows) Err() error {
	if f.err != nil {
		return f.err
	}
	return f.Rows.Err()
}

// ReplicaState is what CheckReplica read of a replica.
type ReplicaState struct {
	Where      string // host:port
	InRecovery bool   // a standby (pg_is_in_recovery)
	Chunks     int64  // chunks the replica holds
	// Lag is the age of the last transaction the standby replayed, when it
	// replayed one (an idle primary makes it grow without the standby being
	// behind: compare Chunks with the primary's).
	Lag *time.Duration
}

// CheckReplica connects to the replica at url and reads whether it is a
// standby, what it holds and how far behind its replay is. It writes
// nothing (a standby is read-only).
func CheckReplica(ctx context.Context, url string) (ReplicaState, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return ReplicaState{}, fmt.Errorf("store replica URL: %w (want postgres://user@host:port/database)", redactErr(err))
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = replicaConnectTimeout
	}
	st := ReplicaState{Where: fmt.Sprintf("%s:%d", cfg.Host, cfg.Port)}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return st, fmt.Errorf("store replica at %s does not answer: %w", st.Where, err)
	}
	defer conn.Close(ctx)
	var lagMS *float64
	err = conn.QueryRow(ctx, `SELECT pg_is_in_recovery(), (SELECT chunks FROM store_stats),
		extract(epoch FROM now() - pg_last_xact_replay_timestamp()) * 1000`).Scan(&st.InRecovery, &st.Chunks, &lagMS)
	if err != nil {
		return st, fmt.Errorf("store replica at %s answers but holds no memory tree (is it a standby of the store URL's database?): %w", st.Where, err)
	}
	if lagMS != nil {
		d := time.Duration(*lagMS * float64(time.Millisecond))
		st.Lag = &d
	}
	return st, nil
}
