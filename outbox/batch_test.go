package outbox_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/hookinbox/hookinbox/internal/testwait"
	"github.com/hookinbox/hookinbox/outbox"
)

// What batching the dispatcher makes new: claims, deliveries and marks of many
// messages at once, each failure and each fence still per message.

// failingOne is a sink that refuses the message of invoice in_3, and accepts the
// others.
func failingOne(delivered *sync.Map) outbox.Sink {
	return outbox.SinkFunc(func(_ context.Context, m *hookinboxtype.OutboxMessage) error {
		if m.AggregateID == "in_3" {
			return fmt.Errorf("downstream refused n=3")
		}
		delivered.Store(m.ID, true)
		return nil
	})
}

// checkOnlyTheFailedOneWaits fails the test unless exactly the message of in_3 is
// left for a retry, with its error, and the other nine are published.
func checkOnlyTheFailedOneWaits(t *testing.T, r reporter, b *bundle) {
	r.Helper()
	if n := b.count(t, `SELECT count(*) FROM hookinbox_outbox WHERE state = 'published' AND last_error IS NULL`); n != 9 {
		r.Errorf("%d messages published, want the 9 the sink accepted", n)
	}
	if n := b.count(t, `SELECT count(*) FROM hookinbox_outbox WHERE state = 'pending' AND last_error LIKE '%n=3%' AND aggregate_id = 'in_3'`); n != 1 {
		r.Errorf("%d messages wait for a retry with the sink's error, want only in_3's", n)
	}
}

// reporter is what a check reports to: the test, or a countingT for a broken
// variant's run.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

// One batch of ten, one refused: only that one waits for a retry.
func TestDispatcher_OneFailureInABatchRetriesOnlyThatMessage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.insert(t, 10, "http")
	var delivered sync.Map
	d := b.dispatcher(t, outbox.Config{Sinks: map[string]outbox.Sink{"http": failingOne(&delivered)}})
	if n, err := d.DispatchOnce(b.ctx); err != nil || n != 10 {
		t.Fatalf("DispatchOnce: %d, %v; want the ten in one batch", n, err)
	}
	checkOnlyTheFailedOneWaits(t, t, b)
}

// The broken variant: a dispatcher that treats a batch as one delivery and records the
// failure of one against all (test-only code, below) is caught by the same check.
func TestBrokenBatchFailure_IsCaught(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.insert(t, 10, "http")
	var delivered sync.Map
	d := b.dispatcher(t, outbox.Config{Sinks: map[string]outbox.Sink{"http": failingOne(&delivered)}})
	msgs, err := d.ClaimForTest(b.ctx)
	if err != nil || len(msgs) != 10 {
		t.Fatalf("claim: %d, %v", len(msgs), err)
	}
	var failed error
	for _, m := range msgs {
		if err := d.DeliverForTest(b.ctx, m); err != nil {
			failed = err
		}
	}
	for _, m := range msgs { // one failed: the whole batch is recorded as failed
		if err := b.ex.OutboxRecordFailure(b.ctx, &driver.OutboxFailureParams{ID: m.ID, ClaimToken: m.FencingToken, Error: failed.Error()}); err != nil {
			t.Fatal(err)
		}
	}
	ct := &countingT{}
	checkOnlyTheFailedOneWaits(t, ct, b)
	if ct.errors == 0 {
		t.Fatal("a batch failed as a whole was not caught")
	}
}

// countingT counts the errors a check reports, so that a broken variant's test can
// assert that the check failed without failing itself.
type countingT struct {
	errors int
}

func (c *countingT) Errorf(string, ...any) { c.errors++ }
func (c *countingT) Helper()               {}

// scenarioLeaseLostWhileWaiting: dispatcher A claims two messages of a sink with one
// slot and a rate of one delivery per 5 s, so the second waits for its turn far past
// its 1 s lease. Meanwhile the lease ends and dispatcher B claims and delivers that
// message with a newer token. It returns the deliveries the sink refused as stale (a
// token lower than one it had seen for the message).
func scenarioLeaseLostWhileWaiting(t *testing.T, broken bool) int {
	b := setup(t)
	sink := &fencedSink{maxToken: map[int64]int64{}}
	b.insert(t, 2, "http")
	slow := outbox.Config{
		Lease: time.Second, DeliveryTimeout: 500 * time.Millisecond,
		Sinks:       map[string]outbox.Sink{"http": sink},
		SinkOptions: map[string]outbox.SinkOptions{"http": {Concurrency: 1, Rate: 0.2}},
	}
	a := b.dispatcher(t, slow)
	if broken {
		a.BreakLeaseCheck()
	}
	ran := make(chan error, 1)
	go func() {
		_, err := a.DispatchOnce(b.ctx)
		ran <- err
	}()
	// Wait until A delivered the first and the second's lease is over.
	testwait.Until(t, 60*time.Second, "A's first delivery and the end of the second's lease", func() bool {
		return b.count(t, `SELECT count(*) FROM hookinbox_outbox WHERE state = 'published'`) == 1 &&
			b.count(t, `SELECT count(*) FROM hookinbox_outbox WHERE state = 'pending' AND available_at <= now()`) == 1
	})
	c := b.dispatcher(t, outbox.Config{Sinks: map[string]outbox.Sink{"http": sink}})
	if n, err := c.DispatchOnce(b.ctx); err != nil || n != 1 {
		t.Fatalf("B: %d, %v", n, err)
	}
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	return sink.stale
}

