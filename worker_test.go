package hookinbox_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/hookinbox/hookinbox/internal/testwait"
)

// expireLeases makes every leased receipt claimable now: what the passing of the lease
// does, without waiting for it.
func (b *testBundle) expireLeases(t *testing.T) {
	t.Helper()
	if _, err := b.db.Pool.Exec(b.ctx, `UPDATE hookinbox_inbox SET available_at = now() WHERE processed_at IS NULL`); err != nil {
		t.Fatal(err)
	}
}

func (b *testBundle) claim(t *testing.T) *hookinboxtype.Receipt {
	t.Helper()
	r, err := b.inbox.ClaimForTest(b.ctx, epAsync, epHybrid)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// runUntilProcessed runs inbox workers until nothing is unprocessed, then stops them.
func runUntilProcessed(t *testing.T, b *testBundle, inboxes ...*hookinbox.Inbox[pgx.Tx]) {
	t.Helper()
	ctx, cancel := context.WithCancel(b.ctx)
	var wg sync.WaitGroup
	for _, inbox := range inboxes {
		wg.Go(func() { _ = inbox.Run(ctx) })
	}
	defer func() { cancel(); wg.Wait() }()
	testwait.For(t, 30*time.Second, "every receipt processed", func() (bool, error) {
		n := b.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE processed_at IS NULL`)
		return n == 0, fmt.Errorf("%d receipts still unprocessed", n)
	})
}

// claimCrashes claims and "crashes" three times: the worker dies after its claim, and
// the lease runs out. It returns the receipt's attempts and whether a fourth claim
// found it.
type claimCrashFunc func(t *testing.T, b *testBundle) (claimed bool)

// claimReal is the worker's claim: a statement of its own that commits the attempt.
func claimReal(t *testing.T, b *testBundle) bool { return b.claim(t) != nil }

// claimInProcessingTx is the broken variant of G7: the claim shares the processing
// transaction, so a worker that dies mid-event takes its attempt count with it.
func claimInProcessingTx(t *testing.T, b *testBundle) bool {
	tx, err := b.inbox.Driver().Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(b.ctx) // the crash
	r, err := claimOne(b.ctx, tx, &driver.InboxClaimParams{Endpoints: []string{epAsync}, Lease: time.Minute, MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	return r != nil
}

func scenarioWorkerDiesThreeTimes(t *testing.T, claim claimCrashFunc) (attempts int, fourthClaimed bool, b *testBundle) {
	b = setup(t, setupOpts{noBilling: true, worker: hookinbox.WorkerConfig{MaxAttempts: 3}})
	b.inbox.Handle(epAsync, "invoice.paid", countingHandler)
	b.receive(t, invoiceEvent(epAsync, "evt_1", "invoice.paid", "in_1", 1000))
	for i := range 3 {
		if !claim(t, b) {
			t.Fatalf("claim %d found nothing", i+1)
		}
		b.expireLeases(t)
	}
	return b.receipt(t, epAsync, "evt_1").Attempts, claim(t, b), b
}

// Seed case 13.
func TestWorker_CrashAfterClaimStopsAtMaxAttempts(t *testing.T) {
	t.Parallel()
	attempts, fourth, b := scenarioWorkerDiesThreeTimes(t, claimReal)
	if attempts != 3 || fourth {
		t.Fatalf("attempts=%d, claimed a fourth time=%v; want 3 and false", attempts, fourth)
	}
	stats, err := b.inbox.Operator().Stats(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if stats.NeedsReview != 1 || stats.Unprocessed != 1 {
		t.Fatalf("stats %+v, want 1 unprocessed needing review", stats)
	}
	list, err := b.inbox.Operator().ListReceipts(b.ctx, hookinbox.ListParams{NeedsReview: true})
	if err != nil || len(list) != 1 || list[0].EventID != "evt_1" {
		t.Fatalf("needs review list %v, %v", list, err)
	}

	ok, err := b.inbox.Operator().Retry(b.ctx, list[0].Key)
	if err != nil || !ok {
		t.Fatalf("Retry: %v, %v", ok, err)
	}
	if got := b.receipt(t, epAsync, "evt_1").Attempts; got != 0 {
		t.Fatalf("attempts after retry %d, want 0", got)
	}
	runUntilProcessed(t, b, b.inbox)
	if n := b.effects(t, "evt_1"); n != 1 {
		t.Fatalf("effects %d, want 1", n)
	}
}

func TestBrokenClaimInProcessingTx_NeverReachesReview(t *testing.T) {
	t.Parallel()
	attempts, fourth, _ := scenarioWorkerDiesThreeTimes(t, claimInProcessingTx)
	if attempts != 0 || !fourth {
		t.Fatalf("broken claim not caught: attempts=%d fourth=%v, want 0 and true (taken forever)", attempts, fourth)
	}
}

// processFunc processes a claimed receipt. The real one is the worker's; the broken
// ones leave out the row lock or the re-check.
type processFunc func(t *testing.T, b *testBundle, r *hookinboxtype.Receipt) error

func processReal(t *testing.T, b *testBundle, r *hookinboxtype.Receipt) error {
	return b.inbox.ProcessClaimedForTest(b.ctx, r)
}

// processWithoutRecheck locks the row but does not look at processed_at: a worker whose
// lease ran out applies the event again.
func processWithoutRecheck(t *testing.T, b *testBundle, r *hookinboxtype.Receipt) error {
	return pgx.BeginFunc(b.ctx, b.db.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(b.ctx, `SELECT 1 FROM hookinbox_inbox WHERE event_id = $1 FOR UPDATE`, r.EventID); err != nil {
			return err
		}
		ev := hookinbox.Event{Provider: r.Provider, Endpoint: r.Endpoint, ID: r.EventID, Type: r.EventType, Payload: r.Payload}
		if err := countingHandler(b.ctx, tx, ev); err != nil {
			return err
		}
		_, err := tx.Exec(b.ctx, `UPDATE hookinbox_inbox SET processed_at = now() WHERE event_id = $1`, r.EventID)
		return err
	})
}

// processWithoutLock re-checks processed_at with a plain read: a second worker sees the
// first's uncommitted work as not done and applies the event too.
func processWithoutLock(t *testing.T, b *testBundle, r *hookinboxtype.Receipt) error {
	return pgx.BeginFunc(b.ctx, b.db.Pool, func(tx pgx.Tx) error {
		var unprocessed bool
		if err := tx.QueryRow(b.ctx, `SELECT processed_at IS NULL FROM hookinbox_inbox WHERE event_id = $1`, r.EventID).Scan(&unprocessed); err != nil {
			return err
		}
		if !unprocessed {
			return hookinbox.ErrAlreadyProcessed
		}
		ev := hookinbox.Event{Provider: r.Provider, Endpoint: r.Endpoint, ID: r.EventID, Type: r.EventType, Payload: r.Payload}
		if err := countingHandler(b.ctx, tx, ev); err != nil {
			return err
		}
		_, err := tx.Exec(b.ctx, `UPDATE hookinbox_inbox SET processed_at = now() WHERE event_id = $1`, r.EventID)
		return err
	})
}

// scenarioLeaseExpires (seed case 14): worker A claims and stalls past its lease; B
// claims and processes; A returns and processes its stale claim. It returns the number
// of applications and A's error.
func scenarioLeaseExpires(t *testing.T, process processFunc) (int, error) {
	b := setup(t, setupOpts{noBilling: true})
	b.inbox.Handle(epAsync, "invoice.paid", countingHandler)
	b.receive(t, invoiceEvent(epAsync, "evt_1", "invoice.paid", "in_1", 1000))

	stale := b.claim(t) // worker A, which then stalls
	b.expireLeases(t)
	fresh := b.claim(t) // worker B
	if fresh == nil {
		t.Fatal("worker B could not claim after the lease ran out")
	}
	if err := process(t, b, fresh); err != nil {
		t.Fatalf("worker B: %v", err)
	}
	errA := process(t, b, stale)
	return b.effects(t, "evt_1"), errA
}

func TestWorker_ExpiredLeaseOriginalDoesNothing(t *testing.T) {
	t.Parallel()
	n, errA := scenarioLeaseExpires(t, processReal)
	if n != 1 || !errors.Is(errA, hookinbox.ErrAlreadyProcessed) {
		t.Fatalf("applied %d times, worker A returned %v; want 1 and already processed", n, errA)
	}
}

func TestBrokenProcessWithoutRecheck_AppliesTwice(t *testing.T) {
	t.Parallel()
	if n, _ := scenarioLeaseExpires(t, processWithoutRecheck); n != 2 {
		t.Fatalf("missing re-check not caught: applied %d times, want 2", n)
	}
}

// scenarioSecondWorkerArrives (seed case 15): worker A is inside the handler, holding
// the row; worker B processes the same receipt (its lease ran out). It returns the
// number of applications and B's error.
func scenarioSecondWorkerArrives(t *testing.T, process processFunc) (int, error) {
	b := setup(t, setupOpts{noBilling: true})
	inHandler, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	b.inbox.Handle(epAsync, "invoice.paid", func(ctx context.Context, tx pgx.Tx, ev hookinbox.Event) error {
		once.Do(func() { close(inHandler); <-release })
		return countingHandler(ctx, tx, ev)
	})
	b.receive(t, invoiceEvent(epAsync, "evt_1", "invoice.paid", "in_1", 1000))
	r := b.claim(t)

	errA := make(chan error, 1)
	go func() { errA <- b.inbox.ProcessClaimedForTest(b.ctx, r) }()
	<-inHandler
	errB := make(chan error, 1)
	go func() { errB <- process(t, b, r) }()
	b.db.WaitForLockWaiters(t, 1) // B waits for A's row lock
	close(release)
	if err := <-errA; err != nil {
		t.Fatalf("worker A: %v", err)
	}
	err := <-errB
	return b.effects(t, "evt_1"), err
}

func TestWorker_SecondWorkerWaitsThenSeesDone(t *testing.T) {
	t.Parallel()
	n, errB := scenarioSecondWorkerArrives(t, processReal)
	if n != 1 || !errors.Is(errB, hookinbox.ErrAlreadyProcessed) {
		t.Fatalf("applied %d times, worker B returned %v; want 1 and already processed", n, errB)
	}
}

func TestBrokenProcessWithoutLock_AppliesTwice(t *testing.T) {
	t.Parallel()
	// B's plain read sees A's work as not done, applies the event, and only then waits
	// on A's row in its final update: the scenario's lock waiter, after the damage.
	if n, _ := scenarioSecondWorkerArrives(t, processWithoutLock); n != 2 {
		t.Fatalf("missing lock not caught: applied %d times, want 2", n)
	}
}

// Seed case 16.
func TestWorker_StatementTimeoutRecordedAsTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noBilling: true, worker: hookinbox.WorkerConfig{StatementTimeout: 100 * time.Millisecond}})
	b.inbox.Handle(epAsync, "invoice.paid", func(ctx context.Context, tx pgx.Tx, ev hookinbox.Event) error {
		if err := countingHandler(ctx, tx, ev); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT pg_sleep(30)`)
		return err
	})
	b.receive(t, invoiceEvent(epAsync, "evt_1", "invoice.paid", "in_1", 1000))
	err := b.inbox.ProcessClaimedForTest(b.ctx, b.claim(t))
	if !errors.Is(err, driver.ErrStatementTimeout) {
		t.Fatalf("processing: %v, want a statement timeout", err)
	}
	got := b.receipt(t, epAsync, "evt_1")
	if got.ProcessedAt != nil || got.Attempts != 1 || !strings.Contains(got.LastError, "timeout") {
		t.Fatalf("receipt after timeout: processed=%v attempts=%d last_error=%q", got.ProcessedAt, got.Attempts, got.LastError)
	}
	if n := b.effects(t, "evt_1"); n != 0 {
		t.Fatalf("effects %d, want 0 (rolled back)", n)
	}
}

