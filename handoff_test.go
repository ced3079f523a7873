package hookinbox_test

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// A receipt handed to this process's workers at its insert (handoff.go) keeps every
// guarantee of a claimed one: its first attempt is counted before its handler runs,
// and workers that stop leave what they did not take to be claimed at once.

// dialect holds the test's conditions on available_at, per database (PostgreSQL's
// alone so far).
type dialect struct {
	leased   string // the row is hidden for most of a lease from now
	released string // the row is available now
}

var (
	pgDialect = dialect{
		leased:   `available_at > now() + interval '30 seconds'`,
		released: `available_at <= now()`,
	}
)

// waitFor polls cond (the state the test asserts) for up to 60 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 60 s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling the asserted state
	}
}

// startWorkers runs inbox's workers until the test ends, and returns once their first
// claims were made: from then on the inbox hands receipts to them. cancel stops them;
// wait returns once Run did.
func startWorkers[TTx any](t *testing.T, inbox *hookinbox.Inbox[TTx]) (cancel, wait func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = inbox.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	waitFor(t, "the workers' first claims", func() bool { return inbox.ClaimsForTest() >= int64(inbox.WorkerConcurrencyForTest()) })
	return cancel, wg.Wait
}

// handedOffFailing receives one event whose handler always fails, with an attempt
// limit of 2, and returns how many times the handler ran before the receipt went to
// review. wrap is the broken variant's driver, or nil.
func handedOffFailing[TTx any](t *testing.T, w *world[TTx], wrap func(driver.Driver[TTx]) driver.Driver[TTx]) (calls int64, attempts []int) {
	t.Helper()
	d := w.newDriver(t, 4)
	if wrap != nil {
		d = wrap(d)
	}
	inbox := buildTestInbox(t, d, setupOpts{noBilling: true, worker: hookinbox.WorkerConfig{MaxAttempts: 2, Concurrency: 1}})
	var n atomic.Int64
	var mu sync.Mutex
	inbox.Handle(epAsync, "invoice.paid", func(_ context.Context, _ TTx, ev hookinbox.Event) error {
		n.Add(1)
		mu.Lock()
		attempts = append(attempts, ev.Attempt)
		mu.Unlock()
		return errors.New("always fails")
	})
	claims := func() int64 { return inbox.ClaimsForTest() }
	startWorkers(t, inbox)
	before := claims()
	mustReceive(t, inbox, invoiceEvent(epAsync, "evt_poison", "invoice.paid", "in_1", 1))
	waitFor(t, "the receipt in review", func() bool {
		return w.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE event_id = 'evt_poison' AND state = 'needs_review'`) == 1
	})
	if claims() == before {
		t.Fatal("no claim after the first attempt: the retry did not happen as the test expects")
	}
	mu.Lock()
	defer mu.Unlock()
	return n.Load(), append([]int(nil), attempts...)
}

func TestHandoff_AttemptCountedBeforeTheHandlerRuns(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, calls int64, attempts []int) {
		if calls != 2 || len(attempts) != 2 || attempts[0] != 1 || attempts[1] != 2 {
			t.Fatalf("handler ran %d times, at attempts %v; want 2, at attempts [1 2]", calls, attempts)
		}
	}
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		calls, attempts := handedOffFailing(t, postgresHarness.open(t), nil)
		check(t, calls, attempts)
	})
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		calls, attempts := handedOffFailing(t, sqliteHarness.open(t), nil)
		check(t, calls, attempts)
	})
}

// TestHandoff_BrokenVariantIsCaught hands off a receipt whose insert did not lease it
// (no attempt counted): its handler runs once more than the limit allows.
func TestHandoff_BrokenVariantIsCaught(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, calls int64, attempts []int) {
		if calls <= 2 {
			t.Fatalf("handler ran %d times, at attempts %v, with an uncounted first attempt; the test would not notice", calls, attempts)
		}
	}
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		calls, attempts := handedOffFailing(t, postgresHarness.open(t), unleasedInsert[pgx.Tx])
		check(t, calls, attempts)
	})
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		calls, attempts := handedOffFailing(t, sqliteHarness.open(t), unleasedInsert[*sql.Tx])
		check(t, calls, attempts)
	})
}

// unleasedInsert is the broken variant: its inserts ignore Lease, so a receipt is
// handed off without its attempt counted.
func unleasedInsert[TTx any](d driver.Driver[TTx]) driver.Driver[TTx] {
	return &pausingDriver[TTx]{Driver: d, wrap: func(ex driver.Executor) driver.Executor { return &leaseDropper{Executor: ex} }}
}

type leaseDropper struct{ driver.Executor }

func (l *leaseDropper) InboxInsertMany(ctx context.Context, ps []*driver.InboxInsertParams) ([]bool, error) {
	plain := make([]*driver.InboxInsertParams, len(ps))
	for n, p := range ps {
		c := *p
		c.Lease = 0
		plain[n] = &c
	}
	return l.Executor.InboxInsertMany(ctx, plain)
}

// stopWithOneWaiting hands two receipts to one worker, stops the workers while the
// first one's handler runs, and reports the second's state after Run returned.
func stopWithOneWaiting[TTx any](t *testing.T, w *world[TTx], dl dialect, wrap func(driver.Driver[TTx]) driver.Driver[TTx]) (leasedBefore, releasedAfter bool) {
	t.Helper()
	d := w.newDriver(t, 4)
	if wrap != nil {
		d = wrap(d)
	}
	inbox := buildTestInbox(t, d, setupOpts{noBilling: true, worker: hookinbox.WorkerConfig{Concurrency: 1, BatchSize: 1, PollInterval: time.Hour}})
	started, release := make(chan struct{}), make(chan struct{})
	unblock := sync.OnceFunc(func() { close(release) })
	inbox.Handle(epAsync, "invoice.paid", func(ctx context.Context, tx TTx, ev hookinbox.Event) error {
		if ev.ID == "evt_first" {
			close(started)
			<-release
		}
		return w.effect(ctx, tx, ev)
	})
	cancel, wait := startWorkers(t, inbox)
	t.Cleanup(unblock) // runs before the workers' cleanup, which waits for the handler
	mustReceive(t, inbox, invoiceEvent(epAsync, "evt_first", "invoice.paid", "in_1", 1))
	<-started
	mustReceive(t, inbox, invoiceEvent(epAsync, "evt_waiting", "invoice.paid", "in_1", 1))
	leasedBefore = w.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE event_id = 'evt_waiting' AND attempts = 1 AND `+dl.leased) == 1
	cancel() // the worker is in the first receipt's handler: it takes nothing more
	unblock()
	wait()
	releasedAfter = w.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE event_id = 'evt_waiting' AND state = 'pending' AND attempts = 1 AND `+dl.released) == 1
	return leasedBefore, releasedAfter
}

// On PostgreSQL only: SQLite's one writer, held by the blocked handler's transaction,
// keeps the second receipt from being inserted at all.
func TestHandoff_StopReleasesWhatNoWorkerTook(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, leased, released bool) {
		if !leased {
			t.Fatal("the second receipt was not handed off leased: the scenario did not happen")
		}
		if !released {
			t.Fatal("after the stop, the receipt handed off and not taken still waits for its lease")
		}
	}
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		leased, released := stopWithOneWaiting(t, postgresHarness.open(t), pgDialect, nil)
		check(t, leased, released)
	})
	t.Run("postgres/broken-no-release", func(t *testing.T) {
		t.Parallel()
		leased, released := stopWithOneWaiting(t, postgresHarness.open(t), pgDialect, noRelease[pgx.Tx])
		if !leased || released {
			t.Fatalf("leased %v, released %v with a release that does nothing; the test would not notice", leased, released)
		}
	})
}

// noRelease is the broken variant: lease extensions, and so the release at a stop,
// do nothing.
func noRelease[TTx any](d driver.Driver[TTx]) driver.Driver[TTx] {
	return &pausingDriver[TTx]{Driver: d, wrap: func(ex driver.Executor) driver.Executor { return &leaseKeeper{Executor: ex} }}
}

type leaseKeeper struct{ driver.Executor }

func (*leaseKeeper) InboxExtendLease(context.Context, []hookinboxtype.Key, time.Duration) (int, error) {
	return 0, nil
}
