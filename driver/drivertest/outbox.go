package drivertest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// The Executor's outbox and effect methods, each against its documentation in
// driver/driver.go.

func outboxBehaviours[TTx any]() []behaviour[TTx] {
	return []behaviour[TTx]{
		{method: "OutboxInsert", name: "IdsGrowAndPayloadMustBeJSON", run: testOutboxInsert[TTx]},
		{method: "OutboxInsertMany", name: "InOrderAllOrNone", run: testOutboxInsertMany[TTx]},
		{method: "OutboxClaim", name: "ByDestinationLimitAndAttemptsWithGrowingTokens", run: testOutboxClaim[TTx]},
		{method: "OutboxClaim", name: "TokensGrowAfterDeletes", run: testOutboxClaimTokensAfterDeletes[TTx]},
		{method: "OutboxClaim", name: "LimitsPerDestinationAndOrderedKeys", run: testOutboxClaimLimitsAndOrder[TTx]},
		{method: "OutboxRecordFailure", name: "OnTheLastAttemptNeedsReviewUntilRetried", run: testOutboxRecordFailureLastAttempt[TTx]},
		{method: "OutboxMarkPublished", name: "StaleTokenChangesNothing", run: testOutboxMarkPublishedStaleToken[TTx]},
		{method: "OutboxMarkPublishedMany", name: "MarksOnlyCurrentTokens", run: testOutboxMarkPublishedMany[TTx]},
		{method: "OutboxList", name: "NewestFirstByState", run: testOutboxList[TTx]},
		{method: "OutboxStats", name: "PendingOldestAndNeedsReview", run: testOutboxStats[TTx]},
		{method: "OutboxRetry", name: "OneIdOrEveryNeedingReview", run: testOutboxRetry[TTx]},
	}
}

func effectBehaviours[TTx any]() []behaviour[TTx] {
	return []behaviour[TTx]{
		{method: "EffectClaim", name: "LeaseThenResultRecordedOnce", run: testEffectClaim[TTx]},
		{method: "EffectClaim", name: "ExpiredLeaseTakenOverWithALargerToken", run: testEffectClaimExpired[TTx]},
		{method: "EffectClaim", name: "TokensShareTheOutboxCounter", run: testEffectClaimSharedTokens[TTx]},
		{method: "EffectComplete", name: "OnlyUnderTheCurrentToken", run: testEffectComplete[TTx]},
		{method: "EffectRelease", name: "KeyCanBeTakenAgain", run: testEffectRelease[TTx]},
	}
}

