package hookinbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hookinbox/hookinbox/driver"
)

// Key identifies a receipt: provider, endpoint and the provider's event id.
type Key = driver.Key

// Receipt is a row of webhook_inbox as operators see it.
type Receipt = driver.Receipt

// Stats summarise the inbox for monitoring (the seed's monitoring query).
type Stats struct {
	// Unprocessed counts receipts not yet processed, including those needing review.
	Unprocessed int64
	// OldestUnprocessedAge is how long the oldest unprocessed receipt has waited: the
	// first sign that processing has stalled. Zero when there is none.
	OldestUnprocessedAge time.Duration
	// NeedsReview counts unprocessed receipts at max attempts. Alert on anything but 0.
	NeedsReview int64
	// ReceivedLastHour counts receipts by event type over the last hour.
	ReceivedLastHour []driver.TypeCount
}

// Stats returns the inbox's monitoring figures.
func (i *Inbox[TTx]) Stats(ctx context.Context) (*Stats, error) {
	s, err := i.driver.Executor().InboxStats(ctx, &driver.InboxStatsParams{
		MaxAttempts: i.worker.MaxAttempts, RecentWindow: time.Hour,
	})
	if err != nil {
		return nil, err
	}
	return &Stats{
		Unprocessed:          s.Unprocessed,
		OldestUnprocessedAge: s.OldestUnprocessedAge,
		NeedsReview:          s.NeedsReview,
		ReceivedLastHour:     s.ReceivedByType,
	}, nil
}

// ListParams filter ListReceipts.
type ListParams struct {
	// Endpoint restricts the list to one endpoint.
	Endpoint string
	// NeedsReview lists only receipts that reached max attempts unprocessed.
	NeedsReview bool
	// Unprocessed lists only unprocessed receipts.
	Unprocessed bool
	// Limit caps the number of rows.
	//
	// Defaults to 100.
	Limit int
}

// ListReceipts returns receipts, newest first.
func (i *Inbox[TTx]) ListReceipts(ctx context.Context, params ListParams) ([]*Receipt, error) {
	if params.Limit <= 0 {
		params.Limit = 100
	}
	return i.driver.Executor().InboxList(ctx, &driver.InboxListParams{
		Endpoint:    params.Endpoint,
		NeedsReview: params.NeedsReview,
		Unprocessed: params.Unprocessed,
		MaxAttempts: i.worker.MaxAttempts,
		Limit:       params.Limit,
	})
}

// GetReceipt returns one receipt, or nil if there is none.
func (i *Inbox[TTx]) GetReceipt(ctx context.Context, key Key) (*Receipt, error) {
	return i.driver.Executor().InboxGet(ctx, key)
}

// Retry makes an unprocessed receipt available to workers now with its attempts reset
// to zero, typically after a person fixed what made it fail. It reports false if the
// receipt does not exist or is already processed.
func (i *Inbox[TTx]) Retry(ctx context.Context, key Key) (bool, error) {
	n, err := i.driver.Executor().InboxRetry(ctx, &driver.InboxRetryParams{Key: &key})
	if err != nil {
		return false, err
	}
	if n > 0 {
		i.notifyWorkers()
	}
	return n > 0, nil
}

// RetryNeedsReview does what Retry does for every receipt that needs review, and
// returns how many.
func (i *Inbox[TTx]) RetryNeedsReview(ctx context.Context) (int, error) {
	n, err := i.driver.Executor().InboxRetry(ctx, &driver.InboxRetryParams{
		NeedsReview: true, MaxAttempts: i.worker.MaxAttempts,
	})
	if n > 0 {
		i.notifyWorkers()
	}
	return n, err
}

// ErrRetentionTooShort is returned by Cleanup for a retention shorter than a
// provider's retry window: a retry arriving after its receipt was deleted would be
// processed again.
var ErrRetentionTooShort = errors.New("retention shorter than the provider's retry window")

// CleanupParams configure Cleanup.
type CleanupParams struct {
	// OlderThan is the retention: processed receipts older than this are deleted.
	//
	// Defaults to 720 hours (30 days).
	OlderThan time.Duration
	// Force allows a retention shorter than the providers' retry windows.
	Force bool
	// DryRun counts what would be deleted and deletes nothing.
	DryRun bool
	// BatchSize is how many rows one DELETE removes, so no statement holds many locks
	// or runs long.
	//
	// Defaults to 1000.
	BatchSize int
}

// Cleanup deletes processed receipts older than the retention, in batches, and returns
// how many it deleted (or, with DryRun, would delete). Unprocessed receipts are never
// deleted.
func (i *Inbox[TTx]) Cleanup(ctx context.Context, params CleanupParams) (int, error) {
	if params.OlderThan == 0 {
		params.OlderThan = 720 * time.Hour
	}
	if params.BatchSize <= 0 {
		params.BatchSize = 1000
	}
	if minimum := i.MinRetention(); params.OlderThan < minimum && !params.Force {
		return 0, fmt.Errorf("%w: %s < %s (use Force to override)", ErrRetentionTooShort, params.OlderThan, minimum)
	}
	ex := i.driver.Executor()
	if params.DryRun {
		return ex.InboxDeleteProcessed(ctx, &driver.InboxDeleteParams{OlderThan: params.OlderThan, DryRun: true})
	}
	total := 0
	for {
		n, err := ex.InboxDeleteProcessed(ctx, &driver.InboxDeleteParams{OlderThan: params.OlderThan, Limit: params.BatchSize})
		total += n
		if err != nil {
			return total, err
		}
		if n < params.BatchSize {
			return total, nil
		}
	}
}

// MinRetention is the longest retry window of the configured endpoints' providers (72
// hours when none is configured): the shortest retention Cleanup accepts unforced.
func (i *Inbox[TTx]) MinRetention() time.Duration {
	minimum := 72 * time.Hour
	if len(i.endpoints) > 0 {
		minimum = 0
	}
	for _, ep := range i.endpoints {
		minimum = max(minimum, ep.Verifier.RetryWindow())
	}
	return minimum
}
