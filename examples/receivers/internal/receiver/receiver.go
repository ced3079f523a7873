// Package receiver is what the reference receivers share and what none of their
// lessons is about: the flags, the database and the invoice tables, the Stripe
// signature check, the server. Each receiver's main.go holds its handler, which is the
// lesson: how it records an event's receipt and applies the event.
package receiver

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox/provider"
)

// App is a running receiver's database, settings and verifier.
type App struct {
	// Pool is the receiver's database, its sessions on the receiver's schema.
	Pool   *pgxpool.Pool
	Logger *slog.Logger

	name     string
	listen   string
	work     time.Duration
	verifier *provider.Stripe
}

// Event is the part of a Stripe event the receivers read.
type Event struct {
	ID, Type string
	// Invoice, Customer and Amount are the invoice's, from data.object.
	Invoice  string
	Customer string
	Amount   int64
}

// tables are the business tables every receiver shares: the invoices, and one row
// per application of an outcome (a payment credited, an invoice voided), which is
// what `hookinbox probe --check-sql` counts.
const tables = `
CREATE TABLE IF NOT EXISTS invoices (
    id       text   PRIMARY KEY,
    customer text   NOT NULL,
    amount   bigint NOT NULL,
    status   text   NOT NULL,
    credited bigint NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS applications (
    id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    invoice_id text        NOT NULL,
    event_id   text        NOT NULL,
    kind       text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);`

// Receipts is the receipts table of every receiver but no-unique-key: one row per
// event id, the id its primary key.
const Receipts = `
CREATE TABLE IF NOT EXISTS receipts (
    event_id    text        PRIMARY KEY,
    received_at timestamptz NOT NULL DEFAULT now()
);`

// Start reads the flags and the environment, connects to the database, creates the
// receiver's schema, the shared tables and its receipts table (receipts, the DDL of
// the receiver's choice), and returns the receiver. It exits on an error.
//
//	-listen ADDR          LISTEN,       default 127.0.0.1:8090
//	-database-url URL     DATABASE_URL, default the local server
//	-schema NAME          SCHEMA,       default the receiver's name (mark_first)
//	-work DURATION        WORK,         default 20ms: each event's business update
//	                                    also waits this long in the database (a
//	                                    slow statement, a lock wait), which gives a
//	                                    provider's timeout room to fall inside it
//	STRIPE_WEBHOOK_SECRET the endpoint's signing secret (whsec_...)
func Start(name, receipts string) *App {
	a := &App{name: name, Logger: slog.New(slog.NewJSONHandler(os.Stderr, nil))}
	if err := a.start(receipts); err != nil {
		a.Logger.Error(name + ": " + err.Error())
		os.Exit(1)
	}
	return a
}

func (a *App) start(receipts string) error {
	databaseURL, schema := "", ""
	fs := flag.NewFlagSet(a.name, flag.ExitOnError)
	fs.StringVar(&a.listen, "listen", env("LISTEN", "127.0.0.1:8090"), "address to listen on")
	fs.StringVar(&databaseURL, "database-url", env("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres"), "PostgreSQL URL")
	fs.StringVar(&schema, "schema", env("SCHEMA", strings.ReplaceAll(a.name, "-", "_")), "schema of the receiver's tables")
	work, err := time.ParseDuration(env("WORK", "20ms"))
	if err != nil {
		return fmt.Errorf("WORK: %w", err)
	}
	fs.DurationVar(&a.work, "work", work, "time each business update spends in the database")
	_ = fs.Parse(os.Args[1:])

	a.verifier, err = provider.NewStripe(provider.StripeConfig{Secrets: []string{os.Getenv("STRIPE_WEBHOOK_SECRET")}})
	if err != nil {
		return fmt.Errorf("set STRIPE_WEBHOOK_SECRET to the endpoint's signing secret: %w", err)
	}
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return err
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	if a.Pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return err
	}
	ddl := fmt.Sprintf("CREATE SCHEMA IF NOT EXISTS %s;", pgx.Identifier{schema}.Sanitize()) + tables + receipts
	if _, err := a.Pool.Exec(ctx, ddl); err != nil {
		return fmt.Errorf("error creating the tables: %w", err)
	}
	return nil
}

func env(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// Serve serves handle on POST /webhooks/stripe, called only for events whose
// signature verified, and GET /applied, the applied count of every invoice as
// `hookinbox probe --check-url` reads it. It logs the address it listens on and
// returns only on an error.
func (a *App) Serve(handle func(w http.ResponseWriter, r *http.Request, ev Event)) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /webhooks/stripe", func(w http.ResponseWriter, r *http.Request) {
		ev, status, err := a.verify(r)
		if err != nil {
			Answer(w, status, map[string]string{"error": err.Error()})
			return
		}
		handle(w, r, ev)
	})
	mux.HandleFunc("GET /applied", a.applied)
	ln, err := net.Listen("tcp", a.listen)
	if err != nil {
		a.Logger.Error(a.name + ": " + err.Error())
		os.Exit(1)
	}
	a.Logger.Info("listening", "receiver", a.name, "addr", ln.Addr().String())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	a.Logger.Error(a.name + ": " + srv.Serve(ln).Error())
	os.Exit(1)
}

