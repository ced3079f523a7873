package drivertest

import (
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// The backfill's checkpoints and the receipts' origin (driver.BackfillStore), against
// their documentation in driver/backfill.go.

func backfillBehaviours[TTx any]() []behaviour[TTx] {
	return []behaviour[TTx]{
		{method: "BackfillCheckpoint", name: "NilUntilAdvancedThenAsStored", run: testBackfillCheckpoint[TTx]},
		{method: "BackfillAdvance", name: "RestartSetsTheStartAndOriginIsRecordedOnce", run: testBackfillAdvance[TTx]},
		{method: "InboxOrigin", name: "EmptyForAWebhookDeliveryOrNoReceipt", run: testInboxOrigin[TTx]},
	}
}

func (b *bundle[TTx]) checkpoint(t *testing.T, name string) *driver.BackfillCheckpoint {
	t.Helper()
	c, err := b.ex.BackfillCheckpoint(b.ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (b *bundle[TTx]) advance(t *testing.T, p driver.BackfillAdvanceParams) {
	t.Helper()
	if err := b.ex.BackfillAdvance(b.ctx, &p); err != nil {
		t.Fatal(err)
	}
}

func testBackfillCheckpoint[TTx any](t *testing.T, b *bundle[TTx]) {
	if c := b.checkpoint(t, "stripe:billing"); c != nil {
		t.Fatalf("before any run: %+v, want nil", c)
	}
	before := time.Now().Add(-time.Second)
	b.advance(t, driver.BackfillAdvanceParams{Name: "stripe:billing", Cursor: "evt_9", Events: 3, Restart: true})
	b.advance(t, driver.BackfillAdvanceParams{Name: "github:hooks", Cursor: "42", Events: 1, Done: true, Restart: true})
	c := b.checkpoint(t, "stripe:billing")
	if c == nil || c.Name != "stripe:billing" || c.Cursor != "evt_9" || c.Events != 3 || c.Done ||
		c.StartedAt.Before(before) || c.UpdatedAt.Before(before) || c.UpdatedAt.After(time.Now().Add(time.Second)) {
		t.Fatalf("checkpoint %+v", c)
	}
	if c := b.checkpoint(t, "github:hooks"); c == nil || c.Cursor != "42" || !c.Done {
		t.Fatalf("the other checkpoint: %+v", c)
	}
}

func testBackfillAdvance[TTx any](t *testing.T, b *bundle[TTx]) {
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_1")})
	b.advance(t, driver.BackfillAdvanceParams{Name: "run", Cursor: "evt_1", Events: 1, Restart: true, Origin: "backfill", Key: key("evt_1")})
	b.elapse(t, time.Hour)
	first := b.checkpoint(t, "run")
	// Advancing keeps the run's start; the origin of a receipt is recorded once.
	b.advance(t, driver.BackfillAdvanceParams{Name: "run", Cursor: "evt_2", Events: 2, Origin: "reconcile", Key: key("evt_1")})
	c := b.checkpoint(t, "run")
	if c.Cursor != "evt_2" || c.Events != 2 || !c.StartedAt.Equal(first.StartedAt) || !c.UpdatedAt.After(first.UpdatedAt.Add(30*time.Minute)) {
		t.Fatalf("advanced: %+v after %+v, want the same start and a new update", c, first)
	}
	if origin, err := b.ex.InboxOrigin(b.ctx, key("evt_1")); err != nil || origin != "backfill" {
		t.Fatalf("origin %q %v, want the first one recorded", origin, err)
	}
	// A checkpoint may advance with no receipt of its own (an event it skipped).
	b.advance(t, driver.BackfillAdvanceParams{Name: "run", Cursor: "", Events: 0, Done: true, Restart: true})
	c = b.checkpoint(t, "run")
	if !c.Done || c.Cursor != "" || !c.StartedAt.After(first.StartedAt.Add(30*time.Minute)) {
		t.Fatalf("restarted: %+v, want a new start", c)
	}
}

func testInboxOrigin[TTx any](t *testing.T, b *bundle[TTx]) {
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_webhook")})
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_reconciled")})
	b.advance(t, driver.BackfillAdvanceParams{Name: "reconcile", Origin: "reconcile", Key: key("evt_reconciled")})
	for k, want := range map[hookinboxtype.Key]string{key("evt_webhook"): "", key("evt_reconciled"): "reconcile", key("evt_absent"): ""} {
		if origin, err := b.ex.InboxOrigin(b.ctx, k); err != nil || origin != want {
			t.Errorf("%s: origin %q %v, want %q", k.EventID, origin, err, want)
		}
	}
}
