package hookinbox_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/billing"
)

// Seed case 1.
func TestReceive_SameEventTwiceProcessesOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ev := invoiceEvent(epBilling, "evt_1", "invoice.paid", "in_1", 1000)

	if got := b.receive(t, ev); got != hookinbox.OutcomeProcessed {
		t.Fatalf("first delivery: %s, want processed", got)
	}
	if got := b.receive(t, ev); got != hookinbox.OutcomeDuplicate {
		t.Fatalf("second delivery: %s, want duplicate", got)
	}
	if n := b.ledgerRows(t); n != 1 {
		t.Fatalf("ledger rows: %d, want 1", n)
	}
}

// Seed case 2: eight copies from eight connections, released together.
func TestReceive_ConcurrentCopiesProcessOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ev := invoiceEvent(epBilling, "evt_1", "invoice.paid", "in_1", 1000)

	const copies = 8
	inboxes := make([]*hookinbox.Inbox[pgx.Tx], copies)
	for i := range inboxes {
		cfg := b.db.Config(t)
		cfg.MaxConns, cfg.MinConns = 1, 1 // its own connection, opened before the barrier
		pool, err := pgxpool.NewWithConfig(b.ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		if err := pool.Ping(b.ctx); err != nil {
			t.Fatal(err)
		}
		inboxes[i] = newTestInbox(t, pool, setupOpts{})
	}

	var (
		barrier sync.WaitGroup
		wg      sync.WaitGroup
		mu      sync.Mutex
		counts  = map[hookinbox.Outcome]int{}
	)
	barrier.Add(1)
	for _, inbox := range inboxes {
		wg.Go(func() {
			barrier.Wait()
			out, err := inbox.Receive(b.ctx, ev)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			counts[out]++
			mu.Unlock()
		})
	}
	barrier.Done()
	wg.Wait()

	if counts[hookinbox.OutcomeProcessed] != 1 || counts[hookinbox.OutcomeDuplicate] != copies-1 {
		t.Fatalf("outcomes %v, want 1 processed and %d duplicate", counts, copies-1)
	}
	if n := b.ledgerRows(t); n != 1 {
		t.Fatalf("ledger rows: %d, want 1", n)
	}
}

// Seed case 3: the first copy's handler fails while a second copy waits on the unique
// index; the second takes over when the first rolls back.
func TestReceive_WaitingCopyTakesOverAfterRollback(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noBilling: true})
	inHandler, release := make(chan struct{}), make(chan struct{})
	var calls sync.Mutex
	first := true
	paid := billing.Handlers(b.inbox)[billing.TypeInvoicePaid]
	b.inbox.Handle(epBilling, billing.TypeInvoicePaid, func(ctx context.Context, tx pgx.Tx, ev hookinbox.Event) error {
		calls.Lock()
		isFirst := first
		first = false
		calls.Unlock()
		if err := paid(ctx, tx, ev); err != nil {
			return err
		}
		if isFirst {
			close(inHandler)
			<-release
			return errors.New("injected failure after the business update")
		}
		return nil
	})
	ev := invoiceEvent(epBilling, "evt_1", "invoice.paid", "in_1", 1000)

	firstErr := make(chan error, 1)
	go func() {
		_, err := b.inbox.Receive(b.ctx, ev)
		firstErr <- err
	}()
	<-inHandler
	secondOut := make(chan hookinbox.Outcome, 1)
	go func() { secondOut <- b.receive(t, ev) }()
	b.db.WaitForLockWaiters(t, 1) // the second copy waits on the first's uncommitted receipt
	close(release)

	if err := <-firstErr; err == nil {
		t.Fatal("first delivery succeeded, want its injected failure")
	}
	if got := <-secondOut; got != hookinbox.OutcomeProcessed {
		t.Fatalf("second delivery: %s, want processed", got)
	}
	if n := b.ledgerRows(t); n != 1 {
		t.Fatalf("ledger rows: %d, want 1", n)
	}
}

// Seed case 4.
func TestReceive_HandlerFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noBilling: true})
	paid := billing.Handlers(b.inbox)[billing.TypeInvoicePaid]
	fail := true
	b.inbox.Handle(epBilling, billing.TypeInvoicePaid, func(ctx context.Context, tx pgx.Tx, ev hookinbox.Event) error {
		if err := paid(ctx, tx, ev); err != nil {
			return err
		}
		if fail {
			fail = false
			return errors.New("injected failure after the business update")
		}
		return nil
	})
	ev := invoiceEvent(epBilling, "evt_1", "invoice.paid", "in_1", 1000)
	before := b.tableCounts(t)

	_, err := b.inbox.Receive(b.ctx, ev)
	var herr *hookinbox.HandlerError
	if !errors.As(err, &herr) {
		t.Fatalf("first delivery: %v, want a HandlerError", err)
	}
	if after := b.tableCounts(t); after != before {
		t.Fatalf("a failed delivery left rows behind:\nbefore %s\nafter  %s", before, after)
	}
	if got := b.receive(t, ev); got != hookinbox.OutcomeProcessed {
		t.Fatalf("redelivery: %s, want processed", got)
	}
	if n := b.ledgerRows(t); n != 1 {
		t.Fatalf("ledger rows: %d, want 1", n)
	}
}

// Seed case 5.
func TestReceive_PaidBeforeCreatedEndsPaid(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.receive(t, invoiceEvent(epBilling, "evt_paid", "invoice.paid", "in_1", 1000))
	b.receive(t, invoiceEvent(epBilling, "evt_fin", "invoice.finalized", "in_1", 0))
	b.receive(t, invoiceEvent(epBilling, "evt_created", "invoice.created", "in_1", 0))
	if s := b.invoiceStatus(t, "in_1"); s != "paid" {
		t.Fatalf("status %s, want paid", s)
	}
	if n := b.ledgerRows(t); n != 1 {
		t.Fatalf("ledger rows: %d, want 1", n)
	}
}

