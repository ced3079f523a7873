package sqlitedriver_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/driver/sqlitedriver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// The Executor's inbox methods, each against its documentation in driver/driver.go.

func key(id string) hookinboxtype.Key {
	return hookinboxtype.Key{Provider: "stripe", Endpoint: "async", EventID: id}
}

func payload(id string) []byte {
	return []byte(fmt.Sprintf(`{"id":%q,"type":"invoice.paid"}`, id))
}

// testMaxAttempts is the attempt limit the test inserts carry unless they say otherwise,
// as a receiver stores its own.
const testMaxAttempts = 10

func (b *bundle) insert(t *testing.T, p *driver.InboxInsertParams) {
	t.Helper()
	if p.MaxAttempts == 0 {
		p.MaxAttempts = testMaxAttempts
	}
	if p.EventType == "" {
		p.EventType = "invoice.paid"
	}
	if p.Payload == nil {
		p.Payload = payload(p.EventID)
	}
	inserted, err := b.ex.InboxInsert(b.ctx, p)
	if err != nil || !inserted {
		t.Fatalf("InboxInsert(%s): inserted=%v err=%v", p.EventID, inserted, err)
	}
}

func (b *bundle) get(t *testing.T, k hookinboxtype.Key) *hookinboxtype.Receipt {
	t.Helper()
	r, err := b.ex.InboxGet(b.ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// age moves a receipt's times back by d, as if it had been received d earlier.
func (b *bundle) age(t *testing.T, k hookinboxtype.Key, d time.Duration) {
	t.Helper()
	b.exec(t, `UPDATE hookinbox_inbox
		SET received_at = received_at - ?4, available_at = available_at - ?4, processed_at = processed_at - ?4
		WHERE provider = ?1 AND endpoint = ?2 AND event_id = ?3`, k.Provider, k.Endpoint, k.EventID, d.Microseconds())
}

func TestInboxInsert_SecondCopyIsADuplicate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	before := time.Now().Add(-time.Second)
	p := &driver.InboxInsertParams{Key: key("evt_1"), EventType: "invoice.paid", Payload: []byte(`{"id": "evt_1",  "spacing":"kept"}`), MaxAttempts: 5}
	for i, want := range []bool{true, false} {
		inserted, err := b.ex.InboxInsert(b.ctx, p)
		if err != nil || inserted != want {
			t.Fatalf("insert %d: inserted=%v err=%v, want %v", i+1, inserted, err, want)
		}
	}
	r := b.get(t, key("evt_1"))
	if r == nil || r.EventType != "invoice.paid" || string(r.Payload) != string(p.Payload) || r.Attempts != 0 ||
		r.ProcessedAt != nil || r.Outcome != "" || r.LastError != "" || r.State != hookinboxtype.StatePending || r.MaxAttempts != 5 {
		t.Fatalf("receipt %+v", r)
	}
	if r.ReceivedAt.Before(before) || r.ReceivedAt.After(time.Now().Add(time.Second)) || !r.AvailableAt.Equal(r.ReceivedAt) {
		t.Fatalf("received_at %v available_at %v, want now and equal", r.ReceivedAt, r.AvailableAt)
	}
}

// The state is the insert's to compute: processed, failed with attempts left (pending),
// or failed on the receiver's only attempt (needs review at once).
func TestInboxInsert_ProcessedAndFailedOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_done"), Processed: true, Outcome: "processed"})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_failed"), Attempts: 1, LastError: "boom", Delay: time.Hour, MaxAttempts: 3})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_spent"), Attempts: 1, LastError: "boom", Delay: time.Hour, MaxAttempts: 1})

	done := b.get(t, key("evt_done"))
	if done.ProcessedAt == nil || done.Outcome != "processed" || done.State != hookinboxtype.StateProcessed {
		t.Fatalf("processed insert: %+v", done)
	}
	failed := b.get(t, key("evt_failed"))
	if failed.ProcessedAt != nil || failed.Attempts != 1 || failed.LastError != "boom" || failed.State != hookinboxtype.StatePending ||
		failed.MaxAttempts != 3 || failed.AvailableAt.Sub(failed.ReceivedAt) != time.Hour {
		t.Fatalf("failed insert: %+v (available after %s)", failed, failed.AvailableAt.Sub(failed.ReceivedAt))
	}
	if spent := b.get(t, key("evt_spent")); spent.State != hookinboxtype.StateNeedsReview || spent.Attempts != 1 || spent.MaxAttempts != 1 {
		t.Fatalf("insert after the only attempt failed: %+v, want needs review", spent)
	}
}

