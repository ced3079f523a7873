package drivertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// Retention: the deletes that cleanup runs, and the sizes status reports.

func retentionBehaviours[TTx any]() []behaviour[TTx] {
	return []behaviour[TTx]{
		{method: "InboxDeleteProcessed", name: "OldProcessedOnlyInBatches", run: testInboxDeleteProcessed[TTx]},
		{method: "InboxPurgePayloads", name: "OldProcessedOnlyKeepingTheReceipt", run: testInboxPurgePayloads[TTx]},
		{method: "TableSizes", name: "EveryTableOfHookinbox", run: testTableSizes[TTx]},
		{method: "OutboxDeletePublished", name: "OldPublishedOnly", run: testOutboxDeletePublished[TTx]},
		{method: "EffectDeleteDone", name: "OldRecordedOnly", run: testEffectDeleteDone[TTx]},
		{method: "AttemptDeleteOld", name: "OldHistoryOnlyInBatches", run: testAttemptDeleteOld[TTx]},
		{method: "DeliveryDeleteOld", name: "OldHistoryOnlyInBatches", run: testDeliveryDeleteOld[TTx]},
	}
}

// deleteOld runs del as cleanup does: a dry run counting what is older than a day,
// then batches of two until none is left. It returns what the dry run and each batch
// reported.
func (b *bundle[TTx]) deleteOld(t *testing.T, del func(*driver.InboxDeleteParams) (int, error)) string {
	t.Helper()
	counted, err := del(&driver.InboxDeleteParams{OlderThan: 24 * time.Hour, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(counted, ":")
	for range 10 {
		n, err := del(&driver.InboxDeleteParams{OlderThan: 24 * time.Hour, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		got += fmt.Sprint(" ", n)
		if n == 0 {
			break
		}
	}
	return got
}

func testInboxDeleteProcessed[TTx any](t *testing.T, b *bundle[TTx]) {
	for i := range 3 {
		b.insert(t, &driver.InboxInsertParams{Key: key(fmt.Sprintf("evt_old_%d", i)), Processed: true, Outcome: "processed"})
	}
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_old_pending")})
	// Only the processed state is history to delete, whatever processed_at says.
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_old_discarded"), Processed: true, Outcome: "processed"})
	k := key("evt_old_discarded")
	if n, err := b.ex.ConsoleApply(b.ctx, &driver.ConsoleAction{Action: driver.ActionResolve, Actor: "test", Key: &k,
		FromStates: []hookinboxtype.State{hookinboxtype.StateProcessed}}); err != nil || n != 1 {
		t.Fatalf("discard: %d %v", n, err)
	}
	b.elapse(t, 48*time.Hour)
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_recent"), Processed: true, Outcome: "processed"})

	if got := b.deleteOld(t, func(p *driver.InboxDeleteParams) (int, error) { return b.ex.InboxDeleteProcessed(b.ctx, p) }); got != "3: 2 1 0" {
		t.Fatalf("dry run: batches: %s, want 3: 2 1 0", got)
	}
	if got := fmt.Sprint(b.receipts(t)); got != "[evt_recent evt_old_discarded evt_old_pending]" &&
		got != "[evt_recent evt_old_pending evt_old_discarded]" {
		t.Fatalf("left %s, want the unprocessed, discarded and recent receipts", got)
	}
}

func testInboxPurgePayloads[TTx any](t *testing.T, b *bundle[TTx]) {
	for i := range 3 {
		b.insert(t, &driver.InboxInsertParams{Key: key(fmt.Sprintf("evt_old_%d", i)), Processed: true, Outcome: "processed"})
	}
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_old_pending")})
	b.elapse(t, 48*time.Hour)
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_recent"), Processed: true, Outcome: "processed"})

	if got := b.deleteOld(t, func(p *driver.InboxDeleteParams) (int, error) { return b.ex.InboxPurgePayloads(b.ctx, p) }); got != "3: 2 1 0" {
		t.Fatalf("dry run: batches: %s, want 3: 2 1 0", got)
	}
	purged := 0
	for _, id := range b.receipts(t) {
		r := b.get(t, key(id))
		if string(r.Payload) == "null" {
			purged++
			if r.State != hookinboxtype.StateProcessed || len(id) < 8 || id[:8] != "evt_old_" {
				t.Errorf("purged %+v", r)
			}
		}
	}
	if n := len(b.receipts(t)); purged != 3 || n != 5 {
		t.Fatalf("%d payloads purged of %d receipts, want 3 of all 5", purged, n)
	}
}

// TableSizes names the inbox, outbox and effect tables, in that order, each with its
// rows counted or estimated (-1 when the database has no estimate yet).
func testTableSizes[TTx any](t *testing.T, b *bundle[TTx]) {
	for i := range 5 {
		b.insert(t, &driver.InboxInsertParams{Key: key(fmt.Sprint("evt_", i))})
	}
	sizes, err := b.ex.TableSizes(b.ctx)
	if err != nil || len(sizes) != 3 {
		t.Fatalf("table sizes %+v, %v", sizes, err)
	}
	for i, table := range []string{"hookinbox_inbox", "hookinbox_outbox", "hookinbox_effect"} {
		if s := sizes[i]; s.Table != table || s.Rows < -1 || s.Bytes < -1 {
			t.Errorf("size %d: %+v, want %s", i, s, table)
		}
	}
	if rows := sizes[0].Rows; rows != 5 && rows != -1 && rows != 0 {
		t.Errorf("hookinbox_inbox: %d rows, want 5 or no estimate", rows)
	}
}

func testOutboxDeletePublished[TTx any](t *testing.T, b *bundle[TTx]) {
	undelivered := map[int64]bool{}
	for _, id := range b.insertOutbox(t, "", 4) {
		undelivered[id] = true
	}
	msgs := b.claimOutbox(t, driver.OutboxClaimParams{Destinations: []string{""}, Limit: 3, Lease: time.Minute, MaxAttempts: 5})
	for _, m := range msgs {
		if ok, err := b.ex.OutboxMarkPublished(b.ctx, m.ID, m.FencingToken); err != nil || !ok {
			t.Fatalf("publish %d: %v %v", m.ID, ok, err)
		}
		delete(undelivered, m.ID)
	}
	b.elapse(t, 48*time.Hour)
	recent := b.insertOutbox(t, "", 1)[0]
	m := b.claimOutbox(t, driver.OutboxClaimParams{Destinations: []string{""}, Limit: 10, Lease: time.Minute, MaxAttempts: 5})
	if len(m) != 2 {
		t.Fatalf("claimed %d, want the undelivered old one and the recent one", len(m))
	}
	for _, m := range m {
		if m.ID == recent {
			if ok, err := b.ex.OutboxMarkPublished(b.ctx, m.ID, m.FencingToken); err != nil || !ok {
				t.Fatal(ok, err)
			}
		}
	}
	if got := b.deleteOld(t, func(p *driver.InboxDeleteParams) (int, error) { return b.ex.OutboxDeletePublished(b.ctx, p) }); got != "3: 2 1 0" {
		t.Fatalf("dry run: batches: %s, want 3: 2 1 0", got)
	}
	left, err := b.ex.OutboxList(b.ctx, &driver.OutboxListParams{Limit: 10})
	if err != nil || len(left) != 2 || left[0].ID != recent || !undelivered[left[1].ID] {
		t.Fatalf("left %+v %v, want the recent published message and the old undelivered one", left, err)
	}
}

func testEffectDeleteDone[TTx any](t *testing.T, b *bundle[TTx]) {
	for _, k := range []string{"done_1", "done_2", "done_3"} {
		c := b.claimEffect(t, k)
		if ok, err := b.ex.EffectComplete(b.ctx, k, c.Token, []byte(`{}`)); err != nil || !ok {
			t.Fatal(ok, err)
		}
	}
	b.claimEffect(t, "held") // its call never ends: in progress, however old
	b.elapse(t, 48*time.Hour)
	recent := b.claimEffect(t, "recent")
	if ok, err := b.ex.EffectComplete(b.ctx, "recent", recent.Token, nil); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if got := b.deleteOld(t, func(p *driver.InboxDeleteParams) (int, error) { return b.ex.EffectDeleteDone(b.ctx, p) }); got != "3: 2 1 0" {
		t.Fatalf("dry run: batches: %s, want 3: 2 1 0", got)
	}
	for k, done := range map[string]bool{"recent": true, "held": false, "done_1": false} {
		c := b.claimEffect(t, k)
		if c.Done != done {
			t.Errorf("%s: %+v, want done=%v (a deleted effect is new again)", k, c, done)
		}
	}
}

// attempts records n failed attempts of the receipt id, with their history.
func (b *bundle[TTx]) attempts(t *testing.T, id string, n int) {
	t.Helper()
	b.insert(t, &driver.InboxInsertParams{Key: key(id)})
	for range n {
		if err := b.ex.InboxRecordFailure(b.ctx, &driver.InboxFailureParams{Key: key(id), Error: "boom",
			By: &driver.AttemptBy{Worker: "w", StartedAt: time.Now()}}); err != nil {
			t.Fatal(err)
		}
	}
}

func testAttemptDeleteOld[TTx any](t *testing.T, b *bundle[TTx]) {
	b.attempts(t, "evt_old", 3)
	b.elapse(t, 48*time.Hour)
	b.attempts(t, "evt_recent", 1)
	if got := b.deleteOld(t, func(p *driver.InboxDeleteParams) (int, error) { return b.ex.AttemptDeleteOld(b.ctx, p) }); got != "3: 2 1 0" {
		t.Fatalf("dry run: batches: %s, want 3: 2 1 0", got)
	}
	for id, want := range map[string]int{"evt_old": 0, "evt_recent": 1} {
		if a, err := b.ex.ConsoleAttempts(b.ctx, key(id), 10); err != nil || len(a) != want {
			t.Errorf("%s: history %+v %v, want %d rows", id, a, err, want)
		}
	}
	if r := b.get(t, key("evt_old")); r == nil {
		t.Fatal("deleting its history deleted the receipt")
	}
}

// deliveries records n failed deliveries of a new outbox message, with their history,
// and returns its id.
func (b *bundle[TTx]) deliveries(t *testing.T, destination string, n int) int64 {
	t.Helper()
	id := b.insertOutbox(t, destination, 1)[0]
	for range n {
		b.elapse(t, 2*time.Minute) // the last lease lapsed
		m := b.claimOutbox(t, driver.OutboxClaimParams{Destinations: []string{destination}, Limit: 1, Lease: time.Minute, MaxAttempts: 10})
		if len(m) != 1 || m[0].ID != id {
			t.Fatalf("claimed %+v, want message %d", m, id)
		}
		if err := b.ex.OutboxRecordFailure(b.ctx, &driver.OutboxFailureParams{ID: id, ClaimToken: m[0].FencingToken, Error: "refused"}); err != nil {
			t.Fatal(err)
		}
	}
	return id
}

func testDeliveryDeleteOld[TTx any](t *testing.T, b *bundle[TTx]) {
	old := b.deliveries(t, "old", 3)
	b.elapse(t, 48*time.Hour)
	recent := b.deliveries(t, "recent", 1)
	if got := b.deleteOld(t, func(p *driver.InboxDeleteParams) (int, error) { return b.ex.DeliveryDeleteOld(b.ctx, p) }); got != "3: 2 1 0" {
		t.Fatalf("dry run: batches: %s, want 3: 2 1 0", got)
	}
	for id, want := range map[int64]int{old: 0, recent: 1} {
		if d, err := b.ex.ConsoleDeliveries(b.ctx, id, 10); err != nil || len(d) != want {
			t.Errorf("message %d: history %+v %v, want %d rows", id, d, err, want)
		}
	}
}
