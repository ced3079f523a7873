package drivertest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// The operator console's methods that pause and resume endpoints, redeliver and
// bulk-act on outbox messages, roll up the overview's counts and page both ways, each
// against its documentation in driver/console.go.

// consoleOpsBehaviours are those checks as behaviours of the suite, each named after
// the method it is chiefly about.
func consoleOpsBehaviours[TTx any]() []behaviour[TTx] {
	ops := func(fn func(*testing.T, *opsBundle)) func(t *testing.T, b *bundle[TTx]) {
		return func(t *testing.T, b *bundle[TTx]) {
			fn(t, &opsBundle{ctx: b.ctx, ex: b.ex, fill: fillPending(b.ex)})
		}
	}
	return []behaviour[TTx]{
		{method: "ConsoleEndpointStates", name: "PauseParksWhatWaitsAndResumeReleasesIt", run: ops(pauseParksAndResumeReleases)},
		{method: "OutboxClaim", name: "PausedEndpointsOutboxMessagesWait", run: ops(pausedOutboxWaits)},
		{method: "InboxInsertMany", name: "LeasedReceiptsCountTheirAttemptOrParkWhilePaused", run: ops(leasedInsert)},
		{method: "InboxExtendLease", name: "LeavesParkedReceiptsParked", run: ops(leasedInsert)},
		{method: "ConsoleSeedEndpoints", name: "StoresDefaultsOnlyForEndpointsWithoutState", run: ops(seedKeepsStoredState)},
		{method: "ConsoleApply", name: "RedeliverKeepsTheIdAndTheIdempotencyKey", run: ops(redeliverKeepsKey)},
		{method: "ConsoleOutboxReviewGroups", name: "OutboxFailuresGroupAndBulkActionsTakeTheirFilter", run: ops(outboxGroupsAndBulk)},
		{method: "ConsoleCountOutbox", name: "CountsWhatTheOutboxFilterSelects", run: ops(outboxGroupsAndBulk)},
		{method: "ConsoleRollup", name: "GivesTheSameCountsAsCountingLive", run: ops(rollupMatchesLive)},
		{method: "ConsoleRollup", name: "ALargeBacklogIsShownAsTheRollupCountedIt", run: ops(largeBacklogCounted)},
		{method: "ConsoleReviewGroups", name: "CarryTheNewestMembersPayload", run: ops(reviewGroupExample)},
		{method: "ConsoleReceiptDetail", name: "HoldsTheRequestAndTheLastConflict", run: ops(receiptDetail)},
		{method: "ConsoleReceipts", name: "ListsPageNewerAsWellAsOlder", run: ops(pagesBothWays)},
		{method: "ConsoleReceipts", name: "SearchMatchesThePayloadsText", run: ops(searchPayload)},
	}
}

// fillPending returns what inserts n pending receipts of an endpoint, a thousand a
// statement: the checks that need a backlog larger than inserting one by one would
// be quick for.
func fillPending(ex driver.Executor) func(t *testing.T, endpoint string, n int) {
	return func(t *testing.T, endpoint string, n int) {
		t.Helper()
		for done := 0; done < n; {
			batch := make([]*driver.InboxInsertParams, 0, min(1000, n-done))
			for range cap(batch) {
				done++
				batch = append(batch, &driver.InboxInsertParams{
					Key:       hookinboxtype.Key{Provider: "stripe", Endpoint: endpoint, EventID: fmt.Sprintf("fill_%d", done)},
					EventType: "t", Payload: []byte("{}"), MaxAttempts: 3,
				})
			}
			if _, err := ex.InboxInsertMany(context.Background(), batch); err != nil {
				t.Fatal(err)
			}
		}
	}
}

type opsBundle struct {
	ctx  context.Context
	ex   driver.Executor
	fill func(t *testing.T, endpoint string, n int)
}

func opsKey(endpoint, id string) hookinboxtype.Key {
	return hookinboxtype.Key{Provider: "stripe", Endpoint: endpoint, EventID: id}
}

