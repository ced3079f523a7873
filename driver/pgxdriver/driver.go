// Package pgxdriver is hookinbox's PostgreSQL driver, over pgx v5. Handlers receive a
// pgx.Tx.
//
//	pool, err := pgxpool.New(ctx, "postgres://127.0.0.1:5432/app")
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
type Driver struct {
	pool *pgxpool.Pool
}

var _ driver.Driver[pgx.Tx] = (*Driver)(nil)

// New returns a driver that uses pool. The pool stays the caller's to close.
func New(pool *pgxpool.Pool) *Driver {
	return &Driver{pool: pool}
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

// UnwrapExecutor returns an executor on the caller's transaction.
func (d *Driver) UnwrapExecutor(tx pgx.Tx) driver.Executor { return &executor{db: tx} }

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
	args, position, err := inboxInsertManyArgs(ps)
	if err != nil {
		return nil, err
	}
	b := &pgx.Batch{}
	b.Queue(sqlSavepoint)
	b.Queue(sqlInboxInsertMany, args...)
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
	if _, err := e.db.Exec(ctx, sqlRollbackToSavepoint); err != nil {
		return translate(fmt.Errorf("error rolling back to savepoint: %w", err))
	}
	return nil
}
