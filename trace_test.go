package hookinbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/hookinbox/hookinbox/internal/testnats"
	"github.com/hookinbox/hookinbox/internal/testwait"
	"github.com/hookinbox/hookinbox/outbox"
)

// spanRecorder is an in-memory TracerProvider whose ended spans a test reads.
type spanRecorder struct {
	rec *tracetest.SpanRecorder
	tp  *sdktrace.TracerProvider
}

func newSpanRecorder(t *testing.T) *spanRecorder {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return &spanRecorder{rec: rec, tp: tp}
}

// waitFor polls until spans named each of names have ended (the server span ends
// after the client has its answer), and returns every ended span.
func (r *spanRecorder) waitFor(t *testing.T, names ...string) []sdktrace.ReadOnlySpan {
	t.Helper()
	var spans []sdktrace.ReadOnlySpan
	testwait.For(t, 10*time.Second, fmt.Sprintf("spans %v to end", names), func() (bool, error) {
		spans = r.rec.Ended()
		for _, n := range names {
			if findSpan(spans, n) == nil {
				return false, fmt.Errorf("no span %q ended; spans: %s", n, spanNames(spans))
			}
		}
		return true, nil
	})
	return spans
}

func findSpan(spans []sdktrace.ReadOnlySpan, name string) sdktrace.ReadOnlySpan {
	for _, s := range spans {
		if s.Name() == name {
			return s
		}
	}
	return nil
}

func spanNames(spans []sdktrace.ReadOnlySpan) string {
	var names []string
	for _, s := range spans {
		names = append(names, s.Name())
	}
	return strings.Join(names, ", ")
}

func mustSpan(t *testing.T, spans []sdktrace.ReadOnlySpan, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	s := findSpan(spans, name)
	if s == nil {
		t.Fatalf("no span %q; spans: %s", name, spanNames(spans))
	}
	return s
}

// childOf checks that child's parent is parent, in parent's trace.
func childOf(child, parent sdktrace.ReadOnlySpan) error {
	if child.Parent().SpanID() != parent.SpanContext().SpanID() || child.SpanContext().TraceID() != parent.SpanContext().TraceID() {
		return fmt.Errorf("span %q is not a child of %q (parent %s/%s, want %s/%s)", child.Name(), parent.Name(),
			child.SpanContext().TraceID(), child.Parent().SpanID(), parent.SpanContext().TraceID(), parent.SpanContext().SpanID())
	}
	return nil
}

// linkedTo checks that span is a new trace that links to target: a later
// transaction, not a child of the request.
func linkedTo(span, target sdktrace.ReadOnlySpan) error {
	if span.Parent().IsValid() {
		return fmt.Errorf("span %q has a parent %s; want a new trace", span.Name(), span.Parent().SpanID())
	}
	for _, l := range span.Links() {
		if l.SpanContext.TraceID() == target.SpanContext().TraceID() && l.SpanContext.SpanID() == target.SpanContext().SpanID() {
			return nil
		}
	}
	return fmt.Errorf("span %q has no link to %q (%s/%s); links: %v", span.Name(), target.Name(),
		target.SpanContext().TraceID(), target.SpanContext().SpanID(), span.Links())
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// wantAttrs checks the event's attributes on span.
func wantAttrs(t *testing.T, s sdktrace.ReadOnlySpan, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got := attr(s, k); got != v {
			t.Errorf("span %q: %s = %q, want %q", s.Name(), k, got, v)
		}
	}
}

// leaks reports any span attribute, event, link or status that carries the payload
// marker or the secret.
func leaks(spans []sdktrace.ReadOnlySpan) error {
	var found []string
	check := func(span, where string, kvs []attribute.KeyValue) {
		for _, kv := range kvs {
			for _, forbidden := range []string{payloadMarker, testSecret} {
				if strings.Contains(kv.Value.Emit(), forbidden) {
					found = append(found, fmt.Sprintf("%s %s %s", span, where, kv.Key))
				}
			}
		}
	}
	for _, s := range spans {
		check(s.Name(), "attribute", s.Attributes())
		check(s.Name(), "status", []attribute.KeyValue{attribute.String("description", s.Status().Description)})
		for _, e := range s.Events() {
			check(s.Name(), "event "+e.Name, e.Attributes)
		}
		for _, l := range s.Links() {
			check(s.Name(), "link", l.Attributes)
		}
	}
	if len(found) > 0 {
		return fmt.Errorf("spans carry the payload or the secret: %s", strings.Join(found, "; "))
	}
	return nil
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Error(err)
	}
}

