package outbox_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/hookinbox/hookinbox/internal/testdb"
	"github.com/hookinbox/hookinbox/outbox"
)

// runReturnBound is how long a test waits for Run to return after the stop. It is an
// upper limit for a hang, not a speed requirement: Run's own bound is DeliveryTimeout +
// RecordTimeout, well under it.
const runReturnBound = 30 * time.Second

// dispatcherOfItsOwn returns a dispatcher on a pool of its own, and end, which closes
// that pool and waits until every session it opened has left the server.
//
// A statement that timed out on the client may still be waiting on the server: pgx
// gives up at once and asks the server to cancel it in the background. Until that
// lands, the statement would apply once the test releases its lock (correctly: the
// fencing token makes a late mark exact). end cancels any statement of the pool still
// waiting on a lock, so that what the test sees next is the other case, the record
// lost, as in a network partition.
func (b *bundle) dispatcherOfItsOwn(t *testing.T, cfg outbox.Config) (*outbox.Dispatcher, func()) {
	t.Helper()
	var mu sync.Mutex
	var pids []uint32
	pcfg := b.db.Config(t)
	pcfg.MaxConns = 4
	pcfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		mu.Lock()
		pids = append(pids, c.PgConn().PID())
		mu.Unlock()
		return nil
	}
	pool, err := pgxpool.NewWithConfig(b.ctx, pcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close) // a no-op after end
	cfg.PollInterval = 20 * time.Millisecond
	cfg.RetryDelayFunc = func(int) time.Duration { return 10 * time.Millisecond }
	d, err := outbox.NewDispatcher(pgxdriver.New(pool).Executor(), &cfg)
	if err != nil {
		t.Fatal(err)
	}
	end := func() {
		t.Helper()
		pool.Close()
		mu.Lock()
		opened := append([]uint32(nil), pids...)
		mu.Unlock()
		testdb.EndSessions(t, b.db.Pool, opened)
	}
	return d, end
}

// runInBackground starts d.Run and returns the stop function and the channel Run's
// result arrives on.
func runInBackground(ctx context.Context, d *outbox.Dispatcher) (stop func(), ran <-chan error) {
	ctx, stop = context.WithCancel(ctx)
	c := make(chan error, 1)
	go func() { c <- d.Run(ctx) }()
	return stop, c
}

// waitForRun fails the test if Run has not returned within runReturnBound.
func waitForRun(t *testing.T, ran <-chan error, what string) {
	t.Helper()
	select {
	case err := <-ran:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(runReturnBound):
		t.Fatalf("Run did not return within %s of the stop while %s", runReturnBound, what)
	}
}

type delivery struct {
	key   string
	token int64
}

