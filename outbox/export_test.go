package outbox

import (
	"context"

	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// Steps of DispatchOnce, for tests that pause a dispatcher between them.

func (d *Dispatcher) ClaimForTest(ctx context.Context) ([]*hookinboxtype.OutboxMessage, error) {
	return d.claim(context.WithoutCancel(ctx))
}

func (d *Dispatcher) DeliverForTest(ctx context.Context, m *hookinboxtype.OutboxMessage) error {
	_, err := d.deliver(ctx, m)
	return err
}

func (d *Dispatcher) DeliverAndMarkForTest(ctx context.Context, m *hookinboxtype.OutboxMessage) {
	d.deliverAndMark(context.WithoutCancel(ctx), m)
}