// The driver is strict even though the core validates first: what is stored as the
// verified body must be JSON.
func TestInboxInsert_InvalidJSONIsInvalidInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, body := range []string{`{"id":`, ``, `not json`} {
		_, err := b.ex.InboxInsert(b.ctx, &driver.InboxInsertParams{Key: key("evt_1"), EventType: "t", Payload: []byte(body)})
		if !errors.Is(err, driver.ErrInvalidInput) {
			t.Errorf("payload %q: %v, want ErrInvalidInput", body, err)
		}
	}
	if n := b.count(t, `SELECT count(*) FROM hookinbox_inbox`); n != 0 {
		t.Fatalf("%d receipts stored", n)
	}
}

// A copy inserted while another transaction holds the same key waits for it: a
// duplicate if it commits, inserted if it rolls back.
func TestInboxInsert_ConcurrentCopyWaitsForTheOtherTransaction(t *testing.T) {
	t.Parallel()
	for _, commit := range []bool{true, false} {
		t.Run(fmt.Sprintf("commit=%v", commit), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			tx, err := b.d.Begin(b.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := tx.InboxInsert(b.ctx, &driver.InboxInsertParams{Key: key("evt_1"), EventType: "t", Payload: payload("evt_1")}); !ok || err != nil {
				t.Fatalf("first copy: %v %v", ok, err)
			}
			other := sqlitedriver.New(b.process(t)).Executor()
			result := make(chan error, 1)
			go func() {
				ok, err := other.InboxInsert(b.ctx, &driver.InboxInsertParams{Key: key("evt_1"), EventType: "t", Payload: payload("evt_1")})
				if err == nil && ok == commit {
					err = fmt.Errorf("second copy inserted=%v after the first's commit=%v", ok, commit)
				}
				result <- err
			}()
			if commit {
				err = tx.Commit(b.ctx)
			} else {
				err = tx.Rollback(b.ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := <-result; err != nil {
				t.Fatal(err)
			}
			if n := b.count(t, `SELECT count(*) FROM hookinbox_inbox`); n != 1 {
				t.Fatalf("%d receipts, want 1", n)
			}
		})
	}
}

func TestInboxLockUnprocessed_NilWhenNotPendingOrAbsent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_pending")})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_done"), Processed: true, Outcome: "processed"})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_review"), Attempts: 1, MaxAttempts: 1})
	tx, err := b.d.Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(b.ctx) //nolint:errcheck
	for id, want := range map[string]bool{"evt_pending": true, "evt_done": false, "evt_review": false, "evt_absent": false} {
		r, err := lockOne(b.ctx, tx, key(id))
		if err != nil || (r != nil) != want {
			t.Errorf("%s: %+v %v, want found=%v", id, r, err, want)
		}
		if r != nil && (r.Key != key(id) || string(r.Payload) != string(payload(id)) || r.State != hookinboxtype.StatePending) {
			t.Errorf("%s: %+v", id, r)
		}
	}
}

func TestInboxMarkProcessed_SetsOutcomeAndClearsLastError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_1"), Attempts: 1, LastError: "boom"})
	if err := b.ex.InboxMarkProcessed(b.ctx, []hookinboxtype.Key{key("evt_1")}, "processed", nil); err != nil {
		t.Fatal(err)
	}
	r := b.get(t, key("evt_1"))
	if r.ProcessedAt == nil || r.Outcome != "processed" || r.LastError != "" || r.State != hookinboxtype.StateProcessed {
		t.Fatalf("%+v", r)
	}
}

