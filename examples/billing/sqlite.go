package billing

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver/sqlitedriver"
)

// sqlite is billing on SQLite (sqlitedriver), whose handlers receive a *sql.Tx.
type sqlite struct{}

var _ dialect[*sql.Tx] = sqlite{}

func (sqlite) statements() *statements { return &sqliteStatements }

func (sqlite) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (int64, error) {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (sqlite) queryRow(ctx context.Context, tx *sql.Tx, query string, args []any, dest ...any) (bool, error) {
	err := tx.QueryRowContext(ctx, query, args...).Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

func (sqlite) query(ctx context.Context, tx *sql.Tx, query string, args []any, dest []any, each func()) error {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		each()
	}
	return rows.Err()
}

// list binds the ids as one JSON array, which the statements read with json_each:
// SQLite has no array parameter.
func (sqlite) list(values []string) any {
	b, _ := json.Marshal(values) // a []string always encodes
	return string(b)
}

func (sqlite) insertOutbox(ctx context.Context, tx *sql.Tx, sources []hookinbox.Event, messages []hookinbox.OutboxMessage) error {
	return insertOutbox[*sqlitedriver.Driver](ctx, tx, sources, messages)
}

// sqliteStatements are billing's statements on SQLite: the same guarded state
// transitions as PostgreSQL's. SQLite has no data-modifying CTE, so a transition that
// reports the invoice's status is an upsert with RETURNING followed, when its guard
// refused the update, by a read: exact, because the inbox transaction holds the
// database's write lock (BEGIN IMMEDIATE) and nothing changes in between; and a batch
// of payments is booked one at a time. Times are unix microseconds, as in the
// driver's schema.
var sqliteStatements = statements{
	invoiceCreate:            sqliteInvoiceCreate,
	invoiceFinalize:          sqliteInvoiceFinalize,
	invoicePay:               sqliteInvoicePay,
	invoiceVoid:              sqliteInvoiceVoid,
	invoiceMarkUncollectible: sqliteInvoiceMarkUncollectible,
	invoiceStatus:            sqliteInvoiceStatus,
	ledgerBookPayment:        sqliteLedgerBookPayment,
	anomalyRecord:            sqliteAnomalyRecord,
	anomalyList:              sqliteAnomalyList,
	invoicesByID:             sqliteInvoicesByID,
}

const (
	sqliteNow = `(CAST(round(unixepoch('now', 'subsec') * 1000) AS INTEGER) * 1000)`

	sqliteInvoiceCreate = `
INSERT INTO invoices (id, customer_id, status, currency)
VALUES (?1, ?2, ?3, ?4)
ON CONFLICT (id) DO NOTHING`

	sqliteInvoiceFinalize = `
INSERT INTO invoices (id, customer_id, status, currency)
VALUES (?1, ?2, 'open', ?3)
ON CONFLICT (id) DO UPDATE
   SET status = 'open', updated_at = ` + sqliteNow + `
 WHERE invoices.status = 'draft'`

	// 'paid' may arrive before 'created', so it upserts; it never overwrites void.
	sqliteInvoicePay = `
INSERT INTO invoices (id, customer_id, status, amount_paid, currency, paid_at)
VALUES (?1, ?2, 'paid', ?3, ?4, ` + sqliteNow + `)
ON CONFLICT (id) DO UPDATE
   SET status      = 'paid',
       amount_paid = excluded.amount_paid,
       currency    = coalesce(excluded.currency, invoices.currency),
       paid_at     = coalesce(invoices.paid_at, excluded.paid_at),
       updated_at  = ` + sqliteNow + `
 WHERE invoices.status NOT IN ('paid', 'void')
RETURNING status`

	sqliteInvoiceVoid = `
INSERT INTO invoices (id, customer_id, status, currency)
VALUES (?1, ?2, 'void', ?3)
ON CONFLICT (id) DO UPDATE
   SET status = 'void', updated_at = ` + sqliteNow + `
 WHERE invoices.status IN ('draft', 'open', 'uncollectible')
RETURNING status`

	sqliteInvoiceMarkUncollectible = `
INSERT INTO invoices (id, customer_id, status, currency)
VALUES (?1, ?2, 'uncollectible', ?3)
ON CONFLICT (id) DO UPDATE
   SET status = 'uncollectible', updated_at = ` + sqliteNow + `
 WHERE invoices.status IN ('draft', 'open')`

	sqliteInvoiceStatus = `SELECT status FROM invoices WHERE id = ?1`

	sqliteLedgerBookPayment = `
INSERT INTO ledger_entries (invoice_id, kind, amount, currency, event_id)
VALUES (?1, 'payment', ?2, ?3, ?4)
ON CONFLICT (invoice_id, kind) DO NOTHING
RETURNING id`

	sqliteAnomalyRecord = `
INSERT INTO billing_anomalies (invoice_id, kind, event_id, event_type, detail)
VALUES (?1, ?2, ?3, ?4, ?5)
ON CONFLICT (invoice_id, kind) DO NOTHING`

	sqliteAnomalyList = `
SELECT id, invoice_id, kind, event_id, event_type, detail, created_at
  FROM billing_anomalies
 ORDER BY id`

	// A reconcile's read of the invoices it compares, their ids a JSON array.
	sqliteInvoicesByID = `
SELECT id, status, amount_paid, currency
  FROM invoices
 WHERE id IN (SELECT value FROM json_each(?1))`
)
