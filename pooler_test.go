package hookinbox_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/internal/testdb"
	"github.com/hookinbox/hookinbox/internal/testwait"
)

// These tests hold on any server; scripts/pgbouncer-test.sh runs them (and the rest of
// the suite) through PgBouncer in transaction mode, where a client connection is not
// a server session.

// otherProcessWorkers runs workers on a pool of their own (another "process") over d,
// polling every poll, and returns a stop function.
func otherProcessWorkers(t *testing.T, b *testBundle, d *pgxdriver.Driver, poll time.Duration, pollOnly bool) (*hookinbox.Inbox[pgx.Tx], func()) {
	t.Helper()
	workers := buildTestInbox(t, d, setupOpts{noBilling: true, pollOnly: pollOnly, worker: hookinbox.WorkerConfig{PollInterval: poll}})
	workers.Handle(epAsync, "invoice.created", countingHandler)
	ctx, cancel := context.WithCancel(b.ctx)
	done := make(chan struct{})
	go func() { _ = workers.Run(ctx); close(done) }()
	return workers, func() { cancel(); <-done }
}

func ownPool(t *testing.T, b *testBundle) *pgxpool.Pool {
	t.Helper()
	cfg := b.db.Config(t)
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(b.ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func receiveAsync(t *testing.T, b *testBundle, receiver *hookinbox.Inbox[pgx.Tx], n int) {
	t.Helper()
	receiver.Handle(epAsync, "invoice.created", countingHandler)
	for i := range n {
		id := fmt.Sprintf("evt_%d", i)
		if out, err := receiver.Receive(b.ctx, invoiceEvent(epAsync, id, "invoice.created", "in_"+id, 0)); err != nil || out != hookinbox.OutcomeAccepted {
			t.Fatalf("receive %s: %s, %v", id, out, err)
		}
	}
}

// With the wake off on both sides (the setting for a pooler without a direct listener
// URL), another process's workers still drain every receipt, at their polls.
func TestPooler_WorkersDrainByPollingWithWakeOff(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noBilling: true, pollOnly: true})
	_, stop := otherProcessWorkers(t, b, pgxdriver.New(ownPool(t, b)), 20*time.Millisecond, true)
	defer stop()
	const n = 20
	receiveAsync(t, b, b.inbox, n)
	testwait.Until(t, 30*time.Second, "the other process's workers to drain the receipts", func() bool {
		return b.count(t, `SELECT count(*) FROM test_effects`) == n
	})
	if left := b.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE state <> 'processed'`); left != 0 {
		t.Fatalf("%d receipts not processed", left)
	}
}

// A listener on its own direct connection (pgxdriver.Config.ListenConnConfig) wakes
// idle workers whose pool goes through a pooler: the receiver's notification, sent
// through the pooler after commit, reaches it. The workers poll once an hour, so only
// the notification can make them find the receipt.
func TestPooler_ListenerOnADirectConnectionWakesWorkers(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noBilling: true})
	d := pgxdriver.NewWithConfig(ownPool(t, b), &pgxdriver.Config{ListenConnConfig: b.db.ListenConnConfig(t)})
	workers, stop := otherProcessWorkers(t, b, d, time.Hour, false)
	defer stop()
	// Every worker claims once at start and once more when the listener listens (see
	// scenarioOtherProcessReceives): after that, only a notification makes them claim.
	testwait.Until(t, 30*time.Second, "the workers' first claims and the listener's", func() bool {
		return workers.ClaimsForTest() >= int64(workers.WorkerConcurrencyForTest()+1)
	})
	receiveAsync(t, b, b.inbox, 1)
	testwait.Until(t, 30*time.Second, "the other process's workers to be woken", func() bool { return b.effects(t, "evt_0") == 1 })
}

// The broken variant: through a pooler in transaction mode, a listener on a pool
// connection is not woken: its LISTEN ran on whichever server session the pooler
// picked for that one statement, and that session went back to the pooler's pool.
func TestBrokenPooledListener_IsNotWoken(t *testing.T) {
	if !testdb.Pooled() {
		t.Skip("needs a pooler in transaction mode (scripts/pgbouncer-test.sh)")
	}
	t.Parallel()
	b := setup(t, setupOpts{noBilling: true})
	workers, stop := otherProcessWorkers(t, b, pgxdriver.New(ownPool(t, b)), time.Hour, false)
	defer stop()
	testwait.Until(t, 30*time.Second, "the workers' first claims and the listener's", func() bool {
		return workers.ClaimsForTest() >= int64(workers.WorkerConcurrencyForTest()+1)
	})
	receiveAsync(t, b, b.inbox, 1)
	// Long enough for a notification to be heard and acted on many times over (it
	// takes milliseconds); not a measure of speed.
	testwait.Never(t, 2*time.Second, "woken through the pooler: the test cannot tell a direct listener from a pooled one",
		func() bool { return b.effects(t, "evt_0") != 0 })
}

// Why a pooled URL needs default_query_exec_mode=exec: pgx's default names a prepared
// statement on the server session it ran on, and through a pooler in transaction mode
// the next use of that name can run on another session. Here a second client holds
// the first session in a transaction, so the first client's next statement must run
// on a new one.
func TestPooler_NamedPreparedStatementsAreLostBetweenSessions(t *testing.T) {
	if !testdb.Pooled() {
		t.Skip("needs a pooler in transaction mode (scripts/pgbouncer-test.sh)")
	}
	t.Parallel()
	db := testdb.New(t, testdb.Options{MaxConns: 1})
	cfg := db.Config(t)
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheStatement // pgx's default
	ctx := context.Background()
	first, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close(ctx)
	second, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close(ctx)
	const q = `SELECT $1::int + 1`
	var n int
	if err := first.QueryRow(ctx, q, 1).Scan(&n); err != nil {
		t.Fatal(err)
	}
	tx, err := second.Begin(ctx) // takes the idle session that prepared q
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // only holds the session
	if _, err := tx.Exec(ctx, `SELECT 1`); err != nil {
		t.Fatal(err)
	}
	err = first.QueryRow(ctx, q, 1).Scan(&n)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "26000" { // invalid_sql_statement_name
		t.Fatalf("named statement on another session: %v, want prepared statement does not exist (26000)", err)
	}
	// The mode the pooled tests (and a pooled serve) use runs the same statement.
	if err := first.QueryRow(ctx, q, pgx.QueryExecModeExec, 1).Scan(&n); err != nil || n != 2 {
		t.Fatalf("QueryExecModeExec: %d, %v", n, err)
	}
}
