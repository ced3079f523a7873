package hookinbox_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver/sqlitedriver"
	"github.com/hookinbox/hookinbox/outbox"
)

// SQLite keeps the trace context as PostgreSQL does: an async receipt's attempt links
// to the span that received it, and its outbox message's delivery continues the
// handler's trace.
func TestTrace_SQLiteStoresTheTraceContext(t *testing.T) {
	t.Parallel()
	rec := newSpanRecorder(t)
	ctx := context.Background()
	db, err := sqlitedriver.Open(filepath.Join(t.TempDir(), "trace.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	d := sqlitedriver.New(db)
	inbox := buildTestInbox(t, d, setupOpts{tracer: rec.tp, noBilling: true})
	if err := inbox.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	inbox.HandleBatch(epAsync, "invoice.paid", inbox.ForwardTo("downstream"))
	ev := invoiceEvent(epAsync, "evt_trace_sqlite", "invoice.paid", "in_trace_sqlite", 300)
	if out, err := inbox.Receive(ctx, ev); err != nil || out != hookinbox.OutcomeAccepted {
		t.Fatalf("Receive: %s, %v", out, err)
	}
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = inbox.Run(wctx) })
	spans := rec.waitFor(t, "hookinbox.receive", "hookinbox.attempt async", "hookinbox.handle invoice.paid")
	cancel()
	wg.Wait()
	receive, attempt := mustSpan(t, spans, "hookinbox.receive"), mustSpan(t, spans, "hookinbox.attempt async")
	noErr(t, linkedTo(attempt, receive))

	down, received := capturingServer(t)
	disp, err := outbox.NewDispatcher(d.Executor(), &outbox.Config{
		Sinks: map[string]outbox.Sink{"downstream": &outbox.HTTPSink{URL: down.URL}}, TracerProvider: rec.tp, Logger: testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := disp.DispatchOnce(ctx); n != 1 || err != nil {
		t.Fatalf("DispatchOnce: %d, %v", n, err)
	}
	spans = rec.waitFor(t, "send downstream")
	send, handle := mustSpan(t, spans, "send downstream"), mustSpan(t, spans, "hookinbox.handle invoice.paid")
	noErr(t, childOf(send, handle))
	if got := received(); len(got) != 1 || got[0] != traceparentOf(send) {
		t.Errorf("downstream received traceparent %q, want %s", got, traceparentOf(send))
	}
	noErr(t, leaks(spans))
}
