package outbox

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/hookinbox/hookinbox/internal/tracectx"
)

// TracerName is the instrumentation scope of the dispatcher's spans.
const TracerName = "github.com/hookinbox/hookinbox/outbox"

// startDelivery starts the client span of one delivery to a sink. It continues the
// trace of the handler that wrote the message (stored with it), so that the request
// the provider sent, the handler, the delivery and the downstream service's own spans
// (through the traceparent the sinks send) are one trace. With tracing off (no
// TracerProvider) it returns ctx and a nil span, and costs nothing.
func (d *Dispatcher) startDelivery(ctx context.Context, sinkName string, m *hookinboxtype.OutboxMessage) (context.Context, trace.Span) {
	if d.tracer == nil {
		return ctx, nil
	}
	return d.tracer.Start(tracectx.Context(ctx, m.TraceParent), "send "+sinkName,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			semconv.MessagingOperationTypeSend, semconv.MessagingOperationName("send"),
			semconv.MessagingDestinationName(sinkName),
			semconv.MessagingMessageID(fmt.Sprint(m.ID)),
			attribute.Int64("hookinbox.outbox.id", m.ID),
			attribute.String("hookinbox.outbox.sink", sinkName),
			attribute.String("hookinbox.outbox.event_type", m.EventType),
			attribute.Int("hookinbox.attempt", m.Attempts),
			attribute.Int64("hookinbox.outbox.fencing_token", m.FencingToken),
			attribute.String("hookinbox.provider", m.Source.Provider),
			attribute.String("hookinbox.endpoint", m.Source.Endpoint),
			attribute.String("hookinbox.event.id", m.Source.EventID),
		))
}

// endDelivery ends a delivery's span, with an error status when the sink failed.
func endDelivery(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil {
		span.SetAttributes(semconv.ErrorTypeKey.String(fmt.Sprintf("%T", err)))
		msg := err.Error()
		if len(msg) > 2000 {
			msg = strings.ToValidUTF8(msg[:2000], "")
		}
		span.SetStatus(codes.Error, msg)
	}
	span.End()
}

// injectHTTP writes the delivery's traceparent into an outgoing request's headers.
func injectHTTP(ctx context.Context, h http.Header) {
	tracectx.Inject(ctx, propagation.HeaderCarrier(h))
}

// injectNATS writes the delivery's traceparent into a NATS message's headers, under
// its lowercase W3C name: NATS headers are case-sensitive, and consumers' propagators
// look for "traceparent".
func injectNATS(ctx context.Context, h nats.Header) {
	tracectx.Inject(ctx, natsCarrier(h))
}

type natsCarrier nats.Header

func (c natsCarrier) Get(key string) string {
	if v := c[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c natsCarrier) Set(key, value string) { c[key] = []string{value} }

func (c natsCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
