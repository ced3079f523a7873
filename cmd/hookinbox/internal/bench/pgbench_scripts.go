package bench

// The pgbench anchors: the SQL hookinbox sends for one request of --mode accept and
// --mode sync, for pgbench to send without anything in front. bench/accept.pgbench and
// bench/sync.pgbench are the same text (a test keeps them so), for running by hand or
// with bench/pgbench.sh.

// pgbenchAccept is bench/accept.pgbench.
const pgbenchAccept = `-- The SQL of one accept on an async endpoint: the anchor of hookinbox bench --mode
-- accept. The receipt insert of one delivery (driver/pgxdriver/queries.go,
-- sqlInboxInsert), committed on its own, with the values the driver binds for a new
-- pending receipt: not processed, no outcome, 0 attempts, no error, no delay,
-- max_attempts 10 (the workers' default). The event's JSON is a bound parameter, as
-- pgx binds it, so that PostgreSQL parses it at every insert, as it does for hookinbox.
-- One delivery per commit is the seed's receiver; hookinbox may commit several
-- receipts together (group commit), and the ratio to this script shows what that gains.
--
--   pgbench -n -M prepared -D seq=0 -D payload=JSON -f bench/accept.pgbench
--
-- :seq counts each client's transactions; with :client_id it makes every event id new.
\set seq :seq + 1
INSERT INTO hookinbox_inbox
       (provider, endpoint, event_id, event_type, payload,
        processed_at, outcome, attempts, last_error, available_at, max_attempts, state)
VALUES ('stripe', 'bench', 'evt_pgb_' || :client_id || '_' || :seq, 'invoice.paid', :payload,
        CASE WHEN false THEN now() END, NULL, 0::integer, NULL,
        now() + make_interval(secs => 0::float8), 10::integer,
        CASE WHEN false THEN 'processed'
             WHEN 0::integer >= 10::integer THEN 'needs_review'
             ELSE 'pending' END)
ON CONFLICT (provider, endpoint, event_id) DO NOTHING
RETURNING true;
`

// pgbenchSync is bench/sync.pgbench.
const pgbenchSync = `-- The SQL of one sync delivery to the billing handler: the anchor of hookinbox bench
-- --mode sync. An invoice.paid of a new invoice, as Inbox.Receive and billing's paid
-- handler send it, in one transaction: the receipt, inserted already processed
-- (driver/pgxdriver/queries.go, sqlInboxInsert); the invoice upsert, which reads the
-- status back in the same statement (billing/queries.go, sqlInvoicePay); the ledger
-- entry (sqlLedgerBookPayment); the InvoicePaymentBooked outbox message
-- (driver/pgxdriver/queries.go, sqlOutboxInsert); commit. The sync path inserts the
-- receipt as processed, so no statement marks it processed afterwards, and billing's
-- second status read (sqlInvoiceStatus) runs only when the upsert changed nothing,
-- never for a new invoice. The event's and the message's JSON are bound parameters, as
-- pgx binds them. One delivery per commit is the seed's receiver; hookinbox may run
-- several deliveries in one transaction (group commit, a savepoint each), and the
-- ratio to this script shows what that gains.
--
--   pgbench -n -M prepared -D seq=0 -D payload=JSON -D message=JSON -f bench/sync.pgbench
--
-- :seq counts each client's transactions; with :client_id it makes every event id and
-- invoice id new.
\set seq :seq + 1
BEGIN;
INSERT INTO hookinbox_inbox
       (provider, endpoint, event_id, event_type, payload,
        processed_at, outcome, attempts, last_error, available_at, max_attempts, state)
VALUES ('stripe', 'bench', 'evt_pgb_' || :client_id || '_' || :seq, 'invoice.paid', :payload,
        CASE WHEN true THEN now() END, 'processed', 0::integer, NULL,
        now() + make_interval(secs => 0::float8), 10::integer,
        CASE WHEN true THEN 'processed'
             WHEN 0::integer >= 10::integer THEN 'needs_review'
             ELSE 'pending' END)
ON CONFLICT (provider, endpoint, event_id) DO NOTHING
RETURNING true;
WITH upsert AS (
    INSERT INTO invoices (id, customer_id, status, amount_paid, currency, paid_at)
    VALUES ('in_pgb_' || :client_id || '_' || :seq, 'cus_hookinbox_bench', 'paid', 1000, 'usd', now())
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
SELECT status FROM invoices
 WHERE id = 'in_pgb_' || :client_id || '_' || :seq AND NOT EXISTS (SELECT 1 FROM upsert);
INSERT INTO ledger_entries (invoice_id, kind, amount, currency, event_id)
VALUES ('in_pgb_' || :client_id || '_' || :seq, 'payment', 1000, 'usd', 'evt_pgb_' || :client_id || '_' || :seq)
ON CONFLICT (invoice_id, kind) DO NOTHING
RETURNING id;
INSERT INTO hookinbox_outbox (aggregate_type, aggregate_id, event_type, payload,
                    source_provider, source_endpoint, source_event_id, destination)
VALUES ('Invoice', 'in_pgb_' || :client_id || '_' || :seq, 'InvoicePaymentBooked', :message,
        'stripe', 'bench', 'evt_pgb_' || :client_id || '_' || :seq, NULL)
RETURNING id;
COMMIT;
`

// pgbenchScripts are the anchors by mode, with their file names in bench/.
var pgbenchScripts = map[string]struct{ file, text string }{
	ModeAccept: {"accept.pgbench", pgbenchAccept},
	ModeSync:   {"sync.pgbench", pgbenchSync},
}