// verify checks the Stripe signature on the exact bytes received, then reads the
// event.
func (a *App) verify(r *http.Request) (Event, int, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return Event{}, http.StatusBadRequest, err
	}
	v, err := a.verifier.Verify(r.Header, body)
	if err != nil {
		return Event{}, http.StatusUnauthorized, err
	}
	var e struct {
		Data struct {
			Object struct {
				ID        string `json:"id"`
				Customer  string `json:"customer"`
				AmountDue int64  `json:"amount_due"`
			} `json:"object"`
		} `json:"data"`
	}
	if err := json.Unmarshal(v.Body, &e); err != nil {
		return Event{}, http.StatusBadRequest, err
	}
	o := e.Data.Object
	return Event{ID: v.ID, Type: v.Type, Invoice: o.ID, Customer: o.Customer, Amount: o.AmountDue}, 0, nil
}

// Answer writes status and v as JSON.
func Answer(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Reply answers a handler's result: 200 with the outcome, or 500 on an error, which
// the provider retries.
func (a *App) Reply(w http.ResponseWriter, ev Event, outcome string, err error) {
	if err != nil {
		a.Logger.Warn("event failed", "event_id", ev.ID, "type", ev.Type, "error", err.Error())
		Answer(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	Answer(w, http.StatusOK, map[string]string{"outcome": outcome})
}

func (a *App) applied(w http.ResponseWriter, r *http.Request) {
	rows, err := a.Pool.Query(r.Context(), `SELECT invoice_id, count(*) FROM applications GROUP BY invoice_id`)
	if err != nil {
		Answer(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	type fact struct {
		FactID  string `json:"fact_id"`
		Applied int64  `json:"applied"`
	}
	facts, err := pgx.CollectRows(rows, pgx.RowToStructByPos[fact])
	if err != nil {
		Answer(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	Answer(w, http.StatusOK, append([]fact{}, facts...))
}

// ErrUnknownInvoice is an event about an invoice that invoice.created has not
// created yet: it arrived out of order. Answered 500, it is retried by the provider,
// by which time the invoice exists.
var ErrUnknownInvoice = errors.New("invoice not created yet; retry later")

// Apply is the business update of ev in tx as most handlers are written: every call
// applies. invoice.created inserts the invoice; invoice.finalized opens it;
// invoice.paid credits the customer and records the application; invoice.voided
// voids the invoice and records the application. Other types, among them
// invoice.payment_succeeded, are ignored. It returns ErrUnknownInvoice for an event
// about an invoice not created yet.
//
// Nothing in it stops a second application: only the receiver's receipts do, which
// is what the reference receivers differ in.
func (a *App) Apply(ctx context.Context, tx pgx.Tx, ev Event) error {
	return a.apply(ctx, tx, ev, false)
}

// ApplyOnce is Apply written as a state transition, as hookinbox's billing handlers
// are: a payment (invoice.paid or invoice.payment_succeeded, two Event objects for
// one payment) is credited only by the event that moves the invoice to paid, a void
// only by the one that moves it to void. Applying an event again, or the second
// Event object, changes nothing.
func (a *App) ApplyOnce(ctx context.Context, tx pgx.Tx, ev Event) error {
	return a.apply(ctx, tx, ev, true)
}

func (a *App) apply(ctx context.Context, tx pgx.Tx, ev Event, once bool) error {
	if ev.Type == "invoice.created" {
		_, err := tx.Exec(ctx, `INSERT INTO invoices (id, customer, amount, status) VALUES ($1, $2, $3, 'draft')
			ON CONFLICT (id) DO NOTHING`, ev.Invoice, ev.Customer, ev.Amount)
		return a.slow(ctx, tx, err)
	}
	var status string
	err := tx.QueryRow(ctx, `SELECT status FROM invoices WHERE id = $1 FOR UPDATE`, ev.Invoice).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrUnknownInvoice
	} else if err != nil {
		return err
	}
	settled := status == "paid" || status == "void"
	switch {
	case ev.Type == "invoice.finalized":
		_, err = tx.Exec(ctx, `UPDATE invoices SET status = 'open' WHERE id = $1 AND status = 'draft'`, ev.Invoice)
	case ev.Type == "invoice.paid" || once && ev.Type == "invoice.payment_succeeded":
		if once && settled {
			break
		}
		if _, err = tx.Exec(ctx, `UPDATE invoices SET status = 'paid', credited = credited + amount WHERE id = $1`, ev.Invoice); err == nil {
			_, err = tx.Exec(ctx, `INSERT INTO applications (invoice_id, event_id, kind) VALUES ($1, $2, 'paid')`, ev.Invoice, ev.ID)
		}
	case ev.Type == "invoice.voided":
		if once && settled {
			break
		}
		if _, err = tx.Exec(ctx, `UPDATE invoices SET status = 'void' WHERE id = $1`, ev.Invoice); err == nil {
			_, err = tx.Exec(ctx, `INSERT INTO applications (invoice_id, event_id, kind) VALUES ($1, $2, 'void')`, ev.Invoice, ev.ID)
		}
	}
	return a.slow(ctx, tx, err)
}

// slow spends the receiver's -work in the database, unless err.
func (a *App) slow(ctx context.Context, tx pgx.Tx, err error) error {
	if err != nil || a.work <= 0 {
		return err
	}
	_, err = tx.Exec(ctx, `SELECT pg_sleep($1)`, a.work.Seconds())
	return err
}
