package chaos

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/testdb"
)

// proxied connects to the test schema through a new proxy to the test server.
func proxied(t *testing.T) (*Proxy, *testdb.DB, func(t *testing.T) *pgx.Conn) {
	t.Helper()
	if testdb.Pooled() {
		t.Skip("the proxy follows one server connection per client connection")
	}
	db := testdb.New(t)
	u, err := url.Parse(testdb.DirectURL())
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Name: "test", Target: u.Host, PG: true}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	q := u.Query()
	q.Set("search_path", db.Schema)
	q.Set("sslmode", "disable")
	u.Host, u.RawQuery = p.Addr(), q.Encode()
	connect := func(t *testing.T) *pgx.Conn {
		t.Helper()
		c, err := pgx.Connect(t.Context(), u.String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		return c
	}
	if _, err := db.Pool.Exec(t.Context(), `CREATE TABLE hookinbox_inbox (id text PRIMARY KEY); CREATE TABLE other (id text)`); err != nil {
		t.Fatal(err)
	}
	return p, db, connect
}

// A COMMIT cut: the transaction that wrote a receipt commits on the server, and its
// client's COMMIT fails (the connection is reset before the answer); the cut names
// the server process. A transaction that did not write a receipt, one that failed
// and one that only wrote elsewhere pass untouched while the receiving cut is armed;
// an armed cut of any writing transaction takes the next of those. Without the arm,
// nothing is cut: the broken variant of the cut is a proxy that never arms.
func TestProxy_CutsTheCommitAnswerOfAReceivingTransaction(t *testing.T) {
	t.Parallel()
	p, db, connect := proxied(t)
	ctx := t.Context()
	c := connect(t)
	var pid int32
	if err := c.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}

	p.ArmCut(true)
	// Not receiving: writes elsewhere, in a transaction and alone.
	if err := pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO other VALUES ('a')`)
		return err
	}); err != nil {
		t.Fatalf("a transaction without a receipt: %v", err)
	}
	if _, err := c.Exec(ctx, `INSERT INTO other VALUES ($1)`, "b"); err != nil {
		t.Fatalf("an autocommit insert elsewhere: %v", err)
	}
	// Receiving but failing: its COMMIT answers ROLLBACK, passed on.
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO hookinbox_inbox VALUES ('x')`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1/0`); err == nil {
		t.Fatal("division by zero succeeded")
	}
	if err := tx.Commit(ctx); !errors.Is(err, pgx.ErrTxCommitRollback) {
		t.Fatalf("commit of a failed transaction = %v, want %v", err, pgx.ErrTxCommitRollback)
	}
	if len(p.Cuts()) != 0 {
		t.Fatalf("cut before a receiving transaction committed: %+v", p.Cuts())
	}

	before := time.Now()
	tx, err = c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO hookinbox_inbox VALUES ($1)`, "evt_1"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err == nil {
		t.Fatal("the COMMIT whose answer was cut succeeded")
	}
	var n int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM hookinbox_inbox WHERE id = 'evt_1'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the cut transaction's receipt: %d rows, %v; want 1 (it committed)", n, err)
	}
	cuts := p.Cuts()
	if len(cuts) != 1 || cuts[0].PID != pid || !cuts[0].Receiving || cuts[0].TxStart.Before(before) || cuts[0].At.Before(cuts[0].TxStart) {
		t.Fatalf("cuts = %+v, want one receiving cut of pid %d after %s", cuts, pid, before)
	}

	// The next connection carries on; an autocommit receipt insert commits at its
	// Sync, and an armed cut of any writing transaction takes it.
	c2 := connect(t)
	p.ArmCut(false)
	if _, err := c2.Exec(ctx, `INSERT INTO hookinbox_inbox VALUES ($1)`, "evt_2"); err == nil {
		t.Fatal("the autocommit insert whose answer was cut succeeded")
	}
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM hookinbox_inbox WHERE id = 'evt_2'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the cut insert: %d rows, %v; want 1", n, err)
	}
	if cuts := p.Cuts(); len(cuts) != 2 || cuts[1].Receiving {
		t.Fatalf("cuts = %+v, want a second one, of any transaction", cuts)
	}
	c3 := connect(t)
	if _, err := c3.Exec(ctx, `INSERT INTO hookinbox_inbox VALUES ($1)`, "evt_3"); err != nil {
		t.Fatalf("with no cut armed: %v", err)
	}
}

// A blackhole holds the answers while PostgreSQL executes what it receives: the
// statement is done on the server before the client hears of it, and the answer
// arrives, in order, once released. A reset ends the connection on both sides.
func TestProxy_HoldsAnswersThenLetsThemThroughAndResets(t *testing.T) {
	t.Parallel()
	p, db, connect := proxied(t)
	ctx := t.Context()
	c := connect(t)
	p.Hold(true)
	done := make(chan error, 1)
	go func() {
		_, err := c.Exec(ctx, `INSERT INTO other VALUES ('held')`)
		done <- err
	}()
	// Wait on the state asserted: the row is there while the client still waits.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM other WHERE id = 'held'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the held statement never ran on the server")
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("the client heard the answer during the hold: %v", err)
	default:
	}
	p.Release()
	if err := <-done; err != nil {
		t.Fatalf("after the release: %v", err)
	}
	if n := p.Reset(5, rand.New(rand.NewPCG(1, 1))); n != 1 {
		t.Fatalf("reset %d connections, want 1", n)
	}
	if _, err := c.Exec(ctx, `SELECT 1`); err == nil {
		t.Fatal("the reset connection still works")
	}
}
