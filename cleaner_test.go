package hookinbox_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/internal/testwait"
)

// ageAll makes every receipt received and (if processed) processed 40 days ago.
func (b *testBundle) ageAll(t *testing.T) {
	t.Helper()
	if _, err := b.db.Pool.Exec(b.ctx, `UPDATE hookinbox_inbox SET received_at = now() - interval '40 days',
       processed_at = CASE WHEN processed_at IS NULL THEN NULL ELSE now() - interval '40 days' END`); err != nil {
		t.Fatal(err)
	}
}

// purgeFunc purges payloads; the real one is Operator.PurgePayloads, the broken one
// deletes the receipts instead, as a privacy purge written in a hurry would.
type purgeFunc func(b *testBundle, olderThan time.Duration) error

func purgeReal(b *testBundle, olderThan time.Duration) error {
	_, err := b.inbox.Operator().PurgePayloads(b.ctx, hookinbox.PurgeParams{OlderThan: olderThan, BatchSize: 2})
	return err
}

func purgeByDeleting(b *testBundle, olderThan time.Duration) error {
	_, err := b.db.Pool.Exec(b.ctx, `DELETE FROM hookinbox_inbox WHERE state = 'processed'
   AND processed_at < now() - make_interval(secs => $1)`, olderThan.Seconds())
	return err
}

// checkPurge: payloads of processed receipts are gone, their receipts stay, so the
// provider's retry is still a duplicate (never applied twice); pending receipts keep
// their payloads for the workers. Returns what broke.
func checkPurge(t *testing.T, purge purgeFunc) string {
	t.Helper()
	b := setup(t)
	for _, id := range []string{"evt_1", "evt_2", "evt_3"} {
		b.receive(t, invoiceEvent(epBilling, id, "invoice.paid", "in_"+id, 100))
	}
	b.receive(t, invoiceEvent(epAsync, "evt_pending", "invoice.paid", "in_p", 100))
	b.ageAll(t)
	if err := purge(b, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	var broke []string
	if n := b.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE state = 'processed' AND payload = 'null'::jsonb AND body_sha256 IS NOT NULL`); n != 3 {
		broke = append(broke, "processed payloads purged with their key and hash kept: "+strconv.Itoa(n)+", want 3")
	}
	if n := b.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE event_id = 'evt_pending' AND payload::text LIKE '%`+payloadMarker+`%'`); n != 1 {
		broke = append(broke, "the pending receipt lost its payload")
	}
	if out := b.receive(t, invoiceEvent(epBilling, "evt_1", "invoice.paid", "in_evt_1", 100)); out != hookinbox.OutcomeDuplicate {
		broke = append(broke, "the retry after the purge: "+string(out)+", want duplicate")
	}
	if n := b.ledgerRows(t); n != 3 {
		broke = append(broke, "ledger rows "+strconv.Itoa(n)+", want 3")
	}
	return strings.Join(broke, "; ")
}

func TestPurgePayloads_KeepsTheKeySoRetriesStayDuplicates(t *testing.T) {
	t.Parallel()
	if broke := checkPurge(t, purgeReal); broke != "" {
		t.Fatal(broke)
	}
}

func TestBrokenPurgeByDeleting_AppliesTheRetryAgain(t *testing.T) {
	t.Parallel()
	if broke := checkPurge(t, purgeByDeleting); broke == "" {
		t.Fatal("the broken purge was not caught")
	}
}

