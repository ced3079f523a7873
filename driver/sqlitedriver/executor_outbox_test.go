package sqlitedriver_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// The Executor's outbox and effect methods, each against its documentation in
// driver/driver.go.

func (b *bundle) insertOutbox(t *testing.T, destination string, n int) []int64 {
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

func (b *bundle) claimOutbox(t *testing.T, p driver.OutboxClaimParams) []*hookinboxtype.OutboxMessage {
	t.Helper()
	msgs, err := b.ex.OutboxClaim(b.ctx, &p)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// expireOutboxLeases makes every claimed message available now: what the passing of
// the lease does, without waiting for it.
func (b *bundle) expireOutboxLeases(t *testing.T) {
	t.Helper()
	b.exec(t, `UPDATE hookinbox_outbox SET available_at = 0 WHERE state = 'pending'`)
}

func TestOutboxInsert_IdsGrowAndPayloadMustBeJSON(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.insertOutbox(t, "", 3)
	if !(ids[0] < ids[1] && ids[1] < ids[2]) {
		t.Fatalf("ids %v", ids)
	}
	_, err := b.ex.OutboxInsert(b.ctx, &driver.OutboxInsertParams{AggregateType: "a", AggregateID: "1", EventType: "e", Payload: []byte("{"), Source: key("evt_1")})
	if !errors.Is(err, driver.ErrInvalidInput) {
		t.Fatalf("invalid payload: %v, want ErrInvalidInput", err)
	}
}

func TestOutboxClaim_ByDestinationLimitAndAttemptsWithGrowingTokens(t *testing.T) {
	t.Parallel()
	b := setup(t)
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

	b.expireOutboxLeases(t)
	again := b.claimOutbox(t, driver.OutboxClaimParams{Destinations: []string{"", "nats"}, Limit: 10, Lease: time.Minute, MaxAttempts: 2})
	if len(again) != 5 {
		t.Fatalf("after the leases: claimed %d, want 5", len(again))
	}
	for _, m := range again {
		if m.FencingToken <= last {
			t.Fatalf("token %d not larger than every earlier one (%d)", m.FencingToken, last)
		}
	}
	b.expireOutboxLeases(t)
	// Their dispatchers died during the last attempt: each claim puts those it picks
	// (up to its limit) to review, without counting an attempt, and returns none of
	// them; the other destination's stay as they are.
	for range 2 {
		if msgs := b.claimOutbox(t, p); len(msgs) != 0 {
			t.Fatalf("claimed %d messages at max attempts", len(msgs))
		}
	}
	if n := b.count(t, `SELECT count(*) FROM hookinbox_outbox WHERE state = 'needs_review' AND attempts = 2 AND destination IS NULL`); n != 3 {
		t.Fatalf("%d messages put to review, want 3", n)
	}
	if n := b.count(t, `SELECT count(*) FROM hookinbox_outbox WHERE state = 'pending' AND destination = 'nats'`); n != 2 {
		t.Fatalf("%d messages of nats still pending, want 2", n)
	}
}

// A failure on the last attempt puts the message to review, as does a claim that finds
// a message whose dispatcher died during its last attempt; retrying them makes them
// pending with no attempts.
func TestOutboxRecordFailure_OnTheLastAttemptNeedsReviewUntilRetried(t *testing.T) {
	t.Parallel()
	b := setup(t)
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
	if n := b.count(t, `SELECT count(*) FROM hookinbox_outbox WHERE id = ?1 AND state = 'needs_review' AND last_error = 'refused'`, failed.ID); n != 1 {
		t.Fatal("failure on the last attempt did not put the message to review")
	}
	// The other's dispatcher dies; its lease lapses.
	b.expireOutboxLeases(t)
	if msgs := b.claimOutbox(t, p); len(msgs) != 0 {
		t.Fatalf("claimed %+v, want none", msgs)
	}
	msgs, err := b.ex.OutboxList(b.ctx, &driver.OutboxListParams{NeedsReview: true, Limit: 10})
	if err != nil || len(msgs) != 2 || msgs[0].ID != ids[1] || msgs[1].ID != ids[0] {
		t.Fatalf("needs review: %+v %v, want both", msgs, err)
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
}

// The counter survives deleting the messages that held the largest tokens.
func TestOutboxClaim_TokensGrowAfterDeletes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.insertOutbox(t, "", 1)
	p := driver.OutboxClaimParams{Destinations: []string{""}, Limit: 1, Lease: time.Minute, MaxAttempts: 5}
	first := b.claimOutbox(t, p)[0]
	b.exec(t, `DELETE FROM hookinbox_outbox`)
	b.insertOutbox(t, "", 1)
	if second := b.claimOutbox(t, p)[0]; second.FencingToken <= first.FencingToken {
		t.Fatalf("token %d after deleting token %d", second.FencingToken, first.FencingToken)
	}
}

// A dispatcher whose lease ran out holds a stale token: it can neither publish nor
// record a failure over the later claim.
func TestOutboxMarkPublished_StaleTokenChangesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.insertOutbox(t, "", 1)[0]
	p := driver.OutboxClaimParams{Destinations: []string{""}, Limit: 1, Lease: time.Minute, MaxAttempts: 5}
	stale := b.claimOutbox(t, p)[0]
	b.expireOutboxLeases(t)
	current := b.claimOutbox(t, p)[0]

	if err := b.ex.OutboxRecordFailure(b.ctx, &driver.OutboxFailureParams{ID: id, ClaimToken: stale.FencingToken, Error: "late", Delay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.ex.OutboxMarkPublished(b.ctx, id, stale.FencingToken); err != nil || ok {
		t.Fatalf("stale publish: %v %v, want false", ok, err)
	}
	if n := b.count(t, `SELECT count(*) FROM hookinbox_outbox WHERE last_error IS NULL AND state = 'pending' AND claim_token = ?1`, current.FencingToken); n != 1 {
		t.Fatal("the stale token changed the message")
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
	msgs, err := b.ex.OutboxList(b.ctx, &driver.OutboxListParams{Limit: 10})
	if err != nil || len(msgs) != 1 || msgs[0].PublishedAt == nil || msgs[0].State != hookinboxtype.StatePublished || msgs[0].LastError != "" {
		t.Fatalf("after publish: %+v %v", msgs, err)
	}
}

func TestOutboxListStatsRetry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.insertOutbox(t, "", 3)
	b.exec(t, `UPDATE hookinbox_outbox SET attempts = 5, state = 'needs_review', created_at = created_at - 60000000 WHERE id = ?1`, ids[0])
	b.exec(t, `UPDATE hookinbox_outbox SET published_at = created_at, state = 'published' WHERE id = ?1`, ids[2])

	list := func(p driver.OutboxListParams) string {
		t.Helper()
		p.Limit = 10
		msgs, err := b.ex.OutboxList(b.ctx, &p)
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, m := range msgs {
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

	s, err := b.ex.OutboxStats(b.ctx)
	if err != nil || s.Pending != 2 || s.NeedsReview != 1 || s.OldestPendingAge < time.Minute || s.OldestPendingAge > time.Hour {
		t.Fatalf("stats %+v %v", s, err)
	}

	if n, err := b.ex.OutboxRetry(b.ctx, &driver.OutboxRetryParams{NeedsReview: true}); err != nil || n != 1 {
		t.Fatalf("retry needs review: %d %v", n, err)
	}
	if n, err := b.ex.OutboxRetry(b.ctx, &driver.OutboxRetryParams{ID: ids[2]}); err != nil || n != 0 {
		t.Fatalf("retry published: %d %v", n, err)
	}
	if n, err := b.ex.OutboxRetry(b.ctx, &driver.OutboxRetryParams{ID: ids[1]}); err != nil || n != 1 {
		t.Fatalf("retry one: %d %v", n, err)
	}
	if n := b.count(t, `SELECT count(*) FROM hookinbox_outbox WHERE attempts = 0 AND state = 'pending'`); n != 2 {
		t.Fatalf("%d messages with attempts reset, want 2", n)
	}
}

func (b *bundle) claimEffect(t *testing.T, k string) *driver.EffectClaim {
	t.Helper()
	c, err := b.ex.EffectClaim(b.ctx, &driver.EffectClaimParams{Key: k, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEffectClaim_LeaseThenResultRecordedOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const k = "webhook:evt_1:refund"
	first := b.claimEffect(t, k)
	if first.Token == 0 || first.Done {
		t.Fatalf("new key: %+v, want a token", first)
	}
	held := b.claimEffect(t, k)
	if held.Token != 0 || held.Done || held.LeaseUntil.Before(time.Now().Add(30*time.Second)) {
		t.Fatalf("held key: %+v, want the holder's lease end", held)
	}
	if ok, err := b.ex.EffectComplete(b.ctx, k, first.Token+1, []byte("wrong")); err != nil || ok {
		t.Fatalf("complete with another token: %v %v, want false", ok, err)
	}
	if ok, err := b.ex.EffectComplete(b.ctx, k, first.Token, []byte("re_1")); err != nil || !ok {
		t.Fatalf("complete: %v %v, want true", ok, err)
	}
	done := b.claimEffect(t, k)
	if !done.Done || string(done.Result) != "re_1" || done.Token != 0 {
		t.Fatalf("done key: %+v", done)
	}
	if ok, err := b.ex.EffectComplete(b.ctx, k, first.Token, []byte("again")); err != nil || ok {
		t.Fatalf("second complete: %v %v, want false", ok, err)
	}
}

// A holder whose lease ran out loses the key to the next claim, with a larger token,
// and can no longer record its result.
func TestEffectClaim_ExpiredLeaseTakenOverWithALargerToken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const k = "webhook:evt_1:refund"
	stale := b.claimEffect(t, k)
	b.exec(t, `UPDATE hookinbox_effect SET lease_until = 0`)
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

func TestEffectRelease_KeyCanBeTakenAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
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

// Outbox and effect tokens come from one counter, so they never repeat across the two.
func TestTokens_SharedCounterOnlyGrows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.insertOutbox(t, "", 1)
	e1 := b.claimEffect(t, "webhook:evt_1:a")
	m := b.claimOutbox(t, driver.OutboxClaimParams{Destinations: []string{""}, Limit: 1, Lease: time.Minute, MaxAttempts: 5})[0]
	e2 := b.claimEffect(t, "webhook:evt_1:b")
	if !(e1.Token < m.FencingToken && m.FencingToken < e2.Token) {
		t.Fatalf("tokens %d, %d, %d, want increasing", e1.Token, m.FencingToken, e2.Token)
	}
}

// Retention: only published messages and recorded effects older than it go; a dry run
// counts them.
func TestDeleteOld_PublishedMessagesAndRecordedEffects(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, id := range []string{"evt_1", "evt_2"} {
		if _, err := b.ex.OutboxInsert(b.ctx, &driver.OutboxInsertParams{
			AggregateType: "Invoice", AggregateID: id, EventType: "x", Payload: []byte(`{}`),
			Source: hookinboxtype.Key{Provider: "stripe", Endpoint: "billing", EventID: id},
		}); err != nil {
			t.Fatal(err)
		}
	}
	b.exec(t, `UPDATE hookinbox_outbox SET state = 'published', published_at = 1 WHERE source_event_id = 'evt_1'`)
	b.exec(t, `UPDATE hookinbox_outbox SET created_at = 1 WHERE source_event_id = 'evt_2'`)
	b.exec(t, `INSERT INTO hookinbox_effect (key, state, token, lease_until, completed_at) VALUES ('done', 'done', 1, 1, 1), ('held', 'pending', 2, 1, NULL)`)
	old := &driver.InboxDeleteParams{OlderThan: time.Hour, DryRun: true}
	if n, err := b.ex.OutboxDeletePublished(b.ctx, old); err != nil || n != 1 {
		t.Fatalf("dry run outbox: %d, %v", n, err)
	}
	old = &driver.InboxDeleteParams{OlderThan: time.Hour, Limit: 10}
	if n, err := b.ex.OutboxDeletePublished(b.ctx, old); err != nil || n != 1 {
		t.Fatalf("outbox: %d, %v", n, err)
	}
	if n, err := b.ex.EffectDeleteDone(b.ctx, old); err != nil || n != 1 {
		t.Fatalf("effects: %d, %v", n, err)
	}
	if n := b.count(t, `SELECT count(*) FROM hookinbox_outbox`) + b.count(t, `SELECT count(*) FROM hookinbox_effect`); n != 2 {
		t.Fatalf("%d rows left, want the undelivered message and the held effect", n)
	}
}

// OutboxInsertMany writes every message, in the order given, or none.
func TestOutboxInsertMany_InOrderAllOrNone(t *testing.T) {
	t.Parallel()
	b := setup(t)
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
	var order string
	if err := b.db.QueryRowContext(b.ctx, `SELECT group_concat(aggregate_id || ':' || destination, ',') FROM (SELECT * FROM hookinbox_outbox ORDER BY id)`).Scan(&order); err != nil {
		t.Fatal(err)
	}
	if order != "a:nats,b:nats,c:nats" {
		t.Fatalf("outbox %q, want a, b, c to nats and nothing of the failed batch", order)
	}
}

func TestOutboxMarkPublishedMany_MarksOnlyCurrentTokens(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.insertOutbox(t, "", 3)
	p := driver.OutboxClaimParams{Destinations: []string{""}, Limit: 3, Lease: time.Minute, MaxAttempts: 5}
	stale := b.claimOutbox(t, p)
	b.expireOutboxLeases(t)
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
	if len(published) != 2 || published[0] != current[0].ID || published[1] != current[2].ID {
		t.Fatalf("published %v, want %d and %d", published, current[0].ID, current[2].ID)
	}
	if n := b.count(t, `SELECT count(*) FROM hookinbox_outbox WHERE state = 'published'`); n != 2 {
		t.Fatalf("%d published, want 2", n)
	}
	if n := b.count(t, `SELECT count(*) FROM hookinbox_delivery`); n != 2 {
		t.Fatalf("%d deliveries in the history, want 2", n)
	}
}

func TestOutboxClaim_LimitsPerDestinationAndOrderedKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.insertOutbox(t, "a", 3)
	b.insertOutbox(t, "b", 3)
	for range 2 { // a second message of in_0, in_1, in_2 for the ordered destination
		b.insertOutbox(t, "b", 3)
	}
	p := driver.OutboxClaimParams{Destinations: []string{"a", "b"}, Limits: []int{2, 9}, Ordered: []string{"b"},
		Lease: time.Minute, MaxAttempts: 5}
	got := map[string][]string{}
	for _, m := range b.claimOutbox(t, p) {
		got[m.Destination] = append(got[m.Destination], m.AggregateID)
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
}
