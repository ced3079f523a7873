// Package billing is hookinbox's built-in example domain, the seed article's: Stripe
// invoice events applied as state transitions over invoices, a payment booked once in
// ledger_entries, and a downstream notification written to the outbox in the same
// transaction.
//
// Every handler converges: the same fact delivered twice, under a second event id
// (invoice.paid and invoice.payment_succeeded for one payment), or in any order, ends
// in the same state. Nothing orders events by their created timestamp.
//
//	billing.Register(inbox, "billing")
package billing

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
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
// endpoint of an inbox on PostgreSQL. Their tables are billing's own: create them with
// Migrate.
//
// Payments (invoice.paid, invoice.payment_succeeded) are registered in their
// set-based form (PaymentsBatch): sync deliveries that share a transaction are booked
// by a few statements for the whole batch.
func Register(inbox *hookinbox.Inbox[pgx.Tx], endpoint string) {
	batch := PaymentsBatch()
	for typ, fn := range Handlers() {
		if typ == TypeInvoicePaid || typ == TypeInvoicePaymentSucceeded {
			inbox.HandleBatch(endpoint, typ, batch)
			continue
		}
		inbox.Handle(endpoint, typ, fn)
	}
}

// Handlers returns the billing handler of every type in Types, for callers that wrap
// them (with metrics, or a fault in a test) before registering.
func Handlers() map[string]hookinbox.HandlerFunc[pgx.Tx] {
	h := &handlers{}
	return map[string]hookinbox.HandlerFunc[pgx.Tx]{
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

// handlers holds the PostgreSQL handlers; they need no state.
type handlers struct{}

func (h *handlers) created(ctx context.Context, tx pgx.Tx, ev hookinbox.Event) error {
	inv, err := parseInvoice(ev)
	if err != nil {
		return err
	}
	status := "draft"
	if inv.Status == "open" {
		status = "open"
	}
	if _, err := tx.Exec(ctx, sqlInvoiceCreate, inv.ID, inv.customerID(), status, nullIfEmpty(inv.Currency)); err != nil {
		return fmt.Errorf("error creating invoice: %w", err)
	}
	return nil
}

func (h *handlers) finalized(ctx context.Context, tx pgx.Tx, ev hookinbox.Event) error {
	inv, err := parseInvoice(ev)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, sqlInvoiceFinalize, inv.ID, inv.customerID(), nullIfEmpty(inv.Currency)); err != nil {
		return fmt.Errorf("error finalizing invoice: %w", err)
	}
	return nil
}

// paid handles invoice.paid and invoice.payment_succeeded: two Event objects for one
// payment. The ledger's UNIQUE (invoice_id, kind) books it once whichever comes first.
func (h *handlers) paid(ctx context.Context, tx pgx.Tx, ev hookinbox.Event) error {
	inv, err := parseInvoice(ev)
	if err != nil {
		return err
	}
	status, err := upsertStatus(ctx, tx, sqlInvoicePay, inv.ID, inv.customerID(), inv.AmountPaid, nullIfEmpty(inv.Currency))
	if err != nil {
		return fmt.Errorf("error marking invoice paid: %w", err)
	}
	return h.book(ctx, tx, ev, inv, status)
}

// book books the payment ev of inv, whose status the payment's upsert left: an
// anomaly for a void invoice, the ledger entry and its outbox message once for a paid
// one.
func (h *handlers) book(ctx context.Context, tx pgx.Tx, ev hookinbox.Event, inv *invoice, status string) error {
	if status == "void" {
		// Booking it would record a payment on an invalid invoice.
		return h.anomaly(ctx, tx, ev, inv.ID, AnomalyPaymentForVoidInvoice,
			fmt.Sprintf("payment of %d %s for a void invoice", inv.AmountPaid, inv.Currency))
	}
	if status != "paid" {
		return fmt.Errorf("invoice %s is %s after a payment", inv.ID, status)
	}
	var entryID int64
	err := tx.QueryRow(ctx, sqlLedgerBookPayment, inv.ID, inv.AmountPaid, nullIfEmpty(inv.Currency), ev.ID).Scan(&entryID)
	if err == pgx.ErrNoRows {
		return nil // booked already, by this fact under another event id
	}
	if err != nil {
		return fmt.Errorf("error booking payment: %w", err)
	}
	_, err = hookinbox.InsertOutboxTx[*pgxdriver.Driver](ctx, tx, ev, paymentBooked(inv, entryID))
	return err
}

// PaymentsBatch returns the set-based form of the payment handler (invoice.paid and
// invoice.payment_succeeded), for HandleBatch: one statement upserts every invoice of
// the batch and books the payments it turned paid, one more writes their outbox
// messages; a batch of one, as a worker or a lone delivery passes it, takes the same
// two statements where the one-event handler of Handlers takes three. An event whose
// invoice the upsert's guard refused (paid already, or void) is then booked as the
// one-event handler books it, after reading the invoice's status, in the same
// transaction. Two payments of one invoice in a batch refuse the batch, which is then
// applied one event at a time.
func PaymentsBatch() hookinbox.BatchHandlerFunc[pgx.Tx] {
	h := &handlers{}
	return h.paidMany
}

func (h *handlers) paidMany(ctx context.Context, tx pgx.Tx, evs []hookinbox.Event) error {
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
	rows, err := tx.Query(ctx, sqlInvoicePayMany, ids, customers, amounts, currencies, eventIDs)
	if err != nil {
		return fmt.Errorf("error marking invoices paid: %w", err)
	}
	var (
		id      string
		entryID *int64
		paid    = make(map[string]bool, len(ids))
		sources []hookinbox.Event
		msgs    []hookinbox.OutboxMessage
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &entryID}, func() error {
		paid[id] = true
		if entryID == nil {
			return nil // booked already, by this fact under another event id
		}
		p := byInvoice[id]
		sources = append(sources, p.ev)
		msgs = append(msgs, paymentBooked(p.inv, *entryID))
		return nil
	})
	if err != nil {
		return fmt.Errorf("error marking invoices paid: %w", err)
	}
	if err := hookinbox.InsertOutboxBatchTx[*pgxdriver.Driver](ctx, tx, sources, msgs); err != nil {
		return err
	}
	for _, id := range ids {
		if paid[id] {
			continue
		}
		// Refused by the guard: paid already, void, or created meanwhile by a
		// transaction this statement's snapshot does not see; a statement of its own
		// reads the status, as the one-event handler does.
		var status string
		if err := tx.QueryRow(ctx, sqlInvoiceStatus, id).Scan(&status); err != nil {
			return fmt.Errorf("error reading invoice status: %w", err)
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

func (h *handlers) voided(ctx context.Context, tx pgx.Tx, ev hookinbox.Event) error {
	inv, err := parseInvoice(ev)
	if err != nil {
		return err
	}
	status, err := upsertStatus(ctx, tx, sqlInvoiceVoid, inv.ID, inv.customerID(), nullIfEmpty(inv.Currency))
	if err != nil {
		return fmt.Errorf("error voiding invoice: %w", err)
	}
	if status == "paid" {
		return h.anomaly(ctx, tx, ev, inv.ID, AnomalyVoidForPaidInvoice, "void for a paid invoice")
	}
	return nil
}

func (h *handlers) markedUncollectible(ctx context.Context, tx pgx.Tx, ev hookinbox.Event) error {
	inv, err := parseInvoice(ev)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, sqlInvoiceMarkUncollectible, inv.ID, inv.customerID(), nullIfEmpty(inv.Currency)); err != nil {
		return fmt.Errorf("error marking invoice uncollectible: %w", err)
	}
	return nil
}

func (h *handlers) anomaly(ctx context.Context, tx pgx.Tx, ev hookinbox.Event, invoiceID, kind, detail string) error {
	if _, err := tx.Exec(ctx, sqlAnomalyRecord, invoiceID, kind, ev.ID, ev.Type, detail); err != nil {
		return fmt.Errorf("error recording billing anomaly: %w", err)
	}
	return nil
}

// upsertStatus runs a guarded upsert that returns the invoice's status. When the guard
// refused the update because a concurrent transaction created the row after this
// statement's snapshot, the statement sees no row; a second statement, with a fresh
// snapshot, reads it.
func upsertStatus(ctx context.Context, tx pgx.Tx, sql string, args ...any) (string, error) {
	var status string
	err := tx.QueryRow(ctx, sql, args...).Scan(&status)
	if err == pgx.ErrNoRows {
		err = tx.QueryRow(ctx, sqlInvoiceStatus, args[0]).Scan(&status)
	}
	return status, err
}

func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
