package hookinbox_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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
	leased string // the row is hidden for most of a lease from now
}

var (
	pgDialect = dialect{
		leased: `available_at > now() + interval '30 seconds'`,
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
	if wrap != nil {
		// The lock's own defence (a receipt without an attempt is a claim's) off too:
		// the workers trust the hand-off.
		inbox.ProcessParkedForTest()
	}
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
// (no attempt counted) to workers that trust the hand-off (without the lock's check
// of the attempt): its handler runs once more than the limit allows.
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

// heldWorker is a handler that holds its worker in evt_first's handler until unblock,
// and records the attempts the other events ran at.
type heldWorker struct {
	started, release chan struct{}
	unblock          func()
	mu               sync.Mutex
	seen             []int
}

// holdFirst registers a heldWorker on inbox's async endpoint.
func holdFirst[TTx any](w *world[TTx], inbox *hookinbox.Inbox[TTx]) *heldWorker {
	h := &heldWorker{started: make(chan struct{}), release: make(chan struct{})}
	h.unblock = sync.OnceFunc(func() { close(h.release) })
	inbox.Handle(epAsync, "invoice.paid", func(ctx context.Context, tx TTx, ev hookinbox.Event) error {
		if ev.ID == "evt_first" {
			close(h.started)
			<-h.release
		} else {
			h.mu.Lock()
			h.seen = append(h.seen, ev.Attempt)
			h.mu.Unlock()
		}
		return w.effect(ctx, tx, ev)
	})
	return h
}

func (h *heldWorker) attempts() []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]int(nil), h.seen...)
}

// workerHeldInFirst registers a heldWorker on inbox, starts its workers and returns
// once one of them is held in evt_first's handler; cancel and wait are startWorkers'.
func workerHeldInFirst[TTx any](t *testing.T, w *world[TTx], inbox *hookinbox.Inbox[TTx]) (held *heldWorker, cancel, wait func()) {
	t.Helper()
	held = holdFirst(w, inbox)
	cancel, wait = startWorkers(t, inbox)
	t.Cleanup(held.unblock) // runs before the workers' cleanup, which waits for the handler
	mustReceive(t, inbox, invoiceEvent(epAsync, "evt_first", "invoice.paid", "in_1", 1))
	<-held.started
	return held, cancel, wait
}

// stopWithOneWaiting hands two receipts to one worker, stops the workers while the
// first one's handler runs, and reports whether the second was handed off leased,
// and at which attempts its handler ran by the time Run returned.
func stopWithOneWaiting[TTx any](t *testing.T, w *world[TTx], dl dialect, abandon bool) (leasedBefore bool, attempts []int) {
	t.Helper()
	inbox := buildTestInbox(t, w.newDriver(t, 4), setupOpts{noBilling: true, worker: hookinbox.WorkerConfig{Concurrency: 1, BatchSize: 1, PollInterval: time.Hour}})
	if abandon {
		inbox.AbandonHandoffsForTest()
	}
	held, cancel, wait := workerHeldInFirst(t, w, inbox)
	mustReceive(t, inbox, invoiceEvent(epAsync, "evt_waiting", "invoice.paid", "in_1", 1))
	leasedBefore = w.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE event_id = 'evt_waiting' AND attempts = 1 AND `+dl.leased) == 1
	cancel() // the worker is in the first receipt's handler: it takes nothing more
	held.unblock()
	wait()
	return leasedBefore, held.attempts()
}

// On PostgreSQL only: SQLite's one writer, held by the blocked handler's transaction,
// keeps the second receipt from being inserted at all.
func TestHandoff_StopProcessesWhatWaited(t *testing.T) {
	t.Parallel()
	leased, attempts := stopWithOneWaiting(t, postgresHarness.open(t), pgDialect, false)
	if !leased {
		t.Fatal("the second receipt was not handed off leased: the scenario did not happen")
	}
	if len(attempts) != 1 || attempts[0] != 1 {
		t.Fatalf("the receipt waiting at the stop ran at attempts %v before Run returned, want [1]", attempts)
	}
}

// The broken variant: a stop that drops what waits leaves it unprocessed, its lease
// and its attempt taken.
func TestHandoff_BrokenStopAbandoningIsCaught(t *testing.T) {
	t.Parallel()
	leased, attempts := stopWithOneWaiting(t, postgresHarness.open(t), pgDialect, true)
	if !leased || len(attempts) != 0 {
		t.Fatalf("leased %v, attempts %v with a stop that drops the hand-offs; the test would not notice", leased, attempts)
	}
}

// waitedLong hands a receipt to a worker held in another one's handler for more than
// an eighth of a lease (less than half), and returns the attempts its handler ran at
// and how many lease extensions the workers made.
func waitedLong[TTx any](t *testing.T, w *world[TTx], stale bool) (attempts []int, extended int64) {
	t.Helper()
	const lease = 8 * time.Second
	var extensions atomic.Int64
	d := &pausingDriver[TTx]{Driver: w.newDriver(t, 4), wrap: func(ex driver.Executor) driver.Executor {
		return &countingExtender{Executor: ex, n: &extensions}
	}}
	inbox := buildTestInbox(t, d, setupOpts{noBilling: true,
		worker: hookinbox.WorkerConfig{Concurrency: 1, BatchSize: 1, Lease: lease, PollInterval: time.Hour}})
	if stale {
		inbox.StaleHandoffsForTest()
	}
	held, _, _ := workerHeldInFirst(t, w, inbox)
	mustReceive(t, inbox, invoiceEvent(epAsync, "evt_second", "invoice.paid", "in_1", 1))
	time.Sleep(lease/8 + 500*time.Millisecond) // the wait the test is about, not a wait for state
	held.unblock()
	waitFor(t, "both processed", func() bool {
		return w.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE state = 'processed'`) == 2
	})
	return held.attempts(), extensions.Load()
}

