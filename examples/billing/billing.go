// Package billing is hookinbox's example domain, the seed article's: Stripe invoice
// events applied as state transitions over invoices, a payment booked once in
// ledger_entries, and a downstream notification written to the outbox in the same
// transaction. It is what `handler: billing` of the hookinbox binary runs, and a model
// for a domain of one's own: handlers written once over the driver's transaction type
// TTx, with the SQL of each database in one file (postgres.go, sqlite.go).
//
// Every handler converges: the same fact delivered twice, under a second event id
// (invoice.paid and invoice.payment_succeeded for one payment), or in any order, ends
// in the same state. Nothing orders events by their created timestamp.
//
//	if err := billing.Migrate(ctx, inbox.Driver()); err != nil { ... }
//	billing.Register(inbox, "billing")
package billing

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/hookinbox/hookinbox"
)

// Event types the billing handlers apply.
const (
	TypeInvoiceCreated             = "invoice.created"
	TypeInvoiceFinalized           = "invoice.finalized"
	TypeInvoicePaid                = "invoice.paid"
	TypeInvoicePaymentSucceeded    = "invoice.payment_succeeded"
	TypeInvoiceVoided              = "invoice.voided"
	TypeInvoiceMarkedUncollectible = "invoice.marked_uncollectible"
)

// Types lists every event type Register handles.
var Types = []string{
	TypeInvoiceCreated, TypeInvoiceFinalized, TypeInvoicePaid,
	TypeInvoicePaymentSucceeded, TypeInvoiceVoided, TypeInvoiceMarkedUncollectible,
}

// Anomaly kinds.
const (
	// AnomalyPaymentForVoidInvoice: a payment arrived for a void invoice. Nothing was
	// booked; a person decides (refund, or un-void by other means).
	AnomalyPaymentForVoidInvoice = "payment_for_void_invoice"
	// AnomalyVoidForPaidInvoice: a void arrived for a paid invoice. The invoice stays
	// paid.
	AnomalyVoidForPaidInvoice = "void_for_paid_invoice"
)

// Register registers the billing handlers for every type in Types on the named
// endpoint of inbox, whose driver is PostgreSQL's (pgx.Tx) or SQLite's (*sql.Tx); it
// panics on another transaction type, as Handle panics on a registration it cannot
// serve. Their tables are billing's own: create them with Migrate.
//
// Where the database allows it (PostgreSQL), payments (invoice.paid,
// invoice.payment_succeeded) are registered in their set-based form (PaymentsBatch):
// sync deliveries that share a transaction are booked by a few statements for the
// whole batch.
func Register[TTx any](inbox *hookinbox.Inbox[TTx], endpoint string) {
	h := newHandlers[TTx]()
	for typ, fn := range h.all() {
		if h.d.statements().invoicePayMany != "" && (typ == TypeInvoicePaid || typ == TypeInvoicePaymentSucceeded) {
			inbox.HandleBatch(endpoint, typ, h.paidMany)
			continue
		}
		inbox.Handle(endpoint, typ, fn)
	}
}

// Handlers returns the billing handler of every type in Types, for callers that wrap
// them (with metrics, or a fault in a test) before registering. TTx is as Register's.
func Handlers[TTx any]() map[string]hookinbox.HandlerFunc[TTx] {
	return newHandlers[TTx]().all()
}

// PaymentsBatch returns the set-based form of the payment handler (invoice.paid and
// invoice.payment_succeeded), for HandleBatch. On PostgreSQL one statement upserts
// every invoice of the batch and books the payments it turned paid, one more writes
// their outbox messages; a batch of one, as a worker or a lone delivery passes it,
// takes the same two statements where the one-event handler of Handlers takes three.
// An event whose invoice the upsert's guard refused (paid already, or void) is then
// booked as the one-event handler books it, after reading the invoice's status, in the
// same transaction. Two payments of one invoice in a batch refuse the batch, which is
// then applied one event at a time. On SQLite, which has no statement for it, the
// batch is applied one event at a time.
func PaymentsBatch[TTx any]() hookinbox.BatchHandlerFunc[TTx] {
	return newHandlers[TTx]().paidMany
}

// handlers are the billing handlers on the dialect of TTx; they keep no other state.
type handlers[TTx any] struct{ d dialect[TTx] }

func newHandlers[TTx any]() handlers[TTx] { return handlers[TTx]{d: dialectFor[TTx]()} }

func (h handlers[TTx]) all() map[string]hookinbox.HandlerFunc[TTx] {
	return map[string]hookinbox.HandlerFunc[TTx]{
		TypeInvoiceCreated:             h.created,
		TypeInvoiceFinalized:           h.finalized,
		TypeInvoicePaid:                h.paid,
		TypeInvoicePaymentSucceeded:    h.paid,
		TypeInvoiceVoided:              h.voided,
		TypeInvoiceMarkedUncollectible: h.markedUncollectible,
	}
}