// fencedSink is recordingSink's fence in memory, for a test whose deliveries must not
// wait on HTTP: it counts a delivery whose token is lower than one it has seen for
// the message as stale, and refuses it.
type fencedSink struct {
	mu       sync.Mutex
	maxToken map[int64]int64
	stale    int
}

func (s *fencedSink) Deliver(_ context.Context, m *hookinboxtype.OutboxMessage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.FencingToken < s.maxToken[m.ID] {
		s.stale++
		return fmt.Errorf("stale token %d", m.FencingToken)
	}
	s.maxToken[m.ID] = m.FencingToken
	return nil
}

func TestDispatcher_LeaseLostInABatchNeverSendsAnOlderToken(t *testing.T) {
	t.Parallel()
	if stale := scenarioLeaseLostWhileWaiting(t, false); stale != 0 {
		t.Fatalf("the sink saw %d deliveries with an older token than one it had", stale)
	}
}

func TestBrokenLateDelivery_SendsAnOlderToken(t *testing.T) {
	t.Parallel()
	if stale := scenarioLeaseLostWhileWaiting(t, true); stale == 0 {
		t.Fatal("a delivery started after its lease was not caught: the sink saw no older token")
	}
}

// throttlingSink answers its first request 429 with Retry-After: 1 and accepts the
// rest, recording when each request arrived.
type throttlingSink struct {
	*httptest.Server
	mu    sync.Mutex
	times []time.Time
}