// scenarioStopWithItsResultBlocked: the dispatcher is delivering a message when it is
// stopped, and the test locks the message's row before the delivery ends (deliveryErr
// nil: accepted, else failed), so the statement recording the result waits on the
// lock. Run must return anyway, leaving the message neither published nor failed; once
// the lock is gone and the lease has ended, the message is delivered again with the
// same idempotency key and published once.
func scenarioStopWithItsResultBlocked(t *testing.T, deliveryErr error) {
	b := setup(t)
	b.insert(t, 1, "http")
	var mu sync.Mutex
	var deliveries []delivery
	inDelivery, release := make(chan int64, 1), make(chan struct{})
	sink := outbox.SinkFunc(func(ctx context.Context, m *hookinboxtype.OutboxMessage) error {
		mu.Lock()
		deliveries = append(deliveries, delivery{m.IdempotencyKey(), m.FencingToken})
		first := len(deliveries) == 1
		mu.Unlock()
		if !first {
			return nil
		}
		inDelivery <- m.ID
		select {
		case <-release:
			return deliveryErr
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	cfg := outbox.Config{RecordTimeout: 200 * time.Millisecond, Sinks: map[string]outbox.Sink{"http": sink}}
	d, end := b.dispatcherOfItsOwn(t, cfg)
	stop, ran := runInBackground(b.ctx, d)
	defer stop()

	var id int64
	select {
	case id = <-inDelivery:
	case <-time.After(runReturnBound):
		t.Fatal("no delivery within 30 s")
	}
	lock, err := b.db.Pool.Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(b.ctx) //nolint:errcheck // rolled back below
	if _, err := lock.Exec(b.ctx, `SELECT 1 FROM hookinbox_outbox WHERE id = $1 FOR UPDATE`, id); err != nil {
		t.Fatal(err)
	}
	stop()         // SIGTERM during the delivery
	close(release) // the delivery ends; recording its result waits on the lock
	waitForRun(t, ran, "recording a result waited on a lock")

	end()
	if err := lock.Rollback(b.ctx); err != nil {
		t.Fatal(err)
	}
	var state string
	var published, failed bool
	var attempts int
	if err := b.db.Pool.QueryRow(b.ctx, `
SELECT state, published_at IS NOT NULL, last_error IS NOT NULL, attempts FROM hookinbox_outbox WHERE id = $1`, id,
	).Scan(&state, &published, &failed, &attempts); err != nil {
		t.Fatal(err)
	}
	if state != "pending" || published || failed || attempts != 1 {
		t.Fatalf("after the stop: state %s, published %v, failure recorded %v, attempts %d; want pending, neither published nor failed, 1 attempt",
			state, published, failed, attempts)
	}

	b.expireLeases(t)
	b.runUntil(t, b.allPublished(t), b.dispatcher(t, cfg))
	mu.Lock()
	defer mu.Unlock()
	if len(deliveries) != 2 || deliveries[1].key != deliveries[0].key || deliveries[1].token <= deliveries[0].token {
		t.Fatalf("deliveries %+v; want two with the same idempotency key, the second with a larger fencing token", deliveries)
	}
	if n := b.count(t, `SELECT count(*) FROM hookinbox_outbox WHERE state = 'published' AND attempts = 2`); n != 1 {
		t.Fatalf("%d messages published at their second attempt, want 1", n)
	}
}

func TestDispatcher_StopReturnsWhileItsResultIsBlocked(t *testing.T) {
	t.Parallel()
	for name, deliveryErr := range map[string]error{
		"mark published": nil,
		"record failure": errors.New("receiver answered 503"),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			scenarioStopWithItsResultBlocked(t, deliveryErr)
		})
	}
}

// A claim in flight when the dispatcher is stopped is not interrupted by the stop, but
// it does not hold Run past DeliveryTimeout + RecordTimeout either: here the table is
// locked before the dispatcher starts, so every claim waits, and nothing lets go until
// the allowance after the stop has passed.
func TestDispatcher_StopReturnsWhileItsClaimIsBlocked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.insert(t, 1, "http")
	var delivered sync.Map
	sink := outbox.SinkFunc(func(_ context.Context, m *hookinboxtype.OutboxMessage) error {
		delivered.Store(m.IdempotencyKey(), true)
		return nil
	})
	cfg := outbox.Config{DeliveryTimeout: 500 * time.Millisecond, RecordTimeout: 200 * time.Millisecond,
		Sinks: map[string]outbox.Sink{"http": sink}}
	lock, err := b.db.Pool.Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(b.ctx) //nolint:errcheck // rolled back below
	if _, err := lock.Exec(b.ctx, `LOCK TABLE hookinbox_outbox IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	d, end := b.dispatcherOfItsOwn(t, cfg)
	stop, ran := runInBackground(b.ctx, d)
	defer stop()
	b.db.WaitForLockWaiters(t, 1) // a claim waits on the table lock
	stop()
	waitForRun(t, ran, "its claims waited on a table lock")

	end()
	if err := lock.Rollback(b.ctx); err != nil {
		t.Fatal(err)
	}
	b.runUntil(t, b.allPublished(t), b.dispatcher(t, cfg))
	n := 0
	delivered.Range(func(any, any) bool { n++; return true })
	if n != 1 {
		t.Fatalf("%d idempotency keys delivered, want 1", n)
	}
}
