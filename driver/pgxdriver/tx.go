package pgxdriver

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox/driver"
)

// executorTx is a transaction that begins with its first statement: BEGIN, and the
// settings queued before it (SetStatementTimeout's SET LOCAL), travel in the same
// pipelined batch as that statement (pgx's Batch.BeginTx), so a short transaction —
// a sync delivery, a worker's batch — spends one or two round trips less. Until then
// it holds no connection.
//
// The transaction's statements run in the order they are issued, as they would with
// an eager BEGIN: what is deferred is only when they leave the process.
type executorTx struct {
	executor // on the lazy dbtx below: every statement begins the transaction first
	pool     *pgxpool.Pool
	tx       pgx.Tx   // nil until begun; a closed transaction if beginning failed
	settings []string // statement timeouts waiting for the next statement
}

func newExecutorTx(pool *pgxpool.Pool) *executorTx {
	e := &executorTx{pool: pool}
	e.executor = executor{db: (*lazyTx)(e)}
	return e
}

// pending says whether statements wait to be sent with the next one.
func (e *executorTx) pending() bool { return e.tx == nil || len(e.settings) > 0 }

// sendBatch sends b in the transaction, preceded by BEGIN if it has not begun and by
// the queued settings, in one round trip. It returns b's results, the prefix's
// already read; the caller must close them. An error of the prefix (the connection
// could not be acquired, BEGIN failed) is returned wrapping errBegin.
func (e *executorTx) sendBatch(ctx context.Context, b *pgx.Batch) (pgx.BatchResults, error) {
	if !e.pending() {
		return e.tx.SendBatch(ctx, b), nil
	}
	nb := &pgx.Batch{}
	begin := e.tx == nil
	if begin {
		nb.BeginTx(pgx.TxOptions{})
	}
	for _, ms := range e.settings {
		nb.Queue(sqlSetStatementTimeout, ms)
	}
	prefix := len(nb.QueuedQueries)
	e.settings = nil
	nb.QueuedQueries = append(nb.QueuedQueries, b.QueuedQueries...)
	var br pgx.BatchResults
	if begin {
		br = e.pool.SendBatch(ctx, nb)
		e.tx = br.Tx()
	} else {
		br = e.tx.SendBatch(ctx, nb)
	}
	for range prefix {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return nil, fmt.Errorf("%w: %w", errBegin, translate(err))
		}
	}
	return br, nil
}

// errBegin marks a failure of the statements sent ahead of the caller's own.
var errBegin = errors.New("error beginning the transaction")

// begin sends what is pending on its own, for callers that need the transaction
// itself (a handler's) or a statement with no pipelined form.
func (e *executorTx) begin(ctx context.Context) (pgx.Tx, error) {
	if !e.pending() {
		return e.tx, nil
	}
	br, err := e.sendBatch(ctx, &pgx.Batch{})
	if err != nil {
		return e.tx, err
	}
	if err := br.Close(); err != nil {
		return e.tx, translate(fmt.Errorf("%w: %w", errBegin, err))
	}
	return e.tx, nil
}

// Native returns the transaction for a handler, beginning it if no statement did yet
// (never, in hookinbox's own flows: a receipt's insert or lock comes first). A
// transaction that failed to begin is returned closed: its methods report it.
func (e *executorTx) Native() pgx.Tx {
	tx, _ := e.begin(context.Background())
	return tx
}

// SetStatementTimeout queues SET LOCAL statement_timeout to be sent with the next
// statement, which is the first it bounds.
func (e *executorTx) SetStatementTimeout(_ context.Context, timeout time.Duration) error {
	e.settings = append(e.settings, strconv.FormatInt(max(timeout.Milliseconds(), 1), 10))
	return nil
}

func (e *executorTx) Commit(ctx context.Context) error {
	if e.tx == nil {
		return nil // nothing was sent: there is nothing to commit
	}
	if err := e.tx.Commit(ctx); err != nil {
		return translate(fmt.Errorf("error committing: %w", err))
	}
	return nil
}

func (e *executorTx) Rollback(ctx context.Context) error {
	if e.tx == nil {
		return nil
	}
	if err := e.tx.Rollback(ctx); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		return translate(fmt.Errorf("error rolling back: %w", err))
	}
	return nil
}

// lazyTx is the executorTx's dbtx: a statement sent while the transaction has not
// begun (or settings wait) goes in one batch with BEGIN and the settings.
type lazyTx executorTx

func (l *lazyTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	e := (*executorTx)(l)
	if !e.pending() {
		return e.tx.Exec(ctx, sql, args...)
	}
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br, err := e.sendBatch(ctx, b)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

func (l *lazyTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	e := (*executorTx)(l)
	if !e.pending() {
		return e.tx.Query(ctx, sql, args...)
	}
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br, err := e.sendBatch(ctx, b)
	if err != nil {
		return errorRows{err}, err
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return errorRows{err}, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

func (l *lazyTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	e := (*executorTx)(l)
	if !e.pending() {
		return e.tx.QueryRow(ctx, sql, args...)
	}
	rows, _ := l.Query(ctx, sql, args...)
	return rowOf{rows}
}

// batchRows are a batch's only result set; closing them closes the batch, which the
// transaction needs before its next statement.
type batchRows struct {
	pgx.Rows
	br  pgx.BatchResults
	err error
}

func (r *batchRows) Close() {
	r.Rows.Close()
	if r.br != nil {
		r.err = r.br.Close()
		r.br = nil
	}
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// rowOf is pgx's QueryRow over rows: the first row scanned, the rest discarded, no
// row an ErrNoRows.
type rowOf struct{ rows pgx.Rows }

func (r rowOf) Scan(dest ...any) error {
	defer r.rows.Close()
	if err := r.rows.Err(); err != nil {
		return err
	}
	if !r.rows.Next() {
		r.rows.Close()
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}

// errorRows are the rows of a statement that was never sent.
type errorRows struct{ err error }

func (r errorRows) Close()                                       {}
func (r errorRows) Err() error                                   { return r.err }
func (r errorRows) CommandTag() pgconn.CommandTag                { return pgconn.CommandTag{} }
func (r errorRows) FieldDescriptions() []pgconn.FieldDescription { return nil }
func (r errorRows) Next() bool                                   { return false }
func (r errorRows) Scan(...any) error                            { return r.err }
func (r errorRows) Values() ([]any, error)                       { return nil, r.err }
func (r errorRows) RawValues() [][]byte                          { return nil }
func (r errorRows) Conn() *pgx.Conn                              { return nil }
func (r errorRows) TypeMap() *pgtype.Map                         { return nil }

var _ driver.ExecutorTx[pgx.Tx] = (*executorTx)(nil)
