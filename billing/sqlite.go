package billing

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver/sqlitedriver"
)

// RegisterSQL registers the billing handlers for every type in Types on the named
// endpoint of an inbox on the SQLite driver (driver/sqlitedriver), whose handlers
// receive a *sql.Tx. They make the same state transitions as Register's.
//
//	billing.RegisterSQL(inbox, "billing")
func RegisterSQL(inbox *hookinbox.Inbox[*sql.Tx], endpoint string) {
	for typ, fn := range HandlersSQL() {
		inbox.Handle(endpoint, typ, fn)
	}
}

// HandlersSQL returns the billing handler of every type in Types for an inbox on the
// SQLite driver, for callers that wrap them before registering.
func HandlersSQL() map[string]hookinbox.HandlerFunc[*sql.Tx] {
	h := &sqlHandlers{}
	return map[string]hookinbox.HandlerFunc[*sql.Tx]{
		TypeInvoiceCreated:             h.created,
		TypeInvoiceFinalized:           h.finalized,
		TypeInvoicePaid:                h.paid,
		TypeInvoicePaymentSucceeded:    h.paid,
		TypeInvoiceVoided:              h.voided,
		TypeInvoiceMarkedUncollectible: h.markedUncollectible,
	}
}

// sqlHandlers holds the SQLite handlers; they need no state.
type sqlHandlers struct{}

func (h *sqlHandlers) created(ctx context.Context, tx *sql.Tx, ev hookinbox.Event) error {
	inv, err := parseInvoice(ev)
	if err != nil {
		return err
	}
	status := "draft"
	if inv.Status == "open" {
		status = "open"
	}
	if _, err := tx.ExecContext(ctx, sqliteInvoiceCreate, inv.ID, inv.customerID(), status, nullIfEmpty(inv.Currency)); err != nil {
		return fmt.Errorf("error creating invoice: %w", err)
	}
	return nil
}

func (h *sqlHandlers) finalized(ctx context.Context, tx *sql.Tx, ev hookinbox.Event) error {
	inv, err := parseInvoice(ev)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, sqliteInvoiceFinalize, inv.ID, inv.customerID(), nullIfEmpty(inv.Currency)); err != nil {
		return fmt.Errorf("error finalizing invoice: %w", err)
	}
	return nil
}

// paid handles invoice.paid and invoice.payment_succeeded: two Event objects for one
// payment. The ledger's UNIQUE (invoice_id, kind) books it once whichever comes first.
func (h *sqlHandlers) paid(ctx context.Context, tx *sql.Tx, ev hookinbox.Event) error {
	inv, err := parseInvoice(ev)
	if err != nil {
		return err
	}
	status, err := sqlUpsertStatus(ctx, tx, sqliteInvoicePay, inv.ID, inv.customerID(), inv.AmountPaid, nullIfEmpty(inv.Currency))
	if err != nil {
		return fmt.Errorf("error marking invoice paid: %w", err)
	}
	if status == "void" {
		// Booking it would record a payment on an invalid invoice.
		return h.anomaly(ctx, tx, ev, inv.ID, AnomalyPaymentForVoidInvoice,
			fmt.Sprintf("payment of %d %s for a void invoice", inv.AmountPaid, inv.Currency))
	}
	if status != "paid" {
		return fmt.Errorf("invoice %s is %s after a payment", inv.ID, status)
	}
	var entryID int64
	err = tx.QueryRowContext(ctx, sqliteLedgerBookPayment, inv.ID, inv.AmountPaid, nullIfEmpty(inv.Currency), ev.ID).Scan(&entryID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // booked already, by this fact under another event id
	}
	if err != nil {
		return fmt.Errorf("error booking payment: %w", err)
	}
	_, err = hookinbox.InsertOutboxTx[*sqlitedriver.Driver](ctx, tx, ev, hookinbox.OutboxMessage{
		AggregateType: "Invoice",
		AggregateID:   inv.ID,
		EventType:     "InvoicePaymentBooked",
		Payload: map[string]any{
			"invoice_id": inv.ID, "customer_id": inv.customerID(),
			"amount": inv.AmountPaid, "currency": inv.Currency, "ledger_entry_id": entryID,
		},
	})
	return err
}

func (h *sqlHandlers) voided(ctx context.Context, tx *sql.Tx, ev hookinbox.Event) error {
	inv, err := parseInvoice(ev)
	if err != nil {
		return err
	}
	status, err := sqlUpsertStatus(ctx, tx, sqliteInvoiceVoid, inv.ID, inv.customerID(), nullIfEmpty(inv.Currency))
	if err != nil {
		return fmt.Errorf("error voiding invoice: %w", err)
	}
	if status == "paid" {
		return h.anomaly(ctx, tx, ev, inv.ID, AnomalyVoidForPaidInvoice, "void for a paid invoice")
	}
	return nil
}

func (h *sqlHandlers) markedUncollectible(ctx context.Context, tx *sql.Tx, ev hookinbox.Event) error {
	inv, err := parseInvoice(ev)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, sqliteInvoiceMarkUncollectible, inv.ID, inv.customerID(), nullIfEmpty(inv.Currency)); err != nil {
		return fmt.Errorf("error marking invoice uncollectible: %w", err)
	}
	return nil
}

func (h *sqlHandlers) anomaly(ctx context.Context, tx *sql.Tx, ev hookinbox.Event, invoiceID, kind, detail string) error {
	if _, err := tx.ExecContext(ctx, sqliteAnomalyRecord, invoiceID, kind, ev.ID, ev.Type, detail); err != nil {
		return fmt.Errorf("error recording billing anomaly: %w", err)
	}
	return nil
}

// sqlUpsertStatus runs a guarded upsert that returns the invoice's status. When the
// guard refused the update, the upsert returns no row and the status is read.
func sqlUpsertStatus(ctx context.Context, tx *sql.Tx, query string, args ...any) (string, error) {
	var status string
	err := tx.QueryRowContext(ctx, query, args...).Scan(&status)
	if errors.Is(err, sql.ErrNoRows) {
		err = tx.QueryRowContext(ctx, sqliteInvoiceStatus, args[0]).Scan(&status)
	}
	return status, err
}
