package drivertest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// The Executor's inbox methods, each against its documentation in driver/driver.go.

func inboxBehaviours[TTx any]() []behaviour[TTx] {
	return []behaviour[TTx]{
		{method: "InboxInsert", name: "SecondCopyIsADuplicate", run: testInboxInsertSecondCopy[TTx]},
		{method: "InboxInsert", name: "ProcessedAndFailedOnce", run: testInboxInsertProcessedAndFailed[TTx]},
		{method: "InboxInsert", name: "InvalidJSONIsInvalidInput", run: testInboxInsertInvalidJSON[TTx]},
		{method: "InboxInsert", name: "ConcurrentCopyWaitsForTheOtherTransaction", run: testInboxInsertConcurrentCopy[TTx]},
		{method: "InboxInsertMany", name: "EachInsertedOrADuplicateAllOrNone", run: testInboxInsertMany[TTx]},
		{method: "InboxLockUnprocessed", name: "OnlyPendingReceiptsOfTheKeys", run: testInboxLockUnprocessed[TTx]},
		{method: "InboxLockUnprocessed", name: "WaitsForTheTransactionThatHoldsTheReceipt", run: testInboxLockUnprocessedWaits[TTx]},
		{method: "InboxMarkProcessed", name: "SetsOutcomeClearsLastErrorAndAddsTheAttempt", run: testInboxMarkProcessed[TTx]},
		{method: "InboxClaim", name: "OldestAvailableOfItsEndpointsCountsTheAttempt", run: testInboxClaimOldestFirst[TTx]},
		{method: "InboxClaim", name: "WorkerThatDiedOnTheLastAttemptLeavesItToReview", run: testInboxClaimDiedOnLastAttempt[TTx]},
		{method: "InboxClaim", name: "NoAttemptLimitIsRefused", run: testInboxClaimNoAttemptLimit[TTx]},
		{method: "InboxExtendLease", name: "OnlyPendingReceiptsWithoutCountingAnAttempt", run: testInboxExtendLease[TTx]},
		{method: "InboxRecordFailure", name: "OnlyWhilePending", run: testInboxRecordFailureOnlyWhilePending[TTx]},
		{method: "InboxRecordFailure", name: "OnTheLastAttemptNeedsReviewUntilRetried", run: testInboxRecordFailureLastAttempt[TTx]},
		{method: "InboxNoteDuplicate", name: "CountsOnlyAnotherBody", run: testInboxNoteDuplicate[TTx]},
		{method: "InboxGet", name: "NilWhenAbsent", run: testInboxGetAbsent[TTx]},
		{method: "InboxList", name: "NewestFirstWithFilters", run: testInboxList[TTx]},
		{method: "InboxStats", name: "UnprocessedOldestNeedsReviewAndRecentTypes", run: testInboxStats[TTx]},
		{method: "InboxRetry", name: "OneKeyOrEveryNeedingReview", run: testInboxRetry[TTx]},
	}
}

func key(id string) hookinboxtype.Key {
	return hookinboxtype.Key{Provider: "stripe", Endpoint: "async", EventID: id}
}

func payload(id string) []byte {
	return []byte(fmt.Sprintf(`{"id":%q,"type":"invoice.paid"}`, id))
}

// testMaxAttempts is the attempt limit the test inserts carry unless they say
// otherwise, as a receiver stores its own.
const testMaxAttempts = 10

// params fills in what a test's insert leaves out.
func params(p *driver.InboxInsertParams) *driver.InboxInsertParams {
	if p.MaxAttempts == 0 {
		p.MaxAttempts = testMaxAttempts
	}
	if p.EventType == "" {
		p.EventType = "invoice.paid"
	}
	if p.Payload == nil {
		p.Payload = payload(p.EventID)
	}
	return p
}

func (b *bundle[TTx]) insert(t *testing.T, p *driver.InboxInsertParams) {
	t.Helper()
	inserted, err := b.ex.InboxInsert(b.ctx, params(p))
	if err != nil || !inserted {
		t.Fatalf("InboxInsert(%s): inserted=%v err=%v", p.EventID, inserted, err)
	}
}

