// Command mark-after is a Stripe webhook receiver that applies events twice: it checks
// for the receipt, applies the event and commits, then records the receipt. Two
// copies of an event that arrive together both pass the check before either records
// its receipt, and both apply; so does a retry after a crash between the two commits.
//
// hookinbox probe catches it in the duplicates and burst scenarios (doubled).
//
//	STRIPE_WEBHOOK_SECRET=whsec_... go run ./examples/receivers/mark-after -listen 127.0.0.1:8092
package main

import (
	"net/http"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/examples/receivers/internal/receiver"
)

func main() {
	app := receiver.Start("mark-after", receiver.Receipts)
	app.Serve(func(w http.ResponseWriter, r *http.Request, ev receiver.Event) {
		ctx := r.Context()
		var seen bool
		err := app.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM receipts WHERE event_id = $1)`, ev.ID).Scan(&seen)
		if err != nil || seen {
			app.Reply(w, ev, "duplicate", err)
			return
		}
		// Until the receipt below commits, a copy of this event passes the check too.
		err = pgx.BeginFunc(ctx, app.Pool, func(tx pgx.Tx) error { return app.Apply(ctx, tx, ev) })
		if err == nil {
			_, err = app.Pool.Exec(ctx, `INSERT INTO receipts (event_id) VALUES ($1) ON CONFLICT DO NOTHING`, ev.ID)
		}
		app.Reply(w, ev, "processed", err)
	})
}