func (b *opsBundle) receive(t *testing.T, endpoint, id, payload string) hookinboxtype.Key {
	t.Helper()
	k := opsKey(endpoint, id)
	if _, err := b.ex.InboxInsert(b.ctx, &driver.InboxInsertParams{
		Key: k, EventType: "invoice.paid", Payload: []byte(payload), MaxAttempts: 3,
	}); err != nil {
		t.Fatal(err)
	}
	return k
}

func (b *opsBundle) claim(t *testing.T, endpoints ...string) []*hookinboxtype.Receipt {
	t.Helper()
	rs, err := b.ex.InboxClaim(b.ctx, &driver.InboxClaimParams{Endpoints: endpoints, Limit: 100, Lease: time.Minute, MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func (b *opsBundle) apply(t *testing.T, a *driver.ConsoleAction) int {
	t.Helper()
	if a.Actor == "" {
		a.Actor = "alice"
	}
	if a.Target == "" {
		a.Target = a.Action
	}
	n, err := b.ex.ConsoleApply(b.ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", a.Action, err)
	}
	return n
}

func (b *opsBundle) get(t *testing.T, k hookinboxtype.Key) *hookinboxtype.Receipt {
	t.Helper()
	r, err := b.ex.InboxGet(b.ctx, k)
	if err != nil || r == nil {
		t.Fatalf("get %v: %v %v", k, r, err)
	}
	return r
}

func (b *opsBundle) lastAudit(t *testing.T) *driver.AuditEntry {
	t.Helper()
	list, err := b.ex.ConsoleAudit(b.ctx, driver.IDPage{}, 1)
	if err != nil || len(list) != 1 {
		t.Fatalf("audit: %v %v", list, err)
	}
	return list[0]
}

func opsIDs(rs []*hookinboxtype.Receipt) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.EventID)
	}
	slices.Sort(out)
	return out
}

func (b *opsBundle) summary(t *testing.T, since time.Time) map[string]*driver.EndpointSummary {
	t.Helper()
	list, err := b.ex.ConsoleEndpoints(b.ctx, since)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]*driver.EndpointSummary{}
	for _, s := range list {
		m[s.Endpoint] = s
	}
	return m
}

func pauseParksAndResumeReleases(t *testing.T, b *opsBundle) {
	a1 := b.receive(t, "a", "a1", `{}`)
	b.receive(t, "b", "b1", `{}`)
	if n := b.apply(t, &driver.ConsoleAction{Action: driver.ActionPause, Endpoint: "a", Target: "endpoint a"}); n != 1 {
		t.Fatalf("pause changed %d, want 1", n)
	}
	if e := b.lastAudit(t); e.Action != driver.ActionPause || e.Rows != 1 || e.Actor != "alice" {
		t.Errorf("audit %+v", e)
	}
	if r := b.get(t, a1); !r.AvailableAt.Equal(driver.ParkedAt) || r.State != hookinboxtype.StatePending {
		t.Fatalf("a1 after the pause: available %v state %s, want parked and pending", r.AvailableAt, r.State)
	}
	// A receipt that arrives while paused is parked by the claim that meets it.
	a2 := b.receive(t, "a", "a2", `{}`)
	if got := opsIDs(b.claim(t, "a", "b")); !slices.Equal(got, []string{"b1"}) {
		t.Fatalf("claim while a is paused: %v, want [b1]", got)
	}
	if got := b.claim(t, "a"); len(got) != 0 {
		t.Fatalf("claim of the paused endpoint alone: %v", opsIDs(got))
	}
	if r := b.get(t, a2); !r.AvailableAt.Equal(driver.ParkedAt) || r.Attempts != 0 {
		t.Fatalf("a2: available %v attempts %d, want parked with no attempt counted", r.AvailableAt, r.Attempts)
	}
	if s := b.summary(t, time.Now().Truncate(time.Minute).Add(-time.Hour))["a"]; s == nil || !s.Paused || s.Pending != 2 {
		t.Fatalf("summary of a: %+v, want paused with 2 pending", s)
	}
	states, err := b.ex.ConsoleEndpointStates(b.ctx)
	if err != nil || len(states) != 1 || states[0].Endpoint != "a" || !states[0].Paused || states[0].ChangedBy != "alice" {
		t.Fatalf("states %+v %v", states, err)
	}
	if n := b.apply(t, &driver.ConsoleAction{Action: driver.ActionPause, Endpoint: "a"}); n != 0 {
		t.Errorf("pausing a paused endpoint changed %d", n)
	}
	if n := b.apply(t, &driver.ConsoleAction{Action: driver.ActionResume, Endpoint: "a"}); n != 1 {
		t.Fatalf("resume changed %d, want 1", n)
	}
	got := b.claim(t, "a", "b")
	if !slices.Equal(opsIDs(got), []string{"a1", "a2"}) {
		t.Fatalf("claim after the resume: %v, want [a1 a2]", opsIDs(got))
	}
	for _, r := range got {
		if r.Attempts != 1 {
			t.Errorf("%s claimed with %d attempts, want 1", r.EventID, r.Attempts)
		}
	}
	if n := b.apply(t, &driver.ConsoleAction{Action: driver.ActionResume, Endpoint: "a"}); n != 0 {
		t.Errorf("resuming a running endpoint changed %d", n)
	}
	if n := b.apply(t, &driver.ConsoleAction{Action: driver.ActionResume, Endpoint: "never-paused"}); n != 0 {
		t.Errorf("resuming an endpoint without state changed %d", n)
	}
}

