package hookinbox_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/hookinbox/hookinbox/provider"
)

// attemptsTo reports every worker attempt on a channel.
type attemptsTo chan hookinbox.AttemptInfo

func (c attemptsTo) Delivery(hookinbox.DeliveryInfo) {}
func (c attemptsTo) Attempt(a hookinbox.AttemptInfo) { c <- a }

// An async endpoint: Receive commits the receipt as pending and returns at once;
// Run's workers claim it (the attempt counted and committed first), apply the handler
// in a transaction of their own and mark it processed. A failed attempt is retried
// with backoff until the worker's MaxAttempts, then waits for a person.
func ExampleInbox_Run() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS shipments (order_id text PRIMARY KEY)`); err != nil {
		panic(err)
	}
	github, err := provider.NewGitHub(provider.GitHubConfig{Secrets: []string{"example-secret"}})
	if err != nil {
		panic(err)
	}
	attempts := make(attemptsTo, 1)
	inbox, err := hookinbox.New(pgxdriver.New(pool), &hookinbox.Config{
		Endpoints: []hookinbox.EndpointConfig{{Name: "orders", Verifier: github, Mode: hookinbox.ModeAsync}},
		Worker:    hookinbox.WorkerConfig{Concurrency: 2, MaxAttempts: 5},
		Observer:  attempts,
	})
	if err != nil {
		panic(err)
	}
	if err := inbox.Migrate(ctx); err != nil {
		panic(err)
	}
	inbox.Handle("orders", "*", func(ctx context.Context, tx pgx.Tx, ev hookinbox.Event) error {
		_, err := tx.Exec(ctx, `INSERT INTO shipments VALUES ($1) ON CONFLICT DO NOTHING`, "order-"+ev.ID)
		return err
	})

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- inbox.Run(runCtx) }()

	// An event verified by other means (Endpoint verifies, then calls Receive).
	out, err := inbox.Receive(ctx, hookinbox.Event{Endpoint: "orders", ID: "delivery-7", Type: "push", Payload: []byte(`{}`)})
	fmt.Println(out, err)
	a := <-attempts
	fmt.Println("attempt", a.Attempt, a.Result)

	stop()
	if err := <-done; err != nil {
		panic(err)
	}
	r, err := inbox.Operator().GetReceipt(ctx, hookinboxtype.Key{Provider: "github", Endpoint: "orders", EventID: "delivery-7"})
	if err != nil {
		panic(err)
	}
	fmt.Println(r.State, "after", r.Attempts, "attempt of at most", r.MaxAttempts)
	// Output:
	// accepted <nil>
	// attempt 1 processed
	// processed after 1 attempt of at most 5
}

// The operator functions need no handlers and no transaction type: a command-line
// tool or an admin page builds an Operator from the driver's executor alone. The
// figures come from each row's stored state, so they agree with every running
// process whatever its configuration.
func ExampleOperator() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	if err := pgxdriver.New(pool).Migrate(ctx); err != nil {
		panic(err)
	}
	op := hookinbox.NewOperator(pgxdriver.New(pool).Executor(), nil)
	list, err := op.ListReceipts(ctx, hookinbox.ListParams{NeedsReview: true})
	if err != nil {
		panic(err)
	}
	fmt.Println("needs review:", len(list))
	_, err = op.Cleanup(ctx, hookinbox.CleanupParams{OlderThan: 24 * time.Hour})
	fmt.Println(err)
	// Output:
	// needs review: 0
	// retention shorter than the provider's retry window: 24h0m0s < 72h0m0s (use Force to override)
}
