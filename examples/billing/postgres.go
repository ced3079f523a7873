package billing

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
)

// postgres is billing on PostgreSQL (pgxdriver), whose handlers receive a pgx.Tx.
type postgres struct{}

var _ dialect[pgx.Tx] = postgres{}

func (postgres) statements() *statements { return &postgresStatements }

func (postgres) exec(ctx context.Context, tx pgx.Tx, query string, args ...any) (int64, error) {
	tag, err := tx.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}

func (postgres) queryRow(ctx context.Context, tx pgx.Tx, query string, args []any, dest ...any) (bool, error) {
	err := tx.QueryRow(ctx, query, args...).Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

func (postgres) query(ctx context.Context, tx pgx.Tx, query string, args []any, dest []any, each func()) error {
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	_, err = pgx.ForEachRow(rows, dest, func() error { each(); return nil })
	return err
}

// list binds the ids as a text[], which the statements read with ANY and unnest.
func (postgres) list(values []string) any { return values }

func (postgres) insertOutbox(ctx context.Context, tx pgx.Tx, sources []hookinbox.Event, messages []hookinbox.OutboxMessage) error {
	return insertOutbox[*pgxdriver.Driver](ctx, tx, sources, messages)
}

// postgresStatements are billing's statements on PostgreSQL: data-modifying CTEs let a
// transition report the invoice's status, and a batch of payments be booked, in one
// statement.
var postgresStatements = statements{
	invoiceCreate:            sqlInvoiceCreate,
	invoiceFinalize:          sqlInvoiceFinalize,
	invoicePay:               sqlInvoicePay,
	invoiceVoid:              sqlInvoiceVoid,
	invoiceMarkUncollectible: sqlInvoiceMarkUncollectible,
	invoiceStatus:            sqlInvoiceStatus,
	invoicePayMany:           sqlInvoicePayMany,
	ledgerBookPayment:        sqlLedgerBookPayment,
	anomalyRecord:            sqlAnomalyRecord,
	anomalyList:              sqlAnomalyList,
	invoicesByID:             sqlInvoicesByID,
}

const (
	sqlInvoiceCreate = `
INSERT INTO invoices (id, customer_id, status, currency)
VALUES ($1, $2, $3, $4)
ON CONFLICT (id) DO NOTHING`

	sqlInvoiceFinalize = `
INSERT INTO invoices (id, customer_id, status, currency)
VALUES ($1, $2, 'open', $3)
ON CONFLICT (id) DO UPDATE
   SET status = 'open', updated_at = now()
 WHERE invoices.status = 'draft'`

	// invoicePaid is the payment's upsert, guarded: 'paid' may arrive before 'created',
	// so it upserts; it never overwrites void.
	invoicePaid = `
    ON CONFLICT (id) DO UPDATE
       SET status      = 'paid',
           amount_paid = EXCLUDED.amount_paid,
           currency    = coalesce(EXCLUDED.currency, invoices.currency),
           paid_at     = coalesce(invoices.paid_at, EXCLUDED.paid_at),
           updated_at  = now()
     WHERE invoices.status NOT IN ('paid', 'void')`

	// The final status is read back in the same statement's snapshot of the locked row.
	sqlInvoicePay = `
WITH upsert AS (
    INSERT INTO invoices (id, customer_id, status, amount_paid, currency, paid_at)
    VALUES ($1, $2, 'paid', $3, $4, now())` + invoicePaid + `
    RETURNING status
)
SELECT status FROM upsert
UNION ALL
SELECT status FROM invoices WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM upsert)`

	// The payments of a batch (PaymentsBatch): sqlInvoicePay's guarded upsert for every
	// invoice, and sqlLedgerBookPayment's booking for each one it turned paid, in one
	// statement. It returns each invoice the upsert changed, with its new ledger entry,
	// or NULL if the payment was booked already; an invoice the guard refused is absent.
	sqlInvoicePayMany = `
WITH input AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[])
           AS t(id, customer_id, amount_paid, currency, event_id)
), upsert AS (
    INSERT INTO invoices (id, customer_id, status, amount_paid, currency, paid_at)
    SELECT id, customer_id, 'paid', amount_paid, currency, now() FROM input` + invoicePaid + `
    RETURNING id
), booked AS (
    INSERT INTO ledger_entries (invoice_id, kind, amount, currency, event_id)
    SELECT input.id, 'payment', input.amount_paid, input.currency, input.event_id
      FROM input JOIN upsert USING (id)
    ON CONFLICT (invoice_id, kind) DO NOTHING
    RETURNING invoice_id, id
)
SELECT upsert.id, booked.id FROM upsert LEFT JOIN booked ON booked.invoice_id = upsert.id`

	sqlInvoiceVoid = `
WITH upsert AS (
    INSERT INTO invoices (id, customer_id, status, currency)
    VALUES ($1, $2, 'void', $3)
    ON CONFLICT (id) DO UPDATE
       SET status = 'void', updated_at = now()
     WHERE invoices.status IN ('draft', 'open', 'uncollectible')
    RETURNING status
)
SELECT status FROM upsert
UNION ALL
SELECT status FROM invoices WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM upsert)`

	sqlInvoiceMarkUncollectible = `
INSERT INTO invoices (id, customer_id, status, currency)
VALUES ($1, $2, 'uncollectible', $3)
ON CONFLICT (id) DO UPDATE
   SET status = 'uncollectible', updated_at = now()
 WHERE invoices.status IN ('draft', 'open')`

	sqlInvoiceStatus = `SELECT status FROM invoices WHERE id = $1`

	sqlLedgerBookPayment = `
INSERT INTO ledger_entries (invoice_id, kind, amount, currency, event_id)
VALUES ($1, 'payment', $2, $3, $4)
ON CONFLICT (invoice_id, kind) DO NOTHING
RETURNING id`

	sqlAnomalyRecord = `
INSERT INTO billing_anomalies (invoice_id, kind, event_id, event_type, detail)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (invoice_id, kind) DO NOTHING`

	sqlAnomalyList = `
SELECT id, invoice_id, kind, event_id, event_type, detail, (extract(epoch FROM created_at) * 1000000)::bigint
  FROM billing_anomalies
 ORDER BY id`

	// A reconcile's read of the invoices it compares.
	sqlInvoicesByID = `
SELECT id, status, amount_paid, currency
  FROM invoices
 WHERE id = ANY($1)`
)
