package backfill_test

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/backfill"
	"github.com/hookinbox/hookinbox/driver/sqlitedriver"
	"github.com/hookinbox/hookinbox/examples/billing"
	"github.com/hookinbox/hookinbox/internal/fakestripe"
	"github.com/hookinbox/hookinbox/provider"
)

// The same backfill on the SQLite driver: its checkpoint and origin statements, a
// resume after a cancel, and a second run that finds only duplicates.
func TestStripe_OnSQLite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sqlitedriver.Open(filepath.Join(t.TempDir(), "backfill.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	v, err := provider.NewStripe(provider.StripeConfig{Secrets: []string{"whsec_backfill_test"}})
	if err != nil {
		t.Fatal(err)
	}
	inbox, err := hookinbox.New(sqlitedriver.New(db), &hookinbox.Config{
		Endpoints: []hookinbox.EndpointConfig{{Name: endpoint, Verifier: v, Mode: hookinbox.ModeSync}},
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
	billing.Register(inbox, endpoint)
	fake := fakestripe.New(t)
	for i := 1; i <= 5; i++ {
		fake.AddEvent(fakeInvoicePaid(i))
	}
	b := &bundle{ctx: ctx, fake: fake}
	ex := inbox.Driver().Executor()

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	first, err := backfill.Run(cctx, inbox, ex, b.source(t, 2, backfill.ClientConfig{}), &backfill.Config{
		Endpoint: endpoint, ProgressFunc: func(p backfill.Progress) {
			if p.Fed == 3 {
				cancel()
			}
		},
	})
	if err == nil || first.Counts[hookinbox.OutcomeProcessed] != 3 {
		t.Fatalf("cancelled run: %v, %v; want stopped after 3 processed", first.Counts, err)
	}
	second, err := backfill.Run(ctx, inbox, ex, b.source(t, 2, backfill.ClientConfig{}), &backfill.Config{Endpoint: endpoint})
	if err != nil || !second.Resumed || second.Counts[hookinbox.OutcomeProcessed] != 2 || len(second.Counts) != 1 {
		t.Fatalf("resumed run: %v (resumed %t), %v; want the other 2 processed", second.Counts, second.Resumed, err)
	}
	third, err := backfill.Run(ctx, inbox, ex, b.source(t, 2, backfill.ClientConfig{}), &backfill.Config{Endpoint: endpoint})
	if err != nil || third.Counts[hookinbox.OutcomeDuplicate] != 5 || len(third.Counts) != 1 {
		t.Fatalf("third run: %v, %v; want 5 duplicates", third.Counts, err)
	}
	if n := count(t, db, `SELECT count(*) FROM ledger_entries`); n != 5 {
		t.Fatalf("%d payments booked, want 5", n)
	}
	if n := count(t, db, `SELECT count(*) FROM hookinbox_inbox WHERE origin = 'backfill'`); n != 5 {
		t.Fatalf("%d receipts with origin backfill, want 5", n)
	}
}

func count(t *testing.T, db *sql.DB, query string) int {
	t.Helper()
	var n int
	if err := db.QueryRowContext(context.Background(), query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
