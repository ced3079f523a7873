package hookinbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/examples/billing"
	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/hookinbox/hookinbox/internal/testdb"
	"github.com/hookinbox/hookinbox/provider"
)

const testSecret = "whsec_test_0123456789abcdef"

// testBundle is one test's world: its own schema, an inbox on it, and the pieces a test
// needs to look at the database.
type testBundle struct {
	db    *testdb.DB
	inbox *hookinbox.Inbox[pgx.Tx]
	ctx   context.Context
}

type setupOpts struct {
	worker hookinbox.WorkerConfig
	accept hookinbox.GroupConfig
	sync   hookinbox.GroupConfig
	// noBilling leaves handlers unregistered, for tests that register their own.
	noBilling bool
	// logs, when set, receives the inbox's log lines too.
	logs *lockedBuffer
	// pollOnly turns off waking other processes.
	pollOnly bool
	// tracer, when set, receives the inbox's spans.
	tracer trace.TracerProvider
	// observer, when set, is the inbox's Observer.
	observer hookinbox.Observer
}

// The test endpoints: one per mode, plus a second sync endpoint to show that the
// endpoint is part of the key.
const (
	epBilling   = "billing"
	epAnalytics = "analytics"
	epAsync     = "async"
	epHybrid    = "hybrid"
)

func setup(t *testing.T, opts ...setupOpts) *testBundle {
	t.Helper()
	return setupTB(t, opts...)
}

// setupBench is setup for a benchmark: the counting handler on every endpoint.
func setupBench(b *testing.B) *testBundle {
	tb := setupTB(b, setupOpts{noBilling: true})
	for _, ep := range []string{epBilling, epAnalytics, epAsync, epHybrid} {
		tb.inbox.Handle(ep, "invoice.paid", countingHandler)
	}
	return tb
}

