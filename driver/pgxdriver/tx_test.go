package pgxdriver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/hookinbox/hookinbox/internal/testdb"
)

// The transaction that begins with its first statement (tx.go), against its promise:
// the same transaction as an eager BEGIN, sent sooner.

func migrated(t *testing.T) (*testdb.DB, *Driver) {
	t.Helper()
	db := testdb.New(t, testdb.Options{MaxConns: 4})
	d := New(db.Pool)
	if err := d.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return db, d
}

func receipt(id string) *driver.InboxInsertParams {
	return &driver.InboxInsertParams{Key: hookinboxtype.Key{Provider: "stripe", Endpoint: "ep", EventID: id},
		EventType: "invoice.paid", Payload: []byte(`{}`), MaxAttempts: 3}
}

func countReceipts(t *testing.T, db *testdb.DB) int {
	t.Helper()
	var n int
	if err := db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM hookinbox_inbox`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// beginFunc begins a transaction: the driver's, or the broken one below.
type beginFunc func(d *Driver) driver.ExecutorTx[pgx.Tx]

func beginReal(d *Driver) driver.ExecutorTx[pgx.Tx] {
	tx, _ := d.Begin(context.Background())
	return tx
}

// beginForgotten is the broken variant: the first statement goes out without the
// BEGIN it should carry, so it commits on its own, whatever the transaction does next.
func beginForgotten(d *Driver) driver.ExecutorTx[pgx.Tx] {
	e := newExecutorTx(d.pool)
	e.executor = executor{db: d.pool}
	return e
}

// checkRollbackUndoesTheFirstStatement returns what broke: the first statement and a
// handler's write through Native both belong to the transaction.
func checkRollbackUndoesTheFirstStatement(t *testing.T, begin beginFunc) string {
	t.Helper()
	db, d := migrated(t)
	ctx := context.Background()
	tx := begin(d)
	if _, err := tx.InboxInsert(ctx, receipt("evt_1")); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Native().Exec(ctx, `INSERT INTO hookinbox_inbox (provider, endpoint, event_id, event_type, payload)
VALUES ('stripe', 'ep', 'evt_2', 't', '{}')`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countReceipts(t, db); n != 0 {
		return fmt.Sprintf("rolled back, yet %d receipts stayed", n)
	}
	return ""
}

func TestTx_RollbackUndoesTheFirstStatement(t *testing.T) {
	t.Parallel()
	if broke := checkRollbackUndoesTheFirstStatement(t, beginReal); broke != "" {
		t.Fatal(broke)
	}
}

func TestBrokenTxWithoutBegin_CommitsTheFirstStatement(t *testing.T) {
	t.Parallel()
	if broke := checkRollbackUndoesTheFirstStatement(t, beginForgotten); broke == "" {
		t.Fatal("the transaction without BEGIN was not caught")
	}
}

// A statement timeout queued before the first statement bounds it, and stays inside
// the transaction: the connection goes back to the pool without it.
func TestTx_StatementTimeoutIsLocalAndBoundsTheFirstStatement(t *testing.T) {
	t.Parallel()
	db, d := migrated(t)
	ctx := context.Background()
	tx, _ := d.Begin(ctx)
	if err := tx.SetStatementTimeout(ctx, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	var timeout string
	if err := tx.Native().QueryRow(ctx, `SHOW statement_timeout`).Scan(&timeout); err != nil || timeout != "50ms" {
		t.Fatalf("statement_timeout in the transaction: %q, %v", timeout, err)
	}
	_, err := tx.Native().Exec(ctx, `SELECT pg_sleep(5)`)
	if err == nil || !strings.Contains(err.Error(), "statement timeout") {
		t.Fatalf("a statement past the timeout: %v", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// Every connection of the pool, one after another, has the server's default.
	for range db.Pool.Stat().TotalConns() + 1 {
		if err := db.Pool.QueryRow(ctx, `SHOW statement_timeout`).Scan(&timeout); err != nil || timeout != "0" {
			t.Fatalf("statement_timeout after the transaction: %q, %v", timeout, err)
		}
	}
	// Queued, then the first statement pipelined behind it.
	tx, _ = d.Begin(ctx)
	_ = tx.SetStatementTimeout(ctx, 50*time.Millisecond)
	if _, err := tx.InboxLockUnprocessed(ctx, []hookinboxtype.Key{{Provider: "stripe", Endpoint: "ep", EventID: "none"}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Native().QueryRow(ctx, `SHOW statement_timeout`).Scan(&timeout); err != nil || timeout != "50ms" {
		t.Fatalf("statement_timeout sent with the first statement: %q, %v", timeout, err)
	}
	_ = tx.Rollback(ctx)
}

// A transaction that sent nothing commits nothing and takes no connection; one whose
// first statement failed is rolled back and gives its connection back.
func TestTx_NothingSentAndFirstStatementFailed(t *testing.T) {
	t.Parallel()
	db, d := migrated(t)
	ctx := context.Background()
	tx, _ := d.Begin(ctx)
	if n := db.Pool.Stat().AcquiredConns(); n != 0 {
		t.Fatalf("%d connections held before any statement", n)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("commit of an empty transaction: %v", err)
	}
	tx, _ = d.Begin(ctx)
	bad := receipt("evt_bad")
	bad.Payload = []byte(`{`)
	if _, err := tx.InboxInsert(ctx, bad); !errors.Is(err, driver.ErrInvalidInput) {
		t.Fatalf("invalid payload as the first statement: %v, want ErrInvalidInput", err)
	}
	if _, err := tx.InboxInsert(ctx, receipt("evt_after")); err == nil {
		t.Fatal("a statement after the failure ran in an aborted transaction")
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n := db.Pool.Stat().AcquiredConns(); n != 0 {
		t.Fatalf("%d connections still held after the rollback", n)
	}
	var none string
	tx, _ = d.Begin(ctx)
	if err := tx.Native().QueryRow(ctx, `SELECT event_id FROM hookinbox_inbox WHERE false`).Scan(&none); !errors.Is(err, pgx.ErrNoRows) {
		t.Fatalf("no row: %v", err)
	}
	_ = tx.Rollback(ctx)
}
