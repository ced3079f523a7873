package drivertest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// The operator console's reads and actions (driver.ConsoleExecutor), each against its
// documentation in driver/console.go.

func consoleBehaviours[TTx any]() []behaviour[TTx] {
	return []behaviour[TTx]{
		{method: "ConsoleEndpoints", name: "ArrivalsSinceAndWhatWaitsNow", run: testConsoleEndpoints[TTx]},
		{method: "ConsoleSeries", name: "EveryBucketOldestFirst", run: testConsoleSeries[TTx]},
		{method: "ConsoleReviewGroups", name: "ByEndpointAndFingerprintLargestFirst", run: testConsoleReviewGroups[TTx]},
		{method: "ConsoleReceipts", name: "NewestFirstByEveryFilterAndCursor", run: testConsoleReceipts[TTx]},
		{method: "ConsoleCountReceipts", name: "MatchingCappedAtTheLimit", run: testConsoleCountReceipts[TTx]},
		{method: "ConsoleAttempts", name: "HistoryNewestFirst", run: testConsoleAttempts[TTx]},
		{method: "ConsoleOutbox", name: "BySourceOrStateBeforeAnID", run: testConsoleOutbox[TTx]},
		{method: "ConsoleOutboxGet", name: "OneMessageOrNil", run: testConsoleOutboxGet[TTx]},
		{method: "ConsoleDeliveries", name: "HistoryNewestFirst", run: testConsoleDeliveries[TTx]},
		{method: "ConsoleAudit", name: "EveryActionNewestFirstBeforeAnID", run: testConsoleAudit[TTx]},
		{method: "ConsoleApply", name: "ReceiptActionsOnlyFromTheStatesShown", run: testConsoleApplyReceipts[TTx]},
		{method: "ConsoleApply", name: "FilterActionsOldestFirstUpToTheLimit", run: testConsoleApplyFilter[TTx]},
		{method: "ConsoleApply", name: "RetryOutboxOnlyUndelivered", run: testConsoleApplyOutbox[TTx]},
		{method: "ConsoleApply", name: "IncompleteOrUnknownActionsAreRefused", run: testConsoleApplyRefused[TTx]},
	}
}

// failLast makes each receipt of keys fail its only attempt with its error, as a
// worker's would: it needs review, with the error's fingerprint. No other receipt of
// their endpoints may be available.
func (b *bundle[TTx]) failLast(t *testing.T, failures map[hookinboxtype.Key]string) {
	t.Helper()
	var endpoints []string
	for k := range failures {
		b.insert(t, &driver.InboxInsertParams{Key: k, MaxAttempts: 1})
		endpoints = append(endpoints, k.Endpoint)
	}
	rs, err := b.ex.InboxClaim(b.ctx, &driver.InboxClaimParams{Endpoints: endpoints, Limit: 100, Lease: time.Minute, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, r := range rs {
		msg, ok := failures[r.Key]
		if !ok {
			t.Fatalf("claimed %v, which was to stay pending", r.Key)
		}
		failed++
		if err := b.ex.InboxRecordFailure(b.ctx, &driver.InboxFailureParams{Key: r.Key, Error: msg}); err != nil {
			t.Fatal(err)
		}
		if got := b.get(t, r.Key); got.State != hookinboxtype.StateNeedsReview {
			t.Fatalf("%v: %+v, want needs review", r.Key, got)
		}
	}
	if failed != len(failures) {
		t.Fatalf("%d of %d receipts failed", failed, len(failures))
	}
}

func eventIDs(rs []*hookinboxtype.Receipt) string {
	ids := []string{}
	for _, r := range rs {
		ids = append(ids, r.EventID)
	}
	return strings.Join(ids, " ")
}

func testConsoleEndpoints[TTx any](t *testing.T, b *bundle[TTx]) {
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_old")})
	b.elapse(t, 2*time.Hour)
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_pending")})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_review"), Attempts: 1, MaxAttempts: 1})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_done"), Processed: true, Outcome: "processed"})
	b.insert(t, &driver.InboxInsertParams{Key: hookinboxtype.Key{Provider: "stripe", Endpoint: "billing", EventID: "evt_b"}, Processed: true, Outcome: "processed"})
	if _, err := b.ex.OutboxInsert(b.ctx, &driver.OutboxInsertParams{AggregateType: "a", AggregateID: "1", EventType: "e", Payload: []byte(`{}`), Source: key("evt_done")}); err != nil {
		t.Fatal(err)
	}
	list, err := b.ex.ConsoleEndpoints(b.ctx, time.Now().Add(-time.Hour))
	if err != nil || len(list) != 2 {
		t.Fatalf("endpoints %+v %v, want async and billing", list, err)
	}
	async, billing := list[0], list[1]
	if async.Endpoint != "async" || async.Received != 3 || async.Processed != 1 || async.Pending != 2 || async.NeedsReview != 1 ||
		async.OutboxPending != 1 || async.OldestPendingAge < 2*time.Hour || async.OldestPendingAge > 3*time.Hour {
		t.Errorf("async: %+v, want 3 received in the hour, 1 processed, 2 pending (the oldest 2 h), 1 in review, 1 message", async)
	}
	if billing.Endpoint != "billing" || billing.Received != 1 || billing.Processed != 1 || billing.Pending != 0 ||
		billing.NeedsReview != 0 || billing.OutboxPending != 0 || billing.OldestPendingAge != 0 {
		t.Errorf("billing: %+v", billing)
	}
}

