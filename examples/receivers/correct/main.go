// Command correct is a Stripe webhook receiver that applies every event exactly once,
// as hookinbox does: the receipt and the business update in one transaction. The
// receipt is inserted with ON CONFLICT DO NOTHING on its primary key, so
//
//   - a failure before commit (an error, the provider hanging up, a crash) leaves
//     nothing behind, and the provider's retry applies the event;
//   - after commit, every retry finds the receipt and is a duplicate;
//   - a concurrent copy waits on the receipt's key until the first commits (then it
//     is a duplicate) or rolls back (then it applies the event);
//   - the answer is 200 only after commit.
//
// Its update is a state transition (ApplyOnce): the second Event object for a payment
// credits nothing more. hookinbox probe finds nothing lost or doubled in any scenario.
//
//	STRIPE_WEBHOOK_SECRET=whsec_... go run ./examples/receivers/correct -listen 127.0.0.1:8090
package main

import (
	"net/http"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/examples/receivers/internal/receiver"
)

func main() {
	app := receiver.Start("correct", receiver.Receipts)
	app.Serve(func(w http.ResponseWriter, r *http.Request, ev receiver.Event) {
		ctx := r.Context()
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
			return app.ApplyOnce(ctx, tx, ev)
		})
		app.Reply(w, ev, outcome, err)
	})
}
