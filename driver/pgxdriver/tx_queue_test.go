package pgxdriver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/hookinbox/hookinbox/internal/testdb"
)

// The statements a transaction queues (tx.go: the statement timeout, the mark, a
// handler's outbox messages) against their promise: they leave with the next
// statement or with COMMIT, in one round trip, in the order they were issued, and a
// failure of one commits nothing.

// roundTrips counts what a pool sends: a statement on its own (Exec, Query, pgx's
// COMMIT) or a batch is one round trip each.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// tracedDriver is a driver on a pool of one connection that counts its round trips.
func tracedDriver(t *testing.T) (*testdb.DB, *Driver, *roundTrips) {
	t.Helper()
	db, _ := migrated(t)
	cfg := db.Config(t)
	cfg.MaxConns = 1
	counter := &roundTrips{}
	cfg.ConnConfig.Tracer = counter
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return db, New(pool), counter
}

func message(id string) *driver.OutboxInsertParams {
	return &driver.OutboxInsertParams{AggregateType: "invoice", AggregateID: id, EventType: "payment.booked",
		Payload: []byte(`{}`), Source: hookinboxtype.Key{Provider: "stripe", Endpoint: "ep", EventID: id}}
}

// workerTransaction runs what a worker's batch sends for receipt id: the statement
// timeout and the lock, a handler's outbox message through its transaction, the
// mark, COMMIT. It returns the round trips they took.
func workerTransaction(t *testing.T, d *Driver, counter *roundTrips, id string, eager bool) int64 {
	t.Helper()
	ctx := context.Background()
	if _, err := d.Executor().InboxInsert(ctx, receipt(id)); err != nil {
		t.Fatal(err)
	}
	before := counter.n.Load()
	tx, _ := d.Begin(ctx)
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after commit
	tx.(*executorTx).eager = eager
	_ = tx.SetStatementTimeout(ctx, 10*time.Second)
	key := hookinboxtype.Key{Provider: "stripe", Endpoint: "ep", EventID: id}
	if locked, err := tx.InboxLockUnprocessed(ctx, []hookinboxtype.Key{key}); err != nil || len(locked) != 1 {
		t.Fatalf("lock: %d, %v", len(locked), err)
	}
	if err := d.UnwrapExecutor(tx.Native()).OutboxInsertMany(ctx, []*driver.OutboxInsertParams{message(id)}); err != nil {
		t.Fatal(err)
	}
	if err := tx.InboxMarkProcessed(ctx, []hookinboxtype.Key{key}, "processed", nil); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return counter.n.Load() - before
}

// checkWorkerRoundTrips returns what broke: a worker's transaction takes two round
// trips (BEGIN with the lock; the outbox message and the mark with COMMIT), commits
// both writes, and gives its connection back to the pool, open and out of the
// transaction.
func checkWorkerRoundTrips(t *testing.T, eager bool) string {
	t.Helper()
	db, d, counter := tracedDriver(t)
	workerTransaction(t, d, counter, "evt_warm", eager) // pgx prepares each statement once
	trips := workerTransaction(t, d, counter, "evt_1", eager)
	var state string
	var messages int
	if err := db.Pool.QueryRow(context.Background(), `SELECT state, (SELECT count(*) FROM hookinbox_outbox WHERE aggregate_id = 'evt_1')
  FROM hookinbox_inbox WHERE event_id = 'evt_1'`).Scan(&state, &messages); err != nil {
		t.Fatal(err)
	}
	if state != "processed" || messages != 1 {
		t.Fatalf("after the commit: receipt %s, %d outbox messages; want processed and 1", state, messages)
	}
	if s := d.pool.Stat(); s.AcquiredConns() != 0 || s.NewConnsCount() != 1 {
		t.Fatalf("after two transactions: %d connections held, %d opened; want 0 and 1", s.AcquiredConns(), s.NewConnsCount())
	}
	if trips != 2 {
		return fmt.Sprintf("a worker's transaction took %d round trips, want 2", trips)
	}
	return ""
}