// countingExtender counts InboxExtendLease calls.
type countingExtender struct {
	driver.Executor
	n *atomic.Int64
}

func (c *countingExtender) InboxExtendLease(ctx context.Context, keys []hookinboxtype.Key, lease time.Duration) (int, error) {
	c.n.Add(1)
	return c.Executor.InboxExtendLease(ctx, keys, lease)
}

// A hand-off that waited for a busy worker longer than an eighth of its lease gets a
// fresh lease before it is processed, as a claim would take one, so that its
// transaction keeps about a claimed batch's deadline.
func TestHandoff_WaitedLongGetsAFreshLease(t *testing.T) {
	t.Parallel()
	attempts, extensions := waitedLong(t, postgresHarness.open(t), false)
	if len(attempts) != 1 || attempts[0] != 1 || extensions != 1 {
		t.Fatalf("the receipt that waited ran at attempts %v after %d lease extensions, want [1] after 1", attempts, extensions)
	}
}

// The broken variant: processed under the insert's lease, without the extension.
func TestHandoff_BrokenStaleLeaseIsCaught(t *testing.T) {
	t.Parallel()
	if _, extensions := waitedLong(t, postgresHarness.open(t), true); extensions != 0 {
		t.Fatalf("%d lease extensions with the extension off; the test would not notice", extensions)
	}
}

// roomAfterALeftReceiversBatchFailed has the receipt that takes the workers' only room
// fail in its batch after its receiver's context ended, and returns the room the
// workers have once that batch is over (a later batch, queued behind it on the one
// flusher, has committed).
func roomAfterALeftReceiversBatchFailed(t *testing.T, receiversReturnRoom bool) int64 {
	t.Helper()
	w := postgresHarness.open(t)
	entered, fail := make(chan struct{}), make(chan struct{})
	d := &pausingDriver[pgx.Tx]{Driver: w.newDriver(t, 4), wrap: func(ex driver.Executor) driver.Executor {
		return &gatedInsert{Executor: ex, eventID: "evt_fails", entered: entered, release: fail, fail: true}
	}}
	inbox := buildTestInbox(t, d, setupOpts{noBilling: true,
		accept: hookinbox.GroupConfig{Flushers: 1},
		worker: hookinbox.WorkerConfig{Concurrency: 1, BatchSize: 1, PollInterval: time.Hour}})
	if receiversReturnRoom {
		inbox.RoomByReceiversForTest()
	}
	inbox.Handle(epAsync, "invoice.paid", func(ctx context.Context, tx pgx.Tx, ev hookinbox.Event) error { return nil })
	startWorkers(t, inbox)
	if room := inbox.HandoffRoomForTest(); room != 1 {
		t.Fatalf("room %d with one worker taking batches of one, want 1", room)
	}

	ctx, cancel := context.WithCancel(context.Background())
	left := make(chan error)
	go func() {
		_, err := inbox.Receive(ctx, invoiceEvent(epAsync, "evt_fails", "invoice.paid", "in_1", 1))
		left <- err
	}()
	<-entered // its batch is at the database, holding the only room
	cancel()
	if err := <-left; !errors.Is(err, context.Canceled) {
		t.Fatalf("the receiver that left got %v, want context.Canceled", err)
	}
	behind := make(chan error)
	go func() {
		out, err := inbox.Receive(context.Background(), invoiceEvent(epAsync, "evt_behind", "invoice.paid", "in_1", 1))
		if err == nil && out != hookinbox.OutcomeAccepted {
			err = fmt.Errorf("outcome %s, want accepted", out)
		}
		behind <- err
	}()
	waitFor(t, "the second receipt queued behind the first batch", func() bool { return inbox.AcceptQueuedForTest() == 1 })
	close(fail)
	if err := <-behind; err != nil {
		t.Fatalf("the receipt queued behind: %v", err)
	}
	return inbox.HandoffRoomForTest()
}