// leasedInsert checks InboxInsertParams.Lease: a leased receipt is stored as a claim
// leaves one (attempt counted, hidden for the lease, pending even at an attempt limit
// of 1), one of a paused endpoint as a claim parks one, and neither an extension nor
// the lock takes it out of its parking.
func leasedInsert(t *testing.T, b *opsBundle) {
	leased := func(endpoint, id string, maxAttempts int) *driver.InboxInsertParams {
		return &driver.InboxInsertParams{Key: opsKey(endpoint, id), EventType: "invoice.paid", Payload: []byte(`{}`),
			MaxAttempts: maxAttempts, Lease: time.Minute}
	}
	before := time.Now()
	inserted, err := b.ex.InboxInsertMany(b.ctx, []*driver.InboxInsertParams{leased("b", "b1", 1), leased("b", "b2", 3)})
	if err != nil || !slices.Equal(inserted, []bool{true, true}) {
		t.Fatalf("leased insert: %v %v", inserted, err)
	}
	if ok, err := b.ex.InboxInsert(b.ctx, leased("b", "b3", 3)); err != nil || !ok {
		t.Fatalf("one leased insert: %v %v", ok, err)
	}
	if ok, err := b.ex.InboxInsert(b.ctx, leased("b", "b3", 3)); err != nil || ok {
		t.Fatalf("a leased insert of a stored key: %v %v, want a duplicate", ok, err)
	}
	for _, id := range []string{"b1", "b2", "b3"} {
		r := b.get(t, opsKey("b", id))
		if r.Attempts != 1 || r.State != hookinboxtype.StatePending || r.AvailableAt.Before(before.Add(50*time.Second)) ||
			r.AvailableAt.After(time.Now().Add(70*time.Second)) {
			t.Fatalf("%s: attempts %d state %s available %v, want 1, pending, a minute from the insert", id, r.Attempts, r.State, r.AvailableAt)
		}
	}
	if got := b.claim(t, "b"); len(got) != 0 {
		t.Fatalf("a claim took leased receipts: %v", opsIDs(got))
	}

	b.apply(t, &driver.ConsoleAction{Action: driver.ActionPause, Endpoint: "a"})
	if _, err := b.ex.InboxInsertMany(b.ctx, []*driver.InboxInsertParams{leased("a", "a1", 3), leased("b", "b4", 3)}); err != nil {
		t.Fatal(err)
	}
	if r := b.get(t, opsKey("a", "a1")); !r.AvailableAt.Equal(driver.ParkedAt) || r.Attempts != 0 || r.State != hookinboxtype.StatePending {
		t.Fatalf("a1 leased while a is paused: available %v attempts %d state %s, want parked, no attempt, pending", r.AvailableAt, r.Attempts, r.State)
	}
	if r := b.get(t, opsKey("b", "b4")); r.Attempts != 1 || r.AvailableAt.Equal(driver.ParkedAt) {
		t.Fatalf("b4, beside a1 but of a running endpoint: attempts %d available %v, want leased", r.Attempts, r.AvailableAt)
	}
	if n, err := b.ex.InboxExtendLease(b.ctx, []hookinboxtype.Key{opsKey("a", "a1"), opsKey("b", "b1")}, 0); err != nil || n != 1 {
		t.Fatalf("extending a parked and a leased receipt: %d %v, want 1 (the leased one)", n, err)
	}
	if r := b.get(t, opsKey("a", "a1")); !r.AvailableAt.Equal(driver.ParkedAt) {
		t.Fatalf("a1 after an extension: available %v, want still parked", r.AvailableAt)
	}
	locked, err := b.ex.InboxLockUnprocessed(b.ctx, []hookinboxtype.Key{opsKey("a", "a1")})
	if err != nil || len(locked) != 1 || !locked[0].AvailableAt.Equal(driver.ParkedAt) {
		t.Fatalf("lock of a1: %v %v, want it, parked", locked, err)
	}
	if got := opsIDs(b.claim(t, "a", "b")); !slices.Equal(got, []string{"b1"}) {
		t.Fatalf("claim while a is paused: %v, want [b1] (its lease ended by the extension)", got)
	}
	if n := b.apply(t, &driver.ConsoleAction{Action: driver.ActionResume, Endpoint: "a"}); n != 1 {
		t.Fatalf("resume changed %d, want 1", n)
	}
	got := b.claim(t, "a")
	if len(got) != 1 || got[0].EventID != "a1" || got[0].Attempts != 1 {
		t.Fatalf("claim after the resume: %v, want a1 at its first attempt", got)
	}
}

