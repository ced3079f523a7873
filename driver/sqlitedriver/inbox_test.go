package sqlitedriver_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/billing"
	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/driver/sqlitedriver"
	"github.com/hookinbox/hookinbox/provider"
)

// The inbox end to end through hookinbox's public API, on SQLite, with handlers on
// *sql.Tx.

const testSecret = "whsec_test_0123456789abcdef"

// The test endpoints, one per mode.
const (
	epBilling = "billing"
	epAsync   = "async"
	epHybrid  = "hybrid"
)

// driverClaim is the claim a worker of the test inboxes makes (with MaxAttempts 3).
var driverClaim = driver.InboxClaimParams{Endpoints: []string{epAsync, epHybrid}, Lease: time.Minute, MaxAttempts: 3}

type inboxOpts struct {
	worker hookinbox.WorkerConfig
	// noBilling leaves handlers unregistered, for tests that register their own.
	noBilling bool
}

// newInbox returns an inbox with the test endpoints on db. Several may share one file,
// as several processes would.
func newInbox(t testing.TB, db *sql.DB, o inboxOpts) *hookinbox.Inbox[*sql.Tx] {
	t.Helper()
	v, err := provider.NewStripe(provider.StripeConfig{Secrets: []string{testSecret}})
	if err != nil {
		t.Fatal(err)
	}
	if o.worker.RetryDelayFunc == nil {
		o.worker.RetryDelayFunc = func(int) time.Duration { return 0 }
	}
	if o.worker.PollInterval == 0 {
		o.worker.PollInterval = 10 * time.Millisecond
	}
	inbox, err := hookinbox.New(sqlitedriver.New(db), &hookinbox.Config{
		Endpoints: []hookinbox.EndpointConfig{
			{Name: epBilling, Verifier: v, Mode: hookinbox.ModeSync},
			{Name: epAsync, Verifier: v, Mode: hookinbox.ModeAsync},
			{Name: epHybrid, Verifier: v, Mode: hookinbox.ModeHybrid},
		},
		Worker: o.worker,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if !o.noBilling {
		for _, ep := range []string{epBilling, epAsync, epHybrid} {
			billing.RegisterSQL(inbox, ep)
		}
	}
	return inbox
}

// setupInbox is setup plus an inbox on the test's database and a test_effects table
// that countingHandler writes to.
func setupInbox(t testing.TB, o inboxOpts) (*bundle, *hookinbox.Inbox[*sql.Tx]) {
	t.Helper()
	b := setup(t)
	inbox := newInbox(t, b.db, o)
	if err := inbox.Migrate(b.ctx); err != nil {
		t.Fatal(err)
	}
	b.exec(t, `CREATE TABLE test_effects (id INTEGER PRIMARY KEY, event_id TEXT NOT NULL) STRICT`)
	return b, inbox
}

func countingHandler(ctx context.Context, tx *sql.Tx, ev hookinbox.Event) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO test_effects (event_id) VALUES (?1)`, ev.ID)
	return err
}

// invoiceEvent builds a Stripe event whose data.object is an invoice.
func invoiceEvent(endpoint, id, typ, invoiceID string, amount int64) hookinbox.Event {
	payload, _ := json.Marshal(map[string]any{
		"id": id, "object": "event", "type": typ, "created": 1700000000,
		"data": map[string]any{"object": map[string]any{
			"id": invoiceID, "object": "invoice", "customer": "cus_1",
			"status": "open", "amount_paid": amount, "currency": "eur",
		}},
	})
	return hookinbox.Event{Endpoint: endpoint, ID: id, Type: typ, Payload: payload}
}

func receive(t *testing.T, inbox *hookinbox.Inbox[*sql.Tx], ev hookinbox.Event) hookinbox.Outcome {
	t.Helper()
	out, err := inbox.Receive(context.Background(), ev)
	if err != nil {
		t.Fatalf("Receive(%s %s): %v", ev.Endpoint, ev.ID, err)
	}
	return out
}

func (b *bundle) receipt(t *testing.T, endpoint, id string) *hookinbox.Receipt {
	t.Helper()
	return b.get(t, hookinbox.Key{Provider: "stripe", Endpoint: endpoint, EventID: id})
}

// runUntilProcessed runs the inboxes' workers until nothing is unprocessed, then stops
// them. The deadline only ends a hung test; nothing is asserted about time.
func runUntilProcessed(t *testing.T, b *bundle, inboxes ...*hookinbox.Inbox[*sql.Tx]) {
	t.Helper()
	ctx, cancel := context.WithCancel(b.ctx)
	var wg sync.WaitGroup
	for _, inbox := range inboxes {
		wg.Go(func() { _ = inbox.Run(ctx) })
	}
	defer func() { cancel(); wg.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for b.count(t, `SELECT count(*) FROM webhook_inbox WHERE processed_at IS NULL`) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("receipts still unprocessed after 60 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// G3 on SQLite: once the receipt and its business update are committed, every copy
// is a duplicate that writes nothing.
func TestReceive_SameEventTwiceProcessedThenDuplicate(t *testing.T) {
	t.Parallel()
	b, inbox := setupInbox(t, inboxOpts{})
	ev := invoiceEvent(epBilling, "evt_1", billing.TypeInvoicePaid, "in_1", 1500)
	if got := receive(t, inbox, ev); got != hookinbox.OutcomeProcessed {
		t.Fatalf("first: %s, want processed", got)
	}
	if got := receive(t, inbox, ev); got != hookinbox.OutcomeDuplicate {
		t.Fatalf("second: %s, want duplicate", got)
	}
	if n := b.count(t, `SELECT count(*) FROM ledger_entries WHERE invoice_id = 'in_1' AND amount = 1500`); n != 1 {
		t.Fatalf("ledger rows %d, want 1", n)
	}
	if n := b.count(t, `SELECT count(*) FROM outbox WHERE aggregate_id = 'in_1' AND source_event_id = 'evt_1'`); n != 1 {
		t.Fatalf("outbox rows %d, want 1", n)
	}
	if r := b.receipt(t, epBilling, "evt_1"); r.ProcessedAt == nil || r.Outcome != "processed" || r.Attempts != 0 {
		t.Fatalf("receipt %+v", r)
	}
}

// G4 on SQLite: eight copies, each from its own *sql.DB on the file (eight
// processes), released together. BEGIN IMMEDIATE queues them: one processes, and each
// of the others finds its receipt.
func TestReceive_ConcurrentCopiesFromEightProcessesProcessOnce(t *testing.T) {
	t.Parallel()
	b, _ := setupInbox(t, inboxOpts{})
	ev := invoiceEvent(epBilling, "evt_1", billing.TypeInvoicePaid, "in_1", 1500)
	var start, wg sync.WaitGroup
	start.Add(1)
	outcomes := make(chan hookinbox.Outcome, 8)
	errs := make(chan error, 8)
	for range 8 {
		inbox := newInbox(t, b.process(t), inboxOpts{})
		wg.Go(func() {
			start.Wait()
			out, err := inbox.Receive(b.ctx, ev)
			if err != nil {
				errs <- err
				return
			}
			outcomes <- out
		})
	}
	start.Done()
	wg.Wait()
	close(outcomes)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	counts := map[hookinbox.Outcome]int{}
	for out := range outcomes {
		counts[out]++
	}
	if counts[hookinbox.OutcomeProcessed] != 1 || counts[hookinbox.OutcomeDuplicate] != 7 {
		t.Fatalf("outcomes %v, want 1 processed and 7 duplicate", counts)
	}
	if n := b.count(t, `SELECT count(*) FROM ledger_entries`); n != 1 {
		t.Fatalf("ledger rows %d, want 1", n)
	}
}

// G2 on SQLite: a handler failure rolls back the receipt with the business writes the
// handler had made, so the provider's retry is processed normally.
func TestReceive_HandlerFailureLeavesNothingAndRedeliveryIsProcessed(t *testing.T) {
	t.Parallel()
	b, inbox := setupInbox(t, inboxOpts{noBilling: true})
	paid := billing.HandlersSQL(inbox)[billing.TypeInvoicePaid]
	fail := true
	inbox.Handle(epBilling, billing.TypeInvoicePaid, func(ctx context.Context, tx *sql.Tx, ev hookinbox.Event) error {
		if err := paid(ctx, tx, ev); err != nil {
			return err
		}
		if fail {
			return io.ErrUnexpectedEOF // after the invoice, ledger and outbox writes
		}
		return nil
	})
	ev := invoiceEvent(epBilling, "evt_1", billing.TypeInvoicePaid, "in_1", 1500)
	if _, err := inbox.Receive(b.ctx, ev); err == nil {
		t.Fatal("Receive succeeded, want the handler's failure")
	}
	for _, table := range []string{"webhook_inbox", "invoices", "ledger_entries", "outbox"} {
		if n := b.count(t, `SELECT count(*) FROM `+table); n != 0 {
			t.Fatalf("%s has %d rows after the failure, want 0", table, n)
		}
	}
	fail = false
	if got := receive(t, inbox, ev); got != hookinbox.OutcomeProcessed {
		t.Fatalf("redelivery: %s, want processed", got)
	}
	if n := b.count(t, `SELECT count(*) FROM ledger_entries`); n != 1 {
		t.Fatalf("ledger rows %d, want 1", n)
	}
}

// Hybrid on SQLite: the failed attempt is kept for the workers, who process it.
func TestReceive_HybridFailureKeptForWorkers(t *testing.T) {
	t.Parallel()
	b, inbox := setupInbox(t, inboxOpts{noBilling: true})
	var mu sync.Mutex
	fail := true
	inbox.Handle(epHybrid, "invoice.paid", func(ctx context.Context, tx *sql.Tx, ev hookinbox.Event) error {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			return io.ErrUnexpectedEOF
		}
		return countingHandler(ctx, tx, ev)
	})
	if got := receive(t, inbox, invoiceEvent(epHybrid, "evt_1", "invoice.paid", "in_1", 1)); got != hookinbox.OutcomeAccepted {
		t.Fatalf("receive: %s, want accepted", got)
	}
	if r := b.receipt(t, epHybrid, "evt_1"); r.Attempts != 1 || r.LastError == "" || r.ProcessedAt != nil {
		t.Fatalf("after the failed sync attempt: %+v", r)
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	runUntilProcessed(t, b, inbox)
	if r := b.receipt(t, epHybrid, "evt_1"); r.Attempts != 2 || r.LastError != "" || r.Outcome != "processed" {
		t.Fatalf("after the worker: %+v", r)
	}
	if n := b.count(t, `SELECT count(*) FROM test_effects`); n != 1 {
		t.Fatalf("effects %d, want 1", n)
	}
}

// G7 on SQLite: fifty receipts, four worker processes each with its own *sql.DB and
// one worker: every receipt is processed once, at its first attempt.
func TestWorker_FiftyReceiptsFourProcessesOnceEach(t *testing.T) {
	t.Parallel()
	b, inbox := setupInbox(t, inboxOpts{noBilling: true})
	inbox.Handle(epAsync, "invoice.paid", countingHandler)
	for i := range 50 {
		ev := invoiceEvent(epAsync, "evt_"+string(rune('A'+i/26))+string(rune('a'+i%26)), "invoice.paid", "in_1", 1)
		if got := receive(t, inbox, ev); got != hookinbox.OutcomeAccepted {
			t.Fatalf("receive: %s", got)
		}
	}
	var workers []*hookinbox.Inbox[*sql.Tx]
	for range 4 {
		w := newInbox(t, b.process(t), inboxOpts{noBilling: true, worker: hookinbox.WorkerConfig{Concurrency: 1}})
		w.Handle(epAsync, "invoice.paid", countingHandler)
		workers = append(workers, w)
	}
	runUntilProcessed(t, b, workers...)

	if n := b.count(t, `SELECT count(*) FROM test_effects`); n != 50 {
		t.Fatalf("effects %d, want 50", n)
	}
	if n := b.count(t, `SELECT count(DISTINCT event_id) FROM test_effects`); n != 50 {
		t.Fatalf("distinct effects %d, want 50", n)
	}
	if n := b.count(t, `SELECT count(*) FROM webhook_inbox WHERE attempts <> 1 OR outcome <> 'processed'`); n != 0 {
		t.Fatalf("%d receipts not processed at their first attempt", n)
	}
}

// G7's other half: a worker that dies after its claim still spends the attempt. Three
// such crashes with MaxAttempts 3 leave the receipt for a person; Retry hands it back
// to the workers.
func TestWorker_CrashAfterClaimThreeTimesNeedsReviewThenRetryProcesses(t *testing.T) {
	t.Parallel()
	b, inbox := setupInbox(t, inboxOpts{noBilling: true, worker: hookinbox.WorkerConfig{MaxAttempts: 3}})
	inbox.Handle(epAsync, "invoice.paid", countingHandler)
	receive(t, inbox, invoiceEvent(epAsync, "evt_1", "invoice.paid", "in_1", 1))

	// What the worker's claim does; the "crash" is not processing after it.
	claim := func() *hookinbox.Receipt {
		r, err := inbox.Driver().Executor().InboxClaim(b.ctx, &driverClaim)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for attempt := 1; attempt <= 3; attempt++ {
		r := claim()
		if r == nil || r.Attempts != attempt {
			t.Fatalf("claim %d: %+v", attempt, r)
		}
		b.exec(t, `UPDATE webhook_inbox SET available_at = 0`) // the lease runs out
	}
	if r := claim(); r != nil {
		t.Fatalf("claimed at max attempts: %+v", r)
	}
	list, err := inbox.ListReceipts(b.ctx, hookinbox.ListParams{NeedsReview: true})
	if err != nil || len(list) != 1 || list[0].EventID != "evt_1" {
		t.Fatalf("needs review: %+v %v", list, err)
	}
	if s, err := inbox.Stats(b.ctx); err != nil || s.NeedsReview != 1 || s.Unprocessed != 1 {
		t.Fatalf("stats %+v %v", s, err)
	}

	if ok, err := inbox.Retry(b.ctx, list[0].Key); err != nil || !ok {
		t.Fatalf("Retry: %v %v", ok, err)
	}
	runUntilProcessed(t, b, inbox)
	if r := b.receipt(t, epAsync, "evt_1"); r.Attempts != 1 || r.Outcome != "processed" {
		t.Fatalf("after retry: %+v", r)
	}
	if n := b.count(t, `SELECT count(*) FROM test_effects`); n != 1 {
		t.Fatalf("effects %d, want 1", n)
	}
}

// A worker whose lease ran out while another worker completed the receipt finds it
// processed when it locks it, and does nothing.
func TestWorker_LeaseExpiredOriginalDoesNothing(t *testing.T) {
	t.Parallel()
	b, inbox := setupInbox(t, inboxOpts{noBilling: true})
	inbox.Handle(epAsync, "invoice.paid", countingHandler)
	receive(t, inbox, invoiceEvent(epAsync, "evt_1", "invoice.paid", "in_1", 1))
	d := inbox.Driver()

	original, err := d.Executor().InboxClaim(b.ctx, &driverClaim)
	if err != nil || original == nil {
		t.Fatalf("claim: %+v %v", original, err)
	}
	b.exec(t, `UPDATE webhook_inbox SET available_at = 0`) // the original's lease runs out
	other := newInbox(t, b.process(t), inboxOpts{noBilling: true})
	other.Handle(epAsync, "invoice.paid", countingHandler)
	runUntilProcessed(t, b, other)

	// The original resumes, as the worker's process step does.
	tx, err := d.Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(b.ctx) //nolint:errcheck
	if r, err := tx.InboxLockUnprocessed(b.ctx, original.Key); err != nil || r != nil {
		t.Fatalf("original's re-check: %+v %v, want nil (processed)", r, err)
	}
	if r := b.receipt(t, epAsync, "evt_1"); r.Attempts != 2 || r.Outcome != "processed" {
		t.Fatalf("receipt %+v", r)
	}
	if n := b.count(t, `SELECT count(*) FROM test_effects`); n != 1 {
		t.Fatalf("effects %d, want 1", n)
	}
}

// Two workers holding the same receipt (a lease ran out mid-processing): the second
// waits at BEGIN IMMEDIATE while the first processes, then its re-check finds the
// receipt processed. The row lock of PostgreSQL's FOR UPDATE, as the database's write
// lock.
func TestWorker_SecondWorkerWaitsForTheFirstAndFindsItProcessed(t *testing.T) {
	t.Parallel()
	b, inbox := setupInbox(t, inboxOpts{noBilling: true})
	inbox.Handle(epAsync, "invoice.paid", countingHandler)
	receive(t, inbox, invoiceEvent(epAsync, "evt_1", "invoice.paid", "in_1", 1))
	k := hookinbox.Key{Provider: "stripe", Endpoint: epAsync, EventID: "evt_1"}

	first, err := inbox.Driver().Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := first.InboxLockUnprocessed(b.ctx, k); err != nil || r == nil {
		t.Fatalf("first worker's lock: %+v %v", r, err)
	}
	second := sqlitedriver.New(b.process(t))
	found := make(chan error, 1)
	go func() {
		tx, err := second.Begin(b.ctx) // waits for the first's transaction
		if err != nil {
			found <- err
			return
		}
		defer tx.Rollback(b.ctx) //nolint:errcheck
		r, err := tx.InboxLockUnprocessed(b.ctx, k)
		if err == nil && r != nil {
			err = io.ErrShortWrite // found unprocessed: would process twice
		}
		found <- err
	}()
	if err := countingHandler(b.ctx, first.Native(), hookinbox.Event{ID: "evt_1"}); err != nil {
		t.Fatal(err)
	}
	if err := first.InboxMarkProcessed(b.ctx, k, "processed"); err != nil {
		t.Fatal(err)
	}
	if err := first.Commit(b.ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-found; err != nil {
		t.Fatalf("second worker: %v, want the receipt found processed", err)
	}
	if n := b.count(t, `SELECT count(*) FROM test_effects`); n != 1 {
		t.Fatalf("effects %d, want 1", n)
	}
}