func TestInboxClaim_OldestAvailableOfItsEndpointsCountsTheAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other := hookinboxtype.Key{Provider: "stripe", Endpoint: "other", EventID: "evt_other"}
	b.insert(t, &driver.InboxInsertParams{Key: other})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_new")})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_old")})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_later"), Delay: time.Hour})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_spent"), Attempts: 3})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_done"), Processed: true, Outcome: "processed"})
	b.age(t, other, time.Hour)
	b.age(t, key("evt_new"), time.Minute)
	b.age(t, key("evt_old"), 2*time.Minute)
	b.age(t, key("evt_spent"), time.Hour)
	b.age(t, key("evt_done"), time.Hour)

	p := &driver.InboxClaimParams{Endpoints: []string{"async", "hybrid"}, Lease: time.Minute, MaxAttempts: 3}
	var got []string
	for {
		r, err := claimOne(b.ctx, b.ex, p)
		if err != nil {
			t.Fatal(err)
		}
		if r == nil {
			break
		}
		if r.Attempts != 1 || r.MaxAttempts != 3 || r.State != hookinboxtype.StatePending || r.AvailableAt.Before(time.Now().Add(30*time.Second)) {
			t.Fatalf("claimed %s: attempts=%d max_attempts=%d state=%s available_at=%v, want 1, 3, pending and leased for a minute",
				r.EventID, r.Attempts, r.MaxAttempts, r.State, r.AvailableAt)
		}
		got = append(got, r.EventID)
	}
	if fmt.Sprint(got) != "[evt_old evt_new]" {
		t.Fatalf("claimed %v, want [evt_old evt_new]: oldest first, none of another endpoint, delayed, at max attempts or processed", got)
	}
	if r := b.get(t, key("evt_old")); r.Attempts != 1 || r.MaxAttempts != 3 {
		t.Fatalf("attempt not committed: %+v", r)
	}
	// The oldest, evt_spent, had used the worker's 3 attempts: the first claim put it
	// to review, without counting an attempt, and went on to evt_old.
	if r := b.get(t, key("evt_spent")); r.State != hookinboxtype.StateNeedsReview || r.Attempts != 3 || r.MaxAttempts != 3 {
		t.Fatalf("receipt at max attempts: %+v, want needs review with its 3 attempts", r)
	}
}

// A worker that died during the receipt's last attempt left it pending with every
// attempt used: once the lease lapses, the next claim puts it to review instead of
// taking it again.
func TestInboxClaim_WorkerThatDiedOnTheLastAttemptLeavesItToReview(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_1")})
	p := &driver.InboxClaimParams{Endpoints: []string{"async"}, Lease: time.Minute, MaxAttempts: 1}
	r, err := claimOne(b.ctx, b.ex, p)
	if err != nil || r == nil || r.Attempts != 1 || r.State != hookinboxtype.StatePending {
		t.Fatalf("first claim: %+v %v", r, err)
	}
	// The worker dies without recording anything; its lease lapses.
	b.exec(t, `UPDATE hookinbox_inbox SET available_at = available_at - 120000000`)
	if r, err := claimOne(b.ctx, b.ex, p); err != nil || r != nil {
		t.Fatalf("claim after the last attempt's lease: %+v %v, want none", r, err)
	}
	if r := b.get(t, key("evt_1")); r.State != hookinboxtype.StateNeedsReview || r.Attempts != 1 || r.MaxAttempts != 1 {
		t.Fatalf("%+v, want needs review with its one attempt", r)
	}
	if r, err := claimOne(b.ctx, b.ex, p); err != nil || r != nil {
		t.Fatalf("claim of a receipt in review: %+v %v, want none", r, err)
	}
}