// gatedInsert holds the batch holding eventID at the database, after saying so on
// entered, until release is closed (or the batch's context ends); then it fails the
// batch, when fail is set, or lets it go to the database. Other batches go at once.
type gatedInsert struct {
	driver.Executor
	eventID          string
	entered, release chan struct{}
	fail             bool
}

func (g *gatedInsert) InboxInsertMany(ctx context.Context, ps []*driver.InboxInsertParams) ([]bool, error) {
	for _, p := range ps {
		if p.Key.EventID != g.eventID {
			continue
		}
		close(g.entered)
		select {
		case <-g.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if g.fail {
			return nil, fmt.Errorf("the test's failed batch: %w", driver.ErrUnavailable)
		}
	}
	return g.Executor.InboxInsertMany(ctx, ps)
}

// A batch that fails returns the room its leased receipts held, even when their
// receivers stopped waiting first (a sender that hung up during an outage): room that
// leaked with each such batch would, after a long outage, turn the hand-off off until
// the next Run.
func TestHandoff_RoomComesBackWhenABatchFailsAfterItsReceiverLeft(t *testing.T) {
	t.Parallel()
	if room := roomAfterALeftReceiversBatchFailed(t, false); room != 1 {
		t.Fatalf("room %d after the failed batch, want 1: it leaked", room)
	}
}

// The broken variant: the receivers return the room of a failed batch, so one that
// left first never does.
func TestHandoff_BrokenRoomByReceiversIsCaught(t *testing.T) {
	t.Parallel()
	if room := roomAfterALeftReceiversBatchFailed(t, true); room != 0 {
		t.Fatalf("room %d with the receivers returning it; the test would not notice", room)
	}
}

// batchWhileHeld receives two events in one ReceiveBatch while the only worker is held
// in another receipt's handler, and reports how many of the two were inserted leased
// (handed off), and at which attempts their handlers ran once the worker was free.
func batchWhileHeld(t *testing.T, claimBatches bool) (leased int, attempts []int) {
	t.Helper()
	w := postgresHarness.open(t)
	inbox := buildTestInbox(t, w.newDriver(t, 4), setupOpts{noBilling: true,
		worker: hookinbox.WorkerConfig{Concurrency: 1, BatchSize: 4, PollInterval: time.Hour}})
	if claimBatches {
		inbox.ClaimBatchesForTest()
	}
	held, _, _ := workerHeldInFirst(t, w, inbox)
	outs, err := inbox.ReceiveBatch(context.Background(), []hookinbox.Event{
		invoiceEvent(epAsync, "evt_a", "invoice.paid", "in_2", 1),
		invoiceEvent(epAsync, "evt_b", "invoice.paid", "in_3", 1),
	})
	if err != nil || outs[0] != hookinbox.OutcomeAccepted || outs[1] != hookinbox.OutcomeAccepted {
		t.Fatalf("ReceiveBatch: %v, %v; want both accepted", outs, err)
	}
	leased = w.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE event_id IN ('evt_a', 'evt_b') AND attempts = 1 AND `+pgDialect.leased)
	held.unblock()
	waitFor(t, "all three processed", func() bool {
		return w.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE state = 'processed'`) == 3
	})
	return leased, held.attempts()
}

