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
	waitFor(t, "the held statement to run on the server", func() bool {
		var n int
		return db.Pool.QueryRow(ctx, `SELECT count(*) FROM other WHERE id = 'held'`).Scan(&n) == nil && n == 1
	})
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

// A late claim: the answer of a claim that took work (SKIP LOCKED, rows returned) is
// held while the claim is already done on the server; a claim that took nothing is
// answered at once and leaves the arm for the next. A late result: the statement that
// records a delivery's result is held on its way, so the server does not have it while
// it is held. The hold is made longer than the test; closing the proxy ends it.
func TestProxy_HoldsALateClaimsAnswerAndALateResultOnItsWay(t *testing.T) {
	t.Parallel()
	p, db, connect := proxied(t)
	p.LateHold = time.Hour
	ctx := t.Context()
	if _, err := db.Pool.Exec(ctx, `CREATE TABLE work (id int PRIMARY KEY, claimed bool NOT NULL DEFAULT false);
		INSERT INTO work VALUES (1); CREATE TABLE hookinbox_delivery (outbox_id bigint)`); err != nil {
		t.Fatal(err)
	}
	const claim = `UPDATE work SET claimed = true WHERE id IN (SELECT id FROM work WHERE id = $1 FOR UPDATE SKIP LOCKED) RETURNING id`
	c := connect(t)
	p.ArmLateClaim()
	if err := c.QueryRow(ctx, claim, 2).Scan(new(int)); !errors.Is(err, pgx.ErrNoRows) {
		t.Fatalf("a claim that took nothing: %v, want no rows at once", err)
	}
	done := make(chan error, 1)
	go func() { done <- c.QueryRow(ctx, claim, 1).Scan(new(int)) }()
	waitFor(t, "the held claim to be done on the server", func() bool {
		var claimed bool
		return db.Pool.QueryRow(ctx, `SELECT claimed FROM work WHERE id = 1`).Scan(&claimed) == nil && claimed
	})
	waitFor(t, "the held claim to be counted", func() bool { return p.LateClaims() == 1 })
	select {
	case err := <-done:
		t.Fatalf("the client heard of its claim while it was held: %v", err)
	default:
	}

	r := connect(t)
	p.ArmLateResult()
	result := make(chan error, 1)
	go func() {
		_, err := r.Exec(ctx, `INSERT INTO hookinbox_delivery VALUES ($1)`, 7)
		result <- err
	}()
	waitFor(t, "the result to be held", func() bool { return p.LateResults() == 1 })
	p.Close()
	if err := <-result; err == nil {
		t.Fatal("the held result was answered")
	}
	if err := <-done; err == nil {
		t.Fatal("the held claim was answered")
	}
	var n int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM hookinbox_delivery`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the held result reached the server: %d rows, %v", n, err)
	}
}

// waitFor polls cond until it holds, failing the test after 30 s: a bound for a hang,
// not a speed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