func TestInboxRecordFailure_OnlyWhilePending(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_pending")})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_done"), Processed: true, Outcome: "processed"})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_review"), Attempts: 1, LastError: "first", MaxAttempts: 1})
	for _, id := range []string{"evt_pending", "evt_done", "evt_review"} {
		if err := b.ex.InboxRecordFailure(b.ctx, &driver.InboxFailureParams{Key: key(id), Error: "boom", Delay: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	pending := b.get(t, key("evt_pending"))
	if pending.LastError != "boom" || pending.State != hookinboxtype.StatePending || pending.AvailableAt.Sub(pending.ReceivedAt) < 59*time.Minute {
		t.Fatalf("pending: %+v", pending)
	}
	done := b.get(t, key("evt_done"))
	if done.LastError != "" || done.State != hookinboxtype.StateProcessed || !done.AvailableAt.Equal(done.ReceivedAt) {
		t.Fatalf("processed receipt changed: %+v", done)
	}
	if review := b.get(t, key("evt_review")); review.LastError != "first" || review.State != hookinboxtype.StateNeedsReview {
		t.Fatalf("receipt in review changed: %+v", review)
	}
}

// A failure on the attempt the receipt's limit allows last puts it to review, where no
// worker takes it, until a person retries it: pending again, its attempts reset.
func TestInboxRecordFailure_OnTheLastAttemptNeedsReviewUntilRetried(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_1")})
	p := &driver.InboxClaimParams{Endpoints: []string{"async"}, Lease: time.Minute, MaxAttempts: 2}
	for attempt := 1; attempt <= 2; attempt++ {
		r, err := claimOne(b.ctx, b.ex, p)
		if err != nil || r == nil || r.Attempts != attempt {
			t.Fatalf("claim %d: %+v %v", attempt, r, err)
		}
		if err := b.ex.InboxRecordFailure(b.ctx, &driver.InboxFailureParams{Key: key("evt_1"), Error: fmt.Sprintf("boom %d", attempt)}); err != nil {
			t.Fatal(err)
		}
		want := hookinboxtype.StatePending
		if attempt == 2 {
			want = hookinboxtype.StateNeedsReview
		}
		if r := b.get(t, key("evt_1")); r.State != want || r.LastError != fmt.Sprintf("boom %d", attempt) {
			t.Fatalf("after failed attempt %d: %+v, want %s", attempt, r, want)
		}
	}
	if r, err := claimOne(b.ctx, b.ex, p); err != nil || r != nil {
		t.Fatalf("claim of a receipt in review: %+v %v, want none", r, err)
	}

	k := key("evt_1")
	if n, err := b.ex.InboxRetry(b.ctx, &driver.InboxRetryParams{Key: &k}); err != nil || n != 1 {
		t.Fatalf("retry: %d %v", n, err)
	}
	if r := b.get(t, k); r.State != hookinboxtype.StatePending || r.Attempts != 0 || r.AvailableAt.After(time.Now().Add(time.Second)) {
		t.Fatalf("after retry: %+v, want pending and available with no attempts", r)
	}
	if r, err := claimOne(b.ctx, b.ex, p); err != nil || r == nil || r.Attempts != 1 {
		t.Fatalf("claim after retry: %+v %v", r, err)
	}
}

func TestInboxGet_NilWhenAbsent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if r := b.get(t, key("evt_absent")); r != nil {
		t.Fatalf("%+v", r)
	}
}

func TestInboxList_NewestFirstWithFilters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_1"), Processed: true, Outcome: "processed"})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_2"), Attempts: 5, MaxAttempts: 5})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_3")})
	b.insert(t, &driver.InboxInsertParams{Key: hookinboxtype.Key{Provider: "stripe", Endpoint: "billing", EventID: "evt_4"}, Processed: true, Outcome: "ignored"})
	for name, tc := range map[string]struct {
		p    driver.InboxListParams
		want string
	}{
		"all":          {driver.InboxListParams{Limit: 10}, "[evt_4 evt_3 evt_2 evt_1]"},
		"limit":        {driver.InboxListParams{Limit: 2}, "[evt_4 evt_3]"},
		"endpoint":     {driver.InboxListParams{Endpoint: "async", Limit: 10}, "[evt_3 evt_2 evt_1]"},
		"unprocessed":  {driver.InboxListParams{Unprocessed: true, Limit: 10}, "[evt_3 evt_2]"},
		"needs review": {driver.InboxListParams{NeedsReview: true, Limit: 10}, "[evt_2]"},
	} {
		list, err := b.ex.InboxList(b.ctx, &tc.p)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range list {
			ids = append(ids, r.EventID)
		}
		if fmt.Sprint(ids) != tc.want {
			t.Errorf("%s: %v, want %s", name, ids, tc.want)
		}
	}
}