func TestTx_QueuedStatementsTravelWithCommit(t *testing.T) {
	t.Parallel()
	if broke := checkWorkerRoundTrips(t, false); broke != "" {
		t.Fatal(broke)
	}
}

// The broken variant: every queued statement goes out alone, as before the queue.
func TestTx_BrokenQueueSentAtOnceIsCaught(t *testing.T) {
	t.Parallel()
	if broke := checkWorkerRoundTrips(t, true); broke == "" {
		t.Fatal("queued statements sent one by one were not caught")
	}
}

// A handler reads what it queued: its statement carries the queue ahead of it.
// pgxRead reads with pgx's own transaction instead, the broken variant: a handlerTx
// whose statements bypass the queue.
func checkHandlerReadsItsQueuedWrite(t *testing.T, pgxRead bool) string {
	t.Helper()
	_, d := migrated(t)
	ctx := context.Background()
	tx, _ := d.Begin(ctx)
	defer tx.Rollback(ctx) //nolint:errcheck // the test commits nothing
	if _, err := tx.InboxInsert(ctx, receipt("evt_1")); err != nil {
		t.Fatal(err)
	}
	native := tx.Native()
	if err := d.UnwrapExecutor(native).OutboxInsertMany(ctx, []*driver.OutboxInsertParams{message("evt_1")}); err != nil {
		t.Fatal(err)
	}
	read := native
	if pgxRead {
		read = native.(*handlerTx).Tx
	}
	var n int
	if err := read.QueryRow(ctx, `SELECT count(*) FROM hookinbox_outbox`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		return fmt.Sprintf("the handler's read after its outbox message saw %d messages, want 1", n)
	}
	return ""
}

func TestTx_HandlerReadsItsQueuedWrite(t *testing.T) {
	t.Parallel()
	if broke := checkHandlerReadsItsQueuedWrite(t, false); broke != "" {
		t.Fatal(broke)
	}
}

func TestTx_BrokenReadBypassingTheQueueIsCaught(t *testing.T) {
	t.Parallel()
	if broke := checkHandlerReadsItsQueuedWrite(t, true); broke == "" {
		t.Fatal("a read that bypassed the queue was not caught")
	}
}

// checkQueuedFailureFailsTheCommit returns what broke: a queued statement that fails
// fails the commit it travelled with, with its own error; nothing of the transaction
// is committed, and the connection goes back. blind is the broken variant, a commit
// that reports success whatever its batch did: the caller would answer 2xx for a
// receipt that is not there, and the provider would never send it again.
func checkQueuedFailureFailsTheCommit(t *testing.T, blind bool) string {
	t.Helper()
	db, d := migrated(t)
	ctx := context.Background()
	db.RefuseOutboxMessagesOf(t, "evt_refused")
	tx, _ := d.Begin(ctx)
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after the failed commit
	tx.(*executorTx).blindCommit = blind
	if _, err := tx.InboxInsert(ctx, receipt("evt_refused")); err != nil {
		t.Fatal(err)
	}
	if err := d.UnwrapExecutor(tx.Native()).OutboxInsertMany(ctx, []*driver.OutboxInsertParams{message("evt_refused")}); err != nil {
		t.Fatalf("queued, yet it failed at once: %v", err)
	}
	err := tx.Commit(ctx)
	if n := d.pool.Stat().AcquiredConns(); n != 0 {
		t.Fatalf("%d connections held after the failed commit", n)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatalf("rollback after the failed commit: %v", err)
	}
	if n := countReceipts(t, db); n != 0 {
		t.Fatalf("%d receipts were committed with a refused message", n)
	}
	if err == nil || !strings.Contains(err.Error(), "error inserting outbox messages") || !strings.Contains(err.Error(), "message refused") {
		return fmt.Sprintf("commit after a refused message: %v, want the insert's error", err)
	}
	return ""
}

func TestTx_QueuedFailureFailsTheCommit(t *testing.T) {
	t.Parallel()
	if broke := checkQueuedFailureFailsTheCommit(t, false); broke != "" {
		t.Fatal(broke)
	}
}

