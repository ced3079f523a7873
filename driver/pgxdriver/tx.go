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
// statements queued before it, travel in the same pipelined batch as that statement
// (pgx's Batch.BeginTx), so a short transaction — a sync delivery, a worker's batch —
// spends round trips only on the statements whose results it reads.
//
// Queued are the statements whose only result is success: SetStatementTimeout's
// setting, the mark of processed receipts (InboxMarkProcessed), and the outbox
// messages a handler writes with OutboxInsertMany on its transaction (handlerTx).
// They are sent ahead of the transaction's next statement, whoever sends it, or with
// COMMIT: a worker's batch sends its outbox messages, its mark and COMMIT in one
// round trip, a sync group its outbox messages and COMMIT. A queued statement's
// error is reported by the statement or the commit it travelled with.
//
// The transaction's statements run in the order they are issued, as they would if
// each were sent at once: what is deferred is only when they leave the process.
type executorTx struct {
	executor // on the lazy dbtx below: every statement sends what is queued first
	pool     *pgxpool.Pool
	conn     *pgxpool.Conn     // held from BEGIN until the transaction ends
	tx       pgx.Tx            // nil until begun; a closed transaction if beginning failed
	queued   []queuedStatement // to be sent ahead of the next statement
	ended    bool              // committed or rolled back: the connection went back
	// handedOut: a handler holds the connection or a nested transaction, so its
	// outbox messages are sent at once.
	handedOut bool

	// The broken variants of the tests (tx_queue_test.go): eager sends each queued
	// statement at once, alone, as the transaction did before it queued them;
	// blindCommit reports success when the batch with COMMIT failed; staleTx keeps
	// pgx's transaction usable after the connection went back.
	eager, blindCommit, staleTx bool
}

// queuedStatement is a statement sent with the next one; what says what it was doing,
// for its error.
type queuedStatement struct {
	sql  string
	args []any
	what string
}

func newExecutorTx(pool *pgxpool.Pool) *executorTx {
	e := &executorTx{pool: pool}
	e.executor = executor{db: (*lazyTx)(e)}
	return e
}

// pending says whether statements wait to be sent with the next one.
func (e *executorTx) pending() bool { return e.tx == nil || len(e.queued) > 0 }

// queue adds a statement to be sent with the next one.
func (e *executorTx) queue(what, sql string, args ...any) {
	e.queued = append(e.queued, queuedStatement{sql: sql, args: args, what: what})
	if e.eager {
		_, _ = e.begin(context.Background())
	}
}

// queues says whether a handler's statement may wait in the queue: not once the
// handler holds the connection or a nested transaction, whose statements would
// overtake it.
func (e *executorTx) queues() bool { return !e.handedOut }

// sendBatch sends b in the transaction, preceded by BEGIN if it has not begun and by
// the queued statements, in one round trip. It returns b's results, the prefix's
// already read; the caller must close them. A failure of BEGIN (or of acquiring the
// connection) is returned wrapping errBegin, a queued statement's as its own.
func (e *executorTx) sendBatch(ctx context.Context, b *pgx.Batch) (pgx.BatchResults, error) {
	if !e.pending() {
		return e.tx.SendBatch(ctx, b), nil
	}
	nb := &pgx.Batch{}
	begin := e.tx == nil
	if begin {
		nb.BeginTx(pgx.TxOptions{})
	}
	queued := e.queued
	e.queued = nil
	for _, q := range queued {
		nb.Queue(q.sql, q.args...)
	}
	nb.QueuedQueries = append(nb.QueuedQueries, b.QueuedQueries...)
	var br pgx.BatchResults
	if begin {
		br = e.beginBatch(ctx, nb)
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return nil, fmt.Errorf("%w: %w", errBegin, translate(err))
		}
	} else {
		br = e.tx.SendBatch(ctx, nb)
	}
	for _, q := range queued {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return nil, translate(fmt.Errorf("%s: %w", q.what, err))
		}
	}
	return br, nil
}

// beginBatch sends nb, which begins the transaction, on a connection of its own,
// held until Commit or Rollback: the transaction may end inside a batch (sendCommit),
// which pgx's pooled transaction cannot, as it releases its connection only from its
// own Commit or Rollback.
func (e *executorTx) beginBatch(ctx context.Context, nb *pgx.Batch) pgx.BatchResults {
	if e.ended {
		return pgx.FailedBatchResults(nb, pgx.ErrTxClosed)
	}
	c, err := e.pool.Acquire(ctx)
	if err != nil {
		br := pgx.FailedBatchResults(nb, err)
		e.tx = br.Tx() // closed: the transaction's later statements report it
		return br
	}
	e.conn = c
	br := c.SendBatch(ctx, nb)
	e.tx = br.Tx()
	return br
}

// errBegin marks a failure of BEGIN, sent ahead of the caller's own statement.
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

// Native returns the transaction for a handler (handlerTx), beginning it if no
// statement did yet (never, in hookinbox's own flows: a receipt's insert or lock
// comes first). A transaction that failed to begin is returned closed: its methods
// report it.
func (e *executorTx) Native() pgx.Tx {
	tx, _ := e.begin(context.Background())
	return &handlerTx{Tx: tx, e: e}
}

// SetStatementTimeout queues SET LOCAL statement_timeout to be sent with the next
// statement, which is the first it bounds.
func (e *executorTx) SetStatementTimeout(_ context.Context, timeout time.Duration) error {
	e.queue("error setting statement timeout", sqlSetStatementTimeout, strconv.FormatInt(max(timeout.Milliseconds(), 1), 10))
	return nil
}

