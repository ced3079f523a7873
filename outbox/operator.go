package outbox

import (
	"context"
	"time"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// Stats summarise the outbox.
type Stats struct {
	// Pending counts undelivered messages, including those needing review.
	Pending int64
	// OldestPendingAge is how long the oldest undelivered message has waited; zero when
	// there is none.
	OldestPendingAge time.Duration
	// NeedsReview counts messages in StateNeedsReview.
	NeedsReview int64
}

// Stats summarise the outbox: undelivered messages, the oldest one's age, and those
// that need review.
func (d *Dispatcher) Stats(ctx context.Context) (*Stats, error) {
	s, err := d.ex.OutboxStats(ctx)
	if err != nil {
		return nil, err
	}
	return &Stats{Pending: s.Pending, OldestPendingAge: s.OldestPendingAge, NeedsReview: s.NeedsReview}, nil
}

// ListParams filter List.
type ListParams struct {
	// NeedsReview lists only messages in StateNeedsReview.
	NeedsReview bool
	// Pending lists only undelivered messages (pending or needing review).
	Pending bool
	// Defaults to 100.
	Limit int
}

// List returns outbox messages, newest first.
func (d *Dispatcher) List(ctx context.Context, p ListParams) ([]*hookinboxtype.OutboxMessage, error) {
	if p.Limit <= 0 {
		p.Limit = 100
	}
	list, err := d.ex.OutboxList(ctx, &driver.OutboxListParams{
		NeedsReview: p.NeedsReview, Pending: p.Pending, Limit: p.Limit,
	})
	if err != nil {
		return nil, err
	}
	return list, nil
}

// Retry makes an undelivered message pending and available now with its attempts
// reset. It reports false if there is no such undelivered message.
func (d *Dispatcher) Retry(ctx context.Context, id int64) (bool, error) {
	n, err := d.ex.OutboxRetry(ctx, &driver.OutboxRetryParams{ID: id})
	if n > 0 {
		d.Notify()
	}
	return n > 0, err
}

// RetryNeedsReview does what Retry does for every message that needs review.
func (d *Dispatcher) RetryNeedsReview(ctx context.Context) (int, error) {
	n, err := d.ex.OutboxRetry(ctx, &driver.OutboxRetryParams{NeedsReview: true})
	if n > 0 {
		d.Notify()
	}
	return n, err
}