func (b *opsBundle) outbox(t *testing.T, source hookinboxtype.Key, destination, payload string) int64 {
	t.Helper()
	id, err := b.ex.OutboxInsert(b.ctx, &driver.OutboxInsertParams{
		AggregateType: "Invoice", AggregateID: "in_" + source.EventID, EventType: "InvoicePaid",
		Payload: []byte(payload), Source: source, Destination: destination,
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func (b *opsBundle) claimOutbox(t *testing.T, maxAttempts int, destinations ...string) []*hookinboxtype.OutboxMessage {
	t.Helper()
	msgs, err := b.ex.OutboxClaim(b.ctx, &driver.OutboxClaimParams{
		Destinations: destinations, Limit: 100, Lease: time.Minute, MaxAttempts: maxAttempts,
	})
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

func pausedOutboxWaits(t *testing.T, b *opsBundle) {
	fromA := b.outbox(t, opsKey("a", "a1"), "", `{}`)
	b.apply(t, &driver.ConsoleAction{Action: driver.ActionPause, Endpoint: "a"})
	laterFromA := b.outbox(t, opsKey("a", "a2"), "", `{}`)
	fromB := b.outbox(t, opsKey("b", "b1"), "", `{}`)
	msgs := b.claimOutbox(t, 5, "")
	if len(msgs) != 1 || msgs[0].ID != fromB {
		t.Fatalf("claim while a is paused: %v, want only message %d", msgs, fromB)
	}
	if s := b.summary(t, time.Now().Truncate(time.Minute))["a"]; s == nil || s.OutboxPending != 2 {
		t.Fatalf("a's outbox pending: %+v, want 2", s)
	}
	b.apply(t, &driver.ConsoleAction{Action: driver.ActionResume, Endpoint: "a"})
	var got []int64
	for _, m := range b.claimOutbox(t, 5, "") {
		got = append(got, m.ID)
		if m.FencingToken == 0 || m.Attempts != 1 {
			t.Errorf("message %d claimed with token %d attempts %d", m.ID, m.FencingToken, m.Attempts)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, []int64{fromA, laterFromA}) {
		t.Fatalf("claim after the resume: %v, want [%d %d]", got, fromA, laterFromA)
	}
}

func seedKeepsStoredState(t *testing.T, b *opsBundle) {
	b.apply(t, &driver.ConsoleAction{Action: driver.ActionResume, Endpoint: "x"}) // no state: a no-op
	b.apply(t, &driver.ConsoleAction{Action: driver.ActionPause, Endpoint: "a"})
	b.apply(t, &driver.ConsoleAction{Action: driver.ActionResume, Endpoint: "a"})
	n, err := b.ex.ConsoleSeedEndpoints(b.ctx, []driver.EndpointSeed{
		{Endpoint: "a", Paused: true}, {Endpoint: "c", Paused: true}, {Endpoint: "d"},
	}, "config")
	if err != nil || n != 2 {
		t.Fatalf("seeded %d, %v; want 2 (c and d)", n, err)
	}
	states, err := b.ex.ConsoleEndpointStates(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, s := range states {
		got[s.Endpoint] = s.Paused
	}
	if fmt.Sprint(got) != "map[a:false c:true d:false]" {
		t.Fatalf("states %v: a keeps its stored state, c and d take their defaults", got)
	}
	if e := b.lastAudit(t); e.Actor != "config" || e.Action != driver.ActionPause || e.Target != "endpoint c" {
		t.Errorf("audit of the paused default: %+v", e)
	}
	if n, _ := b.ex.ConsoleSeedEndpoints(b.ctx, []driver.EndpointSeed{{Endpoint: "c", Paused: false}}, "config"); n != 0 {
		t.Errorf("seeding again stored %d", n)
	}
}

func redeliverKeepsKey(t *testing.T, b *opsBundle) {
	id := b.outbox(t, opsKey("a", "a1"), "", `{}`)
	if n := b.apply(t, &driver.ConsoleAction{Action: driver.ActionRedeliver, OutboxID: id}); n != 0 {
		t.Fatalf("redelivering an undelivered message changed %d", n)
	}
	first := b.claimOutbox(t, 5, "")[0]
	if ok, err := b.ex.OutboxMarkPublished(b.ctx, id, first.FencingToken); err != nil || !ok {
		t.Fatalf("publish: %v %v", ok, err)
	}
	if n := b.apply(t, &driver.ConsoleAction{Action: driver.ActionRedeliver, OutboxID: id, Note: "the sink lost it"}); n != 1 {
		t.Fatalf("redeliver changed %d, want 1", n)
	}
	m, err := b.ex.ConsoleOutboxGet(b.ctx, id)
	if err != nil || m.State != hookinboxtype.StatePending || m.Attempts != 0 || m.PublishedAt != nil {
		t.Fatalf("after redeliver: %+v %v", m, err)
	}
	again := b.claimOutbox(t, 5, "")
	if len(again) != 1 || again[0].ID != id || again[0].IdempotencyKey() != first.IdempotencyKey() ||
		again[0].FencingToken <= first.FencingToken {
		t.Fatalf("redelivered claim %+v: want the same id and key, a larger token", again)
	}
	if e := b.lastAudit(t); e.Action != driver.ActionRedeliver || e.Rows != 1 || e.Note != "the sink lost it" {
		t.Errorf("audit %+v", e)
	}
}

// failOutbox fails every claimed message of destination, the first n with errA.
func (b *opsBundle) failOutbox(t *testing.T, destination string, n int, errA, errB string) {
	t.Helper()
	for i, m := range b.claimOutbox(t, 1, destination) {
		msg := errB
		if i < n {
			msg = errA
		}
		if err := b.ex.OutboxRecordFailure(b.ctx, &driver.OutboxFailureParams{
			ID: m.ID, ClaimToken: m.FencingToken, Error: fmt.Sprintf(msg, m.ID),
		}); err != nil {
			t.Fatal(err)
		}
	}
}

func outboxGroupsAndBulk(t *testing.T, b *opsBundle) {
	for i := range 5 {
		b.outbox(t, opsKey("a", fmt.Sprint("a", i)), "crm", fmt.Sprintf(`{"n":%d}`, i))
	}
	b.outbox(t, opsKey("a", "other"), "", `{}`)
	b.failOutbox(t, "crm", 3, "crm answered 500 for message %d", "dial tcp: connection refused (%d)")
	groups, err := b.ex.ConsoleOutboxReviewGroups(b.ctx, 10)
	if err != nil || len(groups) != 2 {
		t.Fatalf("groups %v %v, want 2", groups, err)
	}
	g := groups[0]
	if g.Destination != "crm" || g.Count != 3 || g.Fingerprint != "crm answered # for message #" ||
		g.Example == "" || len(g.ExamplePayload) == 0 {
		t.Fatalf("largest group %+v", g)
	}
	crm := "crm"
	f := &driver.OutboxFilter{State: hookinboxtype.StateNeedsReview, Destination: &crm, Fingerprint: g.Fingerprint}
	if n, err := b.ex.ConsoleCountOutbox(b.ctx, f, 100); err != nil || n != 3 {
		t.Fatalf("count %d %v, want 3", n, err)
	}
	list, err := b.ex.ConsoleOutbox(b.ctx, f, 2)
	if err != nil || len(list) != 2 {
		t.Fatalf("list %v %v", list, err)
	}
	n := b.apply(t, &driver.ConsoleAction{Action: driver.ActionRetryOutbox, OutboxFilter: f, Limit: 2,
		FromStates: []hookinboxtype.State{hookinboxtype.StateNeedsReview}})
	if n != 2 {
		t.Fatalf("bulk retry changed %d, want the limit 2", n)
	}
	if n, _ := b.ex.ConsoleCountOutbox(b.ctx, f, 100); n != 1 {
		t.Errorf("left in review: %d, want 1", n)
	}
	none := ""
	if n, _ := b.ex.ConsoleCountOutbox(b.ctx, &driver.OutboxFilter{Destination: &none}, 100); n != 1 {
		t.Errorf("messages of the default sink: %d, want 1", n)
	}
	n = b.apply(t, &driver.ConsoleAction{Action: driver.ActionResolveOutbox, OutboxFilter: &driver.OutboxFilter{Destination: &crm},
		Limit: 100, FromStates: []hookinboxtype.State{hookinboxtype.StateNeedsReview}})
	if n != 3 {
		t.Fatalf("bulk resolve changed %d, want the 3 still in review", n)
	}
	if n, _ := b.ex.ConsoleCountOutbox(b.ctx, &driver.OutboxFilter{State: hookinboxtype.StateDiscarded}, 100); n != 3 {
		t.Errorf("discarded %d, want 3", n)
	}
}

func rollupMatchesLive(t *testing.T, b *opsBundle) {
	for i := range 4 {
		b.receive(t, "a", fmt.Sprint("a", i), `{}`)
	}
	b.receive(t, "b", "b0", `{}`)
	claimed := b.claim(t, "a")
	if err := b.ex.InboxMarkProcessed(b.ctx, []hookinboxtype.Key{claimed[0].Key, claimed[1].Key}, "processed",
		&driver.AttemptBy{Worker: "w", StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := b.ex.InboxRecordFailure(b.ctx, &driver.InboxFailureParams{Key: claimed[2].Key, Error: "boom",
		By: &driver.AttemptBy{Worker: "w", StartedAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	since := time.Now().Truncate(time.Minute).Add(-time.Hour)
	series := func() (r, p, f int64) {
		points, err := b.ex.ConsoleSeries(b.ctx, since, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		for _, pt := range points {
			r, p, f = r+pt.Received, p+pt.Processed, f+pt.Failed
		}
		return r, p, f
	}
	live := b.summary(t, since)
	lr, lp, lf := series()
	if lr != 5 || lp != 2 || lf != 1 || live["a"].Received != 4 || live["a"].Processed != 2 {
		t.Fatalf("live: series %d/%d/%d, a %+v", lr, lp, lf, live["a"])
	}
	// Rolled up past now: every row counted so far is in the minutes.
	n, err := b.ex.ConsoleRollup(b.ctx, time.Now().Add(2*time.Minute))
	if err != nil || n == 0 {
		t.Fatalf("rollup wrote %d, %v", n, err)
	}
	rolled := b.summary(t, since)
	r, p, f := series()
	if r != lr || p != lp || f != lf || rolled["a"].Received != 4 || rolled["a"].Processed != 2 || rolled["b"].Received != 1 {
		t.Fatalf("rolled: series %d/%d/%d, a %+v b %+v; want what live counting gave", r, p, f, rolled["a"], rolled["b"])
	}
	// Again over the same minutes: nothing is counted twice.
	if _, err := b.ex.ConsoleRollup(b.ctx, time.Now().Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if r, _, _ := series(); r != lr {
		t.Fatalf("after a second roll-up: %d received, want %d", r, lr)
	}
}

func reviewGroupExample(t *testing.T, b *opsBundle) {
	for i := range 3 {
		b.receive(t, "a", fmt.Sprint("a", i), fmt.Sprintf(`{"customer":"person-%d"}`, i))
	}
	for range 3 {
		for _, r := range b.claim(t, "a") {
			if err := b.ex.InboxRecordFailure(b.ctx, &driver.InboxFailureParams{Key: r.Key,
				Error: fmt.Sprintf("customer %q not found", r.EventID)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	groups, err := b.ex.ConsoleReviewGroups(b.ctx, 10)
	if err != nil || len(groups) != 1 {
		t.Fatalf("groups %v %v", groups, err)
	}
	g := groups[0]
	if g.Count != 3 || g.Endpoint != "a" || len(g.ExamplePayload) == 0 || g.Example == "" {
		t.Fatalf("group %+v", g)
	}
}

func receiptDetail(t *testing.T, b *opsBundle) {
	k := opsKey("a", "a1")
	if _, err := b.ex.InboxInsert(b.ctx, &driver.InboxInsertParams{Key: k, EventType: "t", Payload: []byte(`{}`),
		MaxAttempts: 3, BodySHA256: []byte("first"), Request: []byte(`{"method":"POST","headers":{"User-Agent":["Stripe/1.0"]}}`)}); err != nil {
		t.Fatal(err)
	}
	d, err := b.ex.ConsoleReceiptDetail(b.ctx, k)
	if err != nil || d == nil || len(d.Request) == 0 || d.ConflictAt != nil {
		t.Fatalf("detail %+v %v", d, err)
	}
	if _, conflict, err := b.ex.InboxNoteDuplicate(b.ctx, k, []byte("second")); err != nil || !conflict {
		t.Fatalf("duplicate: %v %v", conflict, err)
	}
	if d, _ = b.ex.ConsoleReceiptDetail(b.ctx, k); d.ConflictAt == nil || string(d.ConflictSHA256) != "second" {
		t.Fatalf("after a conflicting body: %+v", d)
	}
	if d, err := b.ex.ConsoleReceiptDetail(b.ctx, opsKey("a", "absent")); err != nil || d != nil {
		t.Fatalf("absent: %+v %v", d, err)
	}
}

func pagesBothWays(t *testing.T, b *opsBundle) {
	for i := range 7 {
		b.receive(t, "a", fmt.Sprintf("e%d", i), `{}`)
		b.apply(t, &driver.ConsoleAction{Action: driver.ActionResolve, Key: &hookinboxtype.Key{Provider: "stripe", Endpoint: "a", EventID: "none"}})
		b.outbox(t, opsKey("a", fmt.Sprintf("e%d", i)), "", `{}`)
	}
	first, err := b.ex.ConsoleReceipts(b.ctx, &driver.ReceiptFilter{}, 3)
	if err != nil || len(first) != 3 {
		t.Fatal(first, err)
	}
	last := first[2]
	second, err := b.ex.ConsoleReceipts(b.ctx, &driver.ReceiptFilter{After: &driver.Cursor{ReceivedAt: last.ReceivedAt, Key: last.Key}}, 3)
	if err != nil || len(second) != 3 {
		t.Fatal(second, err)
	}
	back, err := b.ex.ConsoleReceipts(b.ctx, &driver.ReceiptFilter{Before: &driver.Cursor{ReceivedAt: second[0].ReceivedAt, Key: second[0].Key}}, 3)
	if err != nil || fmt.Sprint(opsIDs(back)) != fmt.Sprint(opsIDs(first)) || back[0].EventID != first[0].EventID {
		t.Fatalf("newer page %v, want the first page %v in the same order", opsIDs(back), opsIDs(first))
	}
	msgs, _ := b.ex.ConsoleOutbox(b.ctx, &driver.OutboxFilter{}, 3)
	older, _ := b.ex.ConsoleOutbox(b.ctx, &driver.OutboxFilter{BeforeID: msgs[2].ID}, 3)
	newer, _ := b.ex.ConsoleOutbox(b.ctx, &driver.OutboxFilter{AfterID: older[0].ID}, 3)
	if len(newer) != 3 || newer[0].ID != msgs[0].ID || newer[2].ID != msgs[2].ID {
		t.Fatalf("outbox newer page %v, want %v", newer, msgs)
	}
	audit, _ := b.ex.ConsoleAudit(b.ctx, driver.IDPage{}, 3)
	olderAudit, _ := b.ex.ConsoleAudit(b.ctx, driver.IDPage{BeforeID: audit[2].ID}, 3)
	newerAudit, _ := b.ex.ConsoleAudit(b.ctx, driver.IDPage{AfterID: olderAudit[0].ID}, 3)
	if len(newerAudit) != 3 || newerAudit[0].ID != audit[0].ID || newerAudit[2].ID != audit[2].ID {
		t.Fatalf("audit newer page %v, want %v", newerAudit, audit)
	}
}

func searchPayload(t *testing.T, b *opsBundle) {
	b.receive(t, "a", "a1", `{"customer":{"email":"Ada@Example.org"}}`)
	b.receive(t, "a", "a2", `{"customer":{"email":"grace@example.org"}}`)
	list, err := b.ex.ConsoleReceipts(b.ctx, &driver.ReceiptFilter{Search: "ada@example"}, 10)
	if err != nil || len(list) != 1 || list[0].EventID != "a1" {
		t.Fatalf("search: %v %v", opsIDs(list), err)
	}
	if n, _ := b.ex.ConsoleCountReceipts(b.ctx, &driver.ReceiptFilter{Search: "example.org", State: hookinboxtype.StatePending}, 10); n != 2 {
		t.Fatalf("count with search: %d, want 2", n)
	}
}

func largeBacklogCounted(t *testing.T, b *opsBundle) {
	n := driver.LiveCountLimit + 1
	b.fill(t, "a", n)
	since := time.Now().Truncate(time.Minute)
	if s := b.summary(t, since)["a"]; s.Pending != int64(n) || !s.CountedAt.IsZero() {
		t.Fatalf("before any roll-up: %+v, want %d pending counted live", s, n)
	}
	if _, err := b.ex.ConsoleRollup(b.ctx, time.Now().Add(-driver.RollupLag)); err != nil {
		t.Fatal(err)
	}
	b.receive(t, "a", "after", `{}`)
	s := b.summary(t, since)["a"]
	if s.Pending != int64(n) || s.CountedAt.IsZero() || time.Since(s.CountedAt) > time.Minute {
		t.Fatalf("after the roll-up: %+v, want the roll-up's count %d with its time", s, n)
	}
}