// invoice is the part of a Stripe invoice object the handlers read.
type invoice struct {
	ID         string          `json:"id"`
	Customer   json.RawMessage `json:"customer"`
	Status     string          `json:"status"`
	AmountPaid int64           `json:"amount_paid"`
	Currency   string          `json:"currency"`
}

// customerID reads the customer as an id string or, when expanded, an object's id.
func (inv *invoice) customerID() string {
	var id string
	if json.Unmarshal(inv.Customer, &id) == nil {
		return id
	}
	var obj struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(inv.Customer, &obj) == nil {
		return obj.ID
	}
	return ""
}

func parseInvoice(ev hookinbox.Event) (*invoice, error) {
	var env struct {
		Data struct {
			Object invoice `json:"object"`
		} `json:"data"`
	}
	if err := json.Unmarshal(ev.Payload, &env); err != nil {
		return nil, fmt.Errorf("error decoding %s payload: %w", ev.Type, err)
	}
	if env.Data.Object.ID == "" {
		return nil, fmt.Errorf("%s payload has no data.object.id", ev.Type)
	}
	return &env.Data.Object, nil
}

func (h handlers[TTx]) created(ctx context.Context, tx TTx, ev hookinbox.Event) error {
	inv, err := parseInvoice(ev)
	if err != nil {
		return err
	}
	status := "draft"
	if inv.Status == "open" {
		status = "open"
	}
	if _, err := h.d.exec(ctx, tx, h.d.statements().invoiceCreate, inv.ID, inv.customerID(), status, nullIfEmpty(inv.Currency)); err != nil {
		return fmt.Errorf("error creating invoice: %w", err)
	}
	return nil
}

func (h handlers[TTx]) finalized(ctx context.Context, tx TTx, ev hookinbox.Event) error {
	inv, err := parseInvoice(ev)
	if err != nil {
		return err
	}
	if _, err := h.d.exec(ctx, tx, h.d.statements().invoiceFinalize, inv.ID, inv.customerID(), nullIfEmpty(inv.Currency)); err != nil {
		return fmt.Errorf("error finalizing invoice: %w", err)
	}
	return nil
}

// paid handles invoice.paid and invoice.payment_succeeded: two Event objects for one
// payment. The ledger's UNIQUE (invoice_id, kind) books it once whichever comes first.
func (h handlers[TTx]) paid(ctx context.Context, tx TTx, ev hookinbox.Event) error {
	inv, err := parseInvoice(ev)
	if err != nil {
		return err
	}
	status, err := h.upsertStatus(ctx, tx, h.d.statements().invoicePay, inv.ID, inv.customerID(), inv.AmountPaid, nullIfEmpty(inv.Currency))
	if err != nil {
		return fmt.Errorf("error marking invoice paid: %w", err)
	}
	return h.book(ctx, tx, ev, inv, status)
}

// book books the payment ev of inv, whose status the payment's upsert left: an
// anomaly for a void invoice, the ledger entry and its outbox message once for a paid
// one.
func (h handlers[TTx]) book(ctx context.Context, tx TTx, ev hookinbox.Event, inv *invoice, status string) error {
	if status == "void" {
		// Booking it would record a payment on an invalid invoice.
		return h.anomaly(ctx, tx, ev, inv.ID, AnomalyPaymentForVoidInvoice,
			fmt.Sprintf("payment of %d %s for a void invoice", inv.AmountPaid, inv.Currency))
	}
	if status != "paid" {
		return fmt.Errorf("invoice %s is %s after a payment", inv.ID, status)
	}
	var entryID int64
	found, err := h.d.queryRow(ctx, tx, h.d.statements().ledgerBookPayment,
		[]any{inv.ID, inv.AmountPaid, nullIfEmpty(inv.Currency), ev.ID}, &entryID)
	if err != nil {
		return fmt.Errorf("error booking payment: %w", err)
	}
	if !found {
		return nil // booked already, by this fact under another event id
	}
	return h.d.insertOutbox(ctx, tx, []hookinbox.Event{ev}, []hookinbox.OutboxMessage{paymentBooked(inv, entryID)})
}