func TestPurgePayloads_DryRunAndRecent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.receive(t, invoiceEvent(epBilling, "evt_old", "invoice.paid", "in_old", 100))
	b.ageAll(t)
	b.receive(t, invoiceEvent(epBilling, "evt_new", "invoice.paid", "in_new", 100))
	op := b.inbox.Operator()
	if n, err := op.PurgePayloads(b.ctx, hookinbox.PurgeParams{OlderThan: 24 * time.Hour, DryRun: true}); err != nil || n != 1 {
		t.Fatalf("dry run: %d, %v; want 1", n, err)
	}
	if n := b.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE payload = 'null'::jsonb`); n != 0 {
		t.Fatalf("the dry run purged %d", n)
	}
	if n, err := op.PurgePayloads(b.ctx, hookinbox.PurgeParams{OlderThan: 24 * time.Hour}); err != nil || n != 1 {
		t.Fatalf("purge: %d, %v; want 1 (the recent receipt keeps its payload)", n, err)
	}
	if n, err := op.PurgePayloads(b.ctx, hookinbox.PurgeParams{OlderThan: 24 * time.Hour}); err != nil || n != 0 {
		t.Fatalf("second purge: %d, %v; want 0", n, err)
	}
	if _, err := op.PurgePayloads(b.ctx, hookinbox.PurgeParams{}); err == nil {
		t.Fatal("a purge with no OlderThan: accepted")
	}
}

// The in-process cleaner deletes what Cleanup deletes and purges payloads, pass after
// pass, and refuses a retention shorter than the providers' retry windows.
func TestRunCleaner_DeletesAndPurgesPeriodically(t *testing.T) {
	t.Parallel()
	b := setup(t)
	op := b.inbox.Operator()
	if err := op.RunCleaner(b.ctx, hookinbox.CleanerConfig{Retention: time.Hour}); !errors.Is(err, hookinbox.ErrRetentionTooShort) {
		t.Fatalf("a 1h retention for stripe: %v, want ErrRetentionTooShort", err)
	}
	ctx, cancel := context.WithCancel(b.ctx)
	done := make(chan error, 1)
	go func() {
		done <- op.RunCleaner(ctx, hookinbox.CleanerConfig{Interval: 10 * time.Millisecond, PurgePayloadsAfter: 10 * 24 * time.Hour, BatchSize: 1})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("RunCleaner: %v", err)
		}
	}()
	// A later pass finds what was not there at the first.
	b.receive(t, invoiceEvent(epBilling, "evt_old", "invoice.paid", "in_old", 100))
	b.receive(t, invoiceEvent(epBilling, "evt_mid", "invoice.paid", "in_mid", 100))
	b.receive(t, invoiceEvent(epAsync, "evt_pending", "invoice.paid", "in_p", 100))
	if _, err := b.db.Pool.Exec(b.ctx, `UPDATE hookinbox_inbox SET received_at = now() - interval '40 days',
       processed_at = CASE WHEN event_id = 'evt_old' THEN now() - interval '40 days' WHEN processed_at IS NOT NULL THEN now() - interval '20 days' END`); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 30*time.Second, "the cleaner to delete the 40-day-old receipt and purge the 20-day-old payload", func() bool {
		return b.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE event_id = 'evt_old'`) == 0 &&
			b.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE event_id = 'evt_mid' AND payload = 'null'::jsonb`) == 1
	})
	if n := b.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE event_id = 'evt_pending' AND payload <> 'null'::jsonb`); n != 1 {
		t.Fatal("the cleaner touched the pending receipt")
	}
}

func TestStats_TableSizes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.receive(t, invoiceEvent(epBilling, "evt_1", "invoice.paid", "in_1", 100))
	s, err := b.inbox.Operator().Stats(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ts := range s.Tables {
		names = append(names, ts.Table)
		if ts.Bytes <= 0 {
			t.Errorf("%s: %d bytes", ts.Table, ts.Bytes)
		}
	}
	if strings.Join(names, ",") != "hookinbox_inbox,hookinbox_outbox,hookinbox_effect" {
		t.Fatalf("tables %v", names)
	}
	if _, err := b.db.Pool.Exec(b.ctx, `ANALYZE hookinbox_inbox`); err != nil {
		t.Fatal(err)
	}
	if s, err = b.inbox.Operator().Stats(b.ctx); err != nil || s.Tables[0].Rows != 1 {
		t.Fatalf("rows after ANALYZE: %+v, %v; want 1", s.Tables, err)
	}
}
