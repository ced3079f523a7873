package billing

// The billing handlers' SQL (PostgreSQL). Each statement is a guarded state
// transition: creation inserts only if absent, and an update names the states it may
// leave, so late or repeated events cannot roll an invoice back.

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

	// 'paid' may arrive before 'created', so it upserts; it never overwrites void. The
	// final status is read back in the same statement's snapshot of the locked row.
	sqlInvoicePay = `
WITH upsert AS (
    INSERT INTO invoices (id, customer_id, status, amount_paid, currency, paid_at)
    VALUES ($1, $2, 'paid', $3, $4, now())
    ON CONFLICT (id) DO UPDATE
       SET status      = 'paid',
           amount_paid = EXCLUDED.amount_paid,
           currency    = coalesce(EXCLUDED.currency, invoices.currency),
           paid_at     = coalesce(invoices.paid_at, EXCLUDED.paid_at),
           updated_at  = now()
     WHERE invoices.status NOT IN ('paid', 'void')
    RETURNING status
)
SELECT status FROM upsert
UNION ALL
SELECT status FROM invoices WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM upsert)`

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
SELECT id, invoice_id, kind, event_id, event_type, detail, created_at
  FROM billing_anomalies
 ORDER BY id`

	// A reconcile's read of the invoices it compares.
	sqlInvoicesByID = `
SELECT id, status, amount_paid, currency
  FROM invoices
 WHERE id = ANY($1)`
)
