package billing_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/billing"
	"github.com/hookinbox/hookinbox/driver/sqlitedriver"
	"github.com/hookinbox/hookinbox/provider"
)

// The billing handlers on SQLite (HandlersSQL): the same state transitions as on
// PostgreSQL, whatever the order and however many Event objects carry one fact.

type sqlBundle struct {
	ctx   context.Context
	db    *sql.DB
	inbox *hookinbox.Inbox[*sql.Tx]
}

func setupSQL(t *testing.T) *sqlBundle {
	t.Helper()
	db, err := sqlitedriver.Open(filepath.Join(t.TempDir(), "billing.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	v, err := provider.NewStripe(provider.StripeConfig{Secrets: []string{"whsec_test_billing"}})
	if err != nil {
		t.Fatal(err)
	}
	inbox, err := hookinbox.New(sqlitedriver.New(db), &hookinbox.Config{
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
	if err := billing.Migrate(ctx, sqlitedriver.New(db)); err != nil {
		t.Fatal(err)
	}
	billing.RegisterSQL(inbox, "billing")
	return &sqlBundle{ctx: ctx, db: db, inbox: inbox}
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

func (b *sqlBundle) receive(t *testing.T, ev hookinbox.Event) {
	t.Helper()
	out, err := b.inbox.Receive(b.ctx, ev)
	if err != nil || out != hookinbox.OutcomeProcessed {
		t.Fatalf("Receive(%s %s): %s %v, want processed", ev.Type, ev.ID, out, err)
	}
}

func (b *sqlBundle) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := b.db.QueryRowContext(b.ctx, query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func (b *sqlBundle) invoice(t *testing.T, id string) (status, customer string, amount int64) {
	t.Helper()
	err := b.db.QueryRowContext(b.ctx, `SELECT status, customer_id, amount_paid FROM invoices WHERE id = ?1`, id).
		Scan(&status, &customer, &amount)
	if err != nil {
		t.Fatal(err)
	}
	return status, customer, amount
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
func TestHandlersSQL_EveryOrderConvergesToPaidBookedOnce(t *testing.T) {
	t.Parallel()
	b := setupSQL(t)
	types := []string{billing.TypeInvoiceCreated, billing.TypeInvoiceFinalized, billing.TypeInvoicePaid, billing.TypeInvoicePaymentSucceeded}
	for n, order := range permutations(len(types)) {
		invoiceID := fmt.Sprintf("in_%d", n)
		for _, i := range order {
			b.receive(t, invoiceEvent(fmt.Sprintf("evt_%d_%d", n, i), types[i], invoiceID, 1500))
		}
		if status, customer, amount := b.invoice(t, invoiceID); status != "paid" || customer != "cus_1" || amount != 1500 {
			t.Fatalf("order %v: invoice %s %s %d, want paid cus_1 1500", order, status, customer, amount)
		}
		if n := b.count(t, `SELECT count(*) FROM ledger_entries WHERE invoice_id = ?1`, invoiceID); n != 1 {
			t.Fatalf("order %v: %d ledger rows, want 1", order, n)
		}
		if n := b.count(t, `SELECT count(*) FROM hookinbox_outbox WHERE aggregate_id = ?1`, invoiceID); n != 1 {
			t.Fatalf("order %v: %d outbox messages, want 1", order, n)
		}
	}
}

// A payment for a void invoice is not booked and waits for a person; a void for a
// paid invoice leaves it paid and waits for a person too.
func TestHandlersSQL_VoidAndPaymentConflictsAreAnomalies(t *testing.T) {
	t.Parallel()
	b := setupSQL(t)
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
	anomalies, err := billing.AnomaliesSQL(b.ctx, b.db)
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
func TestHandlersSQL_UncollectibleThenLateEventsThenPaid(t *testing.T) {
	t.Parallel()
	b := setupSQL(t)
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
