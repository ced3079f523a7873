// Package hookinbox makes incoming webhooks take effect exactly once in the receiver's
// own database. It commits the receipt of an event and the business update the event
// causes in one transaction (a transactional inbox).
//
// # Guarantees
//
// Providers retry for days, send the same event twice at the same instant, deliver out
// of order and sometimes send a second Event object for the same fact; receivers crash
// between any two lines. hookinbox holds, on PostgreSQL and on SQLite:
//
//   - G1. A 2xx is answered only after the receipt is durably committed: in sync mode
//     with its business effect, in async mode as pending.
//   - G2. A failure before commit leaves nothing behind, so the sender's retry is
//     processed normally (no "mark first": an event is never lost).
//   - G3. A crash after commit makes every retry a duplicate (no "mark after": an
//     event is never applied twice).
//   - G4. Of concurrent copies of one event exactly one is processed; the others wait
//     on the receipt's primary key and answer duplicate, and if the first rolls back,
//     a waiting copy takes over.
//   - G5. Nothing unverified is written: the signature is checked on the exact bytes
//     received before any database call.
//   - G6. A second Event object for the same fact, and any delivery order, converge to
//     the same state, when handlers are written as state transitions (see HandlerFunc).
//   - G7. An async receipt is retried with backoff until processed, or stops at its
//     worker's MaxAttempts and waits for a person (StateNeedsReview); a worker killed
//     mid-event still counts the attempt.
//   - G8. An external side effect is made from the outbox by a fenced dispatcher
//     (package outbox), or recorded once (package effect), so it converges to once
//     even days later.
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
// The handler answers (with the outcome also in the Hookinbox-Outcome header):
//
//	200 {"outcome":"processed"}   verified, new, handled: receipt and effect committed
//	200 {"outcome":"duplicate"}   received before: nothing written
//	200 {"outcome":"ignored"}     no handler for the type: the receipt is kept, so retries stay duplicates
//	200 {"outcome":"accepted"}    async (or hybrid after a handler failure): the receipt is pending
//	400 / 401                     bad or missing signature, stale or future timestamp, no id or type
//	405 / 413                     not POST / body over the limit (1 MiB by default)
//	408 / 415                     body not received in time / not JSON, or compressed
//	500 / 503                     handler or database failure: rolled back, the provider retries
//
// Errors are JSON, {"error":"..."}, naming the reason and never a secret. Every answer
// is logged with log/slog (endpoint, event id, type, outcome, latency), never a secret
// or a payload. Receive is the same path for events verified by other means.
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
// transaction, and one answer for the request. A delivery with an event id received before but
// another body is a duplicate (the first body won), counted on the receipt
// (Receipt.Conflicts) and logged with both bodies' SHA-256.
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
// transaction of its own. On PostgreSQL a receipt
// accepted by another process wakes idle workers through LISTEN/NOTIFY, sent after
// commit and coalesced (Config.PollOnly turns it off); polling is the fallback. A failed attempt is recorded and retried after
// RetryDelayFunc; the attempt that reaches the worker's MaxAttempts puts the receipt in
// StateNeedsReview, as does the next claim of a receipt whose worker died during its
// last attempt.
//
// # Schema and migrations
//
// hookinbox creates only objects with its own prefix: hookinbox_inbox (the receipts,
// primary key provider, endpoint, event id), hookinbox_outbox, hookinbox_effect and
// hookinbox_claim_token_seq, with applied versions in hookinbox_migration. Each receipt
// and outbox message stores its own state (pending, processed or published,
// needs_review, discarded) and the attempt limit of the process that last took it, so
// every process and every operator tool agree without sharing a configuration.
// Inbox.Migrate applies the migrations (forward-only, in one transaction, under a
// lock: safe to run twice and from several processes); teams with their own migration
// tool apply the same SQL from driver.WriteMigrations or `hookinbox migrate
// --print`. A database created before schema version 3, with the unprefixed names
// webhook_inbox, outbox and effects, is renamed in place with its rows. The billing
// example domain (package examples/billing) has its own tables and migrations.
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