func (b *bundle[TTx]) get(t *testing.T, k hookinboxtype.Key) *hookinboxtype.Receipt {
	t.Helper()
	r, err := b.ex.InboxGet(b.ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// receipts returns the event ids of every receipt, newest first.
func (b *bundle[TTx]) receipts(t *testing.T) []string {
	t.Helper()
	list, err := b.ex.InboxList(b.ctx, &driver.InboxListParams{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range list {
		ids = append(ids, r.EventID)
	}
	return ids
}

// claimOne claims at most one receipt, as a worker with a batch size of 1 does.
func (b *bundle[TTx]) claimOne(t *testing.T, p *driver.InboxClaimParams) *hookinboxtype.Receipt {
	t.Helper()
	q := *p
	q.Limit = 1
	rs, err := b.ex.InboxClaim(b.ctx, &q)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 {
		return nil
	}
	return rs[0]
}

// sameJSON reports whether two JSON documents are equal once decoded (PostgreSQL's
// jsonb keeps neither key order nor white space).
func sameJSON(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && fmt.Sprint(x) == fmt.Sprint(y)
}

func testInboxInsertSecondCopy[TTx any](t *testing.T, b *bundle[TTx]) {
	before := time.Now().Add(-time.Second)
	p := &driver.InboxInsertParams{Key: key("evt_1"), EventType: "invoice.paid", Payload: []byte(`{"id": "evt_1",  "spacing":"kept"}`),
		MaxAttempts: 5, BodySHA256: bytes.Repeat([]byte{7}, 32), TraceParent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	for i, want := range []bool{true, false} {
		inserted, err := b.ex.InboxInsert(b.ctx, p)
		if err != nil || inserted != want {
			t.Fatalf("insert %d: inserted=%v err=%v, want %v", i+1, inserted, err, want)
		}
	}
	r := b.get(t, key("evt_1"))
	if r == nil || r.EventType != "invoice.paid" || !sameJSON(r.Payload, p.Payload) || r.Attempts != 0 ||
		r.ProcessedAt != nil || r.Outcome != "" || r.LastError != "" || r.State != hookinboxtype.StatePending || r.MaxAttempts != 5 ||
		!bytes.Equal(r.BodySHA256, p.BodySHA256) || r.TraceParent != p.TraceParent || r.Conflicts != 0 {
		t.Fatalf("receipt %+v", r)
	}
	if r.ReceivedAt.Before(before) || r.ReceivedAt.After(time.Now().Add(time.Second)) || !r.AvailableAt.Equal(r.ReceivedAt) {
		t.Fatalf("received_at %v available_at %v, want now and equal", r.ReceivedAt, r.AvailableAt)
	}
}

// The state is the insert's to compute: processed, failed with attempts left (pending),
// or failed on the receiver's only attempt (needs review at once).
func testInboxInsertProcessedAndFailed[TTx any](t *testing.T, b *bundle[TTx]) {
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
func testInboxInsertInvalidJSON[TTx any](t *testing.T, b *bundle[TTx]) {
	for _, body := range []string{`{"id":`, ``, `not json`} {
		_, err := b.ex.InboxInsert(b.ctx, &driver.InboxInsertParams{Key: key("evt_1"), EventType: "t", Payload: []byte(body)})
		if !errors.Is(err, driver.ErrInvalidInput) {
			t.Errorf("payload %q: %v, want ErrInvalidInput", body, err)
		}
	}
	if ids := b.receipts(t); len(ids) != 0 {
		t.Fatalf("receipts %v stored", ids)
	}
}

// A copy inserted while another transaction holds the same key waits for it: a
// duplicate if it commits, inserted if it rolls back.
func testInboxInsertConcurrentCopy[TTx any](t *testing.T, b *bundle[TTx]) {
	for _, commit := range []bool{true, false} {
		k := key(fmt.Sprintf("evt_commit_%v", commit))
		tx := b.begin(t, b.d)
		if ok, err := tx.InboxInsert(b.ctx, params(&driver.InboxInsertParams{Key: k})); !ok || err != nil {
			t.Fatalf("first copy: %v %v", ok, err)
		}
		other := b.h.Other(t).Executor()
		result := make(chan error, 1)
		go func() {
			ok, err := other.InboxInsert(b.ctx, params(&driver.InboxInsertParams{Key: k}))
			if err == nil && ok == commit {
				err = fmt.Errorf("second copy inserted=%v after the first's commit=%v", ok, commit)
			}
			result <- err
		}()
		var err error
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
		if r := b.get(t, k); r == nil {
			t.Fatalf("commit=%v: no receipt", commit)
		}
	}
	if ids := b.receipts(t); len(ids) != 2 {
		t.Fatalf("receipts %v, want one of each key", ids)
	}
}

// A batch reports each receipt inserted or a duplicate, in its own order; a batch the
// database refuses inserts none.
func testInboxInsertMany[TTx any](t *testing.T, b *bundle[TTx]) {
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_2")})
	batch := []*driver.InboxInsertParams{
		params(&driver.InboxInsertParams{Key: key("evt_3")}),
		params(&driver.InboxInsertParams{Key: key("evt_2")}),
		params(&driver.InboxInsertParams{Key: key("evt_1"), Processed: true, Outcome: "processed"}),
	}
	inserted, err := b.ex.InboxInsertMany(b.ctx, batch)
	if err != nil || fmt.Sprint(inserted) != "[true false true]" {
		t.Fatalf("inserted %v %v, want [true false true]", inserted, err)
	}
	if r := b.get(t, key("evt_1")); r.State != hookinboxtype.StateProcessed || r.Outcome != "processed" {
		t.Fatalf("processed in a batch: %+v", r)
	}
	bad := []*driver.InboxInsertParams{
		params(&driver.InboxInsertParams{Key: key("evt_4")}),
		params(&driver.InboxInsertParams{Key: key("evt_5"), Payload: []byte(`{`)}),
	}
	if _, err := b.ex.InboxInsertMany(b.ctx, bad); !errors.Is(err, driver.ErrInvalidInput) {
		t.Fatalf("a batch with an invalid payload: %v, want ErrInvalidInput", err)
	}
	if ids := b.receipts(t); len(ids) != 3 {
		t.Fatalf("receipts %v, want evt_1 to evt_3 and nothing of the refused batch", ids)
	}
}

func testInboxLockUnprocessed[TTx any](t *testing.T, b *bundle[TTx]) {
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_pending")})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_other")})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_done"), Processed: true, Outcome: "processed"})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_review"), Attempts: 1, MaxAttempts: 1})
	tx := b.begin(t, b.d)
	keys := []hookinboxtype.Key{key("evt_review"), key("evt_pending"), key("evt_done"), key("evt_absent"), key("evt_other")}
	rs, err := tx.InboxLockUnprocessed(b.ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rs {
		got = append(got, r.EventID)
		if !sameJSON(r.Payload, payload(r.EventID)) || r.State != hookinboxtype.StatePending || r.MaxAttempts != testMaxAttempts {
			t.Errorf("%s: %+v", r.EventID, r)
		}
	}
	if len(got) != 2 || !(got[0] == "evt_other" || got[1] == "evt_other") || !(got[0] == "evt_pending" || got[1] == "evt_pending") {
		t.Fatalf("locked %v, want evt_other and evt_pending only", got)
	}
}

// A receipt locked by one transaction is locked by another only once the first ends,
// and then as the first left it: a worker that re-checks after another processed the
// receipt finds it no longer pending.
func testInboxLockUnprocessedWaits[TTx any](t *testing.T, b *bundle[TTx]) {
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_1")})
	first := b.begin(t, b.d)
	if rs, err := first.InboxLockUnprocessed(b.ctx, []hookinboxtype.Key{key("evt_1")}); err != nil || len(rs) != 1 {
		t.Fatalf("first lock: %v %v", rs, err)
	}
	other := b.h.Other(t)
	result := make(chan error, 1)
	go func() {
		tx, err := other.Begin(b.ctx)
		if err != nil {
			result <- err
			return
		}
		defer tx.Rollback(b.ctx) //nolint:errcheck
		rs, err := tx.InboxLockUnprocessed(b.ctx, []hookinboxtype.Key{key("evt_1")})
		if err == nil && len(rs) != 0 {
			err = fmt.Errorf("second lock found %+v pending after the first processed it", rs[0])
		}
		result <- err
	}()
	if err := first.InboxMarkProcessed(b.ctx, []hookinboxtype.Key{key("evt_1")}, "processed", nil); err != nil {
		t.Fatal(err)
	}
	if err := first.Commit(b.ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-result; err != nil {
		t.Fatal(err)
	}
}

// Marking processed records the outcome and, with by, the attempt in the history.
func testInboxMarkProcessed[TTx any](t *testing.T, b *bundle[TTx]) {
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_1"), Attempts: 1, LastError: "boom"})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_2")})
	started := time.Now().Add(-time.Second)
	by := &driver.AttemptBy{Worker: "host/1/worker-3", StartedAt: started}
	if err := b.ex.InboxMarkProcessed(b.ctx, []hookinboxtype.Key{key("evt_1"), key("evt_2")}, "processed", by); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"evt_1", "evt_2"} {
		r := b.get(t, key(id))
		if r.ProcessedAt == nil || r.Outcome != "processed" || r.LastError != "" || r.State != hookinboxtype.StateProcessed {
			t.Fatalf("%s: %+v", id, r)
		}
	}
	attempts, err := b.ex.ConsoleAttempts(b.ctx, key("evt_1"), 10)
	if err != nil || len(attempts) != 1 {
		t.Fatalf("history %+v %v, want the attempt", attempts, err)
	}
	if a := attempts[0]; a.Attempt != 1 || a.Worker != by.Worker || a.Error != "" || a.NextRetryAt != nil ||
		a.StartedAt.Before(started.Add(-2*time.Second)) || a.FinishedAt.Before(a.StartedAt) {
		t.Fatalf("attempt %+v", a)
	}
	if err := b.ex.InboxMarkProcessed(b.ctx, []hookinboxtype.Key{key("evt_3")}, "processed", nil); err != nil {
		t.Fatalf("an absent key: %v", err)
	}
}

