package hookinbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/hookinbox/hookinbox/internal/testwait"
)

// scenarioOtherProcessReceives runs workers in one "process" (an inbox on a pool of its
// own) that polls only once an hour, and receives an async event in another: only a
// notification from the receiver can make the workers find it.
func scenarioOtherProcessReceives(t *testing.T, pollOnly bool) (b *testBundle, processed func() bool, stop func()) {
	t.Helper()
	b = setup(t, setupOpts{noBilling: true})
	cfg := b.db.Config(t)
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(b.ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	workers := newTestInbox(t, pool, setupOpts{noBilling: true, worker: hookinbox.WorkerConfig{PollInterval: time.Hour}})
	workers.Handle(epAsync, "invoice.created", func(ctx context.Context, tx pgx.Tx, ev hookinbox.Event) error {
		return countingHandler(ctx, tx, ev)
	})
	ctx, cancel := context.WithCancel(b.ctx)
	done := make(chan struct{})
	go func() { _ = workers.Run(ctx); close(done) }()
	// The workers' first poll (at start) finds nothing; wait until their listener runs.
	// Every worker claims once at start, and one more time when the listener, once
	// listening, wakes them for what may have been announced before: after that claim,
	// nothing but a notification (or the hourly poll) makes them claim again.
	testwait.Until(t, 30*time.Second, "the workers' first claims and the listener's", func() bool {
		return workers.ClaimsForTest() >= int64(workers.WorkerConcurrencyForTest()+1)
	})

	receiver := b.inbox
	if pollOnly {
		receiver = newTestInbox(t, b.db.Pool, setupOpts{noBilling: true, pollOnly: true})
	}
	receiver.Handle(epAsync, "invoice.created", countingHandler)
	if out, err := receiver.Receive(b.ctx, invoiceEvent(epAsync, "evt_1", "invoice.created", "in_1", 0)); err != nil || out != hookinbox.OutcomeAccepted {
		t.Fatalf("receive: %s, %v", out, err)
	}
	return b, func() bool { return b.effects(t, "evt_1") == 1 }, func() { cancel(); <-done }
}

// A receipt accepted by one process wakes the idle workers of another at once, through
// a notification sent after its commit.
func TestWake_OtherProcessesWorkersAreWoken(t *testing.T) {
	t.Parallel()
	_, processed, stop := scenarioOtherProcessReceives(t, false)
	defer stop()
	testwait.Until(t, 30*time.Second, "the other process's workers to process the receipt", processed)
}

// The broken variant: a receiver that does not notify (PollOnly) leaves the receipt to
// the other process's next poll, an hour away.
func TestBrokenReceiverWithoutNotify_LeavesTheReceiptToThePoll(t *testing.T) {
	t.Parallel()
	b, processed, stop := scenarioOtherProcessReceives(t, true)
	defer stop()
	// Long enough for a notification to have been sent, heard and acted on many times
	// over (it takes milliseconds); not a measure of speed.
	testwait.Never(t, 2*time.Second, "processed without a notification: the test cannot tell the wake from the poll", processed)
	if r := b.receipt(t, epAsync, "evt_1"); r.State != hookinboxtype.StatePending {
		t.Fatalf("receipt %+v, want still pending", r)
	}
}