func setupTB(t testing.TB, opts ...setupOpts) *testBundle {
	t.Helper()
	var o setupOpts
	if len(opts) > 0 {
		o = opts[0]
	}
	db := testdb.New(t, testdb.Options{MaxConns: 12})
	ctx := context.Background()
	inbox := newTestInbox(t, db.Pool, o)
	if err := inbox.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := billing.Migrate(ctx, pgxdriver.New(db.Pool)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `CREATE TABLE test_effects (id bigint GENERATED ALWAYS AS IDENTITY, event_id text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return &testBundle{db: db, inbox: inbox, ctx: ctx}
}

// newTestInbox returns an inbox with the four test endpoints on pool. Several may share
// one schema, as several processes would.
func newTestInbox(t testing.TB, pool *pgxpool.Pool, o setupOpts) *hookinbox.Inbox[pgx.Tx] {
	t.Helper()
	return buildTestInbox(t, pgxdriver.New(pool), o)
}

// buildTestInbox returns an inbox on d with the four test endpoints (one per mode, and a
// second sync one), no retry delay, a short poll, and, unless o.noBilling, the billing
// handlers of handlers on every endpoint. Both the PostgreSQL tests and the behaviour
// suite build their inboxes here.
func buildTestInbox[TTx any](t testing.TB, d driver.Driver[TTx], o setupOpts) *hookinbox.Inbox[TTx] {
	t.Helper()
	v, err := provider.NewStripe(provider.StripeConfig{Secrets: []string{testSecret}})
	if err != nil {
		t.Fatal(err)
	}
	if o.worker.RetryDelayFunc == nil {
		o.worker.RetryDelayFunc = func(int) time.Duration { return 0 }
	}
	if o.worker.PollInterval == 0 {
		o.worker.PollInterval = 20 * time.Millisecond
	}
	inbox, err := hookinbox.New(d, &hookinbox.Config{
		Endpoints: []hookinbox.EndpointConfig{
			{Name: epBilling, Verifier: v, Mode: hookinbox.ModeSync},
			{Name: epAnalytics, Verifier: v, Mode: hookinbox.ModeSync},
			{Name: epAsync, Verifier: v, Mode: hookinbox.ModeAsync},
			{Name: epHybrid, Verifier: v, Mode: hookinbox.ModeHybrid},
		},
		Worker:   o.worker,
		Accept:   o.accept,
		Sync:     o.sync,
		PollOnly: o.pollOnly,
		Logger:   testLoggerTo(t, o.logs),

		TracerProvider: o.tracer,
		Observer:       o.observer,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !o.noBilling {
		for _, ep := range []string{epBilling, epAnalytics, epAsync, epHybrid} {
			for typ, fn := range billing.Handlers[TTx]() {
				inbox.Handle(ep, typ, fn)
			}
		}
	}
	return inbox
}

// invoiceEvent builds a Stripe event whose data.object is an invoice.
func invoiceEvent(endpoint, id, typ, invoiceID string, amount int64) hookinbox.Event {
	payload, _ := json.Marshal(map[string]any{
		"id": id, "object": "event", "type": typ, "created": 1700000000,
		"data": map[string]any{"object": map[string]any{
			"id": invoiceID, "object": "invoice", "customer": "cus_1",
			"status": "open", "amount_paid": amount, "currency": "eur",
			"description": payloadMarker,
		}},
	})
	return hookinbox.Event{Endpoint: endpoint, ID: id, Type: typ, Payload: payload}
}

func (b *testBundle) receive(t *testing.T, ev hookinbox.Event) hookinbox.Outcome {
	t.Helper()
	out, err := b.inbox.Receive(b.ctx, ev)
	if err != nil {
		t.Fatalf("Receive(%s %s): %v", ev.Endpoint, ev.ID, err)
	}
	return out
}

func (b *testBundle) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := b.db.Pool.QueryRow(b.ctx, query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func (b *testBundle) ledgerRows(t *testing.T) int {
	return b.count(t, `SELECT count(*) FROM ledger_entries`)
}

func (b *testBundle) receipt(t *testing.T, endpoint, eventID string) *hookinboxtype.Receipt {
	t.Helper()
	r, err := b.inbox.Operator().GetReceipt(b.ctx, hookinboxtype.Key{Provider: "stripe", Endpoint: endpoint, EventID: eventID})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// tableCounts counts every table hookinbox and billing write, to show that something
// wrote nothing.
func (b *testBundle) tableCounts(t *testing.T) string {
	t.Helper()
	s := ""
	for _, table := range []string{"hookinbox_inbox", "invoices", "ledger_entries", "hookinbox_outbox", "billing_anomalies", "test_effects"} {
		s += fmt.Sprintf("%s=%d ", table, b.count(t, "SELECT count(*) FROM "+table))
	}
	return s
}

// countingHandler records each application in test_effects, which has no unique key:
// only the inbox stands between an event and a second row.
func countingHandler(ctx context.Context, tx pgx.Tx, ev hookinbox.Event) error {
	_, err := tx.Exec(ctx, `INSERT INTO test_effects (event_id) VALUES ($1)`, ev.ID)
	return err
}

func (b *testBundle) effects(t *testing.T, eventID string) int {
	return b.count(t, `SELECT count(*) FROM test_effects WHERE event_id = $1`, eventID)
}

// payloadMarker is in every test payload; testLogger fails the test if it reaches a
// log line, as would the secret.
const payloadMarker = "PAYLOAD-MARKER-never-logged"

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testLogger logs as JSON to a buffer that is checked when the test ends: no secret
// and no payload may appear in any line.
func testLogger(t testing.TB) *slog.Logger { return testLoggerTo(t, nil) }

// testLoggerTo is testLogger writing to buf, for a test that reads its logs.
func testLoggerTo(t testing.TB, buf *lockedBuffer) *slog.Logger {
	if buf == nil {
		buf = &lockedBuffer{}
	}
	t.Cleanup(func() {
		logs := buf.String()
		for _, forbidden := range []string{testSecret, payloadMarker} {
			if strings.Contains(logs, forbidden) {
				t.Errorf("logs contain %q:\n%s", forbidden, logs)
			}
		}
		if testing.Verbose() && logs != "" {
			t.Logf("logs:\n%s", logs)
		}
	})
	return slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
