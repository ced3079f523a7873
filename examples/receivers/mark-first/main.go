// Command mark-first is a Stripe webhook receiver that loses events: it records the
// receipt and commits, then applies the event in a second transaction. When applying
// fails (the provider hung up and the request's context was canceled, the invoice is
// not created yet, the process died), the receipt stays, and the provider's retry is
// answered "duplicate": the event is acknowledged and never applied.
//
// hookinbox probe catches it in the retries, timeout and reorder scenarios (lost).
//
//	STRIPE_WEBHOOK_SECRET=whsec_... go run ./examples/receivers/mark-first -listen 127.0.0.1:8091
package main

import (
	"net/http"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/examples/receivers/internal/receiver"
)

func main() {
	app := receiver.Start("mark-first", receiver.Receipts)
	app.Serve(func(w http.ResponseWriter, r *http.Request, ev receiver.Event) {
		ctx := r.Context()
		tag, err := app.Pool.Exec(ctx, `INSERT INTO receipts (event_id) VALUES ($1) ON CONFLICT DO NOTHING`, ev.ID)
		if err != nil || tag.RowsAffected() == 0 {
			app.Reply(w, ev, "duplicate", err)
			return
		}
		// The receipt is committed: from here on, a failure loses the event.
		err = pgx.BeginFunc(ctx, app.Pool, func(tx pgx.Tx) error { return app.Apply(ctx, tx, ev) })
		app.Reply(w, ev, "processed", err)
	})
}
