package pgxdriver_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/examples/billing"
	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/hookinbox/hookinbox/internal/testdb"
)

// applySchemaV2 builds a database as hookinbox left it at schema version 2, the last
// with unprefixed names: the migrations of that release, kept in testdata, recorded in
// hookinbox_migration as that release's Migrate did.
func applySchemaV2(t *testing.T, db *testdb.DB) {
	t.Helper()
	exec(t, db, `CREATE TABLE hookinbox_migration (
    version    integer     PRIMARY KEY,
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now())`)
	for _, name := range []string{"001_inbox.sql", "002_outbox_dispatch.sql"} {
		sql, err := os.ReadFile(filepath.Join("testdata", "schema_v2", name))
		if err != nil {
			t.Fatal(err)
		}
		exec(t, db, string(sql))
	}
	exec(t, db, `INSERT INTO hookinbox_migration (version, name) VALUES (1, 'inbox'), (2, 'outbox_dispatch')`)
}

func exec(t *testing.T, db *testdb.DB, sql string, args ...any) {
	t.Helper()
	if _, err := db.Pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func count(t *testing.T, db *testdb.DB, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := db.Pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// A database at schema version 2 migrates forward in place: every row is kept under
// the prefixed names with the state it had, the sequences go on from where they were,
// a retry of an event received before the upgrade is still a duplicate, and the
// billing tables stay for billing's own migrations to adopt.
func TestMigrate_UpgradesSchemaV2InPlace(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	applySchemaV2(t, db)
	exec(t, db, `INSERT INTO webhook_inbox (provider, endpoint, event_id, event_type, payload, processed_at, outcome, attempts)
VALUES ('stripe', 'billing', 'evt_done', 'invoice.paid', '{}', now(), 'processed', 0),
       ('stripe', 'billing', 'evt_pending', 'invoice.paid', '{}', NULL, NULL, 2),
       ('stripe', 'billing', 'evt_exhausted', 'invoice.paid', '{}', NULL, NULL, 10)`)
	exec(t, db, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, source_provider, source_endpoint, source_event_id, published_at)
VALUES ('Invoice', 'in_1', 'InvoicePaymentBooked', '{}', 'stripe', 'billing', 'evt_done', now()),
       ('Invoice', 'in_2', 'InvoicePaymentBooked', '{}', 'stripe', 'billing', 'evt_pending', NULL)`)
	exec(t, db, `SELECT nextval('outbox_claim_token_seq') FROM generate_series(1, 5)`)
	exec(t, db, `INSERT INTO effects (key, state, token, lease_until, result) VALUES ('webhook:evt_done:refund', 'done', 3, now(), '\x7b7d')`)
	exec(t, db, `INSERT INTO invoices (id, customer_id, status) VALUES ('in_1', 'cus_1', 'paid')`)

	d := pgxdriver.New(db.Pool)
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if applied, latest, err := d.SchemaVersion(ctx); err != nil || applied != latest || latest < 3 {
		t.Fatalf("after upgrade: applied=%d latest=%d err=%v", applied, latest, err)
	}
	for _, old := range []string{"webhook_inbox", "outbox", "effects", "outbox_claim_token_seq", "outbox_id_seq"} {
		if n := count(t, db, `SELECT count(*) FROM pg_class WHERE relname = $1 AND relnamespace = current_schema()::regnamespace`, old); n != 0 {
			t.Errorf("%s still exists after the upgrade", old)
		}
	}
	for key, want := range map[string]hookinboxtype.State{"evt_done": "processed", "evt_pending": "pending", "evt_exhausted": "needs_review"} {
		r, err := d.Executor().InboxGet(ctx, hookinboxtype.Key{Provider: "stripe", Endpoint: "billing", EventID: key})
		if err != nil || r == nil {
			t.Fatalf("%s after the upgrade: %v, %v", key, r, err)
		}
		if r.State != want {
			t.Errorf("%s: state %q, want %q", key, r.State, want)
		}
	}
	inserted, err := d.Executor().InboxInsert(ctx, &driver.InboxInsertParams{
		Key: hookinboxtype.Key{Provider: "stripe", Endpoint: "billing", EventID: "evt_done"}, EventType: "invoice.paid",
		Payload: []byte(`{}`), Processed: true, Outcome: "processed", MaxAttempts: 10,
	})
	if err != nil || inserted {
		t.Fatalf("retry of a receipt from before the upgrade: inserted=%v err=%v, want a duplicate", inserted, err)
	}
	if n := count(t, db, `SELECT count(*) FROM hookinbox_outbox WHERE state = 'pending'`); n != 1 {
		t.Errorf("pending outbox messages after the upgrade: %d, want 1", n)
	}
	id, err := d.Executor().OutboxInsert(ctx, &driver.OutboxInsertParams{
		AggregateType: "Invoice", AggregateID: "in_3", EventType: "x", Payload: []byte(`{}`),
		Source: hookinboxtype.Key{Provider: "stripe", Endpoint: "billing", EventID: "evt_new"},
	})
	if err != nil || id != 3 {
		t.Fatalf("first outbox id after the upgrade: %d (%v), want 3: the identity goes on", id, err)
	}
	msgs, err := d.Executor().OutboxClaim(ctx, &driver.OutboxClaimParams{Destinations: []string{""}, Limit: 10, Lease: 60e9, MaxAttempts: 20})
	if err != nil || len(msgs) != 2 {
		t.Fatalf("claim after the upgrade: %d messages (%v), want 2", len(msgs), err)
	}
	for _, m := range msgs {
		if m.FencingToken <= 5 {
			t.Errorf("claim token %d after the upgrade, want > 5: the fencing sequence must go on", m.FencingToken)
		}
	}
	c, err := d.Executor().EffectClaim(ctx, &driver.EffectClaimParams{Key: "webhook:evt_done:refund", Lease: 60e9})
	if err != nil || !c.Done || string(c.Result) != "{}" {
		t.Fatalf("effect after the upgrade: %+v, %v; want its recorded result", c, err)
	}

	// The billing tables are billing's now: its first migration adopts them as they are.
	if err := billing.Migrate(ctx, pgxdriver.New(db.Pool)); err != nil {
		t.Fatal(err)
	}
	if n := count(t, db, `SELECT count(*) FROM invoices`); n != 1 {
		t.Errorf("invoices after billing.Migrate: %d rows, want 1", n)
	}
}

// A fresh database whose application already has tables named like hookinbox's old
// ones, or like billing's, migrates without touching them.
func TestMigrate_LeavesApplicationTablesAlone(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	for _, table := range []string{"webhook_inbox", "outbox", "effects", "invoices", "ledger_entries"} {
		exec(t, db, `CREATE TABLE `+table+` (mine text PRIMARY KEY)`)
		exec(t, db, `INSERT INTO `+table+` (mine) VALUES ('kept')`)
	}
	shape := func() string {
		var s string
		if err := db.Pool.QueryRow(ctx, `
SELECT string_agg(table_name || '.' || column_name, ',' ORDER BY table_name, column_name)
  FROM information_schema.columns
 WHERE table_schema = current_schema()
   AND table_name IN ('webhook_inbox', 'outbox', 'effects', 'invoices', 'ledger_entries')`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := shape()
	if err := pgxdriver.New(db.Pool).Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if after := shape(); after != before {
		t.Fatalf("application tables changed by Migrate:\nbefore %s\nafter  %s", before, after)
	}
	for _, table := range []string{"webhook_inbox", "outbox", "effects", "invoices", "ledger_entries"} {
		if n := count(t, db, `SELECT count(*) FROM `+table+` WHERE mine = 'kept'`); n != 1 {
			t.Errorf("%s lost its row", table)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM hookinbox_inbox`); n != 0 {
		t.Errorf("hookinbox_inbox has %d rows", n)
	}
	if n := count(t, db, `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename NOT LIKE 'hookinbox\_%' AND tablename NOT IN ('webhook_inbox', 'outbox', 'effects', 'invoices', 'ledger_entries')`); n != 0 {
		t.Errorf("Migrate created %d tables without the hookinbox_ prefix", n)
	}
}

// WriteMigrations' script, applied by another tool, leaves the schema exactly as
// Migrate would, and recorded as current.
func TestWriteMigrations_ScriptMatchesMigrate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	line, err := pgxdriver.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	var script strings.Builder
	if err := driver.WriteMigrations(&script, pgxdriver.MigrationDialect(), line, 0); err != nil {
		t.Fatal(err)
	}
	byScript, byMigrate := testdb.New(t), testdb.New(t)
	exec(t, byScript, script.String())
	if err := pgxdriver.New(byMigrate.Pool).Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if applied, latest, err := pgxdriver.New(byScript.Pool).SchemaVersion(ctx); err != nil || applied != latest {
		t.Fatalf("after the script: applied=%d latest=%d err=%v", applied, latest, err)
	}
	columns := func(db *testdb.DB) string {
		var s string
		if err := db.Pool.QueryRow(ctx, `
SELECT string_agg(table_name || '.' || column_name || ':' || data_type || ':' || coalesce(column_default, ''), ',' ORDER BY table_name, column_name)
  FROM information_schema.columns WHERE table_schema = current_schema() AND table_name <> 'hookinbox_migration'`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if a, b := columns(byScript), columns(byMigrate); a != b {
		t.Fatalf("schemas differ:\nscript  %s\nmigrate %s", a, b)
	}
}
