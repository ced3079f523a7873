package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/sign"
	"github.com/hookinbox/hookinbox/provider"
)

// naiveReceiver is the webhook receiver a team writes by hand with net/http and pgx,
// the anchor that answers "how much faster is this than the code I would write?".
// Per request: read the body, verify the Stripe signature, decode the event, and in
// one transaction insert the receipt (ON CONFLICT DO NOTHING: a duplicate writes
// nothing more) and, for sync, do the billing work (invoice upsert, ledger entry,
// outbox message); commit; answer 200. No group commit, no batching, one pool
// connection per sender.
//
// The signature is checked with hookinbox's provider.Stripe, not stripe-go's
// webhook.ConstructEvent, which a team would call: the binary does not depend on
// stripe-go (its tests use it as the oracle of provider.Stripe). Both compute one
// HMAC-SHA256 over the signed payload and compare it in constant time; stripe-go's
// also decodes the whole event into its Event type, which this receiver's
// json.Unmarshal of the invoice does in its place.
type naiveReceiver struct {
	pool     *pgxpool.Pool
	verifier *provider.Stripe
	script   naiveScript
	billing  bool
}

// naiveEvent is what the receiver reads of a Stripe invoice event.
type naiveEvent struct {
	Data struct {
		Object struct {
			ID         string `json:"id"`
			Customer   string `json:"customer"`
			AmountPaid int64  `json:"amount_paid"`
			Currency   string `json:"currency"`
		} `json:"object"`
	} `json:"data"`
}

func (n *naiveReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		http.Error(w, "cannot read the body", http.StatusBadRequest)
		return
	}
	v, err := n.verifier.Verify(r.Header, body)
	if err != nil {
		http.Error(w, "invalid signature", http.StatusBadRequest)
		return
	}
	var ev naiveEvent
	if err := json.Unmarshal(body, &ev); err != nil || ev.Data.Object.ID == "" {
		http.Error(w, "not an invoice event", http.StatusBadRequest)
		return
	}
	inv := ev.Data.Object
	values := map[string]any{
		"event_id": v.ID, "event_type": v.Type, "payload": body,
		"invoice_id": inv.ID, "customer": inv.Customer, "amount": inv.AmountPaid, "currency": inv.Currency,
	}
	if err := n.apply(r.Context(), values); err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// apply runs the script for one event, in one transaction.
func (n *naiveReceiver) apply(ctx context.Context, values map[string]any) error {
	receipt := n.script.queries[0]
	if !n.script.tx {
		_, err := n.pool.Exec(ctx, receipt.sql, receipt.args(values)...)
		return err
	}
	tx, err := n.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var inserted bool
	switch err := tx.QueryRow(ctx, receipt.sql, receipt.args(values)...).Scan(&inserted); {
	case errors.Is(err, pgx.ErrNoRows):
		return tx.Commit(ctx) // a duplicate: received before, nothing to do
	case err != nil:
		return err
	}
	if n.billing {
		if err := n.bill(ctx, tx, values); err != nil {
			return err
		}
	}
	return tx.Commit(ctx)
}

// bill is the billing handler's work for invoice.paid: the guarded upsert, and for
// an invoice it turned paid the ledger entry and the InvoicePaymentBooked message.
func (n *naiveReceiver) bill(ctx context.Context, tx pgx.Tx, values map[string]any) error {
	invoice, ledger, outbox := n.script.queries[1], n.script.queries[2], n.script.queries[3]
	var status string
	if err := tx.QueryRow(ctx, invoice.sql, invoice.args(values)...).Scan(&status); err != nil {
		return err
	}
	if status != "paid" {
		return nil
	}
	var entryID int64
	switch err := tx.QueryRow(ctx, ledger.sql, ledger.args(values)...).Scan(&entryID); {
	case errors.Is(err, pgx.ErrNoRows):
		return nil // booked already
	case err != nil:
		return err
	}
	message, err := json.Marshal(map[string]any{
		"invoice_id": values["invoice_id"], "customer_id": values["customer"],
		"amount": values["amount"], "currency": values["currency"], "ledger_entry_id": entryID,
	})
	if err != nil {
		return err
	}
	values["message"] = message
	var id int64
	return tx.QueryRow(ctx, outbox.sql, outbox.args(values)...).Scan(&id)
}

