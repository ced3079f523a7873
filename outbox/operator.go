package outbox

import (
	"context"

	"github.com/hookinbox/hookinbox/driver"
)

// Stats summarise the outbox: pending messages, the oldest one's age, and those that
// reached max attempts.
func (d *Dispatcher) Stats(ctx context.Context) (*driver.OutboxStats, error) {
	return d.ex.OutboxStats(ctx, d.config.MaxAttempts)
}

// ListParams filter List.
type ListParams struct {
	NeedsReview bool
	Pending     bool
	// Defaults to 100.
	Limit int
}

// List returns outbox messages, newest first.
func (d *Dispatcher) List(ctx context.Context, p ListParams) ([]*driver.OutboxMessage, error) {
	if p.Limit <= 0 {
		p.Limit = 100
	}
	return d.ex.OutboxList(ctx, &driver.OutboxListParams{
		NeedsReview: p.NeedsReview, Pending: p.Pending, MaxAttempts: d.config.MaxAttempts, Limit: p.Limit,
	})
}

// Retry makes an unpublished message available now with its attempts reset. It
// reports false if there is no such unpublished message.
func (d *Dispatcher) Retry(ctx context.Context, id int64) (bool, error) {
	n, err := d.ex.OutboxRetry(ctx, &driver.OutboxRetryParams{ID: id})
	if n > 0 {
		d.Notify()
	}
	return n > 0, err
}

// RetryNeedsReview does what Retry does for every message at max attempts.
func (d *Dispatcher) RetryNeedsReview(ctx context.Context) (int, error) {
	n, err := d.ex.OutboxRetry(ctx, &driver.OutboxRetryParams{NeedsReview: true, MaxAttempts: d.config.MaxAttempts})
	if n > 0 {
		d.Notify()
	}
	return n, err
}