func TestInboxStats_UnprocessedOldestNeedsReviewAndRecentTypes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s, err := b.ex.InboxStats(b.ctx, &driver.InboxStatsParams{RecentWindow: time.Hour})
	if err != nil || s.Unprocessed != 0 || s.OldestUnprocessedAge != 0 || s.NeedsReview != 0 || len(s.ReceivedByType) != 0 {
		t.Fatalf("empty inbox: %+v %v", s, err)
	}
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_old"), EventType: "invoice.created"})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_spent"), Attempts: 3, MaxAttempts: 3})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_a"), Processed: true, Outcome: "processed"})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_b"), Processed: true, Outcome: "processed"})
	b.age(t, key("evt_old"), 2*time.Hour)
	s, err = b.ex.InboxStats(b.ctx, &driver.InboxStatsParams{RecentWindow: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if s.Unprocessed != 2 || s.NeedsReview != 1 || s.OldestUnprocessedAge < 2*time.Hour || s.OldestUnprocessedAge > 3*time.Hour {
		t.Fatalf("%+v", s)
	}
	if fmt.Sprint(s.ReceivedByType) != "[{invoice.paid 3}]" {
		t.Fatalf("received by type %v, want only the last hour's", s.ReceivedByType)
	}
}

func TestInboxRetry_OneKeyOrEveryNeedingReview(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_1"), Attempts: 3, LastError: "boom", Delay: time.Hour, MaxAttempts: 3})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_2"), Attempts: 3, Delay: time.Hour, MaxAttempts: 3})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_3"), Attempts: 1, Delay: time.Hour, MaxAttempts: 3})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_done"), Processed: true, Outcome: "processed"})

	k := key("evt_1")
	if n, err := b.ex.InboxRetry(b.ctx, &driver.InboxRetryParams{Key: &k}); err != nil || n != 1 {
		t.Fatalf("retry one: %d %v", n, err)
	}
	if r := b.get(t, k); r.Attempts != 0 || r.State != hookinboxtype.StatePending || r.AvailableAt.After(time.Now().Add(time.Second)) || r.LastError != "boom" {
		t.Fatalf("after retry: %+v", r)
	}
	done := key("evt_done")
	if n, err := b.ex.InboxRetry(b.ctx, &driver.InboxRetryParams{Key: &done}); err != nil || n != 0 {
		t.Fatalf("retry processed: %d %v", n, err)
	}
	if n, err := b.ex.InboxRetry(b.ctx, &driver.InboxRetryParams{NeedsReview: true}); err != nil || n != 1 {
		t.Fatalf("retry needs review: %d %v, want evt_2 only", n, err)
	}
	if r := b.get(t, key("evt_2")); r.Attempts != 0 || r.State != hookinboxtype.StatePending {
		t.Fatalf("evt_2 after retry: %+v", r)
	}
	if r := b.get(t, key("evt_3")); r.Attempts != 1 {
		t.Fatalf("evt_3 reset: %+v", r)
	}
	if r := b.get(t, done); r.State != hookinboxtype.StateProcessed {
		t.Fatalf("processed receipt retried: %+v", r)
	}
	if _, err := b.ex.InboxRetry(b.ctx, &driver.InboxRetryParams{}); err == nil {
		t.Fatal("retry with neither key nor NeedsReview succeeded")
	}
}

func TestInboxDeleteProcessed_OldProcessedOnlyInBatches(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := range 3 {
		k := key(fmt.Sprintf("evt_old_%d", i))
		b.insert(t, &driver.InboxInsertParams{Key: k, Processed: true, Outcome: "processed"})
		b.age(t, k, 48*time.Hour)
	}
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_old_pending")})
	b.age(t, key("evt_old_pending"), 48*time.Hour)
	// Only the processed state is history to delete, whatever processed_at says.
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_old_discarded"), Processed: true, Outcome: "processed"})
	b.age(t, key("evt_old_discarded"), 48*time.Hour)
	b.exec(t, `UPDATE hookinbox_inbox SET state = 'discarded' WHERE event_id = 'evt_old_discarded'`)
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_recent"), Processed: true, Outcome: "processed"})

	if n, err := b.ex.InboxDeleteProcessed(b.ctx, &driver.InboxDeleteParams{OlderThan: 24 * time.Hour, DryRun: true}); err != nil || n != 3 {
		t.Fatalf("dry run: %d %v", n, err)
	}
	if n := b.count(t, `SELECT count(*) FROM hookinbox_inbox`); n != 6 {
		t.Fatalf("dry run deleted: %d rows left", n)
	}
	if n, err := b.ex.InboxDeleteProcessed(b.ctx, &driver.InboxDeleteParams{OlderThan: 24 * time.Hour, Limit: 2}); err != nil || n != 2 {
		t.Fatalf("first batch: %d %v", n, err)
	}
	if n, err := b.ex.InboxDeleteProcessed(b.ctx, &driver.InboxDeleteParams{OlderThan: 24 * time.Hour, Limit: 2}); err != nil || n != 1 {
		t.Fatalf("second batch: %d %v", n, err)
	}
	if b.get(t, key("evt_old_pending")) == nil || b.get(t, key("evt_old_discarded")) == nil || b.get(t, key("evt_recent")) == nil {
		t.Fatal("deleted an unprocessed, discarded or recent receipt")
	}
}