func testConsoleSeries[TTx any](t *testing.T, b *bundle[TTx]) {
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_before"), Processed: true, Outcome: "processed"})
	b.elapse(t, 8*time.Minute)
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_early")})
	b.elapse(t, 2*time.Minute)
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_now")})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_done"), Processed: true, Outcome: "processed"})
	// Buckets start 150, 90 and 30 seconds ago: evt_early is in the first, the others
	// in the last, evt_before before them all.
	since := time.Now().Add(-150 * time.Second)
	points, err := b.ex.ConsoleSeries(b.ctx, since, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, p := range points {
		if !p.Start.Equal(since.Add(time.Duration(i) * time.Minute)) {
			t.Errorf("bucket %d starts %v, want %v", i, p.Start, since.Add(time.Duration(i)*time.Minute))
		}
		got = append(got, fmt.Sprintf("%d/%d", p.Received, p.Processed))
	}
	if fmt.Sprint(got) != "[1/0 0/0 2/1]" {
		t.Fatalf("received/processed by bucket %v, want [1/0 0/0 2/1]", got)
	}
}

func testConsoleReviewGroups[TTx any](t *testing.T, b *bundle[TTx]) {
	b.failLast(t, map[hookinboxtype.Key]string{key("evt_a"): "timeout after 3s on in_1"})
	b.elapse(t, time.Minute)
	b.failLast(t, map[hookinboxtype.Key]string{
		key("evt_b"): "timeout after 5s on in_2",
		{Provider: "stripe", Endpoint: "hybrid", EventID: "evt_c"}: "refused",
	})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_d"), Attempts: 1, MaxAttempts: 1, LastError: "boom"})
	groups, err := b.ex.ConsoleReviewGroups(b.ctx, 10)
	if err != nil || len(groups) != 3 {
		t.Fatalf("groups %+v %v, want 3", groups, err)
	}
	timeout := groups[0]
	if timeout.Endpoint != "async" || timeout.Fingerprint != driver.ErrorFingerprint("timeout after 3s on in_1") || timeout.Count != 2 ||
		timeout.Example != "timeout after 5s on in_2" || !timeout.Oldest.Before(timeout.Newest) {
		t.Errorf("largest group %+v, want evt_a's and evt_b's timeouts, the newest (evt_b's) as the example", timeout)
	}
	// Groups of one, by endpoint: a receipt stored failed has its error for a
	// fingerprint.
	if g := groups[1]; g.Endpoint != "async" || g.Fingerprint != "boom" || g.Count != 1 || !g.Oldest.Equal(g.Newest) {
		t.Errorf("second group %+v, want evt_d's", g)
	}
	if g := groups[2]; g.Endpoint != "hybrid" || g.Fingerprint != "refused" || g.Example != "refused" || g.Count != 1 {
		t.Errorf("third group %+v, want evt_c's", g)
	}
	if groups, err := b.ex.ConsoleReviewGroups(b.ctx, 1); err != nil || len(groups) != 1 || groups[0].Count != 2 {
		t.Fatalf("limit 1: %+v %v, want the largest", groups, err)
	}
}

