package sqlitedriver_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver/sqlitedriver"
	"github.com/hookinbox/hookinbox/provider"
)

// An inbox on a SQLite file: no database server. The handler's write commits with the
// receipt; the same event again is a duplicate and writes nothing.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "hookinbox-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	db, err := sqlitedriver.Open(filepath.Join(dir, "hookinbox.db"))
	if err != nil {
		panic(err)
	}
	defer db.Close()
	stripe, err := provider.NewStripe(provider.StripeConfig{Secrets: []string{"whsec_example"}})
	if err != nil {
		panic(err)
	}
	inbox, err := hookinbox.New(sqlitedriver.New(db), &hookinbox.Config{
		Endpoints: []hookinbox.EndpointConfig{{Name: "billing", Verifier: stripe, Mode: hookinbox.ModeSync}},
	})
	if err != nil {
		panic(err)
	}
	if err := inbox.Migrate(ctx); err != nil { // hookinbox's own hookinbox_* tables
		panic(err)
	}
	// The application's table, which the handler writes to.
	if _, err := db.ExecContext(ctx, `CREATE TABLE payments (invoice_id TEXT PRIMARY KEY, amount INTEGER NOT NULL, event_id TEXT NOT NULL)`); err != nil {
		panic(err)
	}
	inbox.Handle("billing", "invoice.paid", func(ctx context.Context, tx *sql.Tx, ev hookinbox.Event) error {
		_, err := tx.ExecContext(ctx, `
			INSERT INTO payments (invoice_id, amount, event_id)
			VALUES (?1, ?2, ?3)
			ON CONFLICT (invoice_id) DO NOTHING`, "in_1", 1000, ev.ID)
		return err
	})

	ev := hookinbox.Event{Endpoint: "billing", ID: "evt_1", Type: "invoice.paid", Payload: []byte(`{"id":"evt_1"}`)}
	for range 2 {
		out, err := inbox.Receive(ctx, ev)
		fmt.Println(out, err)
	}
	var n int
	_ = db.QueryRowContext(ctx, `SELECT count(*) FROM payments`).Scan(&n)
	fmt.Println("payments:", n)
	// Output:
	// processed <nil>
	// duplicate <nil>
	// payments: 1
}