// postEvent posts ev, signed, to the endpoint's path on srv.
func postEvent(t *testing.T, srv *httptest.Server, ev hookinbox.Event) answer {
	t.Helper()
	return post(t, http.MethodPost, srv.URL+"/"+ev.Endpoint, ev.Payload, signed(ev.Payload, testSecret, time.Now()))
}

// A sync delivery is one trace: the server span, beneath it the signature check and
// the receipt, beneath the receipt the handler; each names the event.
func TestTrace_SyncDeliveryIsOneTree(t *testing.T) {
	t.Parallel()
	rec := newSpanRecorder(t)
	b := setup(t, setupOpts{tracer: rec.tp})
	srv := b.serve(t, b.inbox)
	ev := invoiceEvent(epBilling, "evt_trace_sync", "invoice.paid", "in_trace_sync", 1200)
	if a := postEvent(t, srv, ev); a.outcome != "processed" {
		t.Fatalf("answer %+v", a)
	}
	spans := rec.waitFor(t, "POST billing", "hookinbox.verify", "hookinbox.receive", "hookinbox.handle invoice.paid")
	server := mustSpan(t, spans, "POST billing")
	if server.SpanKind() != trace.SpanKindServer || server.Parent().IsValid() {
		t.Errorf("server span: kind %v, parent %v", server.SpanKind(), server.Parent())
	}
	verify, receive := mustSpan(t, spans, "hookinbox.verify"), mustSpan(t, spans, "hookinbox.receive")
	handle := mustSpan(t, spans, "hookinbox.handle invoice.paid")
	noErr(t, childOf(verify, server))
	noErr(t, childOf(receive, server))
	noErr(t, childOf(handle, receive))
	event := map[string]string{"hookinbox.provider": "stripe", "hookinbox.endpoint": epBilling,
		"hookinbox.event.id": "evt_trace_sync", "hookinbox.event.type": "invoice.paid"}
	for _, s := range []sdktrace.ReadOnlySpan{verify, receive, handle} {
		wantAttrs(t, s, event)
	}
	wantAttrs(t, server, map[string]string{"hookinbox.event.id": "evt_trace_sync", "http.response.status_code": "200"})
	wantAttrs(t, receive, map[string]string{"hookinbox.outcome": "processed", "hookinbox.mode": "sync"})
	noErr(t, leaks(spans))
}

// The check for leaks is seen to fail: a handler that puts the payload on its span
// is caught.
func TestTrace_LeakCheckCatchesAPayloadAttribute(t *testing.T) {
	t.Parallel()
	rec := newSpanRecorder(t)
	b := setup(t, setupOpts{tracer: rec.tp, noBilling: true})
	b.inbox.Handle(epBilling, "invoice.paid", func(ctx context.Context, tx pgx.Tx, ev hookinbox.Event) error {
		trace.SpanFromContext(ctx).SetAttributes(attribute.String("body", string(ev.Payload))) // the broken variant
		return nil
	})
	b.receive(t, invoiceEvent(epBilling, "evt_trace_leak", "invoice.paid", "in_trace_leak", 1))
	spans := rec.waitFor(t, "hookinbox.handle invoice.paid")
	if err := leaks(spans); err == nil {
		t.Fatal("a span attribute holding the payload was not caught")
	}
}