func TestHybrid_SuccessIsProcessedInline(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if got := b.receive(t, invoiceEvent(epHybrid, "evt_1", "invoice.paid", "in_1", 1000)); got != hookinbox.OutcomeProcessed {
		t.Fatalf("receive: %s, want processed", got)
	}
	if n := b.ledgerRows(t); n != 1 {
		t.Fatalf("ledger rows %d, want 1", n)
	}
}

// A stop request while a handler runs lets the event finish: Run returns after it
// committed, and nothing is left pending.
func TestRun_StopFinishesEventInProgress(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noBilling: true})
	inHandler, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	b.inbox.Handle(epAsync, "invoice.paid", func(ctx context.Context, tx pgx.Tx, ev hookinbox.Event) error {
		once.Do(func() { close(inHandler); <-release })
		return countingHandler(ctx, tx, ev)
	})
	b.receive(t, invoiceEvent(epAsync, "evt_1", "invoice.paid", "in_1", 1000))
	ctx, cancel := context.WithCancel(b.ctx)
	done := make(chan error, 1)
	go func() { done <- b.inbox.Run(ctx) }()
	<-inHandler
	cancel()
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if r := b.receipt(t, epAsync, "evt_1"); r.ProcessedAt == nil || b.effects(t, "evt_1") != 1 {
		t.Fatalf("event in progress at stop was not finished: %+v", r)
	}
}

// claimOne claims at most one receipt, as a worker with a batch size of 1 does.
func claimOne(ctx context.Context, ex driver.Executor, p *driver.InboxClaimParams) (*hookinboxtype.Receipt, error) {
	q := *p
	q.Limit = 1
	rs, err := ex.InboxClaim(ctx, &q)
	if err != nil || len(rs) == 0 {
		return nil, err
	}
	return rs[0], nil
}