// SQLite has no statement timeout; the context bounds processing instead.
func TestSetStatementTimeout_NoOp(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tx, err := b.d.Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(b.ctx) //nolint:errcheck
	if err := tx.SetStatementTimeout(b.ctx, time.Second); err != nil {
		t.Fatal(err)
	}
}

// A duplicate's body hash is compared with the receipt's: only a known, different hash
// counts a conflict.
func TestInboxNoteDuplicate_CountsOnlyAnotherBody(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := &driver.InboxInsertParams{Key: key("evt_1"), EventType: "x", Payload: []byte(`{}`), MaxAttempts: 10, BodySHA256: []byte("0123456789abcdef0123456789abcdef")}
	if ok, err := b.ex.InboxInsert(b.ctx, p); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, conflict, err := b.ex.InboxNoteDuplicate(b.ctx, key("evt_1"), p.BodySHA256); err != nil || conflict {
		t.Fatalf("same body: conflict %v, %v", conflict, err)
	}
	stored, conflict, err := b.ex.InboxNoteDuplicate(b.ctx, key("evt_1"), []byte("another body's hash, 32 bytes..."))
	if err != nil || !conflict || string(stored) != string(p.BodySHA256) {
		t.Fatalf("another body: conflict %v, stored %q, %v", conflict, stored, err)
	}
	if r, err := b.ex.InboxGet(b.ctx, key("evt_1")); err != nil || r.Conflicts != 1 {
		t.Fatalf("receipt %+v, %v; want 1 conflict", r, err)
	}
}

func TestInboxPurgePayloads_OldProcessedOnlyKeepingTheReceipt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := range 3 {
		k := key(fmt.Sprintf("evt_old_%d", i))
		b.insert(t, &driver.InboxInsertParams{Key: k, Processed: true, Outcome: "processed"})
		b.age(t, k, 48*time.Hour)
	}
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_old_pending")})
	b.age(t, key("evt_old_pending"), 48*time.Hour)
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_recent"), Processed: true, Outcome: "processed"})

	if n, err := b.ex.InboxPurgePayloads(b.ctx, &driver.InboxDeleteParams{OlderThan: 24 * time.Hour, DryRun: true}); err != nil || n != 3 {
		t.Fatalf("dry run: %d %v", n, err)
	}
	for _, want := range []int{2, 1, 0} {
		if n, err := b.ex.InboxPurgePayloads(b.ctx, &driver.InboxDeleteParams{OlderThan: 24 * time.Hour, Limit: 2}); err != nil || n != want {
			t.Fatalf("batch: %d %v, want %d", n, err, want)
		}
	}
	if n := b.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE payload = 'null'`); n != 3 {
		t.Fatalf("%d payloads purged, want 3", n)
	}
	if n := b.count(t, `SELECT count(*) FROM hookinbox_inbox`); n != 5 {
		t.Fatalf("%d receipts left, want all 5", n)
	}
	sizes, err := b.ex.TableSizes(b.ctx)
	if err != nil || len(sizes) != 3 || sizes[0].Table != "hookinbox_inbox" || sizes[0].Rows != 5 {
		t.Fatalf("table sizes %+v, %v", sizes, err)
	}
}
