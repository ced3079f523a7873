package outbox_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/driver/sqlitedriver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/hookinbox/hookinbox/internal/testdb"
	"github.com/hookinbox/hookinbox/internal/testwait"
	"github.com/hookinbox/hookinbox/outbox"
)

// TestDispatcher_PausedSourceWaitsAndResumeDeliversEachOnce: the messages of a paused
// endpoint's receipts wait while the others are delivered, and a resume (with the
// dispatcher woken, as the console wakes it) delivers each of them once, under the
// key it would have had. On PostgreSQL and SQLite, through the same dispatcher.
func TestDispatcher_PausedSourceWaitsAndResumeDeliversEachOnce(t *testing.T) {
	t.Parallel()
	executors := map[string]func(t *testing.T) driver.Executor{
		"postgres": func(t *testing.T) driver.Executor {
			db := testdb.New(t)
			d := pgxdriver.New(db.Pool)
			if err := d.Migrate(context.Background()); err != nil {
				t.Fatal(err)
			}
			return d.Executor()
		},
		"sqlite": func(t *testing.T) driver.Executor {
			db, err := sqlitedriver.Open(filepath.Join(t.TempDir(), "outbox.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
			d := sqlitedriver.New(db)
			if err := d.Migrate(context.Background()); err != nil {
				t.Fatal(err)
			}
			return d.Executor()
		},
	}
	for name, open := range executors {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			ex := open(t)
			var mu sync.Mutex
			delivered := map[string]int{} // idempotency key → deliveries
			sink := outbox.SinkFunc(func(_ context.Context, m *hookinboxtype.OutboxMessage) error {
				mu.Lock()
				defer mu.Unlock()
				delivered[m.IdempotencyKey()]++
				return nil
			})
			count := func(endpoint string) (n int) {
				mu.Lock()
				defer mu.Unlock()
				for k, c := range delivered {
					if strings.Contains(k, ":"+endpoint+":") {
						n += c
					}
				}
				return n
			}
			insert := func(endpoint string, n int) {
				for i := range n {
					if _, err := ex.OutboxInsert(ctx, &driver.OutboxInsertParams{
						AggregateType: "Invoice", AggregateID: fmt.Sprint(i), EventType: "InvoicePaid", Payload: []byte(`{}`),
						Source: hookinboxtype.Key{Provider: "stripe", Endpoint: endpoint, EventID: fmt.Sprintf("evt_%d", i)},
					}); err != nil {
						t.Fatal(err)
					}
				}
			}
			apply := func(action string) {
				if _, err := ex.ConsoleApply(ctx, &driver.ConsoleAction{Action: action, Actor: "test", Target: "endpoint billing", Endpoint: "billing"}); err != nil {
					t.Fatal(err)
				}
			}
			apply(driver.ActionPause)
			insert("billing", 5)
			insert("other", 5)
			d, err := outbox.NewDispatcher(ex, &outbox.Config{Sinks: map[string]outbox.Sink{"default": sink}, DefaultSink: "default",
				PollInterval: time.Hour}) // only woken: a resume must wake it
			if err != nil {
				t.Fatal(err)
			}
			runCtx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { defer close(done); _ = d.Run(runCtx) }()
			defer func() { cancel(); <-done }()
			testwait.Until(t, 60*time.Second, "the other endpoint's messages delivered", func() bool { return count("other") == 5 })
			d.Notify() // a claim now must still leave billing's alone
			if n, err := ex.ConsoleCountOutbox(ctx, &driver.OutboxFilter{Endpoint: "billing", State: hookinboxtype.StatePending}, 100); err != nil || n != 5 {
				t.Fatalf("billing's pending messages while paused: %d %v, want 5", n, err)
			}
			apply(driver.ActionResume)
			d.Notify()
			testwait.Until(t, 60*time.Second, "billing's messages delivered after the resume", func() bool { return count("billing") == 5 })
			mu.Lock()
			defer mu.Unlock()
			for k, n := range delivered {
				if n != 1 {
					t.Errorf("%s delivered %d times", k, n)
				}
			}
			if len(delivered) != 10 {
				t.Errorf("%d messages delivered, want 10", len(delivered))
			}
		})
	}
}
