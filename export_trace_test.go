package hookinbox

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/trace"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/hookinbox/hookinbox/provider"
)

var verifiedForTest = provider.Verified{ID: "evt_1", Type: "invoice.paid"}

// TraceCallSitesForTest returns a function that passes once through every tracing
// call site of a delivery and of a worker's attempt, as an inbox configured with tp
// would (nil: tracing off), without a database: what those call sites cost.
func TraceCallSitesForTest(tp trace.TracerProvider) func() {
	i := &Inbox[struct{}]{trace: newTracing(tp), endpoints: map[string]*endpoint{}}
	ep := &endpoint{EndpointConfig: EndpointConfig{Name: "in", Mode: ModeAsync}, provider: "stripe"}
	i.endpoints["in"] = ep
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	ev := Event{Provider: "stripe", Endpoint: "in", ID: "evt_1", Type: "invoice.paid", Attempt: 1}
	r := &hookinboxtype.Receipt{Key: hookinboxtype.Key{Provider: "stripe", Endpoint: "in", EventID: "evt_1"}, EventType: "invoice.paid", Attempts: 1}
	p := &driver.InboxInsertParams{}
	ctx := context.Background()
	return func() {
		_ = i.traceEndpoint(ep, h)
		span := i.startVerify(ctx, ep)
		i.endVerify(ctx, span, verifiedForTest, nil)
		hctx, span := i.startHandler(ctx, &ev)
		endSpan(span, nil)
		_ = i.withTraceParent(hctx, p)
		actx, span := i.startAttempt(ctx, r)
		endAttempt(span, nil)
		_, span = i.startBatchAttempt(actx, []*hookinboxtype.Receipt{r})
		endSpan(span, nil)
	}
}
