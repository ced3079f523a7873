package hookinbox_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/hookinbox/hookinbox/internal/testwait"
)

// groupBundle is an inbox whose sync deliveries share one flusher, with a handler on
// the sync and hybrid endpoints that records each application (test_effects), can be
// told to fail for an event id, and holds the first delivery until released, so that
// the deliveries sent meanwhile queue and are received as one group.
type groupBundle struct {
	*testBundle
	mu      sync.Mutex
	failFor map[string]int // event id → how many more times to fail
	hold    chan struct{}
	held    chan struct{}
	once    sync.Once
	groups  *groupRecorder
}

// groupRecorder is an Observer that keeps every group commit it is told of.
type groupRecorder struct {
	mu     sync.Mutex
	groups []hookinbox.GroupInfo
}

func (r *groupRecorder) Delivery(hookinbox.DeliveryInfo) {}
func (r *groupRecorder) Attempt(hookinbox.AttemptInfo)   {}
func (r *groupRecorder) Group(g hookinbox.GroupInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.groups = append(r.groups, g)
}

// sizes returns the sizes of the groups of kind, in order, and whether any failed.
func (r *groupRecorder) sizes(kind string) (sizes []int, failed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, g := range r.groups {
		if g.Kind == kind {
			sizes = append(sizes, g.Size)
			failed = failed || g.Failed
		}
	}
	return sizes, failed
}

// newGroupBundle is a groupBundle with no handler registered yet.
func newGroupBundle(t *testing.T) *groupBundle {
	t.Helper()
	groups := &groupRecorder{}
	g := &groupBundle{
		testBundle: setup(t, setupOpts{noBilling: true, sync: hookinbox.GroupConfig{Flushers: 1}, observer: groups}),
		groups:     groups,
		failFor:    map[string]int{},
		hold:       make(chan struct{}),
		held:       make(chan struct{}),
	}
	t.Cleanup(g.release)
	return g
}

