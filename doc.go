// Package hookinbox makes incoming webhooks take effect exactly once in the receiver's
// own database. It commits the receipt of an event and the business update the event
// causes in one transaction (a transactional inbox).
//
// # Guarantees
//
// Providers retry for days, send the same event twice at the same instant, deliver out
// of order and sometimes send a second Event object for the same fact; receivers crash
// between any two lines. What hookinbox guarantees whatever happens, on PostgreSQL and
// on SQLite, is stated once, as guarantees G1 to G8, in docs/CONTRACT.md in the
// repository ("Guarantees"); docs/RELIABILITY.md names the test that proves each.
//
// # Receiving
//
// An Inbox is built on a driver (driver/pgxdriver for PostgreSQL, driver/sqlitedriver
// for SQLite) and a Config of endpoints, each with a provider.Verifier and a Mode.
// Handlers are registered per endpoint and event type; Endpoint returns the
// endpoint's http.Handler:
//
//	inbox, err := hookinbox.New(pgxdriver.New(pool), &hookinbox.Config{
//		Endpoints: []hookinbox.EndpointConfig{{Name: "billing", Verifier: stripe, Mode: hookinbox.ModeSync}},
//	})
//	err = inbox.Migrate(ctx)
//	inbox.Handle("billing", "invoice.paid", func(ctx context.Context, tx pgx.Tx, ev hookinbox.Event) error {
//		_, err := tx.Exec(ctx, `UPDATE invoices SET status = 'paid' WHERE id = $1 AND status = 'open'`, id)
//		return err
//	})
//	mux.Handle("POST /webhooks/stripe", inbox.Endpoint("billing"))
//	go inbox.Run(ctx) // workers, for async and hybrid endpoints
//
// What an endpoint answers ({"outcome":"processed"}, "duplicate", a refusal with its
// status and reason, ...) and what each answer writes is the table "Receiving (HTTP)"
// of docs/CONTRACT.md. Receive is the same path for events verified by other means.
//
// Modes: ModeSync processes inside the receive transaction; ModeAsync stores the
// receipt as pending and lets workers process it; ModeHybrid tries sync and, when the
// handler fails, stores the receipt as pending with the error and one attempt counted,
// so that workers retry it and a bug does not depend on the provider's patience.
//
// Concurrent deliveries share commits (Config.Accept, Config.Sync): async receipts
// are inserted a batch per statement, sync deliveries run several to a transaction,
// each behind a savepoint of its own, so that one's failure undoes only its own work.
// Deliveries of one handler registered with HandleBatch (a BatchHandlerFunc, its
// set-based form) share statements too: their receipts are inserted by one statement
// and the handler is called once for all of them, behind one savepoint; if that
// fails, each is received alone behind its own. There is no timer: a lone delivery is
// committed at once, and every delivery is answered only after its commit.
//
// A request that carries several events (a provider.BatchVerifier scheme, such as
// SendGrid's arrays) is received by ReceiveBatch: a receipt per event, all in one
// transaction, and one answer for the request. A delivery with an event id received
// before but another body is a duplicate (the first body won), counted on the receipt
// (hookinboxtype.Receipt.Conflicts) and logged with both bodies' SHA-256.
//
// # Handlers
//
// A HandlerFunc receives the driver's native transaction (pgx.Tx, *sql.Tx) and the
// verified Event. Its writes commit with the receipt or not at all; an error or a
// panic (recovered as a *PanicError, its stack logged) rolls both back. JSONHandler
// decodes the payload into a struct first. Handlers make no external calls: they write
// outbox messages with InsertOutboxTx, which takes the transaction and the driver's
// type, so a handler needs nothing but its arguments:
//
//	_, err := hookinbox.InsertOutboxTx[*pgxdriver.Driver](ctx, tx, ev, hookinbox.OutboxMessage{...})
//
// ForwardTo is a ready set-based handler (HandleBatch) that forwards every event
// through the outbox (the gateway mode of the hookinbox binary).
//
// # Workers
//
// Run starts WorkerConfig.Concurrency workers for the async and hybrid endpoints. A
// worker claims up to WorkerConfig.BatchSize receipts in a short committed statement
// (attempts counted, leases taken, SKIP LOCKED), then processes them in a second
// transaction that locks the rows, re-checks that they are still pending, bounds every
// statement below the lease, applies the handlers and marks them processed; when one
// fails, the batch is halved until the failing receipt is processed alone, in a
// transaction of its own. On PostgreSQL a receipt accepted by another process wakes
// idle workers through LISTEN/NOTIFY, sent after commit and coalesced
// (Config.PollOnly turns it off); polling is the fallback. A failed attempt is
// recorded and retried after RetryDelayFunc; the attempt that reaches the worker's
// MaxAttempts puts the receipt in hookinboxtype.StateNeedsReview, as does the next
// claim of a receipt whose worker died during its last attempt.
//
// # Schema and migrations
//
// hookinbox creates only objects with its own prefix (hookinbox_*); its tables, their
// columns and the schema versions are listed in docs/CONTRACT.md ("Schema"). Each
// receipt and outbox message stores its own state and the attempt limit of the
// process that last took it, so every process and every operator tool agree without
// sharing a configuration. Inbox.Migrate applies the migrations; teams with their own
// migration tool apply the same SQL from driver.WriteMigrations or `hookinbox migrate
// --print`. The billing example domain (package examples/billing) has its own tables
// and migrations.
//
// # Operating
//
// An Operator (NewOperator on a driver's Executor, or Inbox.Operator) lists, counts,
// retries and cleans up receipts; it needs no handlers and no transaction type. Stats
// is the monitoring query: alert on NeedsReview and on the oldest unprocessed age.
// Cleanup deletes processed receipts older than the retention and refuses a retention
// shorter than the providers' retry windows (Stripe retries for 3 days) unless forced,
// since a retry that arrives after its receipt is gone is processed again. An Observer
// is told of every delivery and attempt, for metrics.
package hookinbox
