package billing_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/driver/sqlitedriver"
	"github.com/hookinbox/hookinbox/examples/billing"
	"github.com/hookinbox/hookinbox/internal/testdb"
	"github.com/hookinbox/hookinbox/provider"
)

// The billing handlers, written once, on both drivers: the same state transitions
// whatever the order and however many Event objects carry one fact.

// bundle is one test's world on one driver. The test's own reads take no parameters,
// so that they read the same in both dialects.
type bundle struct {
	ctx     context.Context
	receive func(t *testing.T, ev hookinbox.Event)
	count   func(t *testing.T, query string) int
	invoice func(t *testing.T, id string) (status, customer string, amount int64)
	store   billing.Store
}

// forEachDriver runs test on a fresh database of each driver.
func forEachDriver(t *testing.T, test func(t *testing.T, b *bundle)) {
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		db := testdb.New(t, testdb.Options{MaxConns: 4})
		test(t, setup(t, pgxdriver.New(db.Pool), func(ctx context.Context, query string, dest ...any) error {
			return db.Pool.QueryRow(ctx, query).Scan(dest...)
		}))
	})
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		db, err := sqlitedriver.Open(filepath.Join(t.TempDir(), "billing.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		test(t, setup(t, sqlitedriver.New(db), func(ctx context.Context, query string, dest ...any) error {
			return db.QueryRowContext(ctx, query).Scan(dest...)
		}))
	})
}

