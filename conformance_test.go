package hookinbox_test

// The behaviour suite run against every driver, as River runs riverdrivertest against
// each of its drivers: the seed's cases that do not depend on how a database shows its
// lock waits. Cases that do (a copy seen waiting in pg_stat_activity, the broken
// variants built from PostgreSQL row locks) stay in the PostgreSQL-only files beside
// this one; the SQLite driver's own tests cover its form of them (a second writer
// waits at BEGIN IMMEDIATE).

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/driver/sqlitedriver"
	"github.com/hookinbox/hookinbox/examples/billing"
	"github.com/hookinbox/hookinbox/internal/testdb"
	"github.com/hookinbox/hookinbox/internal/testwait"
)

// harness opens a fresh, migrated database for one test and knows the driver's dialect
// for the few statements a test runs itself.
type harness[TTx any] struct {
	name string
	open func(t *testing.T) *world[TTx]
}

// world is one test's database: inboxes on it are processes, each with connections of
// its own.
type world[TTx any] struct {
	ctx context.Context
	// newDriver opens a driver with at most maxConns connections of its own.
	newDriver func(t *testing.T, maxConns int) driver.Driver[TTx]
	// count runs a query that returns one number.
	count func(t *testing.T, query string) int
	// exec runs a statement outside any inbox.
	exec func(t *testing.T, query string)
	// expireLeases makes every leased receipt claimable now.
	expireLeases string
	// effect is the counting handler: one row in test_effects per application, and no
	// unique key, so only the inbox stands between an event and a second row.
	effect hookinbox.HandlerFunc[TTx]
	// sleep is a handler statement that runs until its context ends.
	sleep string
}

func (w *world[TTx]) inbox(t *testing.T, maxConns int, o setupOpts) *hookinbox.Inbox[TTx] {
	t.Helper()
	return buildTestInbox(t, w.newDriver(t, maxConns), o)
}

var postgresHarness = harness[pgx.Tx]{name: "postgres", open: func(t *testing.T) *world[pgx.Tx] {
	db := testdb.New(t, testdb.Options{MaxConns: 4})
	ctx := context.Background()
	if err := pgxdriver.New(db.Pool).Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := billing.Migrate(ctx, pgxdriver.New(db.Pool)); err != nil {
		t.Fatal(err)
	}
	w := &world[pgx.Tx]{
		ctx: ctx,
		newDriver: func(t *testing.T, maxConns int) driver.Driver[pgx.Tx] {
			cfg := db.Config(t)
			cfg.MaxConns = int32(maxConns)
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(pool.Close)
			return pgxdriver.New(pool)
		},
		count: func(t *testing.T, query string) int {
			var n int
			if err := db.Pool.QueryRow(ctx, query).Scan(&n); err != nil {
				t.Fatalf("%s: %v", query, err)
			}
			return n
		},
		exec: func(t *testing.T, query string) {
			if _, err := db.Pool.Exec(ctx, query); err != nil {
				t.Fatalf("%s: %v", query, err)
			}
		},
		expireLeases: `UPDATE hookinbox_inbox SET available_at = now() WHERE state = 'pending'`,
		effect:       countingHandler,
		sleep:        `SELECT pg_sleep(30)`,
	}
	w.exec(t, `CREATE TABLE test_effects (id bigint GENERATED ALWAYS AS IDENTITY, event_id text NOT NULL)`)
	return w
}}

