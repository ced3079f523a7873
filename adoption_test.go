package hookinbox_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/hookinbox/hookinbox/internal/testdb"
	"github.com/hookinbox/hookinbox/outbox"
	"github.com/hookinbox/hookinbox/provider"
)

// An existing service with its own invoices, outbox and webhook_inbox tables adopts
// hookinbox: it migrates, receives, processes and uses the outbox, and its own tables
// keep exactly their rows and columns.
func TestAdoption_ApplicationTablesOfTheSameNamesAreUntouched(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	mustExec := func(sql string) { t.Helper(); mustExecOn(t, db, sql) }
	// The application's schema, as it was before hookinbox.
	mustExec(`CREATE TABLE invoices (number bigint PRIMARY KEY, paid boolean NOT NULL DEFAULT false)`)
	mustExec(`CREATE TABLE outbox (topic text NOT NULL, body text NOT NULL)`)
	mustExec(`CREATE TABLE webhook_inbox (source text NOT NULL, raw text NOT NULL)`)
	mustExec(`INSERT INTO invoices (number) VALUES (1001)`)
	mustExec(`INSERT INTO outbox VALUES ('mail', 'hello')`)
	mustExec(`INSERT INTO webhook_inbox VALUES ('legacy', '{}')`)
	snapshot := func() string {
		var s string
		if err := db.Pool.QueryRow(ctx, `
SELECT (SELECT string_agg(table_name || '.' || column_name || ':' || data_type, ',' ORDER BY table_name, column_name)
          FROM information_schema.columns
         WHERE table_schema = current_schema() AND table_name IN ('invoices', 'outbox', 'webhook_inbox'))
       || (SELECT string_agg(number || ':' || paid, ',') FROM invoices WHERE number <> 1002)
       || (SELECT string_agg(topic || ':' || body, ',') FROM outbox)
       || (SELECT string_agg(source || ':' || raw, ',') FROM webhook_inbox)`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := snapshot()

	v, err := provider.NewStripe(provider.StripeConfig{Secrets: []string{testSecret}})
	if err != nil {
		t.Fatal(err)
	}
	inbox, err := hookinbox.New(pgxdriver.New(db.Pool), &hookinbox.Config{
		Endpoints: []hookinbox.EndpointConfig{{Name: "billing", Verifier: v}},
		Logger:    testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := inbox.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	inbox.Handle("billing", "invoice.paid", func(ctx context.Context, tx pgx.Tx, ev hookinbox.Event) error {
		// The application's own table, in the receipt's transaction.
		if _, err := tx.Exec(ctx, `INSERT INTO invoices (number, paid) VALUES (1002, true) ON CONFLICT (number) DO UPDATE SET paid = true`); err != nil {
			return err
		}
		_, err := hookinbox.InsertOutboxTx[*pgxdriver.Driver](ctx, tx, ev, hookinbox.OutboxMessage{
			AggregateType: "Invoice", AggregateID: "1002", EventType: "InvoicePaid", Payload: map[string]any{"n": 1002},
		})
		return err
	})
	ev := invoiceEvent("billing", "evt_adopt", "invoice.paid", "in_1002", 500)
	for want := range []hookinbox.Outcome{hookinbox.OutcomeProcessed, hookinbox.OutcomeDuplicate} {
		out, err := inbox.Receive(ctx, ev)
		if err != nil || out != []hookinbox.Outcome{hookinbox.OutcomeProcessed, hookinbox.OutcomeDuplicate}[want] {
			t.Fatalf("delivery %d: %s, %v", want+1, out, err)
		}
	}

	var mu sync.Mutex
	var delivered []string
	d, err := outbox.NewDispatcher(pgxdriver.New(db.Pool).Executor(), &outbox.Config{
		DefaultSink: "app",
		Sinks: map[string]outbox.Sink{"app": outbox.SinkFunc(func(_ context.Context, m *hookinboxtype.OutboxMessage) error {
			mu.Lock()
			defer mu.Unlock()
			delivered = append(delivered, m.EventType+" "+m.AggregateID)
			return nil
		})},
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := d.DispatchOnce(ctx); err != nil || n != 1 {
		t.Fatalf("DispatchOnce: %d, %v", n, err)
	}
	if len(delivered) != 1 || delivered[0] != "InvoicePaid 1002" {
		t.Fatalf("delivered %v", delivered)
	}
	if after := snapshot(); after != before {
		t.Fatalf("the application's tables changed:\nbefore %s\nafter  %s", before, after)
	}
	var paid bool
	if err := db.Pool.QueryRow(ctx, `SELECT paid FROM invoices WHERE number = 1002`).Scan(&paid); err != nil || !paid {
		t.Fatalf("the handler's own write: paid=%v, %v", paid, err)
	}
}

// A database at schema version 2 (the released schema with unprefixed names, applied
// from the migrations of that release) migrates forward with its receipts, and a
// retry of an event received before the upgrade is still a duplicate through Receive.
func TestAdoption_SchemaV2DatabaseKeepsAnsweringDuplicates(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	mustExec := func(sql string) { t.Helper(); mustExecOn(t, db, sql) }
	mustExec(`CREATE TABLE hookinbox_migration (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`)
	for _, name := range []string{"001_inbox.sql", "002_outbox_dispatch.sql"} {
		sql, err := os.ReadFile(filepath.Join("driver", "pgxdriver", "testdata", "schema_v2", name))
		if err != nil {
			t.Fatal(err)
		}
		mustExec(string(sql))
	}
	mustExec(`INSERT INTO hookinbox_migration (version, name) VALUES (1, 'inbox'), (2, 'outbox_dispatch')`)

	b := &testBundle{db: db, ctx: ctx}
	old := newTestInbox(t, db.Pool, setupOpts{noBilling: true})
	old.Handle(epBilling, "invoice.paid", countingHandler)
	// A receipt and an effect as the version-2 release wrote them.
	mustExec(`CREATE TABLE test_effects (id bigint GENERATED ALWAYS AS IDENTITY, event_id text NOT NULL)`)
	ev := invoiceEvent(epBilling, "evt_before_upgrade", "invoice.paid", "in_1", 100)
	mustExec(`INSERT INTO webhook_inbox (provider, endpoint, event_id, event_type, payload, processed_at, outcome)
VALUES ('stripe', 'billing', 'evt_before_upgrade', 'invoice.paid', '{}', now(), 'processed')`)
	mustExec(`INSERT INTO test_effects (event_id) VALUES ('evt_before_upgrade')`)

	if err := old.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if out, err := old.Receive(ctx, ev); err != nil || out != hookinbox.OutcomeDuplicate {
		t.Fatalf("retry of an event received before the upgrade: %s, %v; want duplicate", out, err)
	}
	if n := b.effects(t, "evt_before_upgrade"); n != 1 {
		t.Fatalf("effects %d, want 1: the retry must not apply again", n)
	}
	if out, err := old.Receive(ctx, invoiceEvent(epBilling, "evt_after_upgrade", "invoice.paid", "in_2", 100)); err != nil || out != hookinbox.OutcomeProcessed {
		t.Fatalf("a new event after the upgrade: %s, %v", out, err)
	}
}

func mustExecOn(t *testing.T, db *testdb.DB, sql string) {
	t.Helper()
	if _, err := db.Pool.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
