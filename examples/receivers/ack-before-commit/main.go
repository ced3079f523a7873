// Command ack-before-commit is a Stripe webhook receiver that loses events: it
// answers 200 as soon as the receipt is written, then applies the event and commits.
// When applying or committing fails (the invoice is not created yet because the
// events came out of order, a deadlock, the process died), the transaction rolls
// back, receipt and all, but the provider has its 200 and never retries.
//
// hookinbox probe catches it in the reorder and burst scenarios (lost).
//
//	STRIPE_WEBHOOK_SECRET=whsec_... go run ./examples/receivers/ack-before-commit -listen 127.0.0.1:8094
package main

import (
	"net/http"

	"github.com/hookinbox/hookinbox/examples/receivers/internal/receiver"
)

func main() {
	app := receiver.Start("ack-before-commit", receiver.Receipts)
	app.Serve(func(w http.ResponseWriter, r *http.Request, ev receiver.Event) {
		ctx := r.Context()
		tx, err := app.Pool.Begin(ctx)
		if err != nil {
			app.Reply(w, ev, "", err)
			return
		}
		defer tx.Rollback(ctx)
		tag, err := tx.Exec(ctx, `INSERT INTO receipts (event_id) VALUES ($1) ON CONFLICT DO NOTHING`, ev.ID)
		if err != nil || tag.RowsAffected() == 0 {
			app.Reply(w, ev, "duplicate", err)
			return
		}
		// The answer goes out before anything is committed.
		app.Reply(w, ev, "processed", nil)
		_ = http.NewResponseController(w).Flush()
		if err := app.Apply(ctx, tx, ev); err != nil {
			app.Logger.Error("event lost: answered 200, then failed", "event_id", ev.ID, "error", err.Error())
			return
		}
		if err := tx.Commit(ctx); err != nil {
			app.Logger.Error("event lost: answered 200, then the commit failed", "event_id", ev.ID, "error", err.Error())
		}
	})
}