func testInboxClaimOldestFirst[TTx any](t *testing.T, b *bundle[TTx]) {
	other := hookinboxtype.Key{Provider: "stripe", Endpoint: "other", EventID: "evt_other"}
	b.insert(t, &driver.InboxInsertParams{Key: other})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_spent"), Attempts: 3})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_done"), Processed: true, Outcome: "processed"})
	b.elapse(t, 58*time.Minute)
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_old")})
	b.elapse(t, time.Minute)
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_new")})
	b.elapse(t, time.Minute)
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_later"), Delay: time.Hour})

	p := &driver.InboxClaimParams{Endpoints: []string{"async", "hybrid"}, Lease: time.Minute, MaxAttempts: 3}
	var got []string
	for {
		r := b.claimOne(t, p)
		if r == nil {
			break
		}
		if r.Attempts != 1 || r.MaxAttempts != 3 || r.State != hookinboxtype.StatePending || r.AvailableAt.Before(time.Now().Add(30*time.Second)) {
			t.Fatalf("claimed %s: attempts=%d max_attempts=%d state=%s available_at=%v, want 1, 3, pending and leased for a minute",
				r.EventID, r.Attempts, r.MaxAttempts, r.State, r.AvailableAt)
		}
		if len(r.Payload) != 0 {
			t.Fatalf("claimed %s with its payload %s: a claim returns none (the processing transaction's lock reads it)", r.EventID, r.Payload)
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
	// A batch takes several at once, oldest first.
	b.elapse(t, 2*time.Hour)
	rs, err := b.ex.InboxClaim(b.ctx, &driver.InboxClaimParams{Endpoints: []string{"async", "other"}, Limit: 10, Lease: time.Minute, MaxAttempts: 5})
	if err != nil {
		t.Fatal(err)
	}
	var batch []string
	for _, r := range rs {
		batch = append(batch, r.EventID)
	}
	// evt_old's and evt_new's leases began at the same instant, give or take.
	if len(batch) != 4 || batch[0] != "evt_other" || batch[3] != "evt_later" {
		t.Fatalf("a batch claimed %v, want every available pending receipt of the endpoints, the longest available first", batch)
	}
}

// A worker that died during the receipt's last attempt left it pending with every
// attempt used: once the lease lapses, the next claim puts it to review instead of
// taking it again.
func testInboxClaimDiedOnLastAttempt[TTx any](t *testing.T, b *bundle[TTx]) {
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_1")})
	p := &driver.InboxClaimParams{Endpoints: []string{"async"}, Lease: time.Minute, MaxAttempts: 1}
	if r := b.claimOne(t, p); r == nil || r.Attempts != 1 || r.State != hookinboxtype.StatePending {
		t.Fatalf("first claim: %+v", r)
	}
	// The worker dies without recording anything; its lease lapses.
	b.elapse(t, 2*time.Minute)
	if r := b.claimOne(t, p); r != nil {
		t.Fatalf("claim after the last attempt's lease: %+v, want none", r)
	}
	if r := b.get(t, key("evt_1")); r.State != hookinboxtype.StateNeedsReview || r.Attempts != 1 || r.MaxAttempts != 1 {
		t.Fatalf("%+v, want needs review with its one attempt", r)
	}
	if r := b.claimOne(t, p); r != nil {
		t.Fatalf("claim of a receipt in review: %+v, want none", r)
	}
}

func testInboxClaimNoAttemptLimit[TTx any](t *testing.T, b *bundle[TTx]) {
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_1")})
	if _, err := b.ex.InboxClaim(b.ctx, &driver.InboxClaimParams{Endpoints: []string{"async"}, Limit: 1, Lease: time.Minute}); !errors.Is(err, driver.ErrNoAttemptLimit) {
		t.Fatalf("claim without MaxAttempts: %v, want ErrNoAttemptLimit", err)
	}
	if r := b.get(t, key("evt_1")); r.Attempts != 0 {
		t.Fatalf("refused claim counted an attempt: %+v", r)
	}
}

// Extending a lease hides pending receipts for the lease from now, without counting an
// attempt; receipts no longer pending are left as they are.
func testInboxExtendLease[TTx any](t *testing.T, b *bundle[TTx]) {
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_1")})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_done"), Processed: true, Outcome: "processed"})
	p := &driver.InboxClaimParams{Endpoints: []string{"async"}, Lease: time.Minute, MaxAttempts: 3}
	if r := b.claimOne(t, p); r == nil {
		t.Fatal("nothing claimed")
	}
	b.elapse(t, 50*time.Second)
	n, err := b.ex.InboxExtendLease(b.ctx, []hookinboxtype.Key{key("evt_1"), key("evt_done"), key("evt_absent")}, time.Hour)
	if err != nil || n != 1 {
		t.Fatalf("extended %d %v, want 1", n, err)
	}
	r := b.get(t, key("evt_1"))
	if r.Attempts != 1 || r.State != hookinboxtype.StatePending || r.AvailableAt.Before(time.Now().Add(59*time.Minute)) {
		t.Fatalf("after extending: %+v, want 1 attempt, available in an hour", r)
	}
	b.elapse(t, 10*time.Minute) // past the claim's own lease, not the extension
	if r := b.claimOne(t, p); r != nil {
		t.Fatalf("claim during the extended lease: %+v, want none", r)
	}
	if done := b.get(t, key("evt_done")); !done.AvailableAt.Equal(done.ReceivedAt) {
		t.Fatalf("processed receipt's lease changed: %+v", done)
	}
}