// receiptsWorld stores four receipts a minute apart, oldest first: evt_1 processed,
// evt_2 pending, evt_3 (github) in review, evt_4 (hybrid) pending; it returns evt_3's
// error fingerprint.
func (b *bundle[TTx]) receiptsWorld(t *testing.T) (fingerprint string) {
	t.Helper()
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_1"), Processed: true, Outcome: "processed"})
	b.elapse(t, time.Hour)
	// Not available, so that failLast's claim leaves it alone.
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_2"), EventType: "invoice.created", Delay: time.Hour})
	b.elapse(t, time.Minute)
	b.failLast(t, map[hookinboxtype.Key]string{{Provider: "github", Endpoint: "async", EventID: "evt_3"}: `handler: "push" refused with 422`})
	b.elapse(t, time.Minute)
	b.insert(t, &driver.InboxInsertParams{Key: hookinboxtype.Key{Provider: "stripe", Endpoint: "hybrid", EventID: "evt_4"}})
	return driver.ErrorFingerprint(`handler: "push" refused with 422`)
}

// receiptFilters are filters of receiptsWorld and what each selects, newest first.
func receiptFilters(fingerprint string) map[string]struct {
	f    driver.ReceiptFilter
	want string
} {
	half := time.Now().Add(-30 * time.Minute)
	return map[string]struct {
		f    driver.ReceiptFilter
		want string
	}{
		"none":          {driver.ReceiptFilter{}, "evt_4 evt_3 evt_2 evt_1"},
		"endpoint":      {driver.ReceiptFilter{Endpoint: "async"}, "evt_3 evt_2 evt_1"},
		"provider":      {driver.ReceiptFilter{Provider: "github"}, "evt_3"},
		"event type":    {driver.ReceiptFilter{EventType: "invoice.paid"}, "evt_4 evt_3 evt_1"},
		"pending":       {driver.ReceiptFilter{State: hookinboxtype.StatePending}, "evt_4 evt_2"},
		"needs review":  {driver.ReceiptFilter{State: hookinboxtype.StateNeedsReview}, "evt_3"},
		"processed":     {driver.ReceiptFilter{State: hookinboxtype.StateProcessed}, "evt_1"},
		"fingerprint":   {driver.ReceiptFilter{Fingerprint: fingerprint}, "evt_3"},
		"since":         {driver.ReceiptFilter{Since: half}, "evt_4 evt_3 evt_2"},
		"until":         {driver.ReceiptFilter{Until: half}, "evt_1"},
		"state and end": {driver.ReceiptFilter{State: hookinboxtype.StatePending, Endpoint: "async"}, "evt_2"},
	}
}

func testConsoleReceipts[TTx any](t *testing.T, b *bundle[TTx]) {
	fingerprint := b.receiptsWorld(t)
	list := func(f driver.ReceiptFilter, limit int) string {
		t.Helper()
		rs, err := b.ex.ConsoleReceipts(b.ctx, &f, limit)
		if err != nil {
			t.Fatal(err)
		}
		return eventIDs(rs)
	}
	for name, tc := range receiptFilters(fingerprint) {
		if got := list(tc.f, 10); got != tc.want {
			t.Errorf("%s: %q, want %q", name, got, tc.want)
		}
	}
	// Page by page, one receipt a page, with the last of each as the cursor.
	var pages []string
	var after *driver.Cursor
	for range 6 {
		rs, err := b.ex.ConsoleReceipts(b.ctx, &driver.ReceiptFilter{After: after}, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) == 0 {
			break
		}
		pages = append(pages, eventIDs(rs))
		after = &driver.Cursor{ReceivedAt: rs[0].ReceivedAt, Key: rs[0].Key}
	}
	if fmt.Sprint(pages) != "[evt_4 evt_3 evt_2 evt_1]" {
		t.Errorf("pages %v, want one receipt each, newest first", pages)
	}
	// An exact event id, under each (provider, endpoint) pair of Keys.
	pairs := []hookinboxtype.Key{{Provider: "stripe", Endpoint: "async"}, {Provider: "github", Endpoint: "async"}}
	if got := list(driver.ReceiptFilter{EventID: "evt_3", Keys: pairs}, 10); got != "evt_3" {
		t.Errorf("evt_3 by id: %q", got)
	}
	if got := list(driver.ReceiptFilter{EventID: "evt_3", Keys: pairs[:1]}, 10); got != "" {
		t.Errorf("evt_3 under stripe only: %q, want none", got)
	}
	if got := list(driver.ReceiptFilter{}, 2); got != "evt_4 evt_3" {
		t.Errorf("limit 2: %q", got)
	}
	rs, err := b.ex.ConsoleReceipts(b.ctx, &driver.ReceiptFilter{Provider: "github"}, 1)
	if err != nil || len(rs) != 1 || rs[0].State != hookinboxtype.StateNeedsReview || rs[0].LastError == "" || rs[0].Attempts != 1 {
		t.Fatalf("the receipt in review: %+v %v", rs, err)
	}
}