// setup migrates d's database for hookinbox and billing and registers the billing
// handlers on an inbox; scan reads one row of the test's own queries.
func setup[TTx any](t *testing.T, d driver.Driver[TTx], scan func(ctx context.Context, query string, dest ...any) error) *bundle {
	t.Helper()
	v, err := provider.NewStripe(provider.StripeConfig{Secrets: []string{"whsec_test_billing"}})
	if err != nil {
		t.Fatal(err)
	}
	inbox, err := hookinbox.New(d, &hookinbox.Config{
		Endpoints: []hookinbox.EndpointConfig{{Name: "billing", Verifier: v}},
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := inbox.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := billing.Migrate(ctx, d); err != nil {
		t.Fatal(err)
	}
	billing.Register(inbox, "billing")
	return &bundle{
		ctx: ctx,
		receive: func(t *testing.T, ev hookinbox.Event) {
			t.Helper()
			out, err := inbox.Receive(ctx, ev)
			if err != nil || out != hookinbox.OutcomeProcessed {
				t.Fatalf("Receive(%s %s): %s %v, want processed", ev.Type, ev.ID, out, err)
			}
		},
		count: func(t *testing.T, query string) int {
			t.Helper()
			var n int
			if err := scan(ctx, query, &n); err != nil {
				t.Fatalf("%s: %v", query, err)
			}
			return n
		},
		invoice: func(t *testing.T, id string) (status, customer string, amount int64) {
			t.Helper()
			if err := scan(ctx, `SELECT status, customer_id, amount_paid FROM invoices WHERE id = '`+id+`'`, &status, &customer, &amount); err != nil {
				t.Fatal(err)
			}
			return status, customer, amount
		},
		store: billing.NewStore(d),
	}
}

func invoiceEvent(id, typ, invoiceID string, amount int64) hookinbox.Event {
	payload, _ := json.Marshal(map[string]any{
		"id": id, "object": "event", "type": typ,
		"data": map[string]any{"object": map[string]any{
			"id": invoiceID, "object": "invoice", "customer": map[string]any{"id": "cus_1", "object": "customer"},
			"status": "open", "amount_paid": amount, "currency": "eur",
		}},
	})
	return hookinbox.Event{Endpoint: "billing", ID: id, Type: typ, Payload: payload}
}

// permutations returns every order of n items.
func permutations(n int) [][]int {
	if n == 1 {
		return [][]int{{0}}
	}
	var all [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := append(append(append([]int{}, p[:i]...), n-1), p[i:]...)
			all = append(all, q)
		}
	}
	return all
}

// G6: created, finalized, paid and payment_succeeded (the same payment as a second
// Event object) in each of their 24 orders end the same: paid, booked once, one
// outbox message.
func TestHandlers_EveryOrderConvergesToPaidBookedOnce(t *testing.T) {
	t.Parallel()
	forEachDriver(t, testEveryOrderConverges)
}

func testEveryOrderConverges(t *testing.T, b *bundle) {
	types := []string{billing.TypeInvoiceCreated, billing.TypeInvoiceFinalized, billing.TypeInvoicePaid, billing.TypeInvoicePaymentSucceeded}
	for n, order := range permutations(len(types)) {
		invoiceID := fmt.Sprintf("in_%d", n)
		for _, i := range order {
			b.receive(t, invoiceEvent(fmt.Sprintf("evt_%d_%d", n, i), types[i], invoiceID, 1500))
		}
		if status, customer, amount := b.invoice(t, invoiceID); status != "paid" || customer != "cus_1" || amount != 1500 {
			t.Fatalf("order %v: invoice %s %s %d, want paid cus_1 1500", order, status, customer, amount)
		}
		if n := b.count(t, `SELECT count(*) FROM ledger_entries WHERE invoice_id = '`+invoiceID+`'`); n != 1 {
			t.Fatalf("order %v: %d ledger rows, want 1", order, n)
		}
		if n := b.count(t, `SELECT count(*) FROM hookinbox_outbox WHERE aggregate_id = '`+invoiceID+`'`); n != 1 {
			t.Fatalf("order %v: %d outbox messages, want 1", order, n)
		}
	}
}

// A payment for a void invoice is not booked and waits for a person; a void for a
// paid invoice leaves it paid and waits for a person too.
func TestHandlers_VoidAndPaymentConflictsAreAnomalies(t *testing.T) {
	t.Parallel()
	forEachDriver(t, testVoidAndPaymentConflicts)
}

func testVoidAndPaymentConflicts(t *testing.T, b *bundle) {
	b.receive(t, invoiceEvent("evt_1", billing.TypeInvoiceCreated, "in_void", 0))
	b.receive(t, invoiceEvent("evt_2", billing.TypeInvoiceVoided, "in_void", 0))
	b.receive(t, invoiceEvent("evt_3", billing.TypeInvoicePaid, "in_void", 1500))
	b.receive(t, invoiceEvent("evt_4", billing.TypeInvoicePaid, "in_paid", 1500))
	b.receive(t, invoiceEvent("evt_5", billing.TypeInvoiceVoided, "in_paid", 0))

	if status, _, _ := b.invoice(t, "in_void"); status != "void" {
		t.Fatalf("in_void is %s", status)
	}
	if status, _, _ := b.invoice(t, "in_paid"); status != "paid" {
		t.Fatalf("in_paid is %s", status)
	}
	if n := b.count(t, `SELECT count(*) FROM ledger_entries WHERE invoice_id = 'in_void'`); n != 0 {
		t.Fatalf("payment booked on a void invoice")
	}
	anomalies, err := b.store.Anomalies(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(len(anomalies))
	for _, a := range anomalies {
		got += fmt.Sprintf(" %s/%s/%s/%s", a.InvoiceID, a.Kind, a.EventID, a.EventType)
		if a.CreatedAt.IsZero() || a.Detail == "" {
			t.Errorf("anomaly %+v", a)
		}
	}
	want := "2 in_void/payment_for_void_invoice/evt_3/invoice.paid in_paid/void_for_paid_invoice/evt_5/invoice.voided"
	if got != want {
		t.Fatalf("anomalies %s\nwant      %s", got, want)
	}
}

// Transitions only move forward: a late created or finalized does not reopen an
// uncollectible invoice, which a payment still settles.
func TestHandlers_UncollectibleThenLateEventsThenPaid(t *testing.T) {
	t.Parallel()
	forEachDriver(t, testUncollectibleThenPaid)
}

func testUncollectibleThenPaid(t *testing.T, b *bundle) {
	b.receive(t, invoiceEvent("evt_1", billing.TypeInvoiceMarkedUncollectible, "in_1", 0))
	b.receive(t, invoiceEvent("evt_2", billing.TypeInvoiceCreated, "in_1", 0))
	b.receive(t, invoiceEvent("evt_3", billing.TypeInvoiceFinalized, "in_1", 0))
	if status, _, _ := b.invoice(t, "in_1"); status != "uncollectible" {
		t.Fatalf("status %s, want uncollectible", status)
	}
	b.receive(t, invoiceEvent("evt_4", billing.TypeInvoicePaid, "in_1", 700))
	if status, _, amount := b.invoice(t, "in_1"); status != "paid" || amount != 700 {
		t.Fatalf("status %s amount %d, want paid 700", status, amount)
	}
}

// The store reads the invoices that exist, with their currency when known, and
// records an anomaly once per invoice and kind.
func TestStore_InvoicesAndAnomalyRecordedOnce(t *testing.T) {
	t.Parallel()
	forEachDriver(t, testStore)
}

func testStore(t *testing.T, b *bundle) {
	b.receive(t, invoiceEvent("evt_1", billing.TypeInvoicePaid, "in_paid", 1500))
	noCurrency := invoiceEvent("evt_2", billing.TypeInvoiceCreated, "in_draft", 0)
	noCurrency.Payload = []byte(`{"data":{"object":{"id":"in_draft","customer":"cus_2","status":"draft"}}}`)
	b.receive(t, noCurrency)
	invoices, err := b.store.Invoices(b.ctx, []string{"in_paid", "in_draft", "in_absent"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(invoices), "map[in_draft:{in_draft draft 0 } in_paid:{in_paid paid 1500 eur}]"; got != want {
		t.Fatalf("invoices %s, want %s", got, want)
	}
	a := billing.Anomaly{InvoiceID: "in_paid", Kind: billing.AnomalyReconcileAmount, EventID: "evt_1", EventType: billing.TypeInvoicePaid, Detail: "1500 here, 1600 there"}
	for i, want := range []bool{true, false} {
		if recorded, err := b.store.RecordAnomaly(b.ctx, a); err != nil || recorded != want {
			t.Fatalf("record %d: %v %v, want %v", i+1, recorded, err, want)
		}
	}
	if list, err := b.store.Anomalies(b.ctx); err != nil || len(list) != 1 || list[0].Detail != a.Detail {
		t.Fatalf("anomalies %+v %v, want the one recorded", list, err)
	}
}
