// Package tracectx turns a context's span into the W3C traceparent stored with a
// receipt or an outbox message, and back, so that work done later (a worker's attempt,
// the dispatcher's delivery) can refer to the span that caused it. Only the
// traceparent is kept: neither tracestate nor baggage, which may carry what a
// receipt must not store.
package tracectx

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

const header = "traceparent"

var w3c propagation.TraceContext

// Format returns ctx's span context as a traceparent, or "" when ctx has no valid
// span context.
func Format(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	w3c.Inject(ctx, c)
	return c[header]
}

// Parse returns the remote span context of a stored traceparent; an invalid one (or
// "") gives an invalid span context.
func Parse(traceparent string) trace.SpanContext {
	if traceparent == "" {
		return trace.SpanContext{}
	}
	ctx := w3c.Extract(context.Background(), propagation.MapCarrier{header: traceparent})
	return trace.SpanContextFromContext(ctx)
}

// Context returns ctx with the stored traceparent as its remote parent, or ctx
// itself when traceparent is invalid.
func Context(ctx context.Context, traceparent string) context.Context {
	sc := Parse(traceparent)
	if !sc.IsValid() {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}

// Inject writes ctx's traceparent into a carrier of outgoing headers (an HTTP
// request's, a NATS message's).
func Inject(ctx context.Context, c propagation.TextMapCarrier) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	w3c.Inject(ctx, c)
}
