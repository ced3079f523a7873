package outbox

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hookinbox/hookinbox/driver"
)

// State is where an outbox message stands. Each message stores its own, so every
// dispatcher and every operator command agree on it.
type State string

const (
	// StatePending: waiting for a dispatcher, or held by one.
	StatePending State = driver.StatePending
	// StatePublished: its sink accepted it.
	StatePublished State = driver.StatePublished
	// StateNeedsReview: every delivery its dispatcher allowed failed; it waits for a
	// person (Retry gives it back).
	StateNeedsReview State = driver.StateNeedsReview
	// StateDiscarded: a person decided it is not to be delivered.
	StateDiscarded State = driver.StateDiscarded
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

// Record is an outbox message as operators see it.
type Record struct {
	ID            int64
	AggregateType string
	AggregateID   string
	EventType     string
	Payload       json.RawMessage
	// Source is the inbox receipt whose processing wrote the message.
	Source      Source
	Destination string
	State       State
	CreatedAt   time.Time
	Attempts    int
	// MaxAttempts is the limit of the dispatcher that last claimed it; 0 before.
	MaxAttempts int
	LastError   string
	PublishedAt *time.Time
}

func recordFrom(m *driver.OutboxMessage) *Record {
	return &Record{
		ID: m.ID, AggregateType: m.AggregateType, AggregateID: m.AggregateID, EventType: m.EventType,
		Payload: m.Payload, Source: sourceFrom(m.Source), Destination: m.Destination, State: State(m.State),
		CreatedAt: m.CreatedAt, Attempts: m.Attempts, MaxAttempts: m.MaxAttempts, LastError: m.LastError,
		PublishedAt: m.PublishedAt,
	}
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
func (d *Dispatcher) List(ctx context.Context, p ListParams) ([]*Record, error) {
	if p.Limit <= 0 {
		p.Limit = 100
	}
	list, err := d.ex.OutboxList(ctx, &driver.OutboxListParams{
		NeedsReview: p.NeedsReview, Pending: p.Pending, Limit: p.Limit,
	})
	if err != nil {
		return nil, err
	}
	out := make([]*Record, len(list))
	for n, m := range list {
		out[n] = recordFrom(m)
	}
	return out, nil
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
