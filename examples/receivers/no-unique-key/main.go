// Command no-unique-key is a Stripe webhook receiver that applies events twice under
// concurrency: it checks for the receipt, records it and applies the event in one
// transaction, but its receipts table has no unique key on the event id. A copy that
// arrives while the first is still in its transaction does not see the first's
// uncommitted receipt, and nothing makes its insert wait or fail: both apply.
//
// hookinbox probe catches it in the duplicates and burst scenarios (doubled).
//
//	STRIPE_WEBHOOK_SECRET=whsec_... go run ./examples/receivers/no-unique-key -listen 127.0.0.1:8093
package main

import (
	"net/http"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/examples/receivers/internal/receiver"
)

// receipts has no PRIMARY KEY or UNIQUE on event_id: the mistake.
const receipts = `
CREATE TABLE IF NOT EXISTS receipts (
    event_id    text        NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now()
);`

func main() {
	app := receiver.Start("no-unique-key", receipts)
	app.Serve(func(w http.ResponseWriter, r *http.Request, ev receiver.Event) {
		ctx := r.Context()
		outcome := "processed"
		err := pgx.BeginFunc(ctx, app.Pool, func(tx pgx.Tx) error {
			var seen bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM receipts WHERE event_id = $1)`, ev.ID).Scan(&seen); err != nil {
				return err
			}
			if seen {
				outcome = "duplicate"
				return nil
			}
			if _, err := tx.Exec(ctx, `INSERT INTO receipts (event_id) VALUES ($1)`, ev.ID); err != nil {
				return err
			}
			return app.Apply(ctx, tx, ev)
		})
		app.Reply(w, ev, outcome, err)
	})
}
