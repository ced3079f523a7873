// Command event-id-only is a Stripe webhook receiver that applies each event exactly
// once, as correct does, and still credits a payment twice: its update is not a state
// transition, so every payment event it has not seen credits the invoice. Stripe sends
// one payment as two Event objects with ids of their own, invoice.paid and
// invoice.payment_succeeded; a receiver that handles both and deduplicates by event id
// alone applies both.
//
// hookinbox probe catches it in the second-object scenario (doubled).
//
//	STRIPE_WEBHOOK_SECRET=whsec_... go run ./examples/receivers/event-id-only -listen 127.0.0.1:8095
package main

import (
	"net/http"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/examples/receivers/internal/receiver"
)

func main() {
	app := receiver.Start("event-id-only", receiver.Receipts)
	app.Serve(func(w http.ResponseWriter, r *http.Request, ev receiver.Event) {
		ctx := r.Context()
		if ev.Type == "invoice.payment_succeeded" {
			ev.Type = "invoice.paid" // both Event objects of a payment are handled as one
		}
		outcome := "processed"
		err := pgx.BeginFunc(ctx, app.Pool, func(tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, `INSERT INTO receipts (event_id) VALUES ($1) ON CONFLICT DO NOTHING`, ev.ID)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				outcome = "duplicate"
				return nil
			}
			return app.Apply(ctx, tx, ev)
		})
		app.Reply(w, ev, outcome, err)
	})
}
