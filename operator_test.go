package hookinbox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

func TestStats_CountsUnprocessedAndRecentByType(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.receive(t, invoiceEvent(epBilling, "evt_1", "invoice.paid", "in_1", 1000))
	b.receive(t, invoiceEvent(epBilling, "evt_2", "invoice.paid", "in_2", 1000))
	b.receive(t, invoiceEvent(epAsync, "evt_3", "invoice.created", "in_3", 0))
	if _, err := b.db.Pool.Exec(b.ctx, `UPDATE hookinbox_inbox SET received_at = now() - interval '10 minutes' WHERE event_id = 'evt_3'`); err != nil {
		t.Fatal(err)
	}
	s, err := b.inbox.Operator().Stats(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Unprocessed != 1 || s.NeedsReview != 0 || s.OldestUnprocessedAge < 9*time.Minute {
		t.Fatalf("stats %+v", s)
	}
	if len(s.ReceivedLastHour) != 2 || s.ReceivedLastHour[0].EventType != "invoice.paid" || s.ReceivedLastHour[0].Count != 2 {
		t.Fatalf("by type %+v", s.ReceivedLastHour)
	}
}

func TestRetryNeedsReview_ResetsOnlyRowsInReview(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{worker: hookinbox.WorkerConfig{MaxAttempts: 2}})
	for _, id := range []string{"evt_1", "evt_2", "evt_3"} {
		b.receive(t, invoiceEvent(epAsync, id, "invoice.created", "in_"+id, 0))
	}
	if _, err := b.db.Pool.Exec(b.ctx, `UPDATE hookinbox_inbox SET attempts = 2, state = 'needs_review' WHERE event_id IN ('evt_1', 'evt_2')`); err != nil {
		t.Fatal(err)
	}
	n, err := b.inbox.Operator().RetryNeedsReview(b.ctx)
	if err != nil || n != 2 {
		t.Fatalf("RetryNeedsReview: %d, %v; want 2", n, err)
	}
	if ok, err := b.inbox.Operator().Retry(b.ctx, hookinboxtype.Key{Provider: "stripe", Endpoint: epAsync, EventID: "missing"}); ok || err != nil {
		t.Fatalf("Retry of a missing receipt: %v, %v", ok, err)
	}
}

func TestCleanup_RetentionDryRunAndBatches(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, id := range []string{"evt_1", "evt_2", "evt_3", "evt_4", "evt_5"} {
		b.receive(t, invoiceEvent(epBilling, id, "invoice.created", "in_"+id, 0))
	}
	b.receive(t, invoiceEvent(epAsync, "evt_pending", "invoice.created", "in_p", 0))
	if _, err := b.db.Pool.Exec(b.ctx, `UPDATE hookinbox_inbox SET received_at = now() - interval '40 days', processed_at = CASE WHEN processed_at IS NULL THEN NULL ELSE now() - interval '40 days' END`); err != nil {
		t.Fatal(err)
	}

	if _, err := b.inbox.Operator().Cleanup(b.ctx, hookinbox.CleanupParams{OlderThan: 24 * time.Hour}); !errors.Is(err, hookinbox.ErrRetentionTooShort) {
		t.Fatalf("24h retention for stripe: %v, want ErrRetentionTooShort", err)
	}
	n, err := b.inbox.Operator().Cleanup(b.ctx, hookinbox.CleanupParams{DryRun: true})
	if err != nil || n.Receipts != 5 {
		t.Fatalf("dry run: %+v, %v; want 5 receipts", n, err)
	}
	if left := b.count(t, `SELECT count(*) FROM hookinbox_inbox`); left != 6 {
		t.Fatalf("dry run deleted rows: %d left", left)
	}
	n, err = b.inbox.Operator().Cleanup(b.ctx, hookinbox.CleanupParams{BatchSize: 2})
	if err != nil || n.Receipts != 5 {
		t.Fatalf("cleanup: %+v, %v; want 5 receipts", n, err)
	}
	if left := b.count(t, `SELECT count(*) FROM hookinbox_inbox`); left != 1 {
		t.Fatalf("%d rows left, want the pending one", left)
	}
	if n, err := b.inbox.Operator().Cleanup(b.ctx, hookinbox.CleanupParams{OlderThan: time.Hour, Force: true}); err != nil || n != (hookinbox.CleanupResult{}) {
		t.Fatalf("forced short retention: %+v, %v", n, err)
	}
}

