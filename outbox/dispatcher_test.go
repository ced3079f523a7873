package outbox_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/hookinbox/hookinbox/internal/testnats"
	"github.com/hookinbox/hookinbox/outbox"
)

// 1,000 messages for an HTTP receiver and 1,000 for JetStream, four dispatchers each
// on its own connections: every message arrives once.
func TestDispatcher_ThousandMessagesFourDispatchersOnceEach(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sink := newRecordingSink(t)
	stream := testnats.New(t)
	b.insert(t, 1000, "http")
	b.insert(t, 1000, "nats")

	var dispatchers []*outbox.Dispatcher
	for range 4 {
		dispatchers = append(dispatchers, b.dispatcher(t, outbox.Config{Sinks: map[string]outbox.Sink{
			"http": &outbox.HTTPSink{URL: sink.URL},
			"nats": &outbox.NATSSink{JetStream: stream.JetStream, Subject: stream.Subject},
		}}))
	}
	b.runUntil(t, b.allPublished(t), dispatchers...)

	if once, more := sink.counts(); once != 1000 || more != 0 {
		t.Fatalf("http: %d keys delivered once, %d more than once; want 1000 and 0", once, more)
	}
	if n := stream.Count(t); n != 1000 {
		t.Fatalf("stream holds %d messages, want 1000", n)
	}
	if n := b.count(t, `SELECT count(*) FROM hookinbox_outbox WHERE attempts <> 1`); n != 0 {
		t.Fatalf("%d messages took more than one attempt", n)
	}
}

// A dispatcher paused past its lease while another delivers: its late delivery is
// refused by the receiver (stale token) and its late result changes nothing.
func TestDispatcher_StaleDispatcherIsFenced(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sink := newRecordingSink(t)
	b.insert(t, 1, "http")
	cfg := outbox.Config{Sinks: map[string]outbox.Sink{"http": &outbox.HTTPSink{URL: sink.URL}}}
	a, bb := b.dispatcher(t, cfg), b.dispatcher(t, cfg)

	stale, err := a.ClaimForTest(b.ctx) // A claims, then pauses
	if err != nil || len(stale) != 1 {
		t.Fatalf("A's claim: %v, %v", stale, err)
	}
	b.expireLeases(t)
	if n, err := bb.DispatchOnce(b.ctx); err != nil || n != 1 {
		t.Fatalf("B: %d, %v", n, err)
	}
	a.DeliverAndMarkForTest(b.ctx, stale[0]) // A wakes up

	if sink.stale != 1 {
		t.Fatalf("receiver saw %d stale deliveries, want 1", sink.stale)
	}
	if once, more := sink.counts(); once != 1 || more != 0 {
		t.Fatalf("%d delivered once, %d more; want 1 and 0", once, more)
	}
	var lastError string
	var published bool
	if err := b.db.Pool.QueryRow(b.ctx, `SELECT coalesce(last_error, ''), published_at IS NOT NULL FROM hookinbox_outbox`).Scan(&lastError, &published); err != nil {
		t.Fatal(err)
	}
	if !published || lastError != "" {
		t.Fatalf("after A's late failure: published=%v last_error=%q; want published and no error", published, lastError)
	}
}

// recordFailure is how a dispatcher records a failed delivery: the real one through the
// driver (fenced by the claim token), the broken one without the token.
type recordFailure func(t *testing.T, b *bundle, m *hookinboxtype.OutboxMessage)

func recordFailureUnfenced(t *testing.T, b *bundle, m *hookinboxtype.OutboxMessage) {
	if _, err := b.db.Pool.Exec(b.ctx, `UPDATE hookinbox_outbox SET last_error = 'late', available_at = now() WHERE id = $1 AND published_at IS NULL`, m.ID); err != nil {
		t.Fatal(err)
	}
}

