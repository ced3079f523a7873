package outbox_test

import (
	"context"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/hookinbox/hookinbox/outbox"
)

// A handler writes an outbox message in its transaction; the dispatcher delivers it
// after commit, with no transaction open during the call, and marks it published only
// while its fencing token is current. The idempotency key is the same on every
// delivery of the message, so the receiver can make an at-least-once delivery once.
func ExampleDispatcher() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	d := pgxdriver.New(pool)
	if err := d.Migrate(ctx); err != nil {
		panic(err)
	}

	// What a handler does inside the inbox transaction.
	tx, err := pool.Begin(ctx)
	if err != nil {
		panic(err)
	}
	source := hookinbox.Event{Provider: "stripe", Endpoint: "billing", ID: "evt_42"}
	if _, err := hookinbox.InsertOutboxTx[*pgxdriver.Driver](ctx, tx, source, hookinbox.OutboxMessage{
		AggregateType: "Invoice", AggregateID: "in_42", EventType: "InvoicePaid",
		Payload: map[string]any{"invoice": "in_42"}, Destination: "crm",
	}); err != nil {
		panic(err)
	}
	if err := tx.Commit(ctx); err != nil {
		panic(err)
	}

	dispatcher, err := outbox.NewDispatcher(d.Executor(), &outbox.Config{
		Sinks: map[string]outbox.Sink{
			// An HTTPSink or NATSSink in a service; any func will do.
			"crm": outbox.SinkFunc(func(ctx context.Context, m *hookinboxtype.OutboxMessage) error {
				fmt.Println("deliver", m.EventType, string(m.Payload), "key", m.IdempotencyKey())
				return nil
			}),
		},
	})
	if err != nil {
		panic(err)
	}
	n, err := dispatcher.DispatchOnce(ctx) // Run does this in a loop
	fmt.Println(n, err)
	list, err := dispatcher.List(ctx, outbox.ListParams{})
	if err != nil {
		panic(err)
	}
	fmt.Println(list[0].State)
	// Output:
	// deliver InvoicePaid {"invoice": "in_42"} key hookinbox:stripe:billing:evt_42:1
	// 1 <nil>
	// published
}

var _ pgx.Tx // handlers receive a pgx.Tx; InsertOutboxTx takes it
