package outbox

import (
	"context"
	"time"

	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// Steps of DispatchOnce, for tests that pause a dispatcher between them.

func (d *Dispatcher) ClaimForTest(ctx context.Context) ([]*hookinboxtype.OutboxMessage, error) {
	p, _ := d.claimParams(time.Now())
	return d.claimMessages(context.WithoutCancel(ctx), p)
}

func (d *Dispatcher) DeliverForTest(ctx context.Context, m *hookinboxtype.OutboxMessage) error {
	return d.deliver(ctx, d.byValue[m.Destination], m, time.Now().Add(d.config.DeliveryTimeout))
}

// DeliverAndMarkForTest delivers m and records the result, as Run does, however long
// ago it was claimed.
func (d *Dispatcher) DeliverAndMarkForTest(ctx context.Context, m *hookinboxtype.OutboxMessage) {
	ctx = context.WithoutCancel(ctx)
	dst := d.byValue[m.Destination]
	if err := d.deliver(ctx, dst, m, time.Now().Add(d.config.DeliveryTimeout)); err != nil {
		d.recordFailure(ctx, dst, m, err)
		return
	}
	d.markPublished(ctx, []delivered{{m: m, sink: dst.sinkName, start: time.Now()}})
}

// BreakLeaseCheck makes d start deliveries whose claims' leases may end before they
// do: the broken variant of the fencing test.
func (d *Dispatcher) BreakLeaseCheck() { d.deliverLate = true }

// BreakRetryAfter makes d retry a sink that asked to be left alone at its usual
// delay: the broken variant of the Retry-After test.
func (d *Dispatcher) BreakRetryAfter() { d.ignoreRetryAfter = true }
