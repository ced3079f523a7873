package backfill_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stripe/stripe-go/v82"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/backfill"
	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/examples/billing"
	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/hookinbox/hookinbox/internal/fakestripe"
	"github.com/hookinbox/hookinbox/internal/testdb"
	"github.com/hookinbox/hookinbox/provider"
)

const endpoint = "billing"

// bundle is one test's world: its own schema, a sync billing endpoint on it, and a
// fake Stripe API.
type bundle struct {
	ctx   context.Context
	db    *testdb.DB
	inbox *hookinbox.Inbox[pgx.Tx]
	ex    driver.Executor
	fake  *fakestripe.Server
}

func setup(t *testing.T, mode hookinbox.Mode) *bundle {
	t.Helper()
	return setupWrapped(t, mode, nil)
}

// setupWrapped is setup with each billing handler passed through wrap.
func setupWrapped(t *testing.T, mode hookinbox.Mode, wrap func(hookinbox.HandlerFunc[pgx.Tx]) hookinbox.HandlerFunc[pgx.Tx]) *bundle {
	t.Helper()
	ctx := context.Background()
	db := testdb.New(t)
	v, err := provider.NewStripe(provider.StripeConfig{Secrets: []string{"whsec_backfill_test"}})
	if err != nil {
		t.Fatal(err)
	}
	inbox, err := hookinbox.New(pgxdriver.New(db.Pool), &hookinbox.Config{
		Endpoints: []hookinbox.EndpointConfig{{Name: endpoint, Verifier: v, Mode: mode}},
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := inbox.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := billing.Migrate(ctx, pgxdriver.New(db.Pool)); err != nil {
		t.Fatal(err)
	}
	for typ, fn := range billing.Handlers[pgx.Tx]() {
		if wrap != nil {
			fn = wrap(fn)
		}
		inbox.Handle(endpoint, typ, fn)
	}
	return &bundle{ctx: ctx, db: db, inbox: inbox, ex: inbox.Driver().Executor(), fake: fakestripe.New(t)}
}

// plant adds n invoice.paid events to the fake, evt_001 (oldest) to evt_n, for
// invoices in_001 ..., and delivers all but those in gap to the inbox, as webhooks
// would have: the gap is what the receiver missed.
func (b *bundle) plant(t *testing.T, n int, gap map[int]bool) {
	t.Helper()
	for i := 1; i <= n; i++ {
		ev := fakeInvoicePaid(i)
		b.fake.AddEvent(ev)
		if gap[i] {
			continue
		}
		body, err := json.Marshal(fakestripe.EventJSON(ev))
		if err != nil {
			t.Fatal(err)
		}
		out, err := b.inbox.Receive(b.ctx, hookinbox.Event{Endpoint: endpoint, ID: ev.ID, Type: ev.Type, Payload: body})
		if err != nil || out != hookinbox.OutcomeProcessed {
			t.Fatalf("delivering %s: %s, %v", ev.ID, out, err)
		}
	}
}

// source is a Stripe source on the fake, through the rate-limited client.
func (b *bundle) source(t *testing.T, pageSize int64, cc backfill.ClientConfig) *backfill.Stripe {
	t.Helper()
	if cc.Rate == 0 {
		cc.Rate = 1000
	}
	sc := stripe.NewClient("sk_test_backfill", stripe.WithBackends(backfill.StripeBackends(backfill.NewHTTPClient(cc), b.fake.URL)))
	src, err := backfill.NewStripe(sc, backfill.StripeConfig{Types: []string{"invoice.*"}, PageSize: pageSize})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func (b *bundle) run(t *testing.T, src backfill.Source, cfg *backfill.Config) *backfill.Result {
	t.Helper()
	res, err := backfill.Run(b.ctx, b.inbox, b.ex, src, cfg)
	if err != nil {
		t.Fatalf("backfill: %v", err)
	}
	return res
}

func (b *bundle) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := b.db.Pool.QueryRow(b.ctx, query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func (b *bundle) origin(t *testing.T, id string) string {
	t.Helper()
	o, err := backfill.ReceiptOrigin(b.ctx, b.ex, hookinboxtype.Key{Provider: "stripe", Endpoint: endpoint, EventID: id})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// fakeInvoicePaid is the invoice.paid event evt_00i of invoice in_00i, created i
// seconds after the first.
func fakeInvoicePaid(i int) fakestripe.Event {
	return fakestripe.Event{
		ID: fmt.Sprintf("evt_%03d", i), Type: "invoice.paid", Created: int64(1_700_000_000 + i),
		Object: map[string]any{
			"id": fmt.Sprintf("in_%03d", i), "object": "invoice", "customer": "cus_1",
			"status": "paid", "amount_paid": 100 * i, "currency": "eur",
		},
	}
}