func newThrottlingSink(t *testing.T) *throttlingSink {
	s := &throttlingSink{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.times = append(s.times, time.Now())
		if len(s.times) == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(s.Close)
	return s
}

// scenarioRetryAfter delivers three messages, one at a time, to a sink that answers
// the first request 429 with Retry-After: 1; it returns how long the dispatcher left
// the sink alone after that answer.
func scenarioRetryAfter(t *testing.T, broken bool) time.Duration {
	b := setup(t)
	sink := newThrottlingSink(t)
	b.insert(t, 3, "http")
	d := b.dispatcher(t, outbox.Config{
		Sinks:       map[string]outbox.Sink{"http": &outbox.HTTPSink{URL: sink.URL}},
		SinkOptions: map[string]outbox.SinkOptions{"http": {Concurrency: 1}},
	})
	if broken {
		d.BreakRetryAfter()
	}
	b.runUntil(t, b.allPublished(t), d)
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if len(sink.times) != 4 {
		t.Fatalf("%d requests, want 4 (one refused, three accepted)", len(sink.times))
	}
	return sink.times[1].Sub(sink.times[0])
}

func TestDispatcher_HonoursRetryAfter(t *testing.T) {
	t.Parallel()
	if gap := scenarioRetryAfter(t, false); gap < time.Second {
		t.Fatalf("the next request came %s after a 429 with Retry-After: 1", gap)
	}
}

func TestBrokenRetryAfterIgnored_IsCaught(t *testing.T) {
	t.Parallel()
	if gap := scenarioRetryAfter(t, true); gap >= time.Second {
		t.Fatalf("ignoring Retry-After was not caught: the next request came %s later", gap)
	}
}

// keyedSink records, per aggregate, the outbox ids in the order their deliveries
// started and the most deliveries of one aggregate in flight at once. Each delivery
// takes a few milliseconds, as a real downstream does, so that deliveries that may
// overlap do; the first delivery of every fourth message fails once.
type keyedSink struct {
	mu          sync.Mutex
	inFlight    map[string]int
	maxInFlight int
	order       map[string][]int64
	failed      map[int64]bool
}

func (s *keyedSink) Deliver(_ context.Context, m *hookinboxtype.OutboxMessage) error {
	key := m.AggregateType + "/" + m.AggregateID
	s.mu.Lock()
	s.inFlight[key]++
	s.maxInFlight = max(s.maxInFlight, s.inFlight[key])
	s.order[key] = append(s.order[key], m.ID)
	fail := m.ID%4 == 0 && !s.failed[m.ID]
	s.failed[m.ID] = true
	s.mu.Unlock()
	time.Sleep(3 * time.Millisecond)
	s.mu.Lock()
	s.inFlight[key]--
	s.mu.Unlock()
	if fail {
		return fmt.Errorf("downstream failed %d once", m.ID)
	}
	return nil
}

// scenarioOrdered delivers 60 messages of 5 aggregates, 12 each, with concurrency 16,
// and returns the sink's record.
func scenarioOrdered(t *testing.T, ordered bool) *keyedSink {
	b := setup(t)
	for i := range 60 {
		_, err := b.ex.OutboxInsert(b.ctx, &driver.OutboxInsertParams{
			AggregateType: "Invoice", AggregateID: "in_" + strconv.Itoa(i%5), EventType: "InvoiceChanged",
			Payload:     []byte(fmt.Sprintf(`{"n":%d}`, i)),
			Source:      hookinboxtype.Key{Provider: "stripe", Endpoint: "billing", EventID: fmt.Sprintf("evt_%d", i)},
			Destination: "http",
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sink := &keyedSink{inFlight: map[string]int{}, order: map[string][]int64{}, failed: map[int64]bool{}}
	d := b.dispatcher(t, outbox.Config{
		Sinks:       map[string]outbox.Sink{"http": sink},
		SinkOptions: map[string]outbox.SinkOptions{"http": {Ordered: ordered}},
	})
	b.runUntil(t, b.allPublished(t), d)
	return sink
}

// checkOrdered reports an error unless one message of an aggregate was in flight at
// a time and each aggregate's deliveries started in outbox id order (a retry repeats
// the id it retries, never an earlier one after a later).
func checkOrdered(t interface{ Errorf(string, ...any) }, s *keyedSink) {
	if s.maxInFlight != 1 {
		t.Errorf("%d deliveries of one aggregate were in flight at once, want 1", s.maxInFlight)
	}
	for key, ids := range s.order {
		if !slices.IsSorted(ids) {
			t.Errorf("%s delivered out of order: %v", key, ids)
		}
	}
}

func TestDispatcher_OrderedSinkOneMessageOfAKeyInFlight(t *testing.T) {
	t.Parallel()
	checkOrdered(t, scenarioOrdered(t, true))
}

func TestBrokenUnorderedSink_IsCaught(t *testing.T) {
	t.Parallel()
	ct := &countingT{}
	checkOrdered(ct, scenarioOrdered(t, false))
	if ct.errors == 0 {
		t.Fatal("an unordered sink was not caught: one message of a key in flight, in order")
	}
}

// keyPerAttemptSink is the broken variant of an idempotency key: it sends the message
// under a key that changes with every claim, as a dispatcher would that derived its
// key from the attempt.
type keyPerAttemptSink struct{ http *outbox.HTTPSink }

func (s keyPerAttemptSink) Deliver(ctx context.Context, m *hookinboxtype.OutboxMessage) error {
	c := *m
	c.ID = m.ID*1000 + m.FencingToken // IdempotencyKey ends with the id
	return s.http.Deliver(ctx, &c)
}

// scenarioKilledBeforeMark: a dispatcher delivers a batch and is killed before it
// marks it; after the leases another delivers it. It returns how many keys the
// receiver saw once and more than once.
func scenarioKilledBeforeMark(t *testing.T, sinkOf func(url string) outbox.Sink) (once, more int) {
	b := setup(t)
	recv := newRecordingSink(t)
	b.insert(t, 5, "http")
	cfg := outbox.Config{Sinks: map[string]outbox.Sink{"http": sinkOf(recv.URL)}}
	killed := b.dispatcher(t, cfg)
	msgs, err := killed.ClaimForTest(b.ctx)
	if err != nil || len(msgs) != 5 {
		t.Fatalf("claim: %d, %v", len(msgs), err)
	}
	for _, m := range msgs {
		if err := killed.DeliverForTest(b.ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	b.expireLeases(t)
	b.runUntil(t, b.allPublished(t), b.dispatcher(t, cfg))
	return recv.counts()
}

func TestDispatcher_KilledBeforeMarkingABatchRedeliversUnderTheSameKeys(t *testing.T) {
	t.Parallel()
	if once, more := scenarioKilledBeforeMark(t, func(u string) outbox.Sink { return &outbox.HTTPSink{URL: u} }); once != 0 || more != 5 {
		t.Fatalf("keys seen once %d, more than once %d; want each of the 5 seen twice", once, more)
	}
}

func TestBrokenKeyPerAttempt_IsCaught(t *testing.T) {
	t.Parallel()
	once, more := scenarioKilledBeforeMark(t, func(u string) outbox.Sink { return keyPerAttemptSink{&outbox.HTTPSink{URL: u}} })
	if once == 0 && more == 5 {
		t.Fatal("a key that changes per attempt was not caught")
	}
}
