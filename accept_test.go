package hookinbox_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"sort"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/hookinbox/hookinbox/internal/testwait"
)

// holdKey inserts a receipt for eventID on the async endpoint in a transaction of its
// own, left open: a batch holding the same key waits on it, which is how a test makes
// the flusher busy while deliveries queue behind it. end commits or rolls back.
func (b *testBundle) holdKey(t *testing.T, eventID string) (end func(commit bool)) {
	t.Helper()
	tx, err := b.db.Pool.Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(b.ctx, `INSERT INTO hookinbox_inbox (provider, endpoint, event_id, event_type, payload)
VALUES ('stripe', $1, $2, 'invoice.created', '{}')`, epAsync, eventID); err != nil {
		t.Fatal(err)
	}
	ended := false
	end = func(commit bool) {
		if ended {
			return
		}
		ended = true
		if commit {
			if err := tx.Commit(b.ctx); err != nil {
				t.Errorf("commit: %v", err)
			}
			return
		}
		_ = tx.Rollback(b.ctx)
	}
	t.Cleanup(func() { end(false) })
	return end
}

type received struct {
	id  string
	out hookinbox.Outcome
	err error
}

// receiveAsync delivers each event on its own goroutine; the results arrive on the
// channel. Goroutines only report: assertions stay on the test's goroutine.
func (b *testBundle) receiveAsync(evs ...hookinbox.Event) chan received {
	results := make(chan received, len(evs))
	for _, ev := range evs {
		go func() {
			out, err := b.inbox.Receive(b.ctx, ev)
			results <- received{ev.ID, out, err}
		}()
	}
	return results
}

// blockFlusher makes the single flusher wait on a held key, and returns the function
// that lets it go (the held receipt then commits: its delivery is a duplicate).
func (b *testBundle) blockFlusher(t *testing.T) (release func(), blocked chan received) {
	t.Helper()
	end := b.holdKey(t, "evt_blocker")
	blocked = b.receiveAsync(invoiceEvent(epAsync, "evt_blocker", "invoice.created", "in_0", 0))
	b.db.WaitForLockWaiters(t, 1)
	return func() { end(true) }, blocked
}

func (b *testBundle) waitQueued(t *testing.T, n int) {
	t.Helper()
	testwait.Until(t, 30*time.Second, "deliveries to queue for the next batch", func() bool { return b.inbox.AcceptQueuedForTest() == n })
}

func collect(t *testing.T, results chan received, n int) map[string][]received {
	t.Helper()
	byID := map[string][]received{}
	for range n {
		r := <-results
		byID[r.id] = append(byID[r.id], r)
	}
	return byID
}

// Two copies of one event in the same batch: one is accepted, the other answered
// duplicate, and one row is written.
func TestAccept_DuplicateInsideOneBatchIsADuplicate(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{accept: hookinbox.GroupConfig{Flushers: 1}})
	release, blocked := b.blockFlusher(t)
	results := b.receiveAsync(
		invoiceEvent(epAsync, "evt_1", "invoice.created", "in_1", 0),
		invoiceEvent(epAsync, "evt_1", "invoice.created", "in_1", 0),
		invoiceEvent(epAsync, "evt_2", "invoice.created", "in_2", 0))
	b.waitQueued(t, 3)
	release()
	if r := <-blocked; r.err != nil || r.out != hookinbox.OutcomeDuplicate {
		t.Fatalf("the held key's delivery: %s, %v; want duplicate", r.out, r.err)
	}
	byID := collect(t, results, 3)
	var outs []string
	for _, r := range byID["evt_1"] {
		if r.err != nil {
			t.Fatalf("evt_1: %v", r.err)
		}
		outs = append(outs, string(r.out))
	}
	sort.Strings(outs)
	if len(outs) != 2 || outs[0] != "accepted" || outs[1] != "duplicate" {
		t.Fatalf("two copies of evt_1 in one batch answered %v, want accepted and duplicate", outs)
	}
	if r := byID["evt_2"][0]; r.err != nil || r.out != hookinbox.OutcomeAccepted {
		t.Fatalf("evt_2: %s, %v", r.out, r.err)
	}
	if n := b.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE event_id = 'evt_1'`); n != 1 {
		t.Fatalf("rows for evt_1: %d, want 1", n)
	}
}

// A row the database refuses (jsonb has no \u0000) fails only its own delivery: the
// batch is split until the row is alone, and its neighbours are committed.
func TestAccept_PoisonedRowFailsOnlyItsSender(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{accept: hookinbox.GroupConfig{Flushers: 1}})
	release, blocked := b.blockFlusher(t)
	poison := hookinbox.Event{Endpoint: epAsync, ID: "evt_poison", Type: "invoice.created",
		Payload: []byte(`{"id":"evt_poison","note":"\u0000"}`)}
	var evs []hookinbox.Event
	for _, id := range []string{"evt_1", "evt_2", "evt_3", "evt_4", "evt_5"} {
		evs = append(evs, invoiceEvent(epAsync, id, "invoice.created", "in_"+id, 0))
	}
	results := b.receiveAsync(append(evs, poison)...)
	b.waitQueued(t, 6)
	release()
	<-blocked
	byID := collect(t, results, 6)
	if r := byID["evt_poison"][0]; !errors.Is(r.err, driver.ErrInvalidInput) {
		t.Fatalf("the poisoned row: %s, %v; want driver.ErrInvalidInput", r.out, r.err)
	}
	for _, ev := range evs {
		if r := byID[ev.ID][0]; r.err != nil || r.out != hookinbox.OutcomeAccepted {
			t.Fatalf("%s beside the poisoned row: %s, %v; want accepted", ev.ID, r.out, r.err)
		}
	}
	if n := b.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE event_id LIKE 'evt\_%' AND event_id <> 'evt_blocker'`); n != 5 {
		t.Fatalf("rows: %d, want the 5 good ones", n)
	}
}

