// Package pgxdriver is hookinbox's PostgreSQL driver, over pgx v5. Handlers receive a
// pgx.Tx.
//
//	cfg, err := pgxpool.ParseConfig("postgres://127.0.0.1:5432/app")
//	pgxdriver.ConfigurePool(cfg) // optional: see its doc
//	pool, err := pgxpool.NewWithConfig(ctx, cfg)
//	inbox, err := hookinbox.New(pgxdriver.New(pool), &hookinbox.Config{...})
package pgxdriver

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox/driver"
)

// Driver runs hookinbox on a pgx connection pool.
//
// It leaves no session state on the pool's connections: statement timeouts are set
// with set_config(..., true) (SET LOCAL), the migration lock is a transaction-level
// advisory lock, and nothing it does outside a transaction needs the next statement
// to run on the same server session. So the pool may go through PgBouncer in
// transaction mode, given a URL that keeps pgx from naming prepared statements
// (PgBouncer 1.18 does not carry them from one server session to another):
// default_query_exec_mode=exec sends each statement with its parameters in one round
// trip. Not describe_exec: it describes in one round trip and binds the unnamed
// statement in a second, which PgBouncer may send to another server session. Only
// LISTEN needs a session of its own (see Config.ListenConnConfig).
type Driver struct {
	pool   *pgxpool.Pool
	listen *pgx.ConnConfig
}

var _ driver.Driver[pgx.Tx] = (*Driver)(nil)

// Config tunes NewWithConfig.
type Config struct {
	// ListenConnConfig is the connection the driver listens for other processes'
	// notifications on, for a pool whose connections cannot keep a session: a pool
	// behind PgBouncer (or another pooler) in transaction mode, where a LISTEN runs on
	// whichever server session the pooler picks and is then lost. It must reach the
	// same database directly, as the same user and with the same search_path as the
	// pool, since the channel is scoped to the current schema.
	//
	// Defaults to a connection taken out of the pool for good.
	ListenConnConfig *pgx.ConnConfig
}

// New returns a driver that uses pool. The pool stays the caller's to close.
func New(pool *pgxpool.Pool) *Driver {
	return &Driver{pool: pool}
}

// NewWithConfig returns a driver that uses pool, tuned by cfg (nil: New's defaults).
// The pool stays the caller's to close.
func NewWithConfig(pool *pgxpool.Pool, cfg *Config) *Driver {
	d := &Driver{pool: pool}
	if cfg != nil {
		d.listen = cfg.ListenConnConfig
	}
	return d
}

// Name returns "postgres".
func (d *Driver) Name() string { return "postgres" }

// Pool returns the driver's pool.
func (d *Driver) Pool() *pgxpool.Pool { return d.pool }

// Begin starts a read-committed transaction. Its BEGIN is sent with its first
// statement, in one round trip (see executorTx); a connection is taken from the pool
// then, and errors of either show there.
func (d *Driver) Begin(context.Context) (driver.ExecutorTx[pgx.Tx], error) {
	return newExecutorTx(d.pool), nil
}

// Executor returns an executor on the pool.
func (d *Driver) Executor() driver.Executor { return &executor{db: d.pool} }

// UnwrapExecutor returns an executor on the caller's transaction. On the transaction
// hookinbox gives a handler, its outbox messages (OutboxInsertMany) are queued, to be
// sent with the transaction's next statement or its commit (see executorTx).
func (d *Driver) UnwrapExecutor(tx pgx.Tx) driver.Executor {
	if h, ok := tx.(*handlerTx); ok {
		return &executor{db: (*lazyTx)(h.e), queue: h.e}
	}
	return &executor{db: tx}
}

// dbtx is what a pool and a transaction have in common.
type dbtx interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func (e *executorTx) Savepoint(ctx context.Context) error {
	if _, err := e.db.Exec(ctx, sqlSavepoint); err != nil {
		return fmt.Errorf("%w: %w", driver.ErrSavepoint, translate(fmt.Errorf("error taking savepoint: %w", err)))
	}
	return nil
}

// SavepointInboxInsert sends the savepoint and the insert as one pipelined batch.
func (e *executorTx) SavepointInboxInsert(ctx context.Context, p *driver.InboxInsertParams) (bool, error) {
	if p.Lease > 0 {
		inserted, err := e.SavepointInboxInsertMany(ctx, []*driver.InboxInsertParams{p})
		if err != nil {
			return false, err
		}
		return inserted[0], nil
	}
	b := &pgx.Batch{}
	b.Queue(sqlSavepoint)
	b.Queue(sqlInboxInsert, inboxInsertArgs(p)...)
	br, err := e.sendBatch(ctx, b)
	if err != nil {
		return false, fmt.Errorf("%w: %w", driver.ErrSavepoint, err)
	}
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return false, fmt.Errorf("%w: %w", driver.ErrSavepoint, translate(fmt.Errorf("error taking savepoint: %w", err)))
	}
	var inserted bool
	err = br.QueryRow().Scan(&inserted)
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, translate(fmt.Errorf("error inserting receipt: %w", err))
	}
	return true, nil
}

// SavepointInboxInsertMany sends the savepoint and the insert as one pipelined batch.
func (e *executorTx) SavepointInboxInsertMany(ctx context.Context, ps []*driver.InboxInsertParams) ([]bool, error) {
	query, args, position, err := inboxInsertManyArgs(ps)
	if err != nil {
		return nil, err
	}
	b := &pgx.Batch{}
	b.Queue(sqlSavepoint)
	b.Queue(query, args...)
	br, err := e.sendBatch(ctx, b)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", driver.ErrSavepoint, err)
	}
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, fmt.Errorf("%w: %w", driver.ErrSavepoint, translate(fmt.Errorf("error taking savepoint: %w", err)))
	}
	rows, err := br.Query()
	if err != nil {
		return nil, translate(fmt.Errorf("error inserting receipts: %w", err))
	}
	inserted, err := scanInserted(rows, position, len(ps))
	if err != nil {
		return nil, err
	}
	if err := br.Close(); err != nil {
		return nil, translate(fmt.Errorf("error inserting receipts: %w", err))
	}
	return inserted, nil
}

func (e *executorTx) ReleaseSavepoint(ctx context.Context) error {
	if _, err := e.db.Exec(ctx, sqlReleaseSavepoint); err != nil {
		return translate(fmt.Errorf("error releasing savepoint: %w", err))
	}
	return nil
}

func (e *executorTx) RollbackToSavepoint(ctx context.Context) error {
	// What is queued came after the savepoint (every statement sends the queue ahead
	// of it): the rollback would undo it, and a failure of it would stop the rollback.
	e.queued = nil
	if _, err := e.db.Exec(ctx, sqlRollbackToSavepoint); err != nil {
		return translate(fmt.Errorf("error rolling back to savepoint: %w", err))
	}
	return nil
}
