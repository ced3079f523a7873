// Package sqlitedriver is hookinbox's SQLite driver, over modernc.org/sqlite (pure Go,
// no cgo): the embedded store, so that hookinbox runs from one file with no database
// server. Handlers receive a *sql.Tx.
//
//	db, err := sqlitedriver.Open("hookinbox.db")
//	inbox, err := hookinbox.New(sqlitedriver.New(db), &hookinbox.Config{...})
//	inbox.Handle("billing", "invoice.paid", func(ctx context.Context, tx *sql.Tx, ev hookinbox.Event) error { ... })
//
// It gives the guarantees of the PostgreSQL driver with SQLite's one writer at a time.
// Every transaction takes the database's write lock at BEGIN IMMEDIATE, so concurrent
// copies of an event, in one process or several, run one after the other: the first
// inserts the receipt and commits its business update with it, and each later copy
// finds the receipt and is a duplicate (or, if the first rolled back, inserts it).
// Readers (status, listings) are not blocked, thanks to WAL.
package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/hookinbox/hookinbox/driver"
)

// BusyTimeoutMillis is how long, in milliseconds, a connection waits for the write lock
// held by another transaction (of this process or another) before it fails with
// SQLITE_BUSY, which the driver reports as driver.ErrUnavailable. The wait also ends
// when the caller's context does.
const BusyTimeoutMillis = 10000

// MaxOpenConns is the size of the pool Open configures. Writers are serialised by the
// database whatever the size (BEGIN IMMEDIATE waits under the busy timeout), so more
// connections do not write faster: BenchmarkReceiveSQLite measured 1, 4 and 16 within
// noise of each other on a disk, where the fsync of each commit dominates, and 1 a
// little ahead of 16 on tmpfs, where waiting writers poll for the lock. A pool larger
// than one is kept so that readers (status, listings, readiness) run beside a long
// handler under WAL instead of queueing behind it, and so that a handler that
// mistakenly writes through the pool rather than its transaction fails after the busy
// timeout with driver.ErrUnavailable instead of waiting forever for the pool's only
// connection, which its own transaction holds.
const MaxOpenConns = 4

// DSN returns the modernc.org/sqlite data source name Open uses for the database file
// at path, for callers that open the *sql.DB themselves (sql.Open("sqlite", dsn)).
//
//   - _txlock=immediate: every transaction takes the write lock at BEGIN. With the
//     default (deferred), two copies of an event would both start reading, and the
//     one that writes second would fail to upgrade its read snapshot with SQLITE_BUSY
//     instead of waiting. With IMMEDIATE the second copy waits at BEGIN, and then
//     sees the first's commit: the SQLite form of PostgreSQL's wait on the unique
//     index. It also makes a worker's processing transaction hold the row it re-checks
//     for its whole duration, which is what FOR UPDATE does in PostgreSQL.
//   - journal_mode(WAL): readers do not block the writer nor it them.
//   - synchronous(FULL): in WAL mode, FULL syncs the log at every commit, so a
//     committed receipt survives a power loss; NORMAL syncs only at checkpoints and
//     may lose the last commits, which would break "2xx only after the receipt is
//     durable".
//   - busy_timeout: see BusyTimeoutMillis.
//   - foreign_keys(1): enforce foreign keys that handlers' tables declare.
func DSN(path string) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", BusyTimeoutMillis))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Set("_txlock", "immediate")
	// A file: URI with the path escaped, so that '?', '#' or '%' in a directory name
	// cannot be read as parameters.
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// Open opens (creating it if needed) the SQLite database file at path with the
// settings of DSN, and a pool of MaxOpenConns connections. It checks that the file
// can be opened. Call Migrate (or hookinbox's Inbox.Migrate) to create the schema.
//
// Several processes may open the same file: they share its write lock. The file must
// be on a local disk; SQLite's locking is unreliable over network file systems.
func Open(path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", DSN(path))
	if err != nil {
		return nil, fmt.Errorf("error opening %s: %w", path, err)
	}
	db.SetMaxOpenConns(MaxOpenConns)
	db.SetMaxIdleConns(MaxOpenConns)
	if err := db.PingContext(context.Background()); err != nil {
		_ = db.Close()
		return nil, translate(fmt.Errorf("error opening %s: %w", path, err))
	}
	return db, nil
}

