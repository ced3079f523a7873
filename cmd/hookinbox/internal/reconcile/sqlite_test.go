package reconcile

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver/sqlitedriver"
	"github.com/hookinbox/hookinbox/examples/billing"
	"github.com/hookinbox/hookinbox/internal/fakestripe"
	"github.com/hookinbox/hookinbox/provider"
)

// The same repair on SQLite (billing.NewStore on a SQLite driver): the planted drift, then a second
// run of duplicates that records no anomaly twice.
func TestReconcile_OnSQLite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sqlitedriver.Open(filepath.Join(t.TempDir(), "reconcile.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	v, err := provider.NewStripe(provider.StripeConfig{Secrets: []string{"whsec_reconcile_test"}})
	if err != nil {
		t.Fatal(err)
	}
	inbox, err := hookinbox.New(sqlitedriver.New(db), &hookinbox.Config{
		Endpoints: []hookinbox.EndpointConfig{{Name: "billing", Verifier: v, Mode: hookinbox.ModeSync}},
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := inbox.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := billing.Migrate(ctx, sqlitedriver.New(db)); err != nil {
		t.Fatal(err)
	}
	billing.Register(inbox, "billing")
	fake := fakestripe.New(t)
	fake.SetInvoice(fakestripe.Invoice{ID: "in_missing", Customer: "cus_1", Status: "open", Currency: "eur", Created: since + 1})
	fake.SetInvoice(fakestripe.Invoice{ID: "in_amount", Customer: "cus_1", Status: "paid", AmountPaid: 550, Currency: "eur", Created: since + 2})
	if _, err := db.ExecContext(ctx, `INSERT INTO invoices (id, customer_id, status, amount_paid, currency) VALUES ('in_amount', 'cus_1', 'paid', 500, 'eur')`); err != nil {
		t.Fatal(err)
	}
	local := Local{Billing: billing.NewStore(inbox.Driver()), Inbox: inbox, Executor: inbox.Driver().Executor()}
	cfg := &Config{Endpoint: "billing", Since: time.Unix(since, 0), Repair: true}
	res, err := Run(ctx, client(fake.URL), local, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := "2 compared; in_amount amount_differs processed resolved=false anomaly=reconcile_amount_differs; in_missing missing_locally processed resolved=true anomaly=;"
	if got := summary(res); got != want {
		t.Fatalf("repair\n got %s\nwant %s", got, want)
	}
	again, err := Run(ctx, client(fake.URL), local, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if want := "2 compared; in_amount amount_differs duplicate resolved=false anomaly=reconcile_amount_differs;"; summary(again) != want {
		t.Fatalf("second run\n got %s\nwant %s", summary(again), want)
	}
	anomalies, err := local.Billing.Anomalies(ctx)
	if err != nil || len(anomalies) != 1 {
		t.Fatalf("anomalies %v (%v), want one", anomalies, err)
	}
	var origin string
	if err := db.QueryRowContext(ctx, `SELECT origin FROM hookinbox_inbox WHERE event_id = 'reconcile_in_missing_open_0'`).Scan(&origin); err != nil || origin != Origin {
		t.Fatalf("origin %q (%v), want reconcile", origin, err)
	}
}
