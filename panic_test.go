package hookinbox_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/hookinbox/hookinbox/internal/testwait"
)

// panicking is a handler with a bug: it panics before its work commits.
func panicking(context.Context, pgx.Tx, hookinbox.Event) error { panic("handler bug: nil map") }

// A panicking sync handler answers 500 and leaves nothing behind, like any handler
// failure; the same server keeps answering the other endpoints, and the panic's stack
// is in the log.
func TestPanic_SyncIsA500AndTheServerKeepsServing(t *testing.T) {
	t.Parallel()
	logs := &lockedBuffer{}
	b := setup(t, setupOpts{noBilling: true, logs: logs})
	b.inbox.Handle(epBilling, "invoice.paid", panicking)
	b.inbox.Handle(epAnalytics, "invoice.paid", countingHandler)
	srv := b.serve(t, b.inbox)

	ev := invoiceEvent(epBilling, "evt_1", "invoice.paid", "in_1", 100)
	before := b.tableCounts(t)
	if a := post(t, http.MethodPost, srv.URL+"/"+epBilling, ev.Payload, signed(ev.Payload, testSecret, time.Now())); a.status != http.StatusInternalServerError {
		t.Fatalf("panicking handler answered %d %q, want 500", a.status, a.errText)
	}
	if after := b.tableCounts(t); after != before {
		t.Fatalf("a panicking handler left rows behind:\nbefore %s\nafter  %s", before, after)
	}
	if a := post(t, http.MethodPost, srv.URL+"/"+epAnalytics, ev.Payload, signed(ev.Payload, testSecret, time.Now())); a.status != http.StatusOK || a.outcome != "processed" {
		t.Fatalf("the other endpoint after a panic: %d %q %q", a.status, a.outcome, a.errText)
	}
	if !strings.Contains(logs.String(), "handler panicked") || !strings.Contains(logs.String(), "panic_test.go") {
		t.Errorf("the log has no panic with its stack:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), `"in_1"`) || strings.Contains(logs.String(), "amount_paid") {
		t.Errorf("the log shows the payload:\n%s", logs.String())
	}

	_, err := b.inbox.Receive(b.ctx, invoiceEvent(epBilling, "evt_2", "invoice.paid", "in_2", 100))
	var perr *hookinbox.PanicError
	if !errors.As(err, &perr) || perr.Value != "handler bug: nil map" {
		t.Fatalf("Receive: %v, want a *PanicError", err)
	}
}

// A panicking hybrid handler is a failed first attempt: the receipt is kept pending
// with the panic as its error, for the workers.
func TestPanic_HybridKeepsTheReceiptForWorkers(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noBilling: true})
	b.inbox.Handle(epHybrid, "invoice.paid", panicking)
	if out := b.receive(t, invoiceEvent(epHybrid, "evt_1", "invoice.paid", "in_1", 100)); out != hookinbox.OutcomeAccepted {
		t.Fatalf("hybrid delivery with a panicking handler: %s, want accepted", out)
	}
	r := b.receipt(t, epHybrid, "evt_1")
	if r.State != hookinboxtype.StatePending || r.Attempts != 1 || !strings.Contains(r.LastError, "panic: handler bug") {
		t.Fatalf("receipt %+v, want pending after 1 attempt with the panic as its error", r)
	}
}

// A panicking async handler fails its attempts like any error, reaches review, and
// the workers go on processing the other endpoints' receipts.
func TestPanic_AsyncAttemptsEndInReview(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noBilling: true, worker: hookinbox.WorkerConfig{MaxAttempts: 2, Concurrency: 2}})
	b.inbox.Handle(epAsync, "invoice.paid", panicking)
	b.inbox.Handle(epHybrid, "invoice.paid", countingHandler)
	b.receive(t, invoiceEvent(epAsync, "evt_bad", "invoice.paid", "in_1", 100))
	ctx, cancel := context.WithCancel(b.ctx)
	done := make(chan error, 1)
	go func() { done <- b.inbox.Run(ctx) }()
	defer func() { cancel(); <-done }()

	op := hookinbox.NewOperator(b.inbox.Driver().Executor(), nil)
	testwait.Until(t, 30*time.Second, "the panicking receipt to need review", func() bool {
		s, err := op.Stats(b.ctx)
		return err == nil && s.NeedsReview == 1
	})
	r := b.receipt(t, epAsync, "evt_bad")
	if r.State != hookinboxtype.StateNeedsReview || r.Attempts != 2 || r.MaxAttempts != 2 || !strings.Contains(r.LastError, "panic: handler bug") {
		t.Fatalf("receipt %+v, want needs_review after 2 attempts with the panic as its error", r)
	}
	if out := b.receive(t, invoiceEvent(epHybrid, "evt_good", "invoice.paid", "in_2", 100)); out != hookinbox.OutcomeProcessed {
		t.Fatalf("another endpoint after the panics: %s", out)
	}
}

// The broken variant: a handler called without the recover, on a worker's goroutine,
// takes the whole process down (every endpoint, and again after each restart). The
// child process runs it; the test sees it die.
func TestBrokenHandlerWithoutRecover_TakesTheProcessDown(t *testing.T) {
	if os.Getenv("HOOKINBOX_BROKEN_PANIC_CHILD") != "" {
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = panicking(context.Background(), nil, hookinbox.Event{}) // no recover: as a worker without callHandler
		}()
		<-done
		return // not reached: the panic ends the process
	}
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenHandlerWithoutRecover_TakesTheProcessDown$")
	cmd.Env = append(os.Environ(), "HOOKINBOX_BROKEN_PANIC_CHILD=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(string(out), "panic: handler bug") {
		t.Fatalf("the process without recover survived the panic (err %v):\n%s", err, out)
	}
}