// startTracedWorkers runs the inbox's workers until the test ends.
func startTracedWorkers(t *testing.T, inbox *hookinbox.Inbox[pgx.Tx]) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = inbox.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// An async delivery's trace ends with its receipt; the worker's attempt, a later
// transaction, is a trace of its own that links to the span that received it, with
// the handler beneath it: whether a claim took the receipt from the database (the
// workers started after it was accepted) or it was handed to running workers in
// memory (handoff.go).
func TestTrace_AsyncAttemptLinksToReceivingSpan(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name              string
		handedOff, broken bool
	}{
		{name: "claimed"},
		{name: "broken_no_stored_trace", broken: true},
		{name: "handed_off", handedOff: true},
		{name: "broken_handed_off_without_trace", handedOff: true, broken: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rec := newSpanRecorder(t)
			b := setup(t, setupOpts{tracer: rec.tp})
			srv := b.serve(t, b.inbox)
			if c.handedOff {
				if c.broken {
					b.inbox.UntracedHandoffsForTest()
				}
				startWorkers(t, b.inbox)
			}
			ev := invoiceEvent(epAsync, "evt_trace_async", "invoice.paid", "in_trace_async", 900)
			if a := postEvent(t, srv, ev); a.outcome != "accepted" {
				t.Fatalf("answer %+v", a)
			}
			if c.broken && !c.handedOff {
				// A receiver that keeps no trace context with the receipt.
				if _, err := b.db.Pool.Exec(b.ctx, `UPDATE hookinbox_inbox SET trace_parent = NULL`); err != nil {
					t.Fatal(err)
				}
			}
			if !c.handedOff {
				startTracedWorkers(t, b.inbox)
			}
			spans := rec.waitFor(t, "POST async", "hookinbox.receive", "hookinbox.attempt async")
			if taken := b.inbox.HandedOffForTest(); c.handedOff != (taken == 1) {
				t.Fatalf("%d receipts taken from the hand-off: the scenario did not happen", taken)
			}
			receive, attempt := mustSpan(t, spans, "hookinbox.receive"), mustSpan(t, spans, "hookinbox.attempt async")
			err := linkedTo(attempt, receive)
			if c.broken {
				if err == nil {
					t.Fatal("an attempt with no trace context kept was taken as linked")
				}
				return
			}
			noErr(t, err)
			noErr(t, childOf(receive, mustSpan(t, spans, "POST async")))
			wantAttrs(t, receive, map[string]string{"hookinbox.outcome": "accepted", "hookinbox.mode": "async"})
			handle := mustSpan(t, spans, "hookinbox.handle invoice.paid")
			noErr(t, childOf(handle, attempt))
			if attempt.SpanKind() != trace.SpanKindConsumer {
				t.Errorf("attempt span kind %v", attempt.SpanKind())
			}
			wantAttrs(t, attempt, map[string]string{"hookinbox.provider": "stripe", "hookinbox.endpoint": epAsync,
				"hookinbox.event.id": "evt_trace_async", "hookinbox.event.type": "invoice.paid", "hookinbox.attempt": "1"})
			noErr(t, leaks(spans))
		})
	}
}

// A hybrid delivery whose handler fails is answered accepted: its trace holds the
// failed handler (with an error status), and the worker's attempt that succeeds later
// links to the receiving span.
func TestTrace_HybridRetryLinksToReceivingSpan(t *testing.T) {
	t.Parallel()
	rec := newSpanRecorder(t)
	b := setup(t, setupOpts{tracer: rec.tp, noBilling: true})
	var mu sync.Mutex
	calls := 0
	b.inbox.Handle(epHybrid, "invoice.paid", func(ctx context.Context, tx pgx.Tx, ev hookinbox.Event) error {
		mu.Lock()
		defer mu.Unlock()
		if calls++; calls == 1 {
			return errors.New("downstream table locked")
		}
		return countingHandler(ctx, tx, ev)
	})
	srv := b.serve(t, b.inbox)
	ev := invoiceEvent(epHybrid, "evt_trace_hybrid", "invoice.paid", "in_trace_hybrid", 700)
	if a := postEvent(t, srv, ev); a.outcome != "accepted" {
		t.Fatalf("answer %+v", a)
	}
	startTracedWorkers(t, b.inbox)
	spans := rec.waitFor(t, "POST hybrid", "hookinbox.attempt hybrid")
	receive, attempt := mustSpan(t, spans, "hookinbox.receive"), mustSpan(t, spans, "hookinbox.attempt hybrid")
	noErr(t, linkedTo(attempt, receive))
	wantAttrs(t, receive, map[string]string{"hookinbox.outcome": "accepted", "hookinbox.mode": "hybrid"})
	var failed, succeeded sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() != "hookinbox.handle invoice.paid" {
			continue
		}
		if s.Status().Code == codes.Error {
			failed = s
		} else {
			succeeded = s
		}
	}
	if failed == nil || succeeded == nil {
		t.Fatalf("want a failed and a successful handler span; spans: %s", spanNames(spans))
	}
	noErr(t, childOf(failed, receive))
	noErr(t, childOf(succeeded, attempt))
	wantAttrs(t, succeeded, map[string]string{"hookinbox.attempt": "2"})
	noErr(t, leaks(spans))
}