// insertOutbox inserts n messages to destination, each written by its own receipt.
func (b *bundle[TTx]) insertOutbox(t *testing.T, destination string, n int) []int64 {
	t.Helper()
	var ids []int64
	for i := range n {
		id, err := b.ex.OutboxInsert(b.ctx, &driver.OutboxInsertParams{
			AggregateType: "Invoice", AggregateID: fmt.Sprintf("in_%d", i), EventType: "InvoicePaymentBooked",
			Payload:     []byte(fmt.Sprintf(`{"n":%d}`, i)),
			Source:      key(fmt.Sprintf("evt_%s_%d", destination, i)),
			Destination: destination,
		})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

func (b *bundle[TTx]) claimOutbox(t *testing.T, p driver.OutboxClaimParams) []*hookinboxtype.OutboxMessage {
	t.Helper()
	msgs, err := b.ex.OutboxClaim(b.ctx, &p)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// outbox returns the messages, newest first, that p lists.
func (b *bundle[TTx]) outbox(t *testing.T, p driver.OutboxListParams) []*hookinboxtype.OutboxMessage {
	t.Helper()
	p.Limit = 100
	msgs, err := b.ex.OutboxList(b.ctx, &p)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

func testOutboxInsert[TTx any](t *testing.T, b *bundle[TTx]) {
	ids := b.insertOutbox(t, "", 3)
	if !(ids[0] < ids[1] && ids[1] < ids[2]) {
		t.Fatalf("ids %v", ids)
	}
	_, err := b.ex.OutboxInsert(b.ctx, &driver.OutboxInsertParams{AggregateType: "a", AggregateID: "1", EventType: "e", Payload: []byte("{"), Source: key("evt_1")})
	if !errors.Is(err, driver.ErrInvalidInput) {
		t.Fatalf("invalid payload: %v, want ErrInvalidInput", err)
	}
	before := time.Now().Add(-time.Second)
	trace := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	id, err := b.ex.OutboxInsert(b.ctx, &driver.OutboxInsertParams{AggregateType: "Invoice", AggregateID: "in_9", EventType: "e",
		Payload: []byte(`{"a": 1}`), Source: key("evt_9"), Destination: "nats", TraceParent: trace})
	if err != nil {
		t.Fatal(err)
	}
	m, err := b.ex.ConsoleOutboxGet(b.ctx, id)
	if err != nil || m == nil {
		t.Fatalf("message %d: %+v %v", id, m, err)
	}
	if m.AggregateType != "Invoice" || m.AggregateID != "in_9" || m.EventType != "e" || !sameJSON(m.Payload, []byte(`{"a":1}`)) ||
		m.Source != key("evt_9") || m.Destination != "nats" || m.State != hookinboxtype.StatePending || m.Attempts != 0 ||
		m.TraceParent != trace || m.PublishedAt != nil || m.CreatedAt.Before(before) {
		t.Fatalf("message %+v", m)
	}
}

// OutboxInsertMany writes every message, in the order given, or none.
func testOutboxInsertMany[TTx any](t *testing.T, b *bundle[TTx]) {
	msg := func(id, payload string) *driver.OutboxInsertParams {
		return &driver.OutboxInsertParams{AggregateType: "Invoice", AggregateID: id, EventType: "e",
			Payload: []byte(payload), Source: key("evt_" + id), Destination: "nats"}
	}
	if err := b.ex.OutboxInsertMany(b.ctx, []*driver.OutboxInsertParams{msg("a", `{}`), msg("b", `{}`), msg("c", `{}`)}); err != nil {
		t.Fatal(err)
	}
	err := b.ex.OutboxInsertMany(b.ctx, []*driver.OutboxInsertParams{msg("d", `{}`), msg("e", `{`)})
	if !errors.Is(err, driver.ErrInvalidInput) {
		t.Fatalf("a batch with an invalid payload: %v, want ErrInvalidInput", err)
	}
	var order []string
	for _, m := range b.outbox(t, driver.OutboxListParams{}) {
		order = append([]string{m.AggregateID + ":" + m.Destination + ":" + m.Source.EventID}, order...)
	}
	if fmt.Sprint(order) != "[a:nats:evt_a b:nats:evt_b c:nats:evt_c]" {
		t.Fatalf("outbox %v, want a, b, c to nats and nothing of the failed batch", order)
	}
}

func testOutboxClaim[TTx any](t *testing.T, b *bundle[TTx]) {
	b.insertOutbox(t, "", 3)
	b.insertOutbox(t, "nats", 2)
	p := driver.OutboxClaimParams{Destinations: []string{""}, Limit: 2, Lease: time.Minute, MaxAttempts: 2}

	first := b.claimOutbox(t, p)
	second := b.claimOutbox(t, p)
	if len(first) != 2 || len(second) != 1 || len(b.claimOutbox(t, p)) != 0 {
		t.Fatalf("claimed %d then %d, want 2 then 1 then none (leased)", len(first), len(second))
	}
	var last int64
	for _, m := range append(first, second...) {
		if m.Destination != "" || m.Attempts != 1 || m.MaxAttempts != 2 || m.State != hookinboxtype.StatePending ||
			m.FencingToken <= last || m.Source.EventID == "" || string(m.Payload) == "" {
			t.Fatalf("message %+v after token %d", m, last)
		}
		last = m.FencingToken
	}

	b.elapse(t, 2*time.Minute) // the leases lapse
	again := b.claimOutbox(t, driver.OutboxClaimParams{Destinations: []string{"", "nats"}, Limit: 10, Lease: time.Minute, MaxAttempts: 2})
	if len(again) != 5 {
		t.Fatalf("after the leases: claimed %d, want 5", len(again))
	}
	for _, m := range again {
		if m.FencingToken <= last {
			t.Fatalf("token %d not larger than every earlier one (%d)", m.FencingToken, last)
		}
	}
	b.elapse(t, 2*time.Minute)
	// Their dispatchers died during the last attempt: each claim puts those it picks
	// (up to its limit) to review, without counting an attempt, and returns none of
	// them; the other destination's stay as they are.
	for range 2 {
		if msgs := b.claimOutbox(t, p); len(msgs) != 0 {
			t.Fatalf("claimed %d messages at max attempts", len(msgs))
		}
	}
	review := b.outbox(t, driver.OutboxListParams{NeedsReview: true})
	for _, m := range review {
		if m.Attempts != 2 || m.Destination != "" {
			t.Fatalf("in review: %+v", m)
		}
	}
	if len(review) != 3 {
		t.Fatalf("%d messages put to review, want 3", len(review))
	}
	pending := 0
	for _, m := range b.outbox(t, driver.OutboxListParams{Pending: true}) {
		if m.State == hookinboxtype.StatePending && m.Destination == "nats" {
			pending++
		}
	}
	if pending != 2 {
		t.Fatalf("%d messages of nats still pending, want 2", pending)
	}
}

// The counter survives deleting the messages that held the largest tokens.
func testOutboxClaimTokensAfterDeletes[TTx any](t *testing.T, b *bundle[TTx]) {
	b.insertOutbox(t, "", 1)
	p := driver.OutboxClaimParams{Destinations: []string{""}, Limit: 1, Lease: time.Minute, MaxAttempts: 5}
	first := b.claimOutbox(t, p)[0]
	if ok, err := b.ex.OutboxMarkPublished(b.ctx, first.ID, first.FencingToken); err != nil || !ok {
		t.Fatal(ok, err)
	}
	b.elapse(t, 48*time.Hour)
	if n, err := b.ex.OutboxDeletePublished(b.ctx, &driver.InboxDeleteParams{OlderThan: time.Hour, Limit: 10}); err != nil || n != 1 {
		t.Fatalf("deleted %d %v", n, err)
	}
	b.insertOutbox(t, "", 1)
	if second := b.claimOutbox(t, p)[0]; second.FencingToken <= first.FencingToken {
		t.Fatalf("token %d after deleting token %d", second.FencingToken, first.FencingToken)
	}
}

// Each destination is claimed up to its own limit; an ordered destination's message
// only when no earlier message of its key is undelivered, so one message of a key is
// in flight at a time.
func testOutboxClaimLimitsAndOrder[TTx any](t *testing.T, b *bundle[TTx]) {
	b.insertOutbox(t, "a", 3)
	b.insertOutbox(t, "b", 3)
	for range 2 { // a second and a third message of in_0, in_1, in_2 for the ordered destination
		b.insertOutbox(t, "b", 3)
	}
	p := driver.OutboxClaimParams{Destinations: []string{"a", "b"}, Limits: []int{2, 9}, Ordered: []string{"b"},
		Lease: time.Minute, MaxAttempts: 5}
	got := map[string][]string{}
	var first []*hookinboxtype.OutboxMessage
	for _, m := range b.claimOutbox(t, p) {
		got[m.Destination] = append(got[m.Destination], m.AggregateID)
		if m.Destination == "b" {
			first = append(first, m)
		}
	}
	if len(got["a"]) != 2 {
		t.Errorf("destination a: %v, want 2 (its limit)", got["a"])
	}
	if len(got["b"]) != 3 {
		t.Errorf("ordered destination b: %v, want the oldest message of each of its 3 keys", got["b"])
	}
	if again := b.claimOutbox(t, p); len(again) != 1 || again[0].Destination != "a" {
		t.Errorf("second claim: %d messages, want a's last one and none of b's (their keys are in flight)", len(again))
	}
	// Once a key's message is delivered, its next one is claimed.
	if ok, err := b.ex.OutboxMarkPublished(b.ctx, first[0].ID, first[0].FencingToken); err != nil || !ok {
		t.Fatal(ok, err)
	}
	next := b.claimOutbox(t, p)
	if len(next) != 1 || next[0].AggregateID != first[0].AggregateID || next[0].ID <= first[0].ID {
		t.Errorf("after %s's first message was delivered: claimed %+v, want its second", first[0].AggregateID, next)
	}
}

// A failure on the last attempt puts the message to review, as does a claim that finds
// a message whose dispatcher died during its last attempt; retrying them makes them
// pending with no attempts.
func testOutboxRecordFailureLastAttempt[TTx any](t *testing.T, b *bundle[TTx]) {
	ids := b.insertOutbox(t, "", 2)
	p := driver.OutboxClaimParams{Destinations: []string{""}, Limit: 10, Lease: time.Minute, MaxAttempts: 1}
	claimed := b.claimOutbox(t, p)
	if len(claimed) != 2 {
		t.Fatalf("claimed %d, want 2", len(claimed))
	}
	failed := claimed[0]
	if err := b.ex.OutboxRecordFailure(b.ctx, &driver.OutboxFailureParams{ID: failed.ID, ClaimToken: failed.FencingToken, Error: "refused"}); err != nil {
		t.Fatal(err)
	}
	if m, err := b.ex.ConsoleOutboxGet(b.ctx, failed.ID); err != nil || m.State != hookinboxtype.StateNeedsReview || m.LastError != "refused" {
		t.Fatalf("failure on the last attempt: %+v %v, want needs review", m, err)
	}
	// The other's dispatcher dies; its lease lapses.
	b.elapse(t, 2*time.Minute)
	if msgs := b.claimOutbox(t, p); len(msgs) != 0 {
		t.Fatalf("claimed %+v, want none", msgs)
	}
	msgs := b.outbox(t, driver.OutboxListParams{NeedsReview: true})
	if len(msgs) != 2 || msgs[0].ID != ids[1] || msgs[1].ID != ids[0] {
		t.Fatalf("needs review: %+v, want both", msgs)
	}
	for _, m := range msgs {
		if m.State != hookinboxtype.StateNeedsReview || m.Attempts != 1 || m.MaxAttempts != 1 {
			t.Fatalf("in review: %+v", m)
		}
	}
	if ok, err := b.ex.OutboxMarkPublished(b.ctx, failed.ID, failed.FencingToken); err != nil || ok {
		t.Fatalf("publish of a message in review: %v %v, want false", ok, err)
	}
	if n, err := b.ex.OutboxRetry(b.ctx, &driver.OutboxRetryParams{NeedsReview: true}); err != nil || n != 2 {
		t.Fatalf("retry: %d %v", n, err)
	}
	again := b.claimOutbox(t, p)
	if len(again) != 2 || again[0].Attempts != 1 || again[1].Attempts != 1 {
		t.Fatalf("after retry: %+v, want both claimed on a first attempt", again)
	}
	history, err := b.ex.ConsoleDeliveries(b.ctx, failed.ID, 10)
	if err != nil || len(history) != 1 || history[0].Error != "refused" || history[0].ClaimToken != failed.FencingToken || history[0].NextRetryAt != nil {
		t.Fatalf("delivery history %+v %v, want the refused delivery, with no retry", history, err)
	}
}

// A dispatcher whose lease ran out holds a stale token: it can neither publish nor
// record a failure over the later claim.
func testOutboxMarkPublishedStaleToken[TTx any](t *testing.T, b *bundle[TTx]) {
	id := b.insertOutbox(t, "", 1)[0]
	p := driver.OutboxClaimParams{Destinations: []string{""}, Limit: 1, Lease: time.Minute, MaxAttempts: 5}
	stale := b.claimOutbox(t, p)[0]
	b.elapse(t, 2*time.Minute)
	current := b.claimOutbox(t, p)[0]

	if err := b.ex.OutboxRecordFailure(b.ctx, &driver.OutboxFailureParams{ID: id, ClaimToken: stale.FencingToken, Error: "late", Delay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.ex.OutboxMarkPublished(b.ctx, id, stale.FencingToken); err != nil || ok {
		t.Fatalf("stale publish: %v %v, want false", ok, err)
	}
	if m, err := b.ex.ConsoleOutboxGet(b.ctx, id); err != nil || m.LastError != "" || m.State != hookinboxtype.StatePending {
		t.Fatalf("the stale token changed the message: %+v %v", m, err)
	}
	if d, err := b.ex.ConsoleDeliveries(b.ctx, id, 10); err != nil || len(d) != 0 {
		t.Fatalf("history of stale calls: %+v %v, want none", d, err)
	}

	if err := b.ex.OutboxRecordFailure(b.ctx, &driver.OutboxFailureParams{ID: id, ClaimToken: current.FencingToken, Error: "refused", Delay: 0}); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.ex.OutboxMarkPublished(b.ctx, id, current.FencingToken); err != nil || !ok {
		t.Fatalf("current publish: %v %v, want true", ok, err)
	}
	if ok, err := b.ex.OutboxMarkPublished(b.ctx, id, current.FencingToken); err != nil || ok {
		t.Fatalf("second publish: %v %v, want false", ok, err)
	}
	msgs := b.outbox(t, driver.OutboxListParams{})
	if len(msgs) != 1 || msgs[0].PublishedAt == nil || msgs[0].State != hookinboxtype.StatePublished || msgs[0].LastError != "" {
		t.Fatalf("after publish: %+v", msgs)
	}
	history, err := b.ex.ConsoleDeliveries(b.ctx, id, 10)
	if err != nil || len(history) != 2 || history[0].Error != "" || history[1].Error != "refused" ||
		history[0].ClaimToken != current.FencingToken || history[1].NextRetryAt == nil {
		t.Fatalf("delivery history %+v %v, want the publish after the refusal, newest first", history, err)
	}
}

// A batch of marks publishes the messages whose token is still current, with their
// deliveries in the history, and reports which.
func testOutboxMarkPublishedMany[TTx any](t *testing.T, b *bundle[TTx]) {
	b.insertOutbox(t, "", 3)
	p := driver.OutboxClaimParams{Destinations: []string{""}, Limit: 3, Lease: time.Minute, MaxAttempts: 5}
	stale := b.claimOutbox(t, p)
	b.elapse(t, 2*time.Minute) // the leases lapse
	current := b.claimOutbox(t, p)
	if len(stale) != 3 || len(current) != 3 {
		t.Fatalf("claimed %d then %d, want 3 and 3", len(stale), len(current))
	}
	marks := []driver.OutboxMark{
		{ID: current[0].ID, Token: current[0].FencingToken},
		{ID: stale[1].ID, Token: stale[1].FencingToken}, // lost its lease
		{ID: current[2].ID, Token: current[2].FencingToken},
	}
	published, err := b.ex.OutboxMarkPublishedMany(b.ctx, marks)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(published)
	want := []int64{current[0].ID, current[2].ID}
	slices.Sort(want)
	if !slices.Equal(published, want) {
		t.Fatalf("published %v, want %v", published, want)
	}
	for _, m := range b.outbox(t, driver.OutboxListParams{}) {
		history, err := b.ex.ConsoleDeliveries(b.ctx, m.ID, 10)
		if err != nil {
			t.Fatal(err)
		}
		wantState, wantHistory := hookinboxtype.StatePending, 0
		if slices.Contains(want, m.ID) {
			wantState, wantHistory = hookinboxtype.StatePublished, 1
		}
		if m.State != wantState || len(history) != wantHistory {
			t.Errorf("message %d: %s with %d deliveries in its history, want %s with %d", m.ID, m.State, len(history), wantState, wantHistory)
		}
	}
	if again, err := b.ex.OutboxMarkPublishedMany(b.ctx, marks); err != nil || len(again) != 0 {
		t.Fatalf("the same marks again: %v %v, want none", again, err)
	}
}

// outboxStates makes, of three new messages, the first need review (its only
// attempt failed a minute ago) and the third published; it returns their ids.
func (b *bundle[TTx]) outboxStates(t *testing.T) []int64 {
	t.Helper()
	ids := b.insertOutbox(t, "", 3)
	for _, m := range b.claimOutbox(t, driver.OutboxClaimParams{Destinations: []string{""}, Limit: 3, Lease: time.Minute, MaxAttempts: 1}) {
		var err error
		switch m.ID {
		case ids[0]:
			err = b.ex.OutboxRecordFailure(b.ctx, &driver.OutboxFailureParams{ID: m.ID, ClaimToken: m.FencingToken, Error: "refused"})
		case ids[1]:
			_, err = b.ex.OutboxRetry(b.ctx, &driver.OutboxRetryParams{ID: m.ID}) // pending, as it was
		case ids[2]:
			_, err = b.ex.OutboxMarkPublished(b.ctx, m.ID, m.FencingToken)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	b.elapse(t, time.Minute)
	return ids
}

func testOutboxList[TTx any](t *testing.T, b *bundle[TTx]) {
	ids := b.outboxStates(t)
	list := func(p driver.OutboxListParams) string {
		var got []int64
		for _, m := range b.outbox(t, p) {
			got = append(got, m.ID)
		}
		return fmt.Sprint(got)
	}
	if got, want := list(driver.OutboxListParams{}), fmt.Sprint([]int64{ids[2], ids[1], ids[0]}); got != want {
		t.Errorf("all: %s, want %s (newest first)", got, want)
	}
	if got, want := list(driver.OutboxListParams{Pending: true}), fmt.Sprint([]int64{ids[1], ids[0]}); got != want {
		t.Errorf("pending: %s, want %s", got, want)
	}
	if got, want := list(driver.OutboxListParams{NeedsReview: true}), fmt.Sprint([]int64{ids[0]}); got != want {
		t.Errorf("needs review: %s, want %s", got, want)
	}
	if msgs, err := b.ex.OutboxList(b.ctx, &driver.OutboxListParams{Limit: 1}); err != nil || len(msgs) != 1 || msgs[0].ID != ids[2] {
		t.Errorf("limit 1: %+v %v", msgs, err)
	}
}

func testOutboxStats[TTx any](t *testing.T, b *bundle[TTx]) {
	if s, err := b.ex.OutboxStats(b.ctx); err != nil || s.Pending != 0 || s.NeedsReview != 0 || s.OldestPendingAge != 0 {
		t.Fatalf("empty outbox: %+v %v", s, err)
	}
	b.outboxStates(t)
	s, err := b.ex.OutboxStats(b.ctx)
	if err != nil || s.Pending != 2 || s.NeedsReview != 1 || s.OldestPendingAge < time.Minute || s.OldestPendingAge > time.Hour {
		t.Fatalf("stats %+v %v", s, err)
	}
}

func testOutboxRetry[TTx any](t *testing.T, b *bundle[TTx]) {
	ids := b.outboxStates(t)
	b.claimOutbox(t, driver.OutboxClaimParams{Destinations: []string{""}, Limit: 3, Lease: time.Hour, MaxAttempts: 5}) // ids[1], leased
	if n, err := b.ex.OutboxRetry(b.ctx, &driver.OutboxRetryParams{NeedsReview: true}); err != nil || n != 1 {
		t.Fatalf("retry needs review: %d %v", n, err)
	}
	if n, err := b.ex.OutboxRetry(b.ctx, &driver.OutboxRetryParams{ID: ids[2]}); err != nil || n != 0 {
		t.Fatalf("retry published: %d %v", n, err)
	}
	if n, err := b.ex.OutboxRetry(b.ctx, &driver.OutboxRetryParams{ID: ids[1]}); err != nil || n != 1 {
		t.Fatalf("retry one: %d %v", n, err)
	}
	for _, m := range b.outbox(t, driver.OutboxListParams{Pending: true}) {
		if m.Attempts != 0 || m.State != hookinboxtype.StatePending {
			t.Fatalf("after retry: %+v, want pending with attempts reset", m)
		}
	}
	if msgs := b.claimOutbox(t, driver.OutboxClaimParams{Destinations: []string{""}, Limit: 3, Lease: time.Minute, MaxAttempts: 5}); len(msgs) != 2 {
		t.Fatalf("claimed %d after retry, want both retried messages available now", len(msgs))
	}
}

func (b *bundle[TTx]) claimEffect(t *testing.T, k string) *driver.EffectClaim {
	t.Helper()
	c, err := b.ex.EffectClaim(b.ctx, &driver.EffectClaimParams{Key: k, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func testEffectClaim[TTx any](t *testing.T, b *bundle[TTx]) {
	const k = "webhook:evt_1:refund"
	first := b.claimEffect(t, k)
	if first.Token == 0 || first.Done {
		t.Fatalf("new key: %+v, want a token", first)
	}
	held := b.claimEffect(t, k)
	if held.Token != 0 || held.Done || held.LeaseUntil.Before(time.Now().Add(30*time.Second)) {
		t.Fatalf("held key: %+v, want the holder's lease end", held)
	}
	if ok, err := b.ex.EffectComplete(b.ctx, k, first.Token, []byte("re_1")); err != nil || !ok {
		t.Fatalf("complete: %v %v, want true", ok, err)
	}
	done := b.claimEffect(t, k)
	if !done.Done || string(done.Result) != "re_1" || done.Token != 0 {
		t.Fatalf("done key: %+v", done)
	}
}

// A holder whose lease ran out loses the key to the next claim, with a larger token,
// and can no longer record its result.
func testEffectClaimExpired[TTx any](t *testing.T, b *bundle[TTx]) {
	const k = "webhook:evt_1:refund"
	stale := b.claimEffect(t, k)
	b.elapse(t, 2*time.Minute)
	current := b.claimEffect(t, k)
	if current.Token <= stale.Token {
		t.Fatalf("takeover token %d, want > %d", current.Token, stale.Token)
	}
	if ok, err := b.ex.EffectComplete(b.ctx, k, stale.Token, []byte("late")); err != nil || ok {
		t.Fatalf("stale complete: %v %v, want false", ok, err)
	}
	if err := b.ex.EffectRelease(b.ctx, k, stale.Token); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.ex.EffectComplete(b.ctx, k, current.Token, nil); err != nil || !ok {
		t.Fatalf("current complete: %v %v, want true (the stale release changed nothing)", ok, err)
	}
}

// Outbox and effect tokens come from one counter, so they never repeat across the two.
func testEffectClaimSharedTokens[TTx any](t *testing.T, b *bundle[TTx]) {
	b.insertOutbox(t, "", 1)
	e1 := b.claimEffect(t, "webhook:evt_1:a")
	m := b.claimOutbox(t, driver.OutboxClaimParams{Destinations: []string{""}, Limit: 1, Lease: time.Minute, MaxAttempts: 5})[0]
	e2 := b.claimEffect(t, "webhook:evt_1:b")
	if !(e1.Token < m.FencingToken && m.FencingToken < e2.Token) {
		t.Fatalf("tokens %d, %d, %d, want increasing", e1.Token, m.FencingToken, e2.Token)
	}
}

// A result is recorded once, and only under the token of the lease it was taken with.
func testEffectComplete[TTx any](t *testing.T, b *bundle[TTx]) {
	const k = "webhook:evt_1:refund"
	first := b.claimEffect(t, k)
	if ok, err := b.ex.EffectComplete(b.ctx, k, first.Token+1, []byte("wrong")); err != nil || ok {
		t.Fatalf("complete with another token: %v %v, want false", ok, err)
	}
	if ok, err := b.ex.EffectComplete(b.ctx, "webhook:evt_absent:refund", first.Token, []byte("x")); err != nil || ok {
		t.Fatalf("complete of a key never claimed: %v %v, want false", ok, err)
	}
	if ok, err := b.ex.EffectComplete(b.ctx, k, first.Token, []byte("re_1")); err != nil || !ok {
		t.Fatalf("complete: %v %v, want true", ok, err)
	}
	if ok, err := b.ex.EffectComplete(b.ctx, k, first.Token, []byte("again")); err != nil || ok {
		t.Fatalf("second complete: %v %v, want false", ok, err)
	}
	if c := b.claimEffect(t, k); !c.Done || string(c.Result) != "re_1" {
		t.Fatalf("after completes: %+v, want the first result", c)
	}
}

func testEffectRelease[TTx any](t *testing.T, b *bundle[TTx]) {
	const k = "webhook:evt_1:refund"
	first := b.claimEffect(t, k)
	if err := b.ex.EffectRelease(b.ctx, k, first.Token); err != nil {
		t.Fatal(err)
	}
	again := b.claimEffect(t, k)
	if again.Token <= first.Token {
		t.Fatalf("after release: %+v, want a new, larger token than %d", again, first.Token)
	}
	if ok, err := b.ex.EffectComplete(b.ctx, k, again.Token, []byte("x")); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := b.ex.EffectRelease(b.ctx, k, again.Token); err != nil {
		t.Fatal(err)
	}
	if c := b.claimEffect(t, k); !c.Done {
		t.Fatalf("release removed a done effect: %+v", c)
	}
}
