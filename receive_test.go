package hookinbox_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/examples/billing"
)

// Seed case 3: the first copy's handler fails while a second copy waits on the unique
// index; the second takes over when the first rolls back.
func TestReceive_WaitingCopyTakesOverAfterRollback(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noBilling: true})
	inHandler, release := make(chan struct{}), make(chan struct{})
	// Released however the test ends, so a failed assertion cannot leave the first
	// copy holding its connection (and the test's cleanup waiting for it).
	releaseFirst := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseFirst)
	var calls sync.Mutex
	first := true
	paid := billing.Handlers[pgx.Tx]()[billing.TypeInvoicePaid]
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
	// The goroutine only reports: t.Fatal must be called from the test's own goroutine.
	type result struct {
		out hookinbox.Outcome
		err error
	}
	second := make(chan result, 1)
	go func() {
		out, err := b.inbox.Receive(b.ctx, ev)
		second <- result{out, err}
	}()
	b.db.WaitForLockWaiters(t, 1) // the second copy waits on the first's uncommitted receipt
	releaseFirst()

	if err := <-firstErr; err == nil {
		t.Fatal("first delivery succeeded, want its injected failure")
	}
	if got := <-second; got.err != nil || got.out != hookinbox.OutcomeProcessed {
		t.Fatalf("second delivery: %s, %v; want processed", got.out, got.err)
	}
	if n := b.ledgerRows(t); n != 1 {
		t.Fatalf("ledger rows: %d, want 1", n)
	}
}

// Seed case 4.
func TestReceive_HandlerFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noBilling: true})
	paid := billing.Handlers[pgx.Tx]()[billing.TypeInvoicePaid]
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