// Driver runs hookinbox on a SQLite database.
type Driver struct {
	db *sql.DB
}

var _ driver.Driver[*sql.Tx] = (*Driver)(nil)

// New returns a driver that uses db, which stays the caller's to close. db must take
// the write lock when a transaction begins: open it with Open, or with DSN's
// _txlock=immediate. With deferred transactions a worker that re-checks a receipt and
// then writes can fail with SQLITE_BUSY where it should have waited.
func New(db *sql.DB) *Driver {
	return &Driver{db: db}
}

// Name returns "sqlite".
func (d *Driver) Name() string { return "sqlite" }

// DB returns the driver's database.
func (d *Driver) DB() *sql.DB { return d.db }

// Begin starts a transaction; with the DSN of Open it is BEGIN IMMEDIATE, so it waits
// here, up to the busy timeout or the end of ctx, until no other transaction writes.
func (d *Driver) Begin(ctx context.Context) (driver.ExecutorTx[*sql.Tx], error) {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, translate(fmt.Errorf("error beginning transaction: %w", err))
	}
	return &executorTx{executor: executor{db: tx}, tx: tx}, nil
}

// Executor returns an executor on the database. Each of its writes is one statement,
// which takes the write lock as it starts, or, for the claims that need two
// statements, one transaction.
func (d *Driver) Executor() driver.Executor { return &executor{db: d.db, pool: d.db} }

// UnwrapExecutor returns an executor on the caller's transaction.
func (d *Driver) UnwrapExecutor(tx *sql.Tx) driver.Executor { return &executor{db: tx} }

// dbtx is what a *sql.DB and a *sql.Tx have in common.
type dbtx interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

var _ driver.ExecutorTx[*sql.Tx] = (*executorTx)(nil)

type executorTx struct {
	executor
	tx *sql.Tx
}

func (e *executorTx) Native() *sql.Tx { return e.tx }

func (e *executorTx) Savepoint(ctx context.Context) error {
	if _, err := e.tx.ExecContext(ctx, sqlSavepoint); err != nil {
		return fmt.Errorf("%w: %w", driver.ErrSavepoint, translate(fmt.Errorf("error taking savepoint: %w", err)))
	}
	return nil
}

// SavepointInboxInsert runs the two statements one after the other: SQLite is in the
// process, a round trip costs nothing.
func (e *executorTx) SavepointInboxInsert(ctx context.Context, p *driver.InboxInsertParams) (bool, error) {
	if err := e.Savepoint(ctx); err != nil {
		return false, err
	}
	return e.InboxInsert(ctx, p)
}

// SavepointInboxInsertMany is Savepoint then InboxInsertMany: SQLite runs in process,
// with no round trips to save.
func (e *executorTx) SavepointInboxInsertMany(ctx context.Context, ps []*driver.InboxInsertParams) ([]bool, error) {
	if err := e.Savepoint(ctx); err != nil {
		return nil, err
	}
	return e.InboxInsertMany(ctx, ps)
}

// ReleaseSavepoint fails when the savepoint is gone: a statement that rolled the whole
// transaction back (INSERT OR ROLLBACK, RAISE(ROLLBACK), a full disk) took it along.
func (e *executorTx) ReleaseSavepoint(ctx context.Context) error {
	if _, err := e.tx.ExecContext(ctx, sqlReleaseSavepoint); err != nil {
		return translate(fmt.Errorf("error releasing savepoint: %w", err))
	}
	return nil
}

func (e *executorTx) RollbackToSavepoint(ctx context.Context) error {
	if _, err := e.tx.ExecContext(ctx, sqlRollbackToSavepoint); err != nil {
		return translate(fmt.Errorf("error rolling back to savepoint: %w", err))
	}
	return nil
}

func (e *executorTx) Commit(ctx context.Context) error {
	if err := e.tx.Commit(); err != nil {
		return translate(fmt.Errorf("error committing: %w", err))
	}
	return nil
}

func (e *executorTx) Rollback(ctx context.Context) error {
	if err := e.tx.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) {
		return translate(fmt.Errorf("error rolling back: %w", err))
	}
	return nil
}