// Seed case 6: one payment as three Event objects.
func TestReceive_SamePaymentUnderTwoEventIDsBooksOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, ev := range []hookinbox.Event{
		invoiceEvent(epBilling, "evt_A", "invoice.paid", "in_1", 1000),
		invoiceEvent(epBilling, "evt_B", "invoice.paid", "in_1", 1000),
		invoiceEvent(epBilling, "evt_C", "invoice.payment_succeeded", "in_1", 1000),
	} {
		if got := b.receive(t, ev); got != hookinbox.OutcomeProcessed {
			t.Fatalf("%s: %s, want processed (a new event id)", ev.ID, got)
		}
	}
	if n := b.ledgerRows(t); n != 1 {
		t.Fatalf("ledger rows: %d, want 1", n)
	}
	if n := b.count(t, `SELECT count(*) FROM outbox`); n != 1 {
		t.Fatalf("outbox rows: %d, want 1", n)
	}
}

// Seed case 7.
func TestReceive_PaymentForVoidInvoiceBooksNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.receive(t, invoiceEvent(epBilling, "evt_created", "invoice.created", "in_1", 0))
	b.receive(t, invoiceEvent(epBilling, "evt_void", "invoice.voided", "in_1", 0))
	if got := b.receive(t, invoiceEvent(epBilling, "evt_paid", "invoice.paid", "in_1", 1000)); got != hookinbox.OutcomeProcessed {
		t.Fatalf("paid: %s, want processed (the anomaly is recorded, the receipt kept)", got)
	}
	if s := b.invoiceStatus(t, "in_1"); s != "void" {
		t.Fatalf("status %s, want void", s)
	}
	if n := b.ledgerRows(t); n != 0 {
		t.Fatalf("ledger rows: %d, want 0", n)
	}
	if n := b.count(t, `SELECT count(*) FROM outbox`); n != 0 {
		t.Fatalf("outbox rows: %d, want 0", n)
	}
	anomalies, err := billing.Anomalies(b.ctx, b.db.Pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(anomalies) != 1 || anomalies[0].Kind != billing.AnomalyPaymentForVoidInvoice || anomalies[0].EventID != "evt_paid" {
		t.Fatalf("anomalies %+v, want one %s for evt_paid", anomalies, billing.AnomalyPaymentForVoidInvoice)
	}
}

// Seed case 8.
func TestReceive_SameEventOnTwoEndpointsBothProcessed(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noBilling: true})
	for _, ep := range []string{epBilling, epAnalytics} {
		b.inbox.Handle(ep, "invoice.paid", countingHandler)
	}
	for _, ep := range []string{epBilling, epAnalytics} {
		if got := b.receive(t, invoiceEvent(ep, "evt_1", "invoice.paid", "in_1", 1000)); got != hookinbox.OutcomeProcessed {
			t.Fatalf("%s: %s, want processed", ep, got)
		}
	}
	if n := b.effects(t, "evt_1"); n != 2 {
		t.Fatalf("effects: %d, want 2 (one per endpoint)", n)
	}
}

func TestReceive_UnknownTypeIgnoredAndKept(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ev := invoiceEvent(epBilling, "evt_1", "customer.created", "in_1", 0)
	if got := b.receive(t, ev); got != hookinbox.OutcomeIgnored {
		t.Fatalf("first: %s, want ignored", got)
	}
	if got := b.receive(t, ev); got != hookinbox.OutcomeDuplicate {
		t.Fatalf("retry: %s, want duplicate", got)
	}
	r := b.receipt(t, epBilling, "evt_1")
	if r == nil || r.ProcessedAt == nil || r.Outcome != "ignored" {
		t.Fatalf("receipt %+v, want processed with outcome ignored", r)
	}
}

func TestReceive_InvalidEventWritesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	before := b.tableCounts(t)
	long := make([]byte, 600)
	for i := range long {
		long[i] = 'x'
	}
	for name, ev := range map[string]hookinbox.Event{
		"no id":          {Endpoint: epBilling, Type: "invoice.paid", Payload: []byte(`{}`)},
		"no type":        {Endpoint: epBilling, ID: "evt_1", Payload: []byte(`{}`)},
		"id too long":    {Endpoint: epBilling, ID: string(long), Type: "invoice.paid", Payload: []byte(`{}`)},
		"not json":       {Endpoint: epBilling, ID: "evt_1", Type: "invoice.paid", Payload: []byte(`{`)},
		"other provider": {Provider: "github", Endpoint: epBilling, ID: "evt_1", Type: "invoice.paid", Payload: []byte(`{}`)},
	} {
		if _, err := b.inbox.Receive(b.ctx, ev); !errors.Is(err, hookinbox.ErrInvalidEvent) {
			t.Errorf("%s: %v, want ErrInvalidEvent", name, err)
		}
	}
	if _, err := b.inbox.Receive(b.ctx, hookinbox.Event{Endpoint: "nope", ID: "e", Type: "t", Payload: []byte(`{}`)}); !errors.Is(err, hookinbox.ErrUnknownEndpoint) {
		t.Errorf("unknown endpoint: %v", err)
	}
	if after := b.tableCounts(t); after != before {
		t.Fatalf("invalid events wrote rows:\nbefore %s\nafter  %s", before, after)
	}
}