var sqliteHarness = harness[*sql.Tx]{name: "sqlite", open: func(t *testing.T) *world[*sql.Tx] {
	path := filepath.Join(t.TempDir(), "hookinbox.db")
	ctx := context.Background()
	openDB := func(t *testing.T, maxConns int) *sql.DB {
		db, err := sqlitedriver.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(maxConns)
		t.Cleanup(func() { _ = db.Close() })
		return db
	}
	main := openDB(t, 4)
	if err := sqlitedriver.New(main).Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := billing.Migrate(ctx, sqlitedriver.New(main)); err != nil {
		t.Fatal(err)
	}
	w := &world[*sql.Tx]{
		ctx:       ctx,
		newDriver: func(t *testing.T, maxConns int) driver.Driver[*sql.Tx] { return sqlitedriver.New(openDB(t, maxConns)) },
		count: func(t *testing.T, query string) int {
			var n int
			if err := main.QueryRowContext(ctx, query).Scan(&n); err != nil {
				t.Fatalf("%s: %v", query, err)
			}
			return n
		},
		exec: func(t *testing.T, query string) {
			if _, err := main.ExecContext(ctx, query); err != nil {
				t.Fatalf("%s: %v", query, err)
			}
		},
		expireLeases: `UPDATE hookinbox_inbox SET available_at = 0 WHERE state = 'pending'`,
		effect: func(ctx context.Context, tx *sql.Tx, ev hookinbox.Event) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO test_effects (event_id) VALUES (?1)`, ev.ID)
			return err
		},
		sleep: `WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r`,
	}
	w.exec(t, `CREATE TABLE test_effects (id INTEGER PRIMARY KEY, event_id TEXT NOT NULL)`)
	return w
}}

func TestConformance(t *testing.T) {
	t.Parallel()
	t.Run("postgres", func(t *testing.T) { t.Parallel(); exercise(t, postgresHarness) })
	t.Run("sqlite", func(t *testing.T) { t.Parallel(); exercise(t, sqliteHarness) })
}

func exercise[TTx any](t *testing.T, h harness[TTx]) {
	for _, c := range []struct {
		name string
		fn   func(t *testing.T, w *world[TTx])
	}{
		{"SameEventTwiceProcessesOnce", conformSameEventTwice[TTx]},
		{"ConcurrentCopiesFromEightProcessesProcessOnce", conformConcurrentCopies[TTx]},
		{"HandlerFailureLeavesNothing", conformHandlerFailureLeavesNothing[TTx]},
		{"OrderAndSecondEventObjectsConverge", conformConverge[TTx]},
		{"PaymentForVoidInvoiceBooksNothing", conformVoid[TTx]},
		{"SameEventOnTwoEndpointsBothProcessed", conformTwoEndpoints[TTx]},
		{"UnknownTypeIgnoredAndKept", conformIgnored[TTx]},
		{"WorkerFailureRecordedThenProcessed", conformWorkerFailure[TTx]},
		{"FiftyReceiptsFourProcessesOnceEach", conformFiftyFour[TTx]},
		{"CrashAfterClaimStopsAtMaxAttempts", conformMaxAttempts[TTx]},
		{"ExpiredLeaseOriginalDoesNothing", conformExpiredLease[TTx]},
		{"ProcessingPastItsDeadlineIsATimeout", conformTimeout[TTx]},
		{"HybridFailureAcceptedThenProcessedOnce", conformHybrid[TTx]},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, h.open(t))
		})
	}
}

func mustReceive[TTx any](t *testing.T, inbox *hookinbox.Inbox[TTx], ev hookinbox.Event) hookinbox.Outcome {
	t.Helper()
	out, err := inbox.Receive(context.Background(), ev)
	if err != nil {
		t.Fatalf("Receive(%s %s): %v", ev.Endpoint, ev.ID, err)
	}
	return out
}

func conformSameEventTwice[TTx any](t *testing.T, w *world[TTx]) {
	inbox := w.inbox(t, 4, setupOpts{})
	ev := invoiceEvent(epBilling, "evt_1", "invoice.paid", "in_1", 1000)
	if a, b := mustReceive(t, inbox, ev), mustReceive(t, inbox, ev); a != hookinbox.OutcomeProcessed || b != hookinbox.OutcomeDuplicate {
		t.Fatalf("outcomes %s, %s; want processed, duplicate", a, b)
	}
	if n := w.count(t, `SELECT count(*) FROM ledger_entries`); n != 1 {
		t.Fatalf("ledger rows %d, want 1", n)
	}
}

func conformConcurrentCopies[TTx any](t *testing.T, w *world[TTx]) {
	ev := invoiceEvent(epBilling, "evt_1", "invoice.paid", "in_1", 1000)
	var inboxes []*hookinbox.Inbox[TTx]
	for range 8 {
		inboxes = append(inboxes, w.inbox(t, 1, setupOpts{}))
	}
	var start, wg sync.WaitGroup
	var mu sync.Mutex
	counts := map[hookinbox.Outcome]int{}
	start.Add(1)
	for _, inbox := range inboxes {
		wg.Go(func() {
			start.Wait()
			out, err := inbox.Receive(w.ctx, ev)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			counts[out]++
			mu.Unlock()
		})
	}
	start.Done()
	wg.Wait()
	if counts[hookinbox.OutcomeProcessed] != 1 || counts[hookinbox.OutcomeDuplicate] != 7 {
		t.Fatalf("outcomes %v, want 1 processed and 7 duplicate", counts)
	}
	if n := w.count(t, `SELECT count(*) FROM ledger_entries`); n != 1 {
		t.Fatalf("ledger rows %d, want 1", n)
	}
}

func conformHandlerFailureLeavesNothing[TTx any](t *testing.T, w *world[TTx]) {
	inbox := w.inbox(t, 4, setupOpts{noBilling: true})
	var fail atomic.Bool
	fail.Store(true)
	inbox.Handle(epBilling, "invoice.paid", func(ctx context.Context, tx TTx, ev hookinbox.Event) error {
		if err := w.effect(ctx, tx, ev); err != nil {
			return err
		}
		if fail.Swap(false) {
			return errors.New("injected failure after the business write")
		}
		return nil
	})
	ev := invoiceEvent(epBilling, "evt_1", "invoice.paid", "in_1", 1000)
	var herr *hookinbox.HandlerError
	if _, err := inbox.Receive(w.ctx, ev); !errors.As(err, &herr) {
		t.Fatalf("first delivery: %v, want a HandlerError", err)
	}
	if n := w.count(t, `SELECT (SELECT count(*) FROM hookinbox_inbox) + (SELECT count(*) FROM test_effects)`); n != 0 {
		t.Fatalf("%d rows left by a failed delivery", n)
	}
	if got := mustReceive(t, inbox, ev); got != hookinbox.OutcomeProcessed {
		t.Fatalf("redelivery: %s", got)
	}
	if n := w.count(t, `SELECT count(*) FROM test_effects`); n != 1 {
		t.Fatalf("effects %d, want 1", n)
	}
}

// Seed cases 5 and 6: every order of one invoice's events, and one payment under three
// Event objects, end paid with one ledger row and one outbox message.
func conformConverge[TTx any](t *testing.T, w *world[TTx]) {
	inbox := w.inbox(t, 4, setupOpts{})
	for _, ev := range []hookinbox.Event{
		invoiceEvent(epBilling, "evt_A", "invoice.paid", "in_1", 1000),
		invoiceEvent(epBilling, "evt_fin", "invoice.finalized", "in_1", 0),
		invoiceEvent(epBilling, "evt_B", "invoice.payment_succeeded", "in_1", 1000),
		invoiceEvent(epBilling, "evt_created", "invoice.created", "in_1", 0),
		invoiceEvent(epBilling, "evt_C", "invoice.paid", "in_1", 1000),
	} {
		mustReceive(t, inbox, ev)
	}
	if n := w.count(t, `SELECT count(*) FROM invoices WHERE id = 'in_1' AND status = 'paid'`); n != 1 {
		t.Fatal("invoice is not paid")
	}
	if n := w.count(t, `SELECT count(*) FROM ledger_entries`); n != 1 {
		t.Fatalf("ledger rows %d, want 1", n)
	}
	if n := w.count(t, `SELECT count(*) FROM hookinbox_outbox`); n != 1 {
		t.Fatalf("outbox rows %d, want 1", n)
	}
}

func conformVoid[TTx any](t *testing.T, w *world[TTx]) {
	inbox := w.inbox(t, 4, setupOpts{})
	mustReceive(t, inbox, invoiceEvent(epBilling, "evt_created", "invoice.created", "in_1", 0))
	mustReceive(t, inbox, invoiceEvent(epBilling, "evt_void", "invoice.voided", "in_1", 0))
	mustReceive(t, inbox, invoiceEvent(epBilling, "evt_paid", "invoice.paid", "in_1", 1000))
	if n := w.count(t, `SELECT (SELECT count(*) FROM ledger_entries) + (SELECT count(*) FROM hookinbox_outbox)`); n != 0 {
		t.Fatalf("%d ledger or outbox rows for a void invoice", n)
	}
	a, err := billing.NewStore(w.newDriver(t, 1)).Anomalies(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 1 || a[0].Kind != billing.AnomalyPaymentForVoidInvoice {
		t.Fatalf("anomalies %+v", a)
	}
}

func conformTwoEndpoints[TTx any](t *testing.T, w *world[TTx]) {
	inbox := w.inbox(t, 4, setupOpts{noBilling: true})
	for _, ep := range []string{epBilling, epAnalytics} {
		inbox.Handle(ep, "invoice.paid", w.effect)
	}
	for _, ep := range []string{epBilling, epAnalytics} {
		if got := mustReceive(t, inbox, invoiceEvent(ep, "evt_1", "invoice.paid", "in_1", 1)); got != hookinbox.OutcomeProcessed {
			t.Fatalf("%s: %s", ep, got)
		}
	}
	if n := w.count(t, `SELECT count(*) FROM test_effects`); n != 2 {
		t.Fatalf("effects %d, want 2", n)
	}
}

func conformIgnored[TTx any](t *testing.T, w *world[TTx]) {
	inbox := w.inbox(t, 4, setupOpts{})
	ev := invoiceEvent(epAsync, "evt_1", "customer.created", "in_1", 0)
	if a, b := mustReceive(t, inbox, ev), mustReceive(t, inbox, ev); a != hookinbox.OutcomeIgnored || b != hookinbox.OutcomeDuplicate {
		t.Fatalf("outcomes %s, %s; want ignored, duplicate", a, b)
	}
	if n := w.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE processed_at IS NOT NULL AND outcome = 'ignored'`); n != 1 {
		t.Fatal("the ignored receipt is not kept as processed")
	}
}

// runWorkers runs inboxes' workers until nothing is unprocessed.
func runWorkers[TTx any](t *testing.T, w *world[TTx], inboxes ...*hookinbox.Inbox[TTx]) {
	t.Helper()
	ctx, cancel := context.WithCancel(w.ctx)
	var wg sync.WaitGroup
	for _, inbox := range inboxes {
		wg.Go(func() { _ = inbox.Run(ctx) })
	}
	defer func() { cancel(); wg.Wait() }()
	testwait.For(t, 60*time.Second, "every receipt processed", func() (bool, error) {
		n := w.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE processed_at IS NULL`)
		return n == 0, fmt.Errorf("%d receipts still unprocessed", n)
	})
}

func conformWorkerFailure[TTx any](t *testing.T, w *world[TTx]) {
	inbox := w.inbox(t, 4, setupOpts{noBilling: true})
	var fail atomic.Bool
	fail.Store(true)
	inbox.Handle(epAsync, "invoice.paid", func(ctx context.Context, tx TTx, ev hookinbox.Event) error {
		if fail.Load() {
			return errors.New("downstream table locked")
		}
		return w.effect(ctx, tx, ev)
	})
	mustReceive(t, inbox, invoiceEvent(epAsync, "evt_1", "invoice.paid", "in_1", 1))
	r, err := inbox.ClaimForTest(w.ctx, epAsync)
	if err != nil || r == nil {
		t.Fatalf("claim: %v %v", r, err)
	}
	if err := inbox.ProcessClaimedForTest(w.ctx, r); err == nil {
		t.Fatal("processing succeeded, want the injected failure")
	}
	if n := w.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE attempts = 1 AND last_error LIKE '%downstream table locked%' AND processed_at IS NULL`); n != 1 {
		t.Fatal("the failure was not recorded with attempts=1")
	}
	fail.Store(false)
	runWorkers(t, w, inbox)
	if n := w.count(t, `SELECT count(*) FROM test_effects`); n != 1 {
		t.Fatalf("effects %d, want 1", n)
	}
}

func conformFiftyFour[TTx any](t *testing.T, w *world[TTx]) {
	first := w.inbox(t, 4, setupOpts{noBilling: true})
	first.Handle(epAsync, "invoice.paid", w.effect)
	for i := range 50 {
		mustReceive(t, first, invoiceEvent(epAsync, fmt.Sprintf("evt_%02d", i), "invoice.paid", "in_1", 1))
	}
	var workers []*hookinbox.Inbox[TTx]
	for range 4 {
		inbox := w.inbox(t, 1, setupOpts{noBilling: true, worker: hookinbox.WorkerConfig{Concurrency: 1}})
		inbox.Handle(epAsync, "invoice.paid", w.effect)
		workers = append(workers, inbox)
	}
	runWorkers(t, w, workers...)
	if n := w.count(t, `SELECT count(DISTINCT event_id) FROM test_effects`); n != 50 {
		t.Fatalf("distinct effects %d, want 50", n)
	}
	if n := w.count(t, `SELECT count(*) FROM test_effects`); n != 50 {
		t.Fatalf("effects %d, want 50", n)
	}
	if n := w.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE attempts <> 1`); n != 0 {
		t.Fatalf("%d receipts with other than one attempt", n)
	}
}

func conformMaxAttempts[TTx any](t *testing.T, w *world[TTx]) {
	inbox := w.inbox(t, 4, setupOpts{noBilling: true, worker: hookinbox.WorkerConfig{MaxAttempts: 3}})
	inbox.Handle(epAsync, "invoice.paid", w.effect)
	mustReceive(t, inbox, invoiceEvent(epAsync, "evt_1", "invoice.paid", "in_1", 1))
	for i := range 3 {
		if r, err := inbox.ClaimForTest(w.ctx, epAsync); err != nil || r == nil {
			t.Fatalf("claim %d: %v %v", i+1, r, err)
		}
		w.exec(t, w.expireLeases) // the worker died; its lease runs out
	}
	if r, err := inbox.ClaimForTest(w.ctx, epAsync); err != nil || r != nil {
		t.Fatalf("a fourth claim: %v %v, want nothing", r, err)
	}
	if s, err := inbox.Operator().Stats(w.ctx); err != nil || s.NeedsReview != 1 {
		t.Fatalf("stats %+v %v, want 1 needing review", s, err)
	}
	if n, err := inbox.Operator().RetryNeedsReview(w.ctx); err != nil || n != 1 {
		t.Fatalf("RetryNeedsReview: %d %v", n, err)
	}
	runWorkers(t, w, inbox)
	if n := w.count(t, `SELECT count(*) FROM test_effects`); n != 1 {
		t.Fatalf("effects %d, want 1", n)
	}
}

func conformExpiredLease[TTx any](t *testing.T, w *world[TTx]) {
	inbox := w.inbox(t, 4, setupOpts{noBilling: true})
	inbox.Handle(epAsync, "invoice.paid", w.effect)
	mustReceive(t, inbox, invoiceEvent(epAsync, "evt_1", "invoice.paid", "in_1", 1))
	stale, err := inbox.ClaimForTest(w.ctx, epAsync)
	if err != nil || stale == nil {
		t.Fatal(err)
	}
	w.exec(t, w.expireLeases)
	fresh, err := inbox.ClaimForTest(w.ctx, epAsync)
	if err != nil || fresh == nil {
		t.Fatal("no second claim after the lease ran out")
	}
	if err := inbox.ProcessClaimedForTest(w.ctx, fresh); err != nil {
		t.Fatal(err)
	}
	if err := inbox.ProcessClaimedForTest(w.ctx, stale); !errors.Is(err, hookinbox.ErrAlreadyProcessed) {
		t.Fatalf("the stale worker: %v, want already processed", err)
	}
	if n := w.count(t, `SELECT count(*) FROM test_effects`); n != 1 {
		t.Fatalf("effects %d, want 1", n)
	}
}

// Seed case 16. PostgreSQL cancels the statement at statement_timeout; SQLite has no
// statement timeout, and the processing deadline (the lease) interrupts it instead.
// Either way the attempt is recorded as a timeout and the receipt stays unprocessed.
func conformTimeout[TTx any](t *testing.T, w *world[TTx]) {
	inbox := w.inbox(t, 4, setupOpts{noBilling: true, worker: hookinbox.WorkerConfig{
		Lease: 400 * time.Millisecond, StatementTimeout: 100 * time.Millisecond,
	}})
	sleep := w.sleep
	inbox.Handle(epAsync, "invoice.paid", func(ctx context.Context, tx TTx, ev hookinbox.Event) error {
		if err := w.effect(ctx, tx, ev); err != nil {
			return err
		}
		return execIn(ctx, tx, sleep)
	})
	mustReceive(t, inbox, invoiceEvent(epAsync, "evt_1", "invoice.paid", "in_1", 1))
	r, err := inbox.ClaimForTest(w.ctx, epAsync)
	if err != nil || r == nil {
		t.Fatal(err)
	}
	if err := inbox.ProcessClaimedForTest(w.ctx, r); !errors.Is(err, driver.ErrStatementTimeout) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("processing: %v, want a timeout", err)
	}
	if n := w.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE processed_at IS NULL AND attempts = 1 AND last_error LIKE 'timeout%'`); n != 1 {
		t.Fatal("the timeout was not recorded")
	}
	if n := w.count(t, `SELECT count(*) FROM test_effects`); n != 0 {
		t.Fatalf("effects %d, want 0 (rolled back)", n)
	}
}

// execIn runs a statement on a handler's transaction, whichever driver it is.
func execIn(ctx context.Context, tx any, query string) error {
	switch tx := tx.(type) {
	case pgx.Tx:
		_, err := tx.Exec(ctx, query)
		return err
	case *sql.Tx:
		_, err := tx.ExecContext(ctx, query)
		return err
	}
	return fmt.Errorf("unknown transaction type %T", tx)
}

func conformHybrid[TTx any](t *testing.T, w *world[TTx]) {
	inbox := w.inbox(t, 4, setupOpts{noBilling: true})
	var fail atomic.Bool
	fail.Store(true)
	inbox.Handle(epHybrid, "invoice.paid", func(ctx context.Context, tx TTx, ev hookinbox.Event) error {
		if err := w.effect(ctx, tx, ev); err != nil {
			return err
		}
		if fail.Load() {
			return errors.New("bug in handler")
		}
		return nil
	})
	ev := invoiceEvent(epHybrid, "evt_1", "invoice.paid", "in_1", 1)
	if got := mustReceive(t, inbox, ev); got != hookinbox.OutcomeAccepted {
		t.Fatalf("receive: %s, want accepted", got)
	}
	if n := w.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE attempts = 1 AND last_error LIKE '%bug in handler%'`); n != 1 {
		t.Fatal("the pending receipt does not carry the failure")
	}
	if n := w.count(t, `SELECT count(*) FROM test_effects`); n != 0 {
		t.Fatal("the failed sync attempt left its write")
	}
	fail.Store(false)
	runWorkers(t, w, inbox)
	if n := w.count(t, `SELECT count(*) FROM test_effects`); n != 1 {
		t.Fatalf("effects %d, want 1", n)
	}
}
