package hookinbox

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/hookinbox/hookinbox/internal/tracectx"
	"github.com/hookinbox/hookinbox/provider"
)

// TracerName is the instrumentation scope of hookinbox's spans.
const TracerName = "github.com/hookinbox/hookinbox"

// The attributes hookinbox puts on its spans. They name the event, never its payload,
// its headers or a secret.
const (
	attrProvider  = attribute.Key("hookinbox.provider")
	attrEndpoint  = attribute.Key("hookinbox.endpoint")
	attrEventID   = attribute.Key("hookinbox.event.id")
	attrEventType = attribute.Key("hookinbox.event.type")
	attrMode      = attribute.Key("hookinbox.mode")
	attrOutcome   = attribute.Key("hookinbox.outcome")
	attrAttempt   = attribute.Key("hookinbox.attempt")
	attrBatchSize = attribute.Key("hookinbox.batch.size")
	attrGroupSize = attribute.Key("hookinbox.group.size")
	attrSecret    = attribute.Key("hookinbox.secret_index")
)

// tracing holds an inbox's tracer; a nil tracer means tracing is off, and then no
// span, context or attribute is made at all (not even a no-op one).
type tracing struct {
	provider trace.TracerProvider
	tracer   trace.Tracer
}

func newTracing(tp trace.TracerProvider) tracing {
	if tp == nil {
		return tracing{}
	}
	return tracing{provider: tp, tracer: tp.Tracer(TracerName)}
}

func eventAttrs(ev *Event) []attribute.KeyValue {
	return []attribute.KeyValue{
		attrProvider.String(ev.Provider), attrEndpoint.String(ev.Endpoint),
		attrEventID.String(ev.ID), attrEventType.String(ev.Type),
	}
}

func receiptAttrs(r *hookinboxtype.Receipt) []attribute.KeyValue {
	return []attribute.KeyValue{
		attrProvider.String(r.Provider), attrEndpoint.String(r.Endpoint),
		attrEventID.String(r.EventID), attrEventType.String(r.EventType),
		attrAttempt.Int(r.Attempts),
	}
}

// endSpan ends span, with an error status when err is set. The status carries the
// error's text, as the log line does; error.type its Go type.
func endSpan(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil {
		span.SetAttributes(semconv.ErrorTypeKey.String(fmt.Sprintf("%T", err)))
		span.SetStatus(codes.Error, errorText(err))
	}
	span.End()
}

// traceEndpoint wraps an endpoint's handler in an HTTP server span (otelhttp, with the
// HTTP semantic conventions). The span starts a trace of its own and links to the
// span of a W3C traceparent the request carries, rather than continuing it: webhook
// endpoints face the internet, and a sender must not choose the trace a delivery is
// recorded in, nor (with a parent-based sampler) whether it is sampled.
func (i *Inbox[TTx]) traceEndpoint(ep *endpoint, h http.Handler) http.Handler {
	if i.trace.tracer == nil {
		return h
	}
	return otelhttp.NewHandler(h, "hookinbox.endpoint",
		otelhttp.WithTracerProvider(i.trace.provider),
		otelhttp.WithPropagators(propagation.TraceContext{}),
		otelhttp.WithPublicEndpointFn(func(*http.Request) bool { return true }),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			if r.Method != http.MethodPost {
				return "HTTP " + ep.Name // any other method: a bounded set of names
			}
			return "POST " + ep.Name
		}),
		otelhttp.WithSpanOptions(trace.WithAttributes(attrEndpoint.String(ep.Name), attrProvider.String(ep.provider))),
	)
}

// startVerify starts the span of a signature check.
func (i *Inbox[TTx]) startVerify(ctx context.Context, ep *endpoint) trace.Span {
	if i.trace.tracer == nil {
		return nil
	}
	_, span := i.trace.tracer.Start(ctx, "hookinbox.verify",
		trace.WithAttributes(attrProvider.String(ep.provider), attrEndpoint.String(ep.Name)))
	return span
}

// endVerify ends the span of a signature check and names the verified event on it and
// on the request's span.
func (i *Inbox[TTx]) endVerify(ctx context.Context, span trace.Span, v provider.Verified, err error) {
	if span == nil {
		return
	}
	if err == nil {
		attrs := []attribute.KeyValue{attrEventID.String(v.ID), attrEventType.String(v.Type)}
		trace.SpanFromContext(ctx).SetAttributes(attrs...)
		span.SetAttributes(append(attrs, attrSecret.Int(v.SecretIndex))...)
	}
	endSpan(span, err)
}

