// Command library is a Stripe webhook receiver on PostgreSQL written with the
// hookinbox library: each invoice.paid event records the payment in the
// application's own table and writes an outbox message, in the transaction that
// records the event's receipt. The README's library section is this file, whole.
//
//	DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres STRIPE_WEBHOOK_SECRET=whsec_dev go run ./examples/library
//	STRIPE_WEBHOOK_SECRET=whsec_dev hookinbox send --secret-env STRIPE_WEBHOOK_SECRET   # the README's quick start
//
// LISTEN sets the address (default 127.0.0.1:8080); the first log line names it.
package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/provider"
)

// invoicePaid is the part of Stripe's invoice.paid event the handler reads.
type invoicePaid struct {
	Data struct {
		Object struct {
			ID         string `json:"id"`
			AmountPaid int64  `json:"amount_paid"`
			Currency   string `json:"currency"`
		} `json:"object"`
	} `json:"data"`
}

func main() {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if err := run(logger); err != nil {
		logger.Error(err.Error())
		os.Exit(1)
	}
}

func run(logger *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	cfg, err := pgxpool.ParseConfig(os.Getenv("DATABASE_URL"))
	if err != nil {
		return err
	}
	pgxdriver.ConfigurePool(cfg) // readies each connection's server process: see its doc
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	// The application's own table (hookinbox creates only hookinbox_* tables): in a
	// real service, one of its migrations.
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS payments (
		invoice_id text PRIMARY KEY, amount bigint NOT NULL, currency text NOT NULL)`); err != nil {
		return err
	}

	stripe, err := provider.NewStripe(provider.StripeConfig{Secrets: []string{os.Getenv("STRIPE_WEBHOOK_SECRET")}})
	if err != nil {
		return errors.New("set STRIPE_WEBHOOK_SECRET to the endpoint's signing secret: " + err.Error())
	}
	inbox, err := hookinbox.New(pgxdriver.New(pool), &hookinbox.Config{
		Endpoints: []hookinbox.EndpointConfig{{Name: "billing", Verifier: stripe, Mode: hookinbox.ModeSync}},
		Logger:    logger,
	})
	if err != nil {
		return err
	}
	if err := inbox.Migrate(ctx); err != nil { // or apply `hookinbox migrate --print` with your own tool
		return err
	}
	inbox.Handle("billing", "invoice.paid", hookinbox.JSONHandler(
		func(ctx context.Context, tx pgx.Tx, ev hookinbox.Event, e invoicePaid) error {
			inv := e.Data.Object
			// A state transition, not an increment: a second Event object for the
			// same payment records nothing and notifies no one.
			tag, err := tx.Exec(ctx, `INSERT INTO payments (invoice_id, amount, currency)
				VALUES ($1, $2, $3) ON CONFLICT (invoice_id) DO NOTHING`, inv.ID, inv.AmountPaid, inv.Currency)
			if err != nil {
				return err // rolls back the receipt too: Stripe retries
			}
			if tag.RowsAffected() == 0 {
				return nil
			}
			// External calls go through the outbox, never from the handler: an
			// outbox.Dispatcher delivers the message after commit.
			_, err = hookinbox.InsertOutboxTx[*pgxdriver.Driver](ctx, tx, ev, hookinbox.OutboxMessage{
				AggregateType: "Invoice", AggregateID: inv.ID, EventType: "PaymentRecorded",
				Payload: map[string]any{"invoice": inv.ID, "amount": inv.AmountPaid, "currency": inv.Currency},
			})
			return err
		}))

	mux := http.NewServeMux()
	mux.Handle("POST /webhooks/stripe", inbox.Endpoint("billing"))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 30 * time.Second}
	addr := os.Getenv("LISTEN")
	if addr == "" {
		addr = "127.0.0.1:8080"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	shutdown := make(chan error, 1)
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		// In-flight deliveries finish (none is answered before its commit) before
		// run returns and closes the pool.
		shutdown <- srv.Shutdown(shutdownCtx)
	}()
	logger.Info("listening", "addr", ln.Addr().String(), "path", "/webhooks/stripe")
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return <-shutdown
}