func testInboxRecordFailureOnlyWhilePending[TTx any](t *testing.T, b *bundle[TTx]) {
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_pending")})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_done"), Processed: true, Outcome: "processed"})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_review"), Attempts: 1, LastError: "first", MaxAttempts: 1})
	by := &driver.AttemptBy{Worker: "w", StartedAt: time.Now()}
	for _, id := range []string{"evt_pending", "evt_done", "evt_review"} {
		if err := b.ex.InboxRecordFailure(b.ctx, &driver.InboxFailureParams{Key: key(id), Error: "boom", Delay: time.Hour, By: by}); err != nil {
			t.Fatal(err)
		}
	}
	pending := b.get(t, key("evt_pending"))
	if pending.LastError != "boom" || pending.State != hookinboxtype.StatePending || pending.AvailableAt.Sub(pending.ReceivedAt) < 59*time.Minute {
		t.Fatalf("pending: %+v", pending)
	}
	if a, err := b.ex.ConsoleAttempts(b.ctx, key("evt_pending"), 10); err != nil || len(a) != 1 || a[0].Error != "boom" || a[0].NextRetryAt == nil {
		t.Fatalf("history of the failure: %+v %v, want it with its next retry", a, err)
	}
	done := b.get(t, key("evt_done"))
	if done.LastError != "" || done.State != hookinboxtype.StateProcessed || !done.AvailableAt.Equal(done.ReceivedAt) {
		t.Fatalf("processed receipt changed: %+v", done)
	}
	if review := b.get(t, key("evt_review")); review.LastError != "first" || review.State != hookinboxtype.StateNeedsReview {
		t.Fatalf("receipt in review changed: %+v", review)
	}
	for _, id := range []string{"evt_done", "evt_review"} {
		if a, err := b.ex.ConsoleAttempts(b.ctx, key(id), 10); err != nil || len(a) != 0 {
			t.Fatalf("%s: history %+v %v, want none", id, a, err)
		}
	}
}