// capturingServer is the downstream service: it keeps each request's traceparent.
func capturingServer(t *testing.T) (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("traceparent"))
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// traceparentOf is the W3C traceparent of a sampled span.
func traceparentOf(s sdktrace.ReadOnlySpan) string {
	return fmt.Sprintf("00-%s-%s-01", s.SpanContext().TraceID(), s.SpanContext().SpanID())
}

// forwardTrace receives a forwarded event through HTTP and delivers its outbox
// message through sink, and returns the spans.
func forwardTrace(t *testing.T, sink outbox.Sink) []sdktrace.ReadOnlySpan {
	t.Helper()
	rec := newSpanRecorder(t)
	b := setup(t, setupOpts{tracer: rec.tp, noBilling: true})
	b.inbox.HandleBatch(epBilling, "*", b.inbox.ForwardTo("downstream"))
	srv := b.serve(t, b.inbox)
	ev := invoiceEvent(epBilling, "evt_trace_fwd", "invoice.paid", "in_trace_fwd", 500)
	if a := postEvent(t, srv, ev); a.outcome != "processed" {
		t.Fatalf("answer %+v", a)
	}
	d, err := outbox.NewDispatcher(pgxdriver.New(b.db.Pool).Executor(), &outbox.Config{
		Sinks: map[string]outbox.Sink{"downstream": sink}, TracerProvider: rec.tp, Logger: testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := d.DispatchOnce(b.ctx); n != 1 || err != nil {
		t.Fatalf("DispatchOnce: %d, %v", n, err)
	}
	return rec.waitFor(t, "POST billing", "send downstream")
}

// checkForward checks that the delivery's client span continues the request's trace
// beneath the handler that wrote the message, and that the sink sent its traceparent.
func checkForward(spans []sdktrace.ReadOnlySpan, received []string) error {
	server, handle, send := findSpan(spans, "POST billing"), findSpan(spans, "hookinbox.handle invoice.paid"), findSpan(spans, "send downstream")
	if server == nil || handle == nil || send == nil {
		return fmt.Errorf("missing spans; have %s", spanNames(spans))
	}
	if send.SpanKind() != trace.SpanKindClient {
		return fmt.Errorf("delivery span kind %v, want client", send.SpanKind())
	}
	if send.SpanContext().TraceID() != server.SpanContext().TraceID() {
		return errors.New("the delivery is not in the request's trace")
	}
	if err := childOf(send, handle); err != nil {
		return err
	}
	if len(received) != 1 || received[0] != traceparentOf(send) {
		return fmt.Errorf("downstream received traceparent %q, want [%s]", received, traceparentOf(send))
	}
	return nil
}

// A forwarded event's delivery is a client span in the trace of the request that
// brought it, and the downstream service receives that span's traceparent; a sink
// that sends no traceparent is caught.
func TestTrace_ForwardHTTPContinuesTheRequestTrace(t *testing.T) {
	t.Parallel()
	t.Run("real", func(t *testing.T) {
		t.Parallel()
		down, received := capturingServer(t)
		spans := forwardTrace(t, &outbox.HTTPSink{URL: down.URL})
		noErr(t, checkForward(spans, received()))
		send := mustSpan(t, spans, "send downstream")
		wantAttrs(t, send, map[string]string{"hookinbox.provider": "stripe", "hookinbox.endpoint": epBilling,
			"hookinbox.event.id": "evt_trace_fwd", "hookinbox.outbox.sink": "downstream", "hookinbox.attempt": "1"})
		noErr(t, leaks(spans))
	})
	t.Run("broken_sink_without_traceparent", func(t *testing.T) {
		t.Parallel()
		down, received := capturingServer(t)
		spans := forwardTrace(t, outbox.SinkFunc(func(ctx context.Context, m *hookinboxtype.OutboxMessage) error {
			resp, err := http.Post(down.URL, "application/json", bytes.NewReader(m.Payload))
			if err == nil {
				resp.Body.Close()
			}
			return err
		}))
		if err := checkForward(spans, received()); err == nil {
			t.Fatal("a delivery without a traceparent was not caught")
		}
	})
}

// The NATS sink puts the delivery's traceparent in the message's headers.
func TestTrace_ForwardNATSCarriesTraceparent(t *testing.T) {
	t.Parallel()
	stream := testnats.New(t)
	spans := forwardTrace(t, &outbox.NATSSink{JetStream: stream.JetStream, Subject: stream.Subject})
	msg, err := stream.Stream.GetMsg(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if v := msg.Header["traceparent"]; len(v) > 0 {
		got = v[:1]
	}
	noErr(t, checkForward(spans, got))
	noErr(t, leaks(spans))
}

// With no TracerProvider, the tracing call sites of a delivery and an attempt
// allocate nothing: no span, no context, no attribute. A no-op provider instead (the
// broken variant: tracing "off" by a no-op tracer) is seen to allocate. Not parallel:
// AllocsPerRun counts the whole process's allocations.
func TestTrace_OffAllocatesNothing(t *testing.T) {
	if n := testing.AllocsPerRun(100, hookinbox.TraceCallSitesForTest(nil)); n != 0 {
		t.Errorf("tracing off: %v allocations per delivery and attempt, want 0", n)
	}
	if n := testing.AllocsPerRun(100, hookinbox.TraceCallSitesForTest(noop.NewTracerProvider())); n == 0 {
		t.Error("a no-op TracerProvider allocated nothing: the check cannot see an allocation")
	}
}

// BenchmarkReceive_Tracing is BenchmarkReceive's async case with tracing off and on
// (every span sampled, none exported), to show what tracing costs per delivery.
func BenchmarkReceive_Tracing(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(map[bool]string{false: "off", true: "on"}[on], func(b *testing.B) {
			var o setupOpts
			if on {
				tp := sdktrace.NewTracerProvider()
				b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
				o.tracer = tp
			}
			tb := setupTB(b, o)
			var n atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					ev := hookinbox.Event{Endpoint: epAsync, ID: fmt.Sprintf("evt_%d", n.Add(1)), Type: "invoice.paid", Payload: benchPayload}
					if _, err := tb.inbox.Receive(tb.ctx, ev); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// An endpoint faces the internet: a request's traceparent is linked from the server
// span, not taken as its parent, so a sender cannot choose the trace or its sampling.
func TestTrace_IncomingTraceparentIsLinkedNotContinued(t *testing.T) {
	t.Parallel()
	rec := newSpanRecorder(t)
	b := setup(t, setupOpts{tracer: rec.tp})
	srv := b.serve(t, b.inbox)
	ev := invoiceEvent(epBilling, "evt_trace_in", "invoice.paid", "in_trace_in", 100)
	const incoming = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/"+epBilling, bytes.NewReader(ev.Payload))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Stripe-Signature", signed(ev.Payload, testSecret, time.Now()))
	req.Header.Set("traceparent", incoming)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	server := mustSpan(t, rec.waitFor(t, "POST billing"), "POST billing")
	if server.Parent().IsValid() || server.SpanContext().TraceID().String() == "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("the server span continued the sender's trace (parent %v)", server.Parent())
	}
	links := server.Links()
	if len(links) != 1 || links[0].SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" ||
		links[0].SpanContext.SpanID().String() != "00f067aa0ba902b7" {
		t.Fatalf("server span links %v, want the sender's span", links)
	}
}