// scenarioStaleFailureDuringDelivery: A's lease ran out and B claimed the message and
// is delivering it; A's delivery fails and A records the failure. It returns whether a
// third dispatcher can then claim the message while B still holds it.
func scenarioStaleFailureDuringDelivery(t *testing.T, record recordFailure) bool {
	b := setup(t)
	sink := newRecordingSink(t)
	sink.setDown(true) // A's delivery fails
	b.insert(t, 1, "http")
	cfg := outbox.Config{Sinks: map[string]outbox.Sink{"http": &outbox.HTTPSink{URL: sink.URL}}}
	a, bb, c := b.dispatcher(t, cfg), b.dispatcher(t, cfg), b.dispatcher(t, cfg)

	stale, _ := a.ClaimForTest(b.ctx)
	b.expireLeases(t)
	if current, _ := bb.ClaimForTest(b.ctx); len(current) != 1 {
		t.Fatal("B could not claim")
	}
	if err := a.DeliverForTest(b.ctx, stale[0]); err == nil {
		t.Fatal("A's delivery succeeded; the scenario needs it to fail")
	}
	if record == nil {
		a.DeliverAndMarkForTest(b.ctx, stale[0]) // fails again and records it, fenced
	} else {
		record(t, b, stale[0])
	}
	third, err := c.ClaimForTest(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	return len(third) == 1
}

func TestDispatcher_StaleFailureDoesNotReleaseTheLease(t *testing.T) {
	t.Parallel()
	if scenarioStaleFailureDuringDelivery(t, nil) {
		t.Fatal("a third dispatcher claimed the message while B held it")
	}
}

func TestBrokenUnfencedFailure_ReleasesTheLease(t *testing.T) {
	t.Parallel()
	if !scenarioStaleFailureDuringDelivery(t, recordFailureUnfenced) {
		t.Fatal("unfenced failure not caught: no third claim")
	}
}

// Killed after the sink accepted and before marking: the redelivery carries the same
// idempotency key, JetStream reports a duplicate, the consumer sees one message.
func TestDispatcher_KilledBeforeMarkRedeliversSameKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sink := newRecordingSink(t)
	stream := testnats.New(t)
	b.insert(t, 1, "http")
	b.insert(t, 1, "nats")
	var duplicates atomic.Int32
	cfg := outbox.Config{Sinks: map[string]outbox.Sink{
		"http": &outbox.HTTPSink{URL: sink.URL},
		"nats": &outbox.NATSSink{JetStream: stream.JetStream, Subject: stream.Subject,
			DuplicateFunc: func(*hookinboxtype.OutboxMessage) { duplicates.Add(1) }},
	}}
	killed := b.dispatcher(t, cfg)
	msgs, err := killed.ClaimForTest(b.ctx) // one batch: both messages
	if err != nil || len(msgs) != 2 {
		t.Fatalf("claim: %v %v", msgs, err)
	}
	for _, m := range msgs {
		if err := killed.DeliverForTest(b.ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	// killed here: no mark
	b.expireLeases(t)
	b.runUntil(t, b.allPublished(t), b.dispatcher(t, cfg))

	if once, more := sink.counts(); once != 0 || more != 1 {
		t.Fatalf("http: once=%d more=%d; want the one key seen twice", once, more)
	}
	if duplicates.Load() != 1 {
		t.Fatalf("JetStream reported %d duplicates, want 1", duplicates.Load())
	}
	if n := stream.Count(t); n != 1 {
		t.Fatalf("stream holds %d messages, want 1", n)
	}
}

func TestDispatcher_SinkDownBacksOffThenDeliversAll(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sink := newRecordingSink(t)
	sink.setDown(true)
	b.insert(t, 20, "http")
	// MaxAttempts high: under load the dispatcher may fail many times before the test
	// sees two attempts on every message, and none may reach needs review meanwhile.
	d := b.dispatcher(t, outbox.Config{MaxAttempts: 100000, Sinks: map[string]outbox.Sink{"http": &outbox.HTTPSink{URL: sink.URL}}})
	b.runUntil(t, func() bool {
		return b.count(t, `SELECT count(*) FROM hookinbox_outbox WHERE attempts >= 2`) == 20
	}, d)
	if n := b.count(t, `SELECT count(*) FROM hookinbox_outbox WHERE last_error LIKE '%503%'`); n != 20 {
		t.Fatalf("%d messages recorded the 503, want 20", n)
	}
	sink.setDown(false)
	b.runUntil(t, b.allPublished(t), d)
	if once, more := sink.counts(); once != 20 || more != 0 {
		t.Fatalf("once=%d more=%d; want 20 and 0", once, more)
	}
}

func TestDispatcher_AlwaysFailingSinkReachesReviewAndRetries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sink := newRecordingSink(t)
	sink.setDown(true)
	b.insert(t, 3, "http")
	d := b.dispatcher(t, outbox.Config{MaxAttempts: 3, Sinks: map[string]outbox.Sink{"http": &outbox.HTTPSink{URL: sink.URL}}})
	b.runUntil(t, func() bool {
		s, err := d.Stats(b.ctx)
		return err == nil && s.NeedsReview == 3
	}, d)
	list, err := d.List(b.ctx, outbox.ListParams{NeedsReview: true})
	if err != nil || len(list) != 3 {
		t.Fatalf("needs review: %d, %v", len(list), err)
	}
	sink.setDown(false)
	if ok, err := d.Retry(b.ctx, list[0].ID); !ok || err != nil {
		t.Fatalf("Retry: %v %v", ok, err)
	}
	if n, err := d.RetryNeedsReview(b.ctx); n != 2 || err != nil {
		t.Fatalf("RetryNeedsReview: %d %v", n, err)
	}
	b.runUntil(t, b.allPublished(t), d)
	if once, _ := sink.counts(); once != 3 {
		t.Fatalf("delivered %d, want 3", once)
	}
}

// No transaction stays open during sink I/O: with idle_in_transaction_session_timeout
// shorter than the sink's answer, a dispatcher that held one would lose its session.
func TestDispatcher_NoTransactionOpenDuringDelivery(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sink := newRecordingSink(t)
	sink.slow = 400 * time.Millisecond
	b.insert(t, 3, "http")
	pcfg := b.db.Config(t)
	pcfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = "100"
	d := b.dispatcherOnConfig(t, pcfg, outbox.Config{Sinks: map[string]outbox.Sink{"http": &outbox.HTTPSink{URL: sink.URL}}})
	b.runUntil(t, b.allPublished(t), d)
	if n := b.count(t, `SELECT count(*) FROM hookinbox_outbox WHERE last_error IS NOT NULL OR attempts <> 1`); n != 0 {
		t.Fatalf("%d messages failed or were retried", n)
	}

	// The broken variant: claim, deliver and mark in one transaction.
	b.insert(t, 1, "http")
	conn, err := pgx.ConnectConfig(b.ctx, pcfg.ConnConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(b.ctx)
	err = pgx.BeginFunc(b.ctx, conn, func(tx pgx.Tx) error {
		var id int64
		if err := tx.QueryRow(b.ctx, `SELECT id FROM hookinbox_outbox WHERE published_at IS NULL FOR UPDATE SKIP LOCKED LIMIT 1`).Scan(&id); err != nil {
			return err
		}
		time.Sleep(sink.slow) // the sink call, inside the transaction
		_, err := tx.Exec(b.ctx, `UPDATE hookinbox_outbox SET published_at = now() WHERE id = $1`, id)
		return err
	})
	if err == nil {
		t.Fatal("a transaction held across the sink call survived the idle timeout; the test cannot catch it")
	}
	t.Logf("the broken variant lost its session as expected: %v", err)
}

// A dispatcher claims only messages it has a sink for: another service's messages in
// the same outbox stay untouched.
func TestDispatcher_ClaimsOnlyItsDestinations(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sink := newRecordingSink(t)
	b.insert(t, 2, "mine")
	b.insert(t, 2, "theirs")
	b.insert(t, 2, "") // no destination, and this dispatcher has no default sink
	d := b.dispatcher(t, outbox.Config{Sinks: map[string]outbox.Sink{"mine": &outbox.HTTPSink{URL: sink.URL}}})
	b.runUntil(t, func() bool {
		return b.count(t, `SELECT count(*) FROM hookinbox_outbox WHERE destination = 'mine' AND published_at IS NULL`) == 0
	}, d)
	if n := b.count(t, `SELECT count(*) FROM hookinbox_outbox WHERE coalesce(destination, '') <> 'mine' AND attempts = 0`); n != 4 {
		t.Fatalf("%d of the other messages left untouched, want 4 (a lone sink is not a default)", n)
	}
}