func TestTx_BrokenBlindCommitIsCaught(t *testing.T) {
	t.Parallel()
	if broke := checkQueuedFailureFailsTheCommit(t, true); broke == "" {
		t.Fatal("a commit that reported success after its batch failed was not caught")
	}
}

// checkNothingRunsAfterTheEnd returns what broke: once a transaction committed with a
// batch, its statements and its handler's fail with pgx.ErrTxClosed instead of
// running on the connection, which is another transaction's by then (a pool of one:
// the next one's). stale is the broken variant that leaves pgx's transaction, which
// does not know it ended, in place.
func checkNothingRunsAfterTheEnd(t *testing.T, stale bool) string {
	t.Helper()
	_, d, _ := tracedDriver(t)
	ctx := context.Background()
	tx, _ := d.Begin(ctx)
	tx.(*executorTx).staleTx = stale
	if _, err := tx.InboxInsert(ctx, receipt("evt_1")); err != nil {
		t.Fatal(err)
	}
	native := tx.Native()
	if err := d.UnwrapExecutor(native).OutboxInsertMany(ctx, []*driver.OutboxInsertParams{message("evt_1")}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	next, _ := d.Begin(ctx)
	defer next.Rollback(ctx) //nolint:errcheck // the test commits nothing
	if _, err := next.Native().Exec(ctx, `SET LOCAL application_name = 'the_next_one'`); err != nil {
		t.Fatal(err)
	}
	var name string
	if err := native.QueryRow(ctx, `SELECT current_setting('application_name')`).Scan(&name); !errors.Is(err, pgx.ErrTxClosed) {
		return fmt.Sprintf("the ended transaction's handler read %q, %v; want pgx.ErrTxClosed", name, err)
	}
	if _, err := tx.InboxInsert(ctx, receipt("evt_2")); !errors.Is(err, pgx.ErrTxClosed) {
		return fmt.Sprintf("the ended transaction inserted: %v; want pgx.ErrTxClosed", err)
	}
	return ""
}

func TestTx_NothingRunsAfterTheEnd(t *testing.T) {
	t.Parallel()
	if broke := checkNothingRunsAfterTheEnd(t, false); broke != "" {
		t.Fatal(broke)
	}
}

func TestTx_BrokenStaleTxIsCaught(t *testing.T) {
	t.Parallel()
	if broke := checkNothingRunsAfterTheEnd(t, true); broke == "" {
		t.Fatal("statements of an ended transaction on another's connection were not caught")
	}
}

// checkNestedTransactionKeepsOrder returns what broke: once a handler holds a nested
// transaction, its outbox message is sent at once, inside it, so that rolling the
// nested transaction back undoes the message as it would with pgx's own. forget is
// the broken variant: the message still waits in the queue, and leaves only with
// COMMIT, after the rollback it should have been undone by.
func checkNestedTransactionKeepsOrder(t *testing.T, forget bool) string {
	t.Helper()
	db, d := migrated(t)
	ctx := context.Background()
	tx, _ := d.Begin(ctx)
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after commit
	if _, err := tx.InboxInsert(ctx, receipt("evt_1")); err != nil {
		t.Fatal(err)
	}
	native := tx.Native()
	nested, err := native.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if forget {
		native.(*handlerTx).e.handedOut = false
	}
	if err := d.UnwrapExecutor(native).OutboxInsertMany(ctx, []*driver.OutboxInsertParams{message("evt_1")}); err != nil {
		t.Fatal(err)
	}
	if err := nested.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM hookinbox_outbox`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		return fmt.Sprintf("a message written inside a nested transaction that was rolled back: %d committed, want 0", n)
	}
	return ""
}

func TestTx_NestedTransactionKeepsOrder(t *testing.T) {
	t.Parallel()
	if broke := checkNestedTransactionKeepsOrder(t, false); broke != "" {
		t.Fatal(broke)
	}
}

func TestTx_BrokenQueueUnderNestedTransactionIsCaught(t *testing.T) {
	t.Parallel()
	if broke := checkNestedTransactionKeepsOrder(t, true); broke == "" {
		t.Fatal("a message queued past a nested transaction's rollback was not caught")
	}
}