// receiveTraced is receive inside the span of the delivery's receipt: its wait for a
// group, its transaction (or the accept batch's statement), its outcome.
func (i *Inbox[TTx]) receiveTraced(ctx context.Context, ev Event) (Outcome, bool, error) {
	if i.trace.tracer == nil {
		return i.receive(ctx, ev)
	}
	attrs := eventAttrs(&ev)
	if ep, ok := i.endpoints[ev.Endpoint]; ok {
		if ev.Provider == "" {
			attrs[0] = attrProvider.String(ep.provider)
		}
		attrs = append(attrs, attrMode.String(string(ep.Mode)))
	}
	ctx, span := i.trace.tracer.Start(ctx, "hookinbox.receive", trace.WithAttributes(attrs...))
	out, conflict, err := i.receive(ctx, ev)
	if out != "" {
		span.SetAttributes(attrOutcome.String(string(out)))
	}
	endSpan(span, err)
	return out, conflict, err
}

// traceGroup records on each delivery's span how many deliveries shared its
// transaction.
func traceGroup[TTx any](group []*syncDelivery[TTx]) {
	for _, d := range group {
		if span := trace.SpanFromContext(d.ctx); span.IsRecording() {
			span.SetAttributes(attrGroupSize.Int(len(group)))
		}
	}
}

// startHandler starts the span of a handler's call. Its parent is the delivery's
// receive span or the worker's attempt span.
func (i *Inbox[TTx]) startHandler(ctx context.Context, ev *Event) (context.Context, trace.Span) {
	if i.trace.tracer == nil {
		return ctx, nil
	}
	return i.trace.tracer.Start(ctx, "hookinbox.handle "+ev.Type,
		trace.WithAttributes(append(eventAttrs(ev), attrAttempt.Int(ev.Attempt))...))
}

// startBatchHandler starts the span of a set-based handler's call.
func (i *Inbox[TTx]) startBatchHandler(ctx context.Context, evs []Event) (context.Context, trace.Span) {
	if i.trace.tracer == nil || len(evs) == 0 {
		return ctx, nil
	}
	return i.trace.tracer.Start(ctx, "hookinbox.handle_batch "+evs[0].Type, trace.WithAttributes(
		attrProvider.String(evs[0].Provider), attrEndpoint.String(evs[0].Endpoint),
		attrEventType.String(evs[0].Type), attrBatchSize.Int(len(evs))))
}

// startAttempt starts the span of a worker's attempt at one receipt. The attempt runs
// in a trace of its own (it is a later transaction, maybe in another process), linked
// to the span that received the receipt when the receipt carries its trace context.
func (i *Inbox[TTx]) startAttempt(ctx context.Context, r *hookinboxtype.Receipt) (context.Context, trace.Span) {
	if i.trace.tracer == nil {
		return ctx, nil
	}
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(append(receiptAttrs(r),
			semconv.MessagingOperationTypeProcess, semconv.MessagingOperationName("process"),
			semconv.MessagingDestinationName(r.Endpoint))...)}
	if sc := tracectx.Parse(r.TraceParent); sc.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	return i.trace.tracer.Start(ctx, "hookinbox.attempt "+r.Endpoint, opts...)
}

// startBatchAttempt starts the span of a worker's attempt at a batch of receipts,
// linked to each receipt's receiving span. Each handler's span, beneath it, names its
// event.
func (i *Inbox[TTx]) startBatchAttempt(ctx context.Context, batch []*hookinboxtype.Receipt) (context.Context, trace.Span) {
	if i.trace.tracer == nil {
		return ctx, nil
	}
	links := make([]trace.Link, 0, len(batch))
	for _, r := range batch {
		if sc := tracectx.Parse(r.TraceParent); sc.IsValid() {
			links = append(links, trace.Link{SpanContext: sc})
		}
	}
	return i.trace.tracer.Start(ctx, "hookinbox.attempt_batch", trace.WithNewRoot(),
		trace.WithSpanKind(trace.SpanKindConsumer), trace.WithLinks(links...),
		trace.WithAttributes(attrBatchSize.Int(len(batch)),
			semconv.MessagingOperationTypeProcess, semconv.MessagingOperationName("process")))
}

// traceParent is the trace context a receipt or an outbox message is stored with, so
// that the worker's attempt can link to the receiving span and the dispatcher can
// continue its trace: "" when tracing is off or ctx has no span.
func (i *Inbox[TTx]) traceParent(ctx context.Context) string {
	if i.trace.tracer == nil {
		return ""
	}
	return tracectx.Format(ctx)
}

// withTraceParent stores the delivery's trace context with a receipt left for workers.
func (i *Inbox[TTx]) withTraceParent(ctx context.Context, p *driver.InboxInsertParams) *driver.InboxInsertParams {
	if !p.Processed {
		p.TraceParent = i.traceParent(ctx)
	}
	return p
}

// endAttempt ends an attempt's span; a receipt found processed by another worker, or
// parked for its paused endpoint, is not a failure of this one.
func endAttempt(span trace.Span, err error) {
	switch {
	case span != nil && errors.Is(err, errAlreadyProcessed):
		span.SetAttributes(attrOutcome.String(string(AttemptAlreadyProcessed)))
		err = nil
	case span != nil && errors.Is(err, errParked):
		span.SetAttributes(attrOutcome.String("parked"))
		err = nil
	}
	endSpan(span, err)
}
