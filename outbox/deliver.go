package outbox

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// deliver calls dst's sink with m, under a span, until deadline.
func (d *Dispatcher) deliver(ctx context.Context, dst *destination, m *hookinboxtype.OutboxMessage, deadline time.Time) error {
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	dctx, span := d.startDelivery(dctx, dst.sinkName, m)
	err := d.callSink(dctx, dst, m)
	endDelivery(span, err)
	return err
}

// callSink delivers m, turning a sink's panic into that delivery's failure, so that
// one broken sink neither takes the process down nor stops the other sinks: the
// message is retried and eventually needs review like any failed delivery. The stack
// goes to the log; the payload never does.
func (d *Dispatcher) callSink(ctx context.Context, dst *destination, m *hookinboxtype.OutboxMessage) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("sink %q panicked: %v", dst.sinkName, v)
			d.config.Logger.ErrorContext(ctx, "hookinbox: outbox: sink panicked",
				"outbox_id", m.ID, "sink", dst.sinkName, "attempt", m.Attempts, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		}
	}()
	return dst.sink.Deliver(ctx, m)
}

// recordFailure stores a failed delivery under its fencing token. A sink that said
// when to try again (RetryAfterError) is left alone until then: the message waits at
// least that long, and no other delivery to the destination starts before.
func (d *Dispatcher) recordFailure(ctx context.Context, dst *destination, m *hookinboxtype.OutboxMessage, err error) {
	msg := err.Error()
	if len(msg) > 2000 {
		msg = strings.ToValidUTF8(msg[:2000], "")
	}
	delay := d.config.RetryDelayFunc(m.Attempts)
	if ra := (*RetryAfterError)(nil); errors.As(err, &ra) && !d.ignoreRetryAfter {
		after := min(max(ra.After, 0), maxRetryAfter)
		dst.pause(time.Now().Add(after))
		delay = max(delay, after)
	}
	next := "retry"
	if m.Attempts >= m.MaxAttempts {
		next = "needs review"
	}
	d.config.Logger.WarnContext(ctx, "hookinbox: outbox: delivery failed",
		"outbox_id", m.ID, "destination", m.Destination, "attempt", m.Attempts, "next", next, "retry_in", delay.String(), "error", msg)
	rctx, cancel := context.WithTimeout(ctx, d.config.RecordTimeout)
	defer cancel()
	if ferr := d.ex.OutboxRecordFailure(rctx, &driver.OutboxFailureParams{
		ID: m.ID, ClaimToken: m.FencingToken, Error: msg, Delay: delay,
	}); ferr != nil {
		// The attempt is counted and the lease still hides the message: it is
		// delivered again when the lease ends.
		d.config.Logger.ErrorContext(ctx, "hookinbox: outbox: error recording failure",
			"outbox_id", m.ID, "fencing_token", m.FencingToken, "error", ferr.Error())
	}
}
