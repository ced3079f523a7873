package outbox_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/hookinbox/hookinbox/internal/testdb"
	"github.com/hookinbox/hookinbox/internal/testwait"
	"github.com/hookinbox/hookinbox/outbox"
)

type bundle struct {
	ctx context.Context
	db  *testdb.DB
	ex  driver.Executor
}

func setup(t *testing.T) *bundle {
	t.Helper()
	db := testdb.New(t)
	d := pgxdriver.New(db.Pool)
	if err := d.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &bundle{ctx: context.Background(), db: db, ex: d.Executor()}
}

// insert writes n outbox messages for destination, as handlers would.
func (b *bundle) insert(t *testing.T, n int, destination string) {
	t.Helper()
	for i := range n {
		_, err := b.ex.OutboxInsert(b.ctx, &driver.OutboxInsertParams{
			AggregateType: "Invoice", AggregateID: fmt.Sprintf("in_%d", i), EventType: "InvoicePaymentBooked",
			Payload:     []byte(fmt.Sprintf(`{"n":%d}`, i)),
			Source:      hookinboxtype.Key{Provider: "stripe", Endpoint: "billing", EventID: fmt.Sprintf("evt_%s_%d", destination, i)},
			Destination: destination,
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func (b *bundle) count(t *testing.T, query string) int {
	t.Helper()
	var n int
	if err := b.db.Pool.QueryRow(b.ctx, query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func (b *bundle) expireLeases(t *testing.T) {
	t.Helper()
	if _, err := b.db.Pool.Exec(b.ctx, `UPDATE hookinbox_outbox SET available_at = now() WHERE published_at IS NULL`); err != nil {
		t.Fatal(err)
	}
}

// dispatcher returns a dispatcher on its own pool, as another process would have.
func (b *bundle) dispatcher(t *testing.T, cfg outbox.Config) *outbox.Dispatcher {
	t.Helper()
	pcfg := b.db.Config(t)
	pcfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(b.ctx, pcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 20 * time.Millisecond
	}
	if cfg.RetryDelayFunc == nil {
		cfg.RetryDelayFunc = func(int) time.Duration { return 10 * time.Millisecond }
	}
	d, err := outbox.NewDispatcher(pgxdriver.New(pool).Executor(), &cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// runUntil runs dispatchers until no message is pending or needs review is all that
// is left, then stops them.
func (b *bundle) runUntil(t *testing.T, done func() bool, ds ...*outbox.Dispatcher) {
	t.Helper()
	ctx, cancel := context.WithCancel(b.ctx)
	var wg sync.WaitGroup
	for _, d := range ds {
		wg.Go(func() { _ = d.Run(ctx) })
	}
	defer func() { cancel(); wg.Wait() }()
	testwait.For(t, 60*time.Second, "the dispatchers done", func() (bool, error) {
		if done() {
			return true, nil
		}
		return false, fmt.Errorf("%d unpublished", b.count(t, `SELECT count(*) FROM hookinbox_outbox WHERE published_at IS NULL`))
	})
}

func (b *bundle) allPublished(t *testing.T) func() bool {
	return func() bool {
		return b.count(t, `SELECT count(*) FROM hookinbox_outbox WHERE published_at IS NULL`) == 0
	}
}

// recordingSink is an HTTP receiver that records every delivery by idempotency key and
// remembers the largest fencing token seen per outbox id, answering 409 to a smaller
// one: what a careful downstream service does.
type recordingSink struct {
	*httptest.Server
	mu        sync.Mutex
	delivered map[string]int // idempotency key → accepted deliveries
	maxToken  map[string]int64
	stale     int
	down      bool
	slow      time.Duration
}

func newRecordingSink(t *testing.T) *recordingSink {
	s := &recordingSink{delivered: map[string]int{}, maxToken: map[string]int64{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.slow > 0 {
			time.Sleep(s.slow)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.down {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		key := r.Header.Get("Idempotency-Key")
		id := r.Header.Get("Hookinbox-Outbox-Id")
		token, err := strconv.ParseInt(r.Header.Get("Hookinbox-Fencing-Token"), 10, 64)
		if key == "" || err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if token < s.maxToken[id] {
			s.stale++
			w.WriteHeader(http.StatusConflict)
			return
		}
		s.maxToken[id] = token
		s.delivered[key]++
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *recordingSink) setDown(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
}

// counts returns how many keys were delivered once and how many more than once.
func (s *recordingSink) counts() (once, more int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.delivered {
		if n == 1 {
			once++
		} else {
			more++
		}
	}
	return once, more
}

func (b *bundle) dispatcherOnConfig(t *testing.T, pcfg *pgxpool.Config, cfg outbox.Config) *outbox.Dispatcher {
	t.Helper()
	pool, err := pgxpool.NewWithConfig(b.ctx, pcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	cfg.PollInterval = 20 * time.Millisecond
	d, err := outbox.NewDispatcher(pgxdriver.New(pool).Executor(), &cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