func setupGroup(t *testing.T) *groupBundle {
	t.Helper()
	g := newGroupBundle(t)
	handler := func(ctx context.Context, tx pgx.Tx, ev hookinbox.Event) error {
		if ev.ID == "evt_hold" {
			close(g.held)
			<-g.hold
		}
		if err := countingHandler(ctx, tx, ev); err != nil {
			return err
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.failFor[ev.ID] > 0 {
			g.failFor[ev.ID]--
			return errors.New("refused for " + ev.ID)
		}
		return nil
	}
	g.inbox.Handle(epBilling, "invoice.paid", handler)
	g.inbox.Handle(epHybrid, "invoice.paid", handler)
	return g
}

func (g *groupBundle) release() { g.once.Do(func() { close(g.hold) }) }

// group delivers evs while the flusher is held, so that they form one group, and
// returns their results by event id (copies of one id in order of arrival is not
// known, so a slice per id).
func (g *groupBundle) group(t *testing.T, evs ...hookinbox.Event) map[string][]received {
	t.Helper()
	held := g.receiveAsync(invoiceEvent(epBilling, "evt_hold", "invoice.paid", "in_hold", 1))
	<-g.held
	results := g.receiveAsync(evs...)
	testwait.Until(t, 30*time.Second, "the deliveries to queue behind the held one", func() bool { return g.inbox.SyncQueuedForTest() == len(evs) })
	g.release()
	if r := <-held; r.err != nil || r.out != hookinbox.OutcomeProcessed {
		t.Fatalf("the held delivery: %s, %v", r.out, r.err)
	}
	return collect(t, results, len(evs))
}

func paid(endpoint, id string) hookinbox.Event {
	return invoiceEvent(endpoint, id, "invoice.paid", "in_"+id, 100)
}

// In one shared transaction a failing handler undoes only its own delivery: the
// others commit, the failed one is answered with its error and leaves nothing.
func TestReceiveGroup_OneFailureUndoesOnlyItsOwnDelivery(t *testing.T) {
	t.Parallel()
	g := setupGroup(t)
	g.failFor["evt_2"] = 1
	byID := g.group(t, paid(epBilling, "evt_1"), paid(epBilling, "evt_2"), paid(epBilling, "evt_3"))
	for _, id := range []string{"evt_1", "evt_3"} {
		if r := byID[id][0]; r.err != nil || r.out != hookinbox.OutcomeProcessed {
			t.Errorf("%s: %s, %v; want processed", id, r.out, r.err)
		}
		if n := g.effects(t, id); n != 1 {
			t.Errorf("%s applied %d times, want 1", id, n)
		}
	}
	var herr *hookinbox.HandlerError
	if r := byID["evt_2"][0]; !errors.As(r.err, &herr) {
		t.Fatalf("evt_2: %s, %v; want its HandlerError", r.out, r.err)
	}
	if n := g.effects(t, "evt_2"); n != 0 || g.receipt(t, epBilling, "evt_2") != nil {
		t.Fatalf("the failed delivery left %d effects or a receipt behind", n)
	}
	if out := g.receive(t, paid(epBilling, "evt_2")); out != hookinbox.OutcomeProcessed {
		t.Fatalf("the provider's retry of evt_2: %s, want processed", out)
	}
}

// Two copies of one event in one group: the first is processed, the second is a
// duplicate; when the first's handler fails, the second takes over (G4 inside a
// group), and the event is applied once either way.
func TestReceiveGroup_CopiesOfOneEventApplyOnce(t *testing.T) {
	t.Parallel()
	g := setupGroup(t)
	g.failFor["evt_flaky"] = 1
	byID := g.group(t, paid(epBilling, "evt_1"), paid(epBilling, "evt_1"), paid(epBilling, "evt_flaky"), paid(epBilling, "evt_flaky"))
	for _, id := range []string{"evt_1", "evt_flaky"} {
		processed, other := 0, 0
		for _, r := range byID[id] {
			if r.err == nil && r.out == hookinbox.OutcomeProcessed {
				processed++
			} else {
				other++
			}
		}
		if processed != 1 {
			t.Errorf("%s: %d copies processed (%v), want exactly 1", id, processed, byID[id])
		}
		if n := g.effects(t, id); n != 1 {
			t.Errorf("%s applied %d times, want 1", id, n)
		}
	}
	for _, r := range byID["evt_1"] {
		if r.err != nil || (r.out != hookinbox.OutcomeProcessed && r.out != hookinbox.OutcomeDuplicate) {
			t.Errorf("a copy of evt_1: %s, %v", r.out, r.err)
		}
	}
}

// A hybrid delivery whose handler fails inside a group is kept as pending, in the
// group's own transaction, with the error and the attempt counted.
func TestReceiveGroup_HybridFailureIsKeptPending(t *testing.T) {
	t.Parallel()
	g := setupGroup(t)
	g.failFor["evt_2"] = 1
	byID := g.group(t, paid(epHybrid, "evt_1"), paid(epHybrid, "evt_2"))
	if r := byID["evt_1"][0]; r.err != nil || r.out != hookinbox.OutcomeProcessed {
		t.Fatalf("evt_1: %s, %v", r.out, r.err)
	}
	if r := byID["evt_2"][0]; r.err != nil || r.out != hookinbox.OutcomeAccepted {
		t.Fatalf("evt_2: %s, %v; want accepted", r.out, r.err)
	}
	r := g.receipt(t, epHybrid, "evt_2")
	if r == nil || r.State != hookinboxtype.StatePending || r.Attempts != 1 || r.LastError == "" {
		t.Fatalf("evt_2's receipt %+v, want pending after 1 attempt with its error", r)
	}
	if n := g.effects(t, "evt_2"); n != 0 {
		t.Fatalf("the failed hybrid handler's work survived: %d", n)
	}
}

// A group whose transaction fails as a whole (here its connection is terminated while
// it waits) commits nothing; each delivery is then received alone, and applied once.
func TestReceiveGroup_FailedTransactionFallsBackToOneByOne(t *testing.T) {
	t.Parallel()
	g := setupGroup(t)
	// The group's second delivery waits on a receipt a test transaction holds.
	tx, err := g.db.Pool.Begin(g.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(g.ctx) //nolint:errcheck
	if _, err := tx.Exec(g.ctx, `INSERT INTO hookinbox_inbox (provider, endpoint, event_id, event_type, payload)
VALUES ('stripe', $1, 'evt_2', 'invoice.paid', '{}')`, epBilling); err != nil {
		t.Fatal(err)
	}
	held := g.receiveAsync(invoiceEvent(epBilling, "evt_hold", "invoice.paid", "in_hold", 1))
	<-g.held
	results := g.receiveAsync(paid(epBilling, "evt_1"), paid(epBilling, "evt_2"), paid(epBilling, "evt_3"))
	testwait.Until(t, 30*time.Second, "the deliveries to queue", func() bool { return g.inbox.SyncQueuedForTest() == 3 })
	g.release()
	<-held
	g.db.WaitForLockWaiters(t, 1)
	var killed bool
	if err := g.db.Pool.QueryRow(g.ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
 WHERE application_name = $1 AND wait_event_type = 'Lock'`, g.db.Schema).Scan(&killed); err != nil || !killed {
		t.Fatalf("terminating the group's backend: %v %v", killed, err)
	}
	// Received alone, evt_2 waits on the test's receipt again: let it go.
	g.db.WaitForLockWaiters(t, 1)
	if err := tx.Rollback(g.ctx); err != nil {
		t.Fatal(err)
	}
	for id, rs := range collect(t, results, 3) {
		if rs[0].err != nil || rs[0].out != hookinbox.OutcomeProcessed {
			t.Errorf("%s: %s, %v; want processed", id, rs[0].out, rs[0].err)
		}
		if n := g.effects(t, id); n != 1 {
			t.Errorf("%s applied %d times, want 1", id, n)
		}
	}
}

// A handler that swallows a database error (the transaction is aborted, yet it returns
// nil) fails its own delivery, never the one before it: before each savepoint was
// released, the next delivery's failed SAVEPOINT rolled back to the previous
// delivery's, which had been answered processed (found by review).
func TestReceiveGroup_HandlerThatSwallowsAnErrorFailsItsOwnDeliveryOnly(t *testing.T) {
	t.Parallel()
	g := setupGroup(t)
	g.inbox.Handle(epAnalytics, "invoice.paid", func(ctx context.Context, tx pgx.Tx, ev hookinbox.Event) error {
		if err := countingHandler(ctx, tx, ev); err != nil {
			return err
		}
		_, _ = tx.Exec(ctx, `SELECT 1/0`) // the error is ignored; the transaction is aborted
		return nil
	})
	byID := g.group(t, paid(epBilling, "evt_1"), paid(epAnalytics, "evt_swallow"), paid(epBilling, "evt_3"))
	for _, id := range []string{"evt_1", "evt_3"} {
		if r := byID[id][0]; r.err != nil || r.out != hookinbox.OutcomeProcessed {
			t.Errorf("%s: %s, %v; want processed", id, r.out, r.err)
		}
		if r := g.receipt(t, epBilling, id); r == nil || g.effects(t, id) != 1 {
			t.Errorf("%s answered processed but its receipt or effect is missing", id)
		}
	}
	if r := byID["evt_swallow"][0]; r.err == nil {
		t.Fatalf("the swallowing delivery answered %s, want an error", r.out)
	}
	if g.receipt(t, epAnalytics, "evt_swallow") != nil {
		t.Fatal("the swallowing delivery left a receipt")
	}
}

// A GroupObserver is told of every group commit: the sync group of three that waited
// behind the held delivery, the held delivery's own group of one, and the accept
// batches, whose sizes add up to the receipts accepted.
func TestReceiveGroup_GroupObserverIsToldOfEveryGroup(t *testing.T) {
	t.Parallel()
	g := setupGroup(t)
	g.inbox.Handle(epAsync, "invoice.paid", countingHandler)
	g.group(t, paid(epBilling, "evt_1"), paid(epBilling, "evt_2"), paid(epBilling, "evt_3"))
	if sizes, failed := g.groups.sizes(hookinbox.GroupSync); fmt.Sprint(sizes) != "[1 3]" || failed {
		t.Errorf("sync groups %v (failed %v), want [1 3]: the held delivery, then the three behind it", sizes, failed)
	}
	results := g.receiveAsync(paid(epAsync, "evt_4"), paid(epAsync, "evt_5"), paid(epAsync, "evt_6"))
	collect(t, results, 3)
	sizes, failed := g.groups.sizes(hookinbox.GroupAccept)
	total := 0
	for _, n := range sizes {
		total += n
	}
	if total != 3 || failed {
		t.Errorf("accept groups %v (failed %v), want sizes adding up to 3", sizes, failed)
	}
}
