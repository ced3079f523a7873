// Command billing is a Stripe webhook receiver built on the hookinbox library: the seed
// article's invoice and ledger domain, processed exactly once on PostgreSQL.
//
//	STRIPE_WEBHOOK_SECRET=whsec_... go run ./examples/billing/cmd/billing
//
// DATABASE_URL selects the database (default: the local server); LISTEN the address
// (default 127.0.0.1:8080). Events are received on POST /webhooks/stripe.
package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/examples/billing"
	"github.com/hookinbox/hookinbox/provider"
)

func main() {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if err := run(logger); err != nil {
		logger.Error("billing: " + err.Error())
		os.Exit(1)
	}
}

func run(logger *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	cfg, err := pgxpool.ParseConfig(env("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres"))
	if err != nil {
		return err
	}
	pgxdriver.ConfigurePool(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	stripe, err := provider.NewStripe(provider.StripeConfig{Secrets: []string{os.Getenv("STRIPE_WEBHOOK_SECRET")}})
	if err != nil {
		return errors.New("set STRIPE_WEBHOOK_SECRET to the endpoint's signing secret: " + err.Error())
	}
	inbox, err := hookinbox.New(pgxdriver.New(pool), &hookinbox.Config{
		Endpoints: []hookinbox.EndpointConfig{{Name: "billing", Verifier: stripe, Mode: hookinbox.ModeHybrid}},
		Logger:    logger,
	})
	if err != nil {
		return err
	}
	if err := inbox.Migrate(ctx); err != nil {
		return err
	}
	// hookinbox creates only its own hookinbox_* tables; billing's are billing's.
	if err := billing.Migrate(ctx, inbox.Driver()); err != nil {
		return err
	}
	billing.Register(inbox, "billing")

	mux := http.NewServeMux()
	mux.Handle("POST /webhooks/stripe", inbox.Endpoint("billing"))
	srv := &http.Server{
		Addr:              env("LISTEN", "127.0.0.1:8080"),
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	workers := make(chan error, 1)
	go func() { workers <- inbox.Run(ctx) }()
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx) // in-flight requests finish; nothing is answered before commit
	}()
	logger.Info("billing: listening", "addr", srv.Addr, "path", "/webhooks/stripe")
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return <-workers
}

func env(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}
