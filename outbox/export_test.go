package outbox

import "context"

// Steps of DispatchOnce, for tests that pause a dispatcher between them.

func (d *Dispatcher) ClaimForTest(ctx context.Context) ([]*Message, error) {
	return d.claim(context.WithoutCancel(ctx))
}

func (d *Dispatcher) DeliverForTest(ctx context.Context, m *Message) error {
	_, err := d.deliver(ctx, m)
	return err
}

func (d *Dispatcher) DeliverAndMarkForTest(ctx context.Context, m *Message) {
	d.deliverAndMark(context.WithoutCancel(ctx), m)
}
