package sqlitedriver_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver/sqlitedriver"
	"github.com/hookinbox/hookinbox/examples/billing"
	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/hookinbox/hookinbox/provider"
)

// The inbox end to end through hookinbox's public API, on SQLite, with handlers on
// *sql.Tx. The seed's cases common to every driver run in the root package's
// behaviour suite (TestConformance); what stays here is SQLite's own form of them.

const testSecret = "whsec_test_0123456789abcdef"

// The test endpoints, one per mode.
const (
	epBilling = "billing"
	epAsync   = "async"
	epHybrid  = "hybrid"
)

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
			billing.Register(inbox, ep)
		}
	}
	return inbox
}

// setupInbox is setup plus an inbox on the test's database, billing's tables when its
// handlers are registered, and a test_effects table that countingHandler writes to.
func setupInbox(t testing.TB, o inboxOpts) (*bundle, *hookinbox.Inbox[*sql.Tx]) {
	t.Helper()
	b := setup(t)
	inbox := newInbox(t, b.db, o)
	if err := inbox.Migrate(b.ctx); err != nil {
		t.Fatal(err)
	}
	if !o.noBilling {
		if err := billing.Migrate(b.ctx, sqlitedriver.New(b.db)); err != nil {
			t.Fatal(err)
		}
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

// Two workers holding the same receipt (a lease ran out mid-processing): the second
// waits at BEGIN IMMEDIATE while the first processes, then its re-check finds the
// receipt processed. The row lock of PostgreSQL's FOR UPDATE, as the database's write
// lock.
func TestWorker_SecondWorkerWaitsForTheFirstAndFindsItProcessed(t *testing.T) {
	t.Parallel()
	b, inbox := setupInbox(t, inboxOpts{noBilling: true})
	inbox.Handle(epAsync, "invoice.paid", countingHandler)
	receive(t, inbox, invoiceEvent(epAsync, "evt_1", "invoice.paid", "in_1", 1))
	k := hookinboxtype.Key{Provider: "stripe", Endpoint: epAsync, EventID: "evt_1"}

	first, err := inbox.Driver().Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := lockOne(b.ctx, first, k); err != nil || r == nil {
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
		r, err := lockOne(b.ctx, tx, k)
		if err == nil && r != nil {
			err = io.ErrShortWrite // found unprocessed: would process twice
		}
		found <- err
	}()
	if err := countingHandler(b.ctx, first.Native(), hookinbox.Event{ID: "evt_1"}); err != nil {
		t.Fatal(err)
	}
	if err := first.InboxMarkProcessed(b.ctx, []hookinboxtype.Key{k}, "processed", nil); err != nil {
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
