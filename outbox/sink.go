package outbox

import (
	"context"

	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// Sink delivers a message to one destination. Deliver returns nil only when the
// destination has accepted the message (an HTTP 2xx, a JetStream publish
// acknowledgement). It is called with no database transaction open and with a
// deadline, and must return when ctx ends: a stopping dispatcher waits for it. It may
// be called again for the same message, with the same idempotency key, after a crash
// or a lost lease.
type Sink interface {
	Deliver(ctx context.Context, m *hookinboxtype.OutboxMessage) error
}

// SinkFunc adapts a function to a Sink.
type SinkFunc func(ctx context.Context, m *hookinboxtype.OutboxMessage) error

// Deliver calls f.
func (f SinkFunc) Deliver(ctx context.Context, m *hookinboxtype.OutboxMessage) error {
	return f(ctx, m)
}