func testConsoleCountReceipts[TTx any](t *testing.T, b *bundle[TTx]) {
	fingerprint := b.receiptsWorld(t)
	for name, tc := range receiptFilters(fingerprint) {
		want := len(strings.Fields(tc.want))
		if n, err := b.ex.ConsoleCountReceipts(b.ctx, &tc.f, 100); err != nil || n != want {
			t.Errorf("%s: counted %d %v, want %d", name, n, err, want)
		}
	}
	if n, err := b.ex.ConsoleCountReceipts(b.ctx, &driver.ReceiptFilter{}, 3); err != nil || n != 3 {
		t.Errorf("capped at 3: %d %v", n, err)
	}
}

func testConsoleAttempts[TTx any](t *testing.T, b *bundle[TTx]) {
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_1")})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_other")})
	p := &driver.InboxClaimParams{Endpoints: []string{"async"}, Lease: time.Minute, MaxAttempts: 5}
	by := func() *driver.AttemptBy { return &driver.AttemptBy{Worker: "w1", StartedAt: time.Now()} }
	for attempt := 1; attempt <= 3; attempt++ {
		var claimed *hookinboxtype.Receipt
		for claimed == nil || claimed.EventID != "evt_1" { // skip evt_other, leased
			if claimed = b.claimOne(t, p); claimed == nil {
				t.Fatalf("attempt %d: nothing to claim", attempt)
			}
		}
		var err error
		if attempt < 3 {
			err = b.ex.InboxRecordFailure(b.ctx, &driver.InboxFailureParams{Key: key("evt_1"), Error: fmt.Sprint("boom ", attempt), By: by()})
		} else {
			err = b.ex.InboxMarkProcessed(b.ctx, []hookinboxtype.Key{key("evt_1")}, "processed", by())
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	history, err := b.ex.ConsoleAttempts(b.ctx, key("evt_1"), 10)
	if err != nil || len(history) != 3 {
		t.Fatalf("history %+v %v, want 3 attempts", history, err)
	}
	var got []string
	for _, a := range history {
		got = append(got, fmt.Sprintf("%d:%s:%v", a.Attempt, a.Error, a.NextRetryAt != nil))
		if a.Worker != "w1" || a.FinishedAt.Before(a.StartedAt) {
			t.Errorf("attempt %+v", a)
		}
	}
	if fmt.Sprint(got) != "[3::false 2:boom 2:true 1:boom 1:true]" {
		t.Errorf("history %v, want the success, then the failures with their retries, newest first", got)
	}
	if history, err := b.ex.ConsoleAttempts(b.ctx, key("evt_1"), 1); err != nil || len(history) != 1 || history[0].Attempt != 3 {
		t.Errorf("limit 1: %+v %v", history, err)
	}
	if history, err := b.ex.ConsoleAttempts(b.ctx, key("evt_other"), 10); err != nil || len(history) != 0 {
		t.Errorf("another receipt's: %+v %v, want none", history, err)
	}
}

func testConsoleOutbox[TTx any](t *testing.T, b *bundle[TTx]) {
	ids := b.outboxStates(t) // ids[0] in review, ids[1] pending, ids[2] published
	source := key("evt_a")
	var written []int64
	for range 2 {
		id, err := b.ex.OutboxInsert(b.ctx, &driver.OutboxInsertParams{AggregateType: "a", AggregateID: "1", EventType: "e", Payload: []byte(`{}`), Source: source})
		if err != nil {
			t.Fatal(err)
		}
		written = append(written, id)
	}
	list := func(f driver.OutboxFilter, limit int) string {
		t.Helper()
		msgs, err := b.ex.ConsoleOutbox(b.ctx, &f, limit)
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, m := range msgs {
			got = append(got, m.ID)
		}
		return fmt.Sprint(got)
	}
	for name, tc := range map[string]struct {
		f     driver.OutboxFilter
		limit int
		want  []int64
	}{
		"all":          {driver.OutboxFilter{}, 10, []int64{written[1], written[0], ids[2], ids[1], ids[0]}},
		"limit":        {driver.OutboxFilter{}, 2, []int64{written[1], written[0]}},
		"before":       {driver.OutboxFilter{BeforeID: written[0]}, 10, []int64{ids[2], ids[1], ids[0]}},
		"needs review": {driver.OutboxFilter{State: hookinboxtype.StateNeedsReview}, 10, []int64{ids[0]}},
		"published":    {driver.OutboxFilter{State: hookinboxtype.StatePublished}, 10, []int64{ids[2]}},
		"source":       {driver.OutboxFilter{Source: &source}, 10, []int64{written[1], written[0]}},
		"source, one":  {driver.OutboxFilter{Source: &source}, 1, []int64{written[1]}},
	} {
		if got := list(tc.f, tc.limit); got != fmt.Sprint(tc.want) {
			t.Errorf("%s: %s, want %v", name, got, tc.want)
		}
	}
}

func testConsoleOutboxGet[TTx any](t *testing.T, b *bundle[TTx]) {
	ids := b.outboxStates(t)
	m, err := b.ex.ConsoleOutboxGet(b.ctx, ids[2])
	if err != nil || m == nil || m.ID != ids[2] || m.State != hookinboxtype.StatePublished || m.PublishedAt == nil || m.Attempts != 1 ||
		m.MaxAttempts != 1 || m.AggregateID != "in_2" || !sameJSON(m.Payload, []byte(`{"n":2}`)) {
		t.Fatalf("published message: %+v %v", m, err)
	}
	if m, err := b.ex.ConsoleOutboxGet(b.ctx, ids[0]); err != nil || m.State != hookinboxtype.StateNeedsReview || m.LastError != "refused" {
		t.Fatalf("message in review: %+v %v", m, err)
	}
	if m, err := b.ex.ConsoleOutboxGet(b.ctx, ids[2]+100); err != nil || m != nil {
		t.Fatalf("absent message: %+v %v, want nil", m, err)
	}
}

func testConsoleDeliveries[TTx any](t *testing.T, b *bundle[TTx]) {
	id := b.deliveries(t, "", 2)
	other := b.deliveries(t, "other", 1)
	m := b.claimOutbox(t, driver.OutboxClaimParams{Destinations: []string{""}, Limit: 1, Lease: time.Minute, MaxAttempts: 10})[0]
	if ok, err := b.ex.OutboxMarkPublished(b.ctx, id, m.FencingToken); err != nil || !ok {
		t.Fatal(ok, err)
	}
	history, err := b.ex.ConsoleDeliveries(b.ctx, id, 10)
	if err != nil || len(history) != 3 {
		t.Fatalf("history %+v %v, want 3 deliveries", history, err)
	}
	var got []string
	for i, d := range history {
		got = append(got, fmt.Sprintf("%d:%s:%v", d.Attempt, d.Error, d.NextRetryAt != nil))
		if i > 0 && d.ClaimToken >= history[i-1].ClaimToken {
			t.Errorf("delivery %+v after %+v: tokens not newest first", d, history[i-1])
		}
	}
	if fmt.Sprint(got) != "[3::false 2:refused:true 1:refused:true]" {
		t.Errorf("history %v, want the publish, then the refusals with their retries", got)
	}
	if history, err := b.ex.ConsoleDeliveries(b.ctx, id, 2); err != nil || len(history) != 2 || history[0].Attempt != 3 {
		t.Errorf("limit 2: %+v %v", history, err)
	}
	if history, err := b.ex.ConsoleDeliveries(b.ctx, other, 10); err != nil || len(history) != 1 {
		t.Errorf("another message's: %+v %v, want its one", history, err)
	}
}

func testConsoleAudit[TTx any](t *testing.T, b *bundle[TTx]) {
	if entries, err := b.ex.ConsoleAudit(b.ctx, driver.IDPage{}, 10); err != nil || len(entries) != 0 {
		t.Fatalf("empty audit: %+v %v", entries, err)
	}
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_1"), Attempts: 1, MaxAttempts: 1})
	k := key("evt_1")
	before := time.Now().Add(-time.Second)
	for _, a := range []*driver.ConsoleAction{
		{Action: driver.ActionRetry, Actor: "ana", Target: "evt_1", Key: &k},
		{Action: driver.ActionResolve, Actor: "bo", Target: "evt_1", Note: "duplicate of evt_0", Key: &k},
		{Action: driver.ActionRetry, Actor: "ana", Target: "evt_1 again", Key: &k},
	} {
		if _, err := b.ex.ConsoleApply(b.ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := b.ex.ConsoleAudit(b.ctx, driver.IDPage{}, 10)
	if err != nil || len(entries) != 3 {
		t.Fatalf("audit %+v %v, want 3 entries", entries, err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, fmt.Sprintf("%s/%s/%s/%d/%s", e.Actor, e.Action, e.Target, e.Rows, e.Note))
		if e.At.Before(before) || e.At.After(time.Now().Add(time.Second)) {
			t.Errorf("entry at %v, want now", e.At)
		}
	}
	// The resolve discarded evt_1, so the retry after it changed nothing.
	if fmt.Sprint(got) != "[ana/retry/evt_1 again/0/ bo/resolve/evt_1/1/duplicate of evt_0 ana/retry/evt_1/1/]" {
		t.Errorf("audit %v", got)
	}
	page, err := b.ex.ConsoleAudit(b.ctx, driver.IDPage{BeforeID: entries[0].ID}, 1)
	if err != nil || len(page) != 1 || page[0].ID != entries[1].ID {
		t.Errorf("before %d, limit 1: %+v %v, want the middle entry", entries[0].ID, page, err)
	}
}

func testConsoleApplyReceipts[TTx any](t *testing.T, b *bundle[TTx]) {
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_review"), Attempts: 3, MaxAttempts: 3, LastError: "boom"})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_pending"), Delay: time.Hour})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_done"), Processed: true, Outcome: "processed"})
	apply := func(action string, id string, from ...hookinboxtype.State) int {
		t.Helper()
		k := key(id)
		n, err := b.ex.ConsoleApply(b.ctx, &driver.ConsoleAction{Action: action, Actor: "ana", Target: id, Key: &k, FromStates: from})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := apply(driver.ActionRetry, "evt_review"); n != 1 {
		t.Fatalf("retry of a receipt in review: %d", n)
	}
	if r := b.get(t, key("evt_review")); r.State != hookinboxtype.StatePending || r.Attempts != 0 || r.AvailableAt.After(time.Now().Add(time.Second)) {
		t.Fatalf("after retry: %+v, want pending, available now, attempts reset", r)
	}
	if n := apply(driver.ActionRetry, "evt_done"); n != 0 {
		t.Fatalf("retry of a processed receipt: %d, want 0", n)
	}
	// Shown pending, it went to review meanwhile: the action changes nothing.
	if n := apply(driver.ActionResolve, "evt_pending", hookinboxtype.StateNeedsReview); n != 0 {
		t.Fatalf("resolve from a state it is not in: %d, want 0", n)
	}
	if n := apply(driver.ActionResolve, "evt_pending"); n != 1 {
		t.Fatalf("resolve: %d", n)
	}
	if r := b.get(t, key("evt_pending")); r.State != hookinboxtype.StateDiscarded {
		t.Fatalf("after resolve: %+v, want discarded", r)
	}
	if r := b.get(t, key("evt_done")); r.State != hookinboxtype.StateProcessed {
		t.Fatalf("processed receipt changed: %+v", r)
	}
}

func testConsoleApplyFilter[TTx any](t *testing.T, b *bundle[TTx]) {
	for i := range 3 {
		b.insert(t, &driver.InboxInsertParams{Key: key(fmt.Sprint("evt_", i)), Attempts: 1, MaxAttempts: 1, LastError: "boom"})
		b.elapse(t, time.Minute)
	}
	b.insert(t, &driver.InboxInsertParams{Key: hookinboxtype.Key{Provider: "stripe", Endpoint: "hybrid", EventID: "evt_h"}, Attempts: 1, MaxAttempts: 1})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_pending")})
	action := &driver.ConsoleAction{Action: driver.ActionRetry, Actor: "ana", Target: "async in review",
		Filter: &driver.ReceiptFilter{Endpoint: "async"}, FromStates: []hookinboxtype.State{hookinboxtype.StateNeedsReview}, Limit: 2}
	for _, want := range []int{2, 1, 0} {
		if n, err := b.ex.ConsoleApply(b.ctx, action); err != nil || n != want {
			t.Fatalf("retry by filter: %d %v, want %d", n, err, want)
		}
		if want == 2 {
			// The oldest first: evt_2, the newest, waits for the next round.
			if r := b.get(t, key("evt_2")); r.State != hookinboxtype.StateNeedsReview {
				t.Fatalf("evt_2 retried in the first round: %+v", r)
			}
		}
	}
	if r := b.get(t, hookinboxtype.Key{Provider: "stripe", Endpoint: "hybrid", EventID: "evt_h"}); r.State != hookinboxtype.StateNeedsReview {
		t.Fatalf("another endpoint's receipt retried: %+v", r)
	}
	resolve := &driver.ConsoleAction{Action: driver.ActionResolve, Actor: "ana", Target: "pending",
		Filter: &driver.ReceiptFilter{}, FromStates: []hookinboxtype.State{hookinboxtype.StatePending}, Limit: 10}
	if n, err := b.ex.ConsoleApply(b.ctx, resolve); err != nil || n != 4 {
		t.Fatalf("resolve every pending receipt: %d %v, want the 3 retried and evt_pending", n, err)
	}
}

func testConsoleApplyOutbox[TTx any](t *testing.T, b *bundle[TTx]) {
	ids := b.outboxStates(t)
	for id, want := range map[int64]int{ids[0]: 1, ids[2]: 0} {
		n, err := b.ex.ConsoleApply(b.ctx, &driver.ConsoleAction{Action: driver.ActionRetryOutbox, Actor: "ana", Target: fmt.Sprint(id), OutboxID: id})
		if err != nil || n != want {
			t.Fatalf("retry outbox %d: %d %v, want %d", id, n, err, want)
		}
	}
	if m, err := b.ex.ConsoleOutboxGet(b.ctx, ids[0]); err != nil || m.State != hookinboxtype.StatePending || m.Attempts != 0 {
		t.Fatalf("after retry: %+v %v, want pending with attempts reset", m, err)
	}
	if m, err := b.ex.ConsoleOutboxGet(b.ctx, ids[2]); err != nil || m.State != hookinboxtype.StatePublished {
		t.Fatalf("published message retried: %+v %v", m, err)
	}
}

func testConsoleApplyRefused[TTx any](t *testing.T, b *bundle[TTx]) {
	k := key("evt_1")
	b.insert(t, &driver.InboxInsertParams{Key: k, Attempts: 1, MaxAttempts: 1})
	for name, a := range map[string]*driver.ConsoleAction{
		"no target":          {Action: driver.ActionRetry, Actor: "ana"},
		"filter, no states":  {Action: driver.ActionRetry, Actor: "ana", Filter: &driver.ReceiptFilter{}, Limit: 10},
		"filter, no limit":   {Action: driver.ActionRetry, Actor: "ana", Filter: &driver.ReceiptFilter{}, FromStates: []hookinboxtype.State{hookinboxtype.StateNeedsReview}},
		"unknown action":     {Action: "delete", Actor: "ana", Key: &k},
		"unknown, no target": {Action: "delete", Actor: "ana"},
	} {
		if n, err := b.ex.ConsoleApply(b.ctx, a); err == nil {
			t.Errorf("%s: changed %d, want an error", name, n)
		}
	}
	if entries, err := b.ex.ConsoleAudit(b.ctx, driver.IDPage{}, 10); err != nil || len(entries) != 0 {
		t.Fatalf("audit after refused actions: %+v %v, want none", entries, err)
	}
	if r := b.get(t, k); r.State != hookinboxtype.StateNeedsReview {
		t.Fatalf("refused action changed the receipt: %+v", r)
	}
}