// A flusher whose connection dies in the middle of a batch answers none of the
// batch's deliveries 2xx, and none of their rows is committed: the senders retry.
func TestAccept_FlusherKilledMidBatchAnswersNo2xx(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{accept: hookinbox.GroupConfig{Flushers: 1}})
	release, blocked := b.blockFlusher(t)
	endX := b.holdKey(t, "evt_x") // the batch will wait on it, after inserting evt_a and evt_b
	results := b.receiveAsync(
		invoiceEvent(epAsync, "evt_a", "invoice.created", "in_a", 0),
		invoiceEvent(epAsync, "evt_b", "invoice.created", "in_b", 0),
		invoiceEvent(epAsync, "evt_x", "invoice.created", "in_x", 0))
	b.waitQueued(t, 3)
	release()
	<-blocked
	b.db.WaitForLockWaiters(t, 1) // the batch [evt_a, evt_b, evt_x] waits on evt_x
	var killed bool
	if err := b.db.Pool.QueryRow(b.ctx, `
SELECT pg_terminate_backend(pid) FROM pg_stat_activity
 WHERE application_name = $1 AND wait_event_type = 'Lock'`, b.db.Schema).Scan(&killed); err != nil || !killed {
		t.Fatalf("terminating the flusher's backend: %v, %v", killed, err)
	}
	for id, rs := range collect(t, results, 3) {
		if rs[0].err == nil {
			t.Errorf("%s answered %s after its batch's connection died, want an error (5xx)", id, rs[0].out)
		}
	}
	endX(false)
	if n := b.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE event_id IN ('evt_a', 'evt_b', 'evt_x')`); n != 0 {
		t.Fatalf("%d rows of the killed batch were committed", n)
	}
	// The senders' retries are processed normally.
	for _, r := range collect(t, b.receiveAsync(
		invoiceEvent(epAsync, "evt_a", "invoice.created", "in_a", 0),
		invoiceEvent(epAsync, "evt_b", "invoice.created", "in_b", 0)), 2) {
		if r[0].err != nil || r[0].out != hookinbox.OutcomeAccepted {
			t.Fatalf("retry %s: %s, %v", r[0].id, r[0].out, r[0].err)
		}
	}
}

// A full queue answers 503 with Retry-After, never 2xx, and writes nothing.
func TestAccept_FullQueueAnswers503(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{accept: hookinbox.GroupConfig{Flushers: 1, QueueSize: 1}})
	srv := b.serve(t, b.inbox)
	release, blocked := b.blockFlusher(t)
	queued := b.receiveAsync(invoiceEvent(epAsync, "evt_1", "invoice.created", "in_1", 0))
	b.waitQueued(t, 1)

	ev := invoiceEvent(epAsync, "evt_2", "invoice.created", "in_2", 0)
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/"+epAsync, bytes.NewReader(ev.Payload))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Stripe-Signature", signed(ev.Payload, testSecret, time.Now()))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a delivery beyond the queue: %d (Retry-After %q), want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	release()
	<-blocked
	if r := <-queued; r.err != nil || r.out != hookinbox.OutcomeAccepted {
		t.Fatalf("the queued delivery: %s, %v", r.out, r.err)
	}
	if n := b.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE event_id = 'evt_2'`); n != 0 {
		t.Fatalf("the refused delivery wrote %d rows", n)
	}
}

// A batch of claimed receipts is processed in one transaction; when one fails, the
// batch rolls back and each is processed on its own: the good ones are applied
// exactly once, and the bad one's failure is recorded against it alone.
func TestWorker_BatchWithOneFailureAppliesTheOthersOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noBilling: true, worker: hookinbox.WorkerConfig{BatchSize: 10, MaxAttempts: 1, Concurrency: 1}})
	b.inbox.Handle(epAsync, "invoice.created", func(ctx context.Context, tx pgx.Tx, ev hookinbox.Event) error {
		if err := countingHandler(ctx, tx, ev); err != nil {
			return err
		}
		if ev.ID == "evt_3" {
			return errors.New("evt_3 is refused downstream")
		}
		return nil
	})
	ids := []string{"evt_1", "evt_2", "evt_3", "evt_4", "evt_5"}
	for _, id := range ids {
		b.receive(t, invoiceEvent(epAsync, id, "invoice.created", "in_"+id, 0))
	}
	r, err := b.inbox.ClaimBatchForTest(b.ctx, 10, epAsync)
	if err != nil || len(r) != 5 {
		t.Fatalf("claimed %d, %v; want the 5 in one batch", len(r), err)
	}
	b.inbox.ProcessBatchForTest(b.ctx, r)
	for _, id := range ids {
		want := 1
		if id == "evt_3" {
			want = 0
		}
		if n := b.effects(t, id); n != want {
			t.Errorf("%s applied %d times, want %d", id, n, want)
		}
	}
	if got := b.receipt(t, epAsync, "evt_3"); got.State != hookinboxtype.StateNeedsReview || got.LastError == "" {
		t.Fatalf("evt_3: %+v, want needs review with its error", got)
	}
	if s, err := b.inbox.Operator().Stats(b.ctx); err != nil || s.Unprocessed != 1 {
		t.Fatalf("stats %+v, %v; want only evt_3 unprocessed", s, err)
	}
}