// ReceiveBatch's async receipts (SendGrid's event arrays) are handed to the workers
// as a receiver's are: inserted leased, and processed at their first attempt.
func TestHandoff_ReceiveBatchHandsOff(t *testing.T) {
	t.Parallel()
	leased, attempts := batchWhileHeld(t, false)
	if leased != 2 || len(attempts) != 2 || attempts[0] != 1 || attempts[1] != 1 {
		t.Fatalf("%d of 2 inserted leased, processed at attempts %v; want 2, at [1 1]", leased, attempts)
	}
}

// The broken variant: ReceiveBatch leaves its receipts to the claims.
func TestHandoff_BrokenBatchesClaimedIsCaught(t *testing.T) {
	t.Parallel()
	if leased, _ := batchWhileHeld(t, true); leased != 0 {
		t.Fatalf("%d receipts inserted leased with the batch hand-off off; the test would not notice", leased)
	}
}

// stopWithABatchInFlight stops the workers while the batch of a leased receipt is at
// the database, lets it commit once the stop has begun, and returns the receipt's
// state and attempts once Run returned, and the attempts its handler ran at.
func stopWithABatchInFlight(t *testing.T, withoutWaiting bool) (state string, attempts []int) {
	t.Helper()
	w := postgresHarness.open(t)
	entered, commit := make(chan struct{}), make(chan struct{})
	d := &pausingDriver[pgx.Tx]{Driver: w.newDriver(t, 4), wrap: func(ex driver.Executor) driver.Executor {
		return &gatedInsert{Executor: ex, eventID: "evt_in_flight", entered: entered, release: commit}
	}}
	inbox := buildTestInbox(t, d, setupOpts{noBilling: true,
		worker: hookinbox.WorkerConfig{Concurrency: 1, BatchSize: 1, MaxAttempts: 1, PollInterval: time.Hour}})
	if withoutWaiting {
		inbox.StopWithoutWaitingForTest()
	}
	var mu sync.Mutex
	inbox.Handle(epAsync, "invoice.paid", func(ctx context.Context, tx pgx.Tx, ev hookinbox.Event) error {
		mu.Lock()
		attempts = append(attempts, ev.Attempt)
		mu.Unlock()
		return w.effect(ctx, tx, ev)
	})
	cancel, wait := startWorkers(t, inbox)
	received := make(chan error)
	go func() {
		_, err := inbox.Receive(context.Background(), invoiceEvent(epAsync, "evt_in_flight", "invoice.paid", "in_1", 1))
		received <- err
	}()
	<-entered
	stopped := make(chan struct{})
	go func() { cancel(); wait(); close(stopped) }()
	waitFor(t, "the stop closing the hand-off", func() bool { return inbox.HandoffRoomForTest() < 0 })
	if withoutWaiting {
		<-stopped // it returns without the batch: commit only then
	}
	close(commit)
	if err := <-received; err != nil {
		t.Fatalf("Receive: %v", err)
	}
	<-stopped
	for _, st := range []string{"processed", "pending", "needs_review"} {
		if w.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE event_id = 'evt_in_flight' AND attempts = 1 AND state = '`+st+`'`) == 1 {
			state = st + " after 1"
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return state, attempts
}

// A stop waits for the accept batches in flight, so that their receipts are processed
// before Run returns: released instead, with their first attempt counted and unused,
// they would go to review unprocessed at an attempt limit of 1.
func TestHandoff_StopWaitsForBatchesInFlight(t *testing.T) {
	t.Parallel()
	state, attempts := stopWithABatchInFlight(t, false)
	if state != "processed after 1" || len(attempts) != 1 || attempts[0] != 1 {
		t.Fatalf("the receipt in flight at the stop: %s, its handler run at attempts %v; want processed after 1, at [1]", state, attempts)
	}
}

// The broken variant: a stop that does not wait leaves it pending, its only attempt
// used.
func TestHandoff_BrokenStopWithoutWaitingIsCaught(t *testing.T) {
	t.Parallel()
	if state, attempts := stopWithABatchInFlight(t, true); state != "pending after 1" || len(attempts) != 0 {
		t.Fatalf("the receipt in flight at a stop that does not wait: %s, attempts %v; the test would not notice", state, attempts)
	}
}