// A failure on the attempt the receipt's limit allows last puts it to review, where no
// worker takes it, until a person retries it: pending again, its attempts reset.
func testInboxRecordFailureLastAttempt[TTx any](t *testing.T, b *bundle[TTx]) {
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_1")})
	p := &driver.InboxClaimParams{Endpoints: []string{"async"}, Lease: time.Minute, MaxAttempts: 2}
	for attempt := 1; attempt <= 2; attempt++ {
		if r := b.claimOne(t, p); r == nil || r.Attempts != attempt {
			t.Fatalf("claim %d: %+v", attempt, r)
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
	if r := b.claimOne(t, p); r != nil {
		t.Fatalf("claim of a receipt in review: %+v, want none", r)
	}

	k := key("evt_1")
	if n, err := b.ex.InboxRetry(b.ctx, &driver.InboxRetryParams{Key: &k}); err != nil || n != 1 {
		t.Fatalf("retry: %d %v", n, err)
	}
	if r := b.get(t, k); r.State != hookinboxtype.StatePending || r.Attempts != 0 || r.AvailableAt.After(time.Now().Add(time.Second)) {
		t.Fatalf("after retry: %+v, want pending and available with no attempts", r)
	}
	if r := b.claimOne(t, p); r == nil || r.Attempts != 1 {
		t.Fatalf("claim after retry: %+v", r)
	}
}

// A duplicate's body hash is compared with the receipt's: only a known, different hash
// counts a conflict.
func testInboxNoteDuplicate[TTx any](t *testing.T, b *bundle[TTx]) {
	p := &driver.InboxInsertParams{Key: key("evt_1"), EventType: "x", Payload: []byte(`{}`), MaxAttempts: 10, BodySHA256: []byte("0123456789abcdef0123456789abcdef")}
	if ok, err := b.ex.InboxInsert(b.ctx, p); err != nil || !ok {
		t.Fatal(ok, err)
	}
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_unhashed")})
	if _, conflict, err := b.ex.InboxNoteDuplicate(b.ctx, key("evt_1"), p.BodySHA256); err != nil || conflict {
		t.Fatalf("same body: conflict %v, %v", conflict, err)
	}
	if _, conflict, err := b.ex.InboxNoteDuplicate(b.ctx, key("evt_unhashed"), p.BodySHA256); err != nil || conflict {
		t.Fatalf("a receipt without a hash: conflict %v, %v", conflict, err)
	}
	other := []byte("another body's hash, 32 bytes...")
	stored, conflict, err := b.ex.InboxNoteDuplicate(b.ctx, key("evt_1"), other)
	if err != nil || !conflict || string(stored) != string(p.BodySHA256) {
		t.Fatalf("another body: conflict %v, stored %q, %v", conflict, stored, err)
	}
	if r := b.get(t, key("evt_1")); r.Conflicts != 1 || !bytes.Equal(r.BodySHA256, p.BodySHA256) {
		t.Fatalf("receipt %+v; want 1 conflict and the first body's hash kept", r)
	}
	if list, err := b.ex.InboxList(b.ctx, &driver.InboxListParams{Conflicts: true, Limit: 10}); err != nil || len(list) != 1 || list[0].EventID != "evt_1" {
		t.Fatalf("receipts with conflicts: %+v %v, want evt_1", list, err)
	}
}

func testInboxGetAbsent[TTx any](t *testing.T, b *bundle[TTx]) {
	if r := b.get(t, key("evt_absent")); r != nil {
		t.Fatalf("%+v", r)
	}
}

func testInboxList[TTx any](t *testing.T, b *bundle[TTx]) {
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_1"), Processed: true, Outcome: "processed"})
	b.elapse(t, time.Second)
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_2"), Attempts: 5, MaxAttempts: 5})
	b.elapse(t, time.Second)
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_3")})
	b.elapse(t, time.Second)
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
		"conflicts":    {driver.InboxListParams{Conflicts: true, Limit: 10}, "[]"},
	} {
		list, err := b.ex.InboxList(b.ctx, &tc.p)
		if err != nil {
			t.Fatal(err)
		}
		ids := []string{}
		for _, r := range list {
			ids = append(ids, r.EventID)
		}
		if fmt.Sprint(ids) != tc.want {
			t.Errorf("%s: %v, want %s", name, ids, tc.want)
		}
	}
}

func testInboxStats[TTx any](t *testing.T, b *bundle[TTx]) {
	s, err := b.ex.InboxStats(b.ctx, &driver.InboxStatsParams{RecentWindow: time.Hour})
	if err != nil || s.Unprocessed != 0 || s.OldestUnprocessedAge != 0 || s.NeedsReview != 0 || len(s.ReceivedByType) != 0 {
		t.Fatalf("empty inbox: %+v %v", s, err)
	}
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_old"), EventType: "invoice.created"})
	b.elapse(t, 2*time.Hour)
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_spent"), Attempts: 3, MaxAttempts: 3})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_a"), Processed: true, Outcome: "processed"})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_b"), Processed: true, Outcome: "processed"})
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

func testInboxRetry[TTx any](t *testing.T, b *bundle[TTx]) {
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