// Retention covers the outbox and the effects too: published messages and recorded
// effects past it are deleted, undelivered messages and effects in progress never.
func TestCleanup_PublishedOutboxAndRecordedEffects(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, id := range []string{"evt_1", "evt_2"} { // each books a payment: an outbox message
		b.receive(t, invoiceEvent(epBilling, id, "invoice.paid", "in_"+id, 100))
	}
	exec := func(sql string) {
		t.Helper()
		if _, err := b.db.Pool.Exec(b.ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec(`UPDATE hookinbox_outbox SET state = 'published', published_at = now() - interval '40 days' WHERE source_event_id = 'evt_1'`)
	exec(`UPDATE hookinbox_outbox SET created_at = now() - interval '40 days' WHERE source_event_id = 'evt_2'`) // old, undelivered
	exec(`INSERT INTO hookinbox_effect (key, state, token, lease_until, result, completed_at) VALUES
	      ('webhook:evt_1:tag', 'done', 1, now(), '\x00', now() - interval '40 days'),
	      ('webhook:evt_2:tag', 'pending', 2, now() - interval '40 days', NULL, NULL)`)
	n, err := b.inbox.Operator().Cleanup(b.ctx, hookinbox.CleanupParams{})
	if err != nil || n.OutboxMessages != 1 || n.Effects != 1 {
		t.Fatalf("cleanup: %+v, %v; want 1 outbox message and 1 effect", n, err)
	}
	if left := b.count(t, `SELECT count(*) FROM hookinbox_outbox WHERE source_event_id = 'evt_2'`); left != 1 {
		t.Fatalf("the undelivered message was deleted")
	}
	if left := b.count(t, `SELECT count(*) FROM hookinbox_effect WHERE state = 'pending'`); left != 1 {
		t.Fatalf("the effect in progress was deleted")
	}
}

// Needs review is the row's stored state: an Operator built with no configuration (a
// CLI started without serve's config file) agrees with the worker whose limit put the
// receipt there.
func TestState_OperatorWithoutConfigAgreesWithTheWorker(t *testing.T) {
	t.Parallel()
	b, op := scenarioWorkerLimitTwo(t)
	s, err := op.Stats(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.NeedsReview != 1 {
		t.Fatalf("needs review seen without the worker's config: %d, want 1", s.NeedsReview)
	}
	list, err := op.ListReceipts(b.ctx, hookinbox.ListParams{NeedsReview: true})
	if err != nil || len(list) != 1 || list[0].State != hookinboxtype.StateNeedsReview || list[0].MaxAttempts != 2 {
		t.Fatalf("needs review list %+v, %v", list, err)
	}
}

// The broken variant: needs review computed from the reader's own limit (the default
// 10, in a CLI without serve's config), as before each row stored its state.
func TestBrokenNeedsReviewFromReaderConfig_Disagrees(t *testing.T) {
	t.Parallel()
	b, _ := scenarioWorkerLimitTwo(t)
	readerLimit := hookinbox.WorkerConfig{}.WithDefaults().MaxAttempts
	if n := b.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE processed_at IS NULL AND attempts >= $1`, readerLimit); n != 0 {
		t.Fatalf("the reader's limit counted %d, want 0: the broken variant should miss the receipt", n)
	}
}

// scenarioWorkerLimitTwo has a worker with MaxAttempts 2 fail a receipt twice.
func scenarioWorkerLimitTwo(t *testing.T) (*testBundle, *hookinbox.Operator) {
	b := setup(t, setupOpts{noBilling: true, worker: hookinbox.WorkerConfig{MaxAttempts: 2}})
	b.inbox.Handle(epAsync, "invoice.paid", func(context.Context, pgx.Tx, hookinbox.Event) error {
		return errors.New("downstream refused")
	})
	b.receive(t, invoiceEvent(epAsync, "evt_1", "invoice.paid", "in_1", 100))
	for range 2 {
		r := b.claim(t)
		if r == nil {
			t.Fatal("claim found nothing")
		}
		if err := b.inbox.ProcessClaimedForTest(b.ctx, r); err == nil {
			t.Fatal("processing succeeded, want the handler's failure")
		}
		b.expireLeases(t)
	}
	if r := b.claim(t); r != nil {
		t.Fatalf("a third claim took %+v past the limit", r)
	}
	return b, hookinbox.NewOperator(pgxdriver.New(b.db.Pool).Executor(), nil)
}
