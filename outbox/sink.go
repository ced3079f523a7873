package outbox

import (
	"context"
	"fmt"
	"time"

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

// RetryAfterError is a failed delivery whose destination said when to try again: an
// HTTP 429 or 503 with Retry-After, or a Sink of one's own that returns it. The
// dispatcher retries the message no earlier than After (at most an hour) and starts no
// other delivery to the destination before then, instead of flooding a downstream
// that asked for a pause.
type RetryAfterError struct {
	Err   error
	After time.Duration
}

func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("%v (retry after %s)", e.Err, e.After)
}

func (e *RetryAfterError) Unwrap() error { return e.Err }

// maxRetryAfter caps the pause a destination may ask for.
const maxRetryAfter = time.Hour
