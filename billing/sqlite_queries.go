package billing

// The billing handlers' SQL on SQLite (HandlersSQL), the same guarded state
// transitions as queries.go. SQLite has no data-modifying CTE, so a transition that
// reports the invoice's status is an upsert with RETURNING followed, when its guard
// refused the update, by a read: exact, because the inbox transaction holds the
// database's write lock (BEGIN IMMEDIATE) and nothing changes in between. Times are
// unix microseconds, as in the driver's schema.

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

	// A reconcile's read of one invoice it compares.
	sqliteInvoiceByID = `
SELECT id, status, amount_paid, currency
  FROM invoices
 WHERE id = ?1`
)