// Commit commits, sending what is queued and COMMIT in one round trip.
func (e *executorTx) Commit(ctx context.Context) error {
	if e.tx == nil && len(e.queued) == 0 {
		return nil // nothing was sent: there is nothing to commit
	}
	if e.ended {
		return translate(fmt.Errorf("error committing: %w", pgx.ErrTxClosed))
	}
	if len(e.queued) == 0 {
		defer e.release()
		if err := e.tx.Commit(ctx); err != nil {
			return translate(fmt.Errorf("error committing: %w", err))
		}
		return nil
	}
	return e.sendCommit(ctx)
}

// sendCommit sends the queued statements and COMMIT as one batch. pgx's transaction
// does not know it ended: the connection goes back to the pool from here, and the
// transaction is not touched again (ended).
func (e *executorTx) sendCommit(ctx context.Context) error {
	b := &pgx.Batch{}
	b.Queue(sqlCommit)
	br, err := e.sendBatch(ctx, b)
	if err != nil {
		e.abort(ctx)
		if e.blindCommit {
			return nil
		}
		return err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err == nil && tag.String() == "ROLLBACK" {
		err = pgx.ErrTxCommitRollback // the transaction had failed before
	}
	if err != nil && !e.blindCommit {
		e.abort(ctx)
		return translate(fmt.Errorf("error committing: %w", err))
	}
	e.release()
	return nil
}

// abort ends a transaction whose commit batch failed: rolled back if the connection
// is still in it, then released (a connection left in a transaction is closed).
func (e *executorTx) abort(ctx context.Context) {
	if e.conn != nil && e.conn.Conn().PgConn().TxStatus() != 'I' {
		_ = e.tx.Rollback(context.WithoutCancel(ctx))
	}
	e.release()
}

// release gives the connection back and leaves a closed transaction in the place of
// pgx's: after a batch with COMMIT pgx's still counts as open, and a later statement
// on it would run on a connection that is another caller's by then.
func (e *executorTx) release() {
	e.ended = true
	e.queued = nil
	if !e.staleTx {
		e.tx = txClosed
	}
	if e.conn != nil {
		e.conn.Release()
		e.conn = nil
	}
}

// txClosed is a transaction whose every method reports pgx.ErrTxClosed. pgx's closed
// transaction changes nothing of itself, so one serves every ended executorTx.
var txClosed = func() pgx.Tx {
	b := &pgx.Batch{}
	b.BeginTx(pgx.TxOptions{})
	return pgx.FailedBatchResults(b, pgx.ErrTxClosed).Tx()
}()

func (e *executorTx) Rollback(ctx context.Context) error {
	e.queued = nil
	if e.tx == nil || e.ended {
		return nil
	}
	defer e.release()
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

// handlerTx is the transaction a handler receives (Native): pgx's, with every
// statement sent after what the executorTx queued (in the same round trip where pgx
// allows it), so that the handler's statements and hookinbox's run in the order they
// were issued. An executor unwrapped from it (UnwrapExecutor) queues its outbox
// messages (OutboxInsertMany) on the executorTx, to travel with the next statement or
// with COMMIT — until the handler takes a nested transaction (Begin), the connection
// (Conn) or its large objects: their statements bypass the queue, so from then on
// the messages are sent at once.
type handlerTx struct {
	pgx.Tx
	e *executorTx
}

func (h *handlerTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return (*lazyTx)(h.e).Exec(ctx, sql, args...)
}

func (h *handlerTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return (*lazyTx)(h.e).Query(ctx, sql, args...)
}

func (h *handlerTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return (*lazyTx)(h.e).QueryRow(ctx, sql, args...)
}

func (h *handlerTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	br, err := h.e.sendBatch(ctx, b)
	if err != nil {
		return pgx.FailedBatchResults(b, err)
	}
	return br
}

// sent sends what is queued on its own, for the methods with no pipelined form.
func (h *handlerTx) sent(ctx context.Context) (pgx.Tx, error) { return h.e.begin(ctx) }

func (h *handlerTx) Begin(ctx context.Context) (pgx.Tx, error) {
	h.e.handedOut = true
	tx, err := h.sent(ctx)
	if err != nil {
		return nil, err
	}
	return tx.Begin(ctx)
}

func (h *handlerTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	tx, err := h.sent(ctx)
	if err != nil {
		return 0, err
	}
	return tx.CopyFrom(ctx, table, columns, src)
}

func (h *handlerTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	tx, err := h.sent(ctx)
	if err != nil {
		return nil, err
	}
	return tx.Prepare(ctx, name, sql)
}

// LargeObjects and Conn give the connection itself out: what is queued is sent first
// (an error of it fails the transaction, which its commit then reports).
func (h *handlerTx) LargeObjects() pgx.LargeObjects {
	h.e.handedOut = true
	tx, _ := h.sent(context.Background())
	return tx.LargeObjects()
}

func (h *handlerTx) Conn() *pgx.Conn {
	h.e.handedOut = true
	tx, _ := h.sent(context.Background())
	return tx.Conn()
}

// Commit and Rollback are hookinbox's to call, not a handler's; they behave as pgx's.
func (h *handlerTx) Commit(ctx context.Context) error {
	tx, err := h.sent(ctx)
	if err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func (h *handlerTx) Rollback(ctx context.Context) error {
	h.e.queued = nil
	if h.e.ended {
		return pgx.ErrTxClosed
	}
	return h.Tx.Rollback(ctx)
}

var (
	_ driver.ExecutorTx[pgx.Tx] = (*executorTx)(nil)
	_ pgx.Tx                    = (*handlerTx)(nil)
)