func (h handlers[TTx]) paidMany(ctx context.Context, tx TTx, evs []hookinbox.Event) error {
	q := h.d.statements()
	if q.invoicePayMany == "" {
		// No set-based statement in this database: one event at a time.
		for _, ev := range evs {
			if err := h.paid(ctx, tx, ev); err != nil {
				return err
			}
		}
		return nil
	}
	type payment struct {
		ev  hookinbox.Event
		inv *invoice
	}
	byInvoice := make(map[string]payment, len(evs))
	ids := make([]string, 0, len(evs))
	for _, ev := range evs {
		inv, err := parseInvoice(ev)
		if err != nil {
			return err
		}
		if _, dup := byInvoice[inv.ID]; dup {
			return fmt.Errorf("two payments of invoice %s in one batch", inv.ID)
		}
		byInvoice[inv.ID] = payment{ev, inv}
		ids = append(ids, inv.ID)
	}
	// In id order, so that concurrent batches lock their invoices in one order.
	sort.Strings(ids)
	var (
		customers, eventIDs = make([]string, len(ids)), make([]string, len(ids))
		amounts             = make([]int64, len(ids))
		currencies          = make([]*string, len(ids))
	)
	for k, id := range ids {
		p := byInvoice[id]
		customers[k], amounts[k], currencies[k], eventIDs[k] = p.inv.customerID(), p.inv.AmountPaid, nullIfEmpty(p.inv.Currency), p.ev.ID
	}
	var (
		id      string
		entryID *int64
		paid    = make(map[string]bool, len(ids))
		sources []hookinbox.Event
		msgs    []hookinbox.OutboxMessage
	)
	err := h.d.query(ctx, tx, q.invoicePayMany, []any{ids, customers, amounts, currencies, eventIDs}, []any{&id, &entryID}, func() {
		paid[id] = true
		if entryID == nil {
			return // booked already, by this fact under another event id
		}
		p := byInvoice[id]
		sources = append(sources, p.ev)
		msgs = append(msgs, paymentBooked(p.inv, *entryID))
	})
	if err != nil {
		return fmt.Errorf("error marking invoices paid: %w", err)
	}
	if err := h.d.insertOutbox(ctx, tx, sources, msgs); err != nil {
		return err
	}
	for _, id := range ids {
		if paid[id] {
			continue
		}
		// Refused by the guard: paid already, void, or created meanwhile by a
		// transaction this statement's snapshot does not see; a statement of its own
		// reads the status, as the one-event handler does.
		status, err := h.status(ctx, tx, id)
		if err != nil {
			return err
		}
		p := byInvoice[id]
		if err := h.book(ctx, tx, p.ev, p.inv, status); err != nil {
			return err
		}
	}
	return nil
}

// paymentBooked is the outbox message of a booked payment.
func paymentBooked(inv *invoice, entryID int64) hookinbox.OutboxMessage {
	return hookinbox.OutboxMessage{
		AggregateType: "Invoice",
		AggregateID:   inv.ID,
		EventType:     "InvoicePaymentBooked",
		Payload: map[string]any{
			"invoice_id": inv.ID, "customer_id": inv.customerID(),
			"amount": inv.AmountPaid, "currency": inv.Currency, "ledger_entry_id": entryID,
		},
	}
}

func (h handlers[TTx]) voided(ctx context.Context, tx TTx, ev hookinbox.Event) error {
	inv, err := parseInvoice(ev)
	if err != nil {
		return err
	}
	status, err := h.upsertStatus(ctx, tx, h.d.statements().invoiceVoid, inv.ID, inv.customerID(), nullIfEmpty(inv.Currency))
	if err != nil {
		return fmt.Errorf("error voiding invoice: %w", err)
	}
	if status == "paid" {
		return h.anomaly(ctx, tx, ev, inv.ID, AnomalyVoidForPaidInvoice, "void for a paid invoice")
	}
	return nil
}

func (h handlers[TTx]) markedUncollectible(ctx context.Context, tx TTx, ev hookinbox.Event) error {
	inv, err := parseInvoice(ev)
	if err != nil {
		return err
	}
	if _, err := h.d.exec(ctx, tx, h.d.statements().invoiceMarkUncollectible, inv.ID, inv.customerID(), nullIfEmpty(inv.Currency)); err != nil {
		return fmt.Errorf("error marking invoice uncollectible: %w", err)
	}
	return nil
}

func (h handlers[TTx]) anomaly(ctx context.Context, tx TTx, ev hookinbox.Event, invoiceID, kind, detail string) error {
	if _, err := recordAnomaly(ctx, h.d, tx, Anomaly{InvoiceID: invoiceID, Kind: kind, EventID: ev.ID, EventType: ev.Type, Detail: detail}); err != nil {
		return err
	}
	return nil
}

// upsertStatus runs a guarded upsert of invoiceID (its parameter 1, args the next)
// that returns the invoice's status. When the guard
// refused the update, the upsert returns no row (on PostgreSQL also when a concurrent
// transaction created the row after the statement's snapshot), and a second
// statement, with a fresh snapshot, reads the status.
func (h handlers[TTx]) upsertStatus(ctx context.Context, tx TTx, query, invoiceID string, args ...any) (string, error) {
	var status string
	found, err := h.d.queryRow(ctx, tx, query, append([]any{invoiceID}, args...), &status)
	if err == nil && !found {
		return h.status(ctx, tx, invoiceID)
	}
	return status, err
}

// status reads an invoice's status.
func (h handlers[TTx]) status(ctx context.Context, tx TTx, invoiceID string) (string, error) {
	var status string
	found, err := h.d.queryRow(ctx, tx, h.d.statements().invoiceStatus, []any{invoiceID}, &status)
	if err == nil && !found {
		err = fmt.Errorf("invoice %s does not exist", invoiceID)
	}
	if err != nil {
		return "", fmt.Errorf("error reading invoice status: %w", err)
	}
	return status, nil
}

func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
