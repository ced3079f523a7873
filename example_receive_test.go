package hookinbox_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/hookinboxtest"
	"github.com/hookinbox/hookinbox/provider"
)

// stripeInvoiceEvent is the part of a Stripe invoice event the handler reads.
type stripeInvoiceEvent struct {
	Data struct {
		Object struct {
			ID         string `json:"id"`
			AmountPaid int64  `json:"amount_paid"`
		} `json:"object"`
	} `json:"data"`
}

// A Stripe endpoint on PostgreSQL whose handler marks the application's own invoice
// paid and writes an outbox message, both in the receipt's transaction. The same
// delivery again is a duplicate: nothing is applied twice. examples/library is the
// same as a program, served on a listener of its own.
func Example_receive() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	// The application's own table; hookinbox creates only hookinbox_* tables.
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS invoices (id text PRIMARY KEY, status text NOT NULL)`); err != nil {
		panic(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO invoices VALUES ('in_1', 'open') ON CONFLICT DO NOTHING`); err != nil {
		panic(err)
	}

	stripe, err := provider.NewStripe(provider.StripeConfig{Secrets: []string{"whsec_example"}}) // from your secret store
	if err != nil {
		panic(err)
	}
	inbox, err := hookinbox.New(pgxdriver.New(pool), &hookinbox.Config{
		Endpoints: []hookinbox.EndpointConfig{{Name: "billing", Verifier: stripe, Mode: hookinbox.ModeSync}},
	})
	if err != nil {
		panic(err)
	}
	if err := inbox.Migrate(ctx); err != nil { // or apply `hookinbox migrate --print` with your own tool
		panic(err)
	}
	inbox.Handle("billing", "invoice.paid", hookinbox.JSONHandler(
		func(ctx context.Context, tx pgx.Tx, ev hookinbox.Event, e stripeInvoiceEvent) error {
			// A guarded update: a second Event object for the same payment, or a late
			// retry, changes nothing.
			if _, err := tx.Exec(ctx, `UPDATE invoices SET status = 'paid' WHERE id = $1 AND status = 'open'`, e.Data.Object.ID); err != nil {
				return err // rolls back the receipt too: the provider retries
			}
			// External calls go through the outbox, never from the handler.
			_, err := hookinbox.InsertOutboxTx[*pgxdriver.Driver](ctx, tx, ev, hookinbox.OutboxMessage{
				AggregateType: "Invoice", AggregateID: e.Data.Object.ID, EventType: "InvoicePaid",
				Payload: map[string]any{"invoice": e.Data.Object.ID, "amount": e.Data.Object.AmountPaid},
			})
			return err
		}))

	mux := http.NewServeMux()
	mux.Handle("POST /webhooks/stripe", inbox.Endpoint("billing"))
	srv := httptest.NewServer(mux) // in a service: http.ListenAndServe(":8080", mux)
	defer srv.Close()

	// What Stripe sends, twice.
	body := []byte(`{"id":"evt_1","object":"event","type":"invoice.paid","data":{"object":{"id":"in_1","amount_paid":1200}}}`)
	for range 2 {
		req, err := hookinboxtest.NewRequest(srv.URL+"/webhooks/stripe", hookinboxtest.Stripe("whsec_example"), body)
		if err != nil {
			panic(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Print(resp.StatusCode, " ", string(answer))
	}
	var status string
	if err := pool.QueryRow(ctx, `SELECT status FROM invoices WHERE id = 'in_1'`).Scan(&status); err != nil {
		panic(err)
	}
	fmt.Println("invoice in_1:", status)
	// Output:
	// 200 {"outcome":"processed"}
	// 200 {"outcome":"duplicate"}
	// invoice in_1: paid
}