// startNaive serves a naive receiver on 127.0.0.1 with serve's HTTP timeouts, on db
// with a pool of one connection per sender, and returns its URL and what stops it
// (once, however often it is called).
func startNaive(ctx context.Context, db config.Database, mode, secret string, senders int) (string, func(), error) {
	verifier, err := provider.NewStripe(provider.StripeConfig{Secrets: []string{secret}})
	if err != nil {
		return "", nil, err
	}
	pcfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		return "", nil, err
	}
	pcfg.MaxConns = int32(senders)
	pcfg.ConnConfig.RuntimeParams["application_name"] = "hookinbox-bench-naive"
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return "", nil, fmt.Errorf("error connecting the naive receiver: %w", err)
	}
	n := &naiveReceiver{pool: pool, verifier: verifier, script: naiveAccept}
	if mode == ModeSync {
		n.script, n.billing = naiveSync, true
	}
	base, shutdown, err := serveLocal(n, slog.New(slog.DiscardHandler))
	if err != nil {
		pool.Close()
		return "", nil, fmt.Errorf("the naive receiver: %w", err)
	}
	return base + "/webhooks/stripe", sync.OnceFunc(func() {
		shutdown()
		pool.Close()
	}), nil
}

// NaiveReport is the naive receiver's run beside hookinbox's: the same senders,
// events and duration (or count), on a fresh schema with the same tables.
type NaiveReport struct {
	// Script is the pgbench script whose statements it runs per request.
	Script       string `json:"script,omitempty"`
	PoolMaxConns int    `json:"pool_max_conns,omitempty"`
	LoadReport
	// After counts the rows it left in its schema, before the schema is dropped.
	After *DBCounts `json:"database_after,omitempty"`
	// Skipped says why it did not run; Error why it failed.
	Skipped string `json:"skipped,omitempty"`
	Error   string `json:"error,omitempty"`
}

// runNaive runs the naive receiver for c.Mode on a fresh schema of the database at
// raw, migrated with cfg's migration lines, and drives it with the same load as
// hookinbox's run. It runs CHECKPOINT first, as before hookinbox's run.
func runNaive(ctx context.Context, c *Config, admin *pgxpool.Pool, raw string, cfg *config.Config,
	settings *Settings, p *progress,
) *NaiveReport {
	script, ok := pgbenchScripts[c.Mode]
	switch {
	case !c.anchor(AnchorNaive):
		return &NaiveReport{Skipped: "not in --anchor"}
	case !ok:
		return &NaiveReport{Skipped: fmt.Sprintf("--mode %s has no naive anchor", c.Mode)}
	case admin == nil:
		return &NaiveReport{Skipped: "the database is SQLite"}
	}
	nr := &NaiveReport{Script: "bench/" + script.file, PoolMaxConns: c.Concurrency}
	schema, db, drop, err := anchorSchema(ctx, admin, raw, "hookinbox_naive_", cfg)
	if err != nil {
		nr.Error = err.Error()
		return nr
	}
	defer drop()
	secret := "whsec_naive_" + randomHex(16)
	url, stop, err := startNaive(ctx, db, c.Mode, secret, c.Concurrency)
	if err != nil {
		nr.Error = err.Error()
		return nr
	}
	defer stop()
	gen, err := newEventGen(c.TemplateFunc, "stripe", nil)
	if err != nil {
		nr.Error = err.Error()
		return nr
	}
	settings.checkpoint(ctx, admin)
	rn := &runner{c: c, signer: sign.Stripe(secret), gen: gen,
		cpu: newCPUMeter("bench (load generator and naive receiver)", raw)}
	spec, answered := rn.spec(url)
	p.track("naive", "requests", answered.Load)
	res := runLoad(ctx, spec)
	p.untrack()
	nr.setLoad(res)
	stop()
	if nr.After, err = countPostgres(context.WithoutCancel(ctx), admin, schema); err != nil {
		nr.Error = err.Error()
	}
	return nr
}
