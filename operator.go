package hookinbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// Operator runs the inbox's operator functions (stats, listing, retry, cleanup) on a
// database. It needs no handlers and no transaction type, so a command-line tool or an
// admin page builds one from the driver's executor alone; every figure it reports is
// read from the rows' stored state, so it agrees with every running process.
//
//	op := hookinbox.NewOperator(pgxdriver.New(pool).Executor(), nil)
//	stats, err := op.Stats(ctx)
type Operator struct {
	exec   driver.Executor
	config OperatorConfig
}

// OperatorConfig configures an Operator.
type OperatorConfig struct {
	// MinRetention is the shortest retention Cleanup accepts without Force: the longest
	// retry window of the providers whose receipts the database keeps. A receipt
	// deleted before its provider stops retrying turns the next retry into a new event.
	//
	// Defaults to 72 hours (Stripe's retry window).
	MinRetention time.Duration

	// RetriedFunc, when set, is called after Retry or RetryNeedsReview made receipts
	// available, e.g. to wake this process's workers.
	RetriedFunc func()
}

// NewOperator returns an Operator on exec, typically a driver's Executor().
func NewOperator(exec driver.Executor, config *OperatorConfig) *Operator {
	o := &Operator{exec: exec}
	if config != nil {
		o.config = *config
	}
	if o.config.MinRetention <= 0 {
		o.config.MinRetention = 72 * time.Hour
	}
	return o
}

// Operator returns the operator functions on the inbox's database, with the inbox's
// providers' retry windows as the minimum retention and its workers woken by a retry.
func (i *Inbox[TTx]) Operator() *Operator {
	return NewOperator(i.driver.Executor(), &OperatorConfig{MinRetention: i.MinRetention(), RetriedFunc: i.announce})
}

// Stats summarise the inbox for monitoring.
type Stats struct {
	// Unprocessed counts receipts not yet processed, including those needing review.
	Unprocessed int64
	// OldestUnprocessedAge is how long the oldest unprocessed receipt has waited: the
	// first sign that processing has stalled. Zero when there is none.
	OldestUnprocessedAge time.Duration
	// NeedsReview counts receipts in StateNeedsReview. Alert on anything but 0.
	NeedsReview int64
	// OldestPendingAge is how long the oldest pending receipt has waited, leaving out
	// those that need review (a person's, not the workers'): a stall of the workers,
	// or a paused endpoint. Zero when there is none.
	OldestPendingAge time.Duration
	// ReceivedLastHour counts receipts by event type over the last hour.
	ReceivedLastHour []TypeCount
	// Tables are the sizes of the inbox, outbox and effect tables: what retention
	// (Cleanup, Cleaner) keeps bounded.
	Tables []TableSize
}

// TableSize is the size of one of hookinbox's tables.
type TableSize struct {
	Table string
	// Rows counts the rows on SQLite; on PostgreSQL it is the planner's estimate, -1
	// before the table's first VACUUM or ANALYZE.
	Rows int64
	// Bytes is the space the table and its indexes take, -1 when unknown.
	Bytes int64
}

// TypeCount is the number of receipts of one event type.
type TypeCount struct {
	EventType string
	Count     int64
}

// Stats returns the inbox's monitoring figures.
func (o *Operator) Stats(ctx context.Context) (*Stats, error) {
	s, err := o.exec.InboxStats(ctx, &driver.InboxStatsParams{RecentWindow: time.Hour})
	if err != nil {
		return nil, err
	}
	out := &Stats{
		Unprocessed:          s.Unprocessed,
		OldestUnprocessedAge: s.OldestUnprocessedAge,
		NeedsReview:          s.NeedsReview,
		OldestPendingAge:     s.OldestPendingAge,
	}
	for _, tc := range s.ReceivedByType {
		out.ReceivedLastHour = append(out.ReceivedLastHour, TypeCount{EventType: tc.EventType, Count: tc.Count})
	}
	sizes, err := o.exec.TableSizes(ctx)
	if err != nil {
		return nil, err
	}
	for _, t := range sizes {
		out.Tables = append(out.Tables, TableSize(t))
	}
	return out, nil
}

// ListParams filter ListReceipts.
type ListParams struct {
	// Endpoint restricts the list to one endpoint.
	Endpoint string
	// NeedsReview lists only receipts in StateNeedsReview.
	NeedsReview bool
	// Unprocessed lists only receipts not yet processed (pending or needing review).
	Unprocessed bool
	// Conflicts lists only receipts that a delivery with another body repeated.
	Conflicts bool
	// Limit caps the number of rows.
	//
	// Defaults to 100.
	Limit int
}

// ListReceipts returns receipts, newest first.
func (o *Operator) ListReceipts(ctx context.Context, params ListParams) ([]*hookinboxtype.Receipt, error) {
	if params.Limit <= 0 {
		params.Limit = 100
	}
	list, err := o.exec.InboxList(ctx, &driver.InboxListParams{
		Endpoint:    params.Endpoint,
		NeedsReview: params.NeedsReview,
		Unprocessed: params.Unprocessed,
		Conflicts:   params.Conflicts,
		Limit:       params.Limit,
	})
	if err != nil {
		return nil, err
	}
	return list, nil
}

// GetReceipt returns one receipt, or nil if there is none.
func (o *Operator) GetReceipt(ctx context.Context, key hookinboxtype.Key) (*hookinboxtype.Receipt, error) {
	return o.exec.InboxGet(ctx, key)
}

// Retry makes an unprocessed receipt pending and available to workers now with its
// attempts reset to zero, typically after a person fixed what made it fail. It
// reports false if the receipt does not exist or is already processed.
func (o *Operator) Retry(ctx context.Context, key hookinboxtype.Key) (bool, error) {
	n, err := o.exec.InboxRetry(ctx, &driver.InboxRetryParams{Key: &key})
	if err != nil {
		return false, err
	}
	o.retried(n)
	return n > 0, nil
}

// RetryNeedsReview does what Retry does for every receipt that needs review, and
// returns how many.
func (o *Operator) RetryNeedsReview(ctx context.Context) (int, error) {
	n, err := o.exec.InboxRetry(ctx, &driver.InboxRetryParams{NeedsReview: true})
	o.retried(n)
	return n, err
}

// Wake calls RetriedFunc, if set: for tools that make receipts available by other
// means (the operator console's audited retries) and want the workers to look now.
func (o *Operator) Wake() { o.retried(1) }

func (o *Operator) retried(n int) {
	if n > 0 && o.config.RetriedFunc != nil {
		o.config.RetriedFunc()
	}
}

// ErrRetentionTooShort is returned by Cleanup for a retention shorter than a
// provider's retry window: a retry arriving after its receipt was deleted would be
// processed again.
var ErrRetentionTooShort = errors.New("retention shorter than the provider's retry window")

// CleanupParams configure Cleanup.
type CleanupParams struct {
	// OlderThan is the retention: processed receipts, published outbox messages and
	// recorded effects older than this are deleted.
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

// CleanupResult counts what Cleanup deleted or, with DryRun, would delete.
type CleanupResult struct {
	Receipts       int
	OutboxMessages int
	Effects        int
	// Attempts and Deliveries count rows of the attempt history (hookinbox_attempt)
	// and of the outbox's delivery history (hookinbox_delivery).
	Attempts   int
	Deliveries int
}

// Cleanup deletes, in batches, what is older than the retention and no longer needed
// by anything in flight: processed receipts, published outbox messages, recorded
// effects, and the attempt and delivery histories (rows of any receipt or message,
// finished before the retention). Receipts in any other state, undelivered messages and effects whose call
// is in progress are never deleted. The same retention, at least the providers'
// retry windows, applies to all three: a receipt is what turns a retry into a
// duplicate, and a recorded effect what keeps the retry's handler from calling the
// provider again.
func (o *Operator) Cleanup(ctx context.Context, params CleanupParams) (CleanupResult, error) {
	var res CleanupResult
	if params.OlderThan == 0 {
		params.OlderThan = 720 * time.Hour
	}
	if params.BatchSize <= 0 {
		params.BatchSize = 1000
	}
	if minimum := o.config.MinRetention; params.OlderThan < minimum && !params.Force {
		return res, fmt.Errorf("%w: %s < %s (use Force to override)", ErrRetentionTooShort, params.OlderThan, minimum)
	}
	for _, step := range []struct {
		n   *int
		del func(context.Context, *driver.InboxDeleteParams) (int, error)
	}{
		{&res.Receipts, o.exec.InboxDeleteProcessed},
		{&res.OutboxMessages, o.exec.OutboxDeletePublished},
		{&res.Effects, o.exec.EffectDeleteDone},
		{&res.Attempts, o.exec.AttemptDeleteOld},
		{&res.Deliveries, o.exec.DeliveryDeleteOld},
	} {
		n, err := deleteInBatches(ctx, step.del, params)
		*step.n = n
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// PurgeParams configure PurgePayloads.
type PurgeParams struct {
	// OlderThan is how long a processed receipt keeps its payload. It may be shorter
	// than the providers' retry windows: the receipt itself stays.
	OlderThan time.Duration
	// DryRun counts what would be purged and changes nothing.
	DryRun bool
	// BatchSize is how many receipts one UPDATE changes.
	//
	// Defaults to 1000.
	BatchSize int
}

// PurgePayloads replaces with JSON null, in batches, the payloads of receipts
// processed more than OlderThan ago, for bodies that carry personal data: the receipt,
// its key and its body's SHA-256 stay, so a provider's retry is still a duplicate (and
// a retry with another body still a conflict). Unprocessed receipts keep their
// payloads, which workers need. It returns how many payloads it purged (or, with
// DryRun, would purge).
func (o *Operator) PurgePayloads(ctx context.Context, params PurgeParams) (int, error) {
	if params.OlderThan <= 0 {
		return 0, errors.New("hookinbox: PurgePayloads needs a positive OlderThan")
	}
	if params.BatchSize <= 0 {
		params.BatchSize = 1000
	}
	return deleteInBatches(ctx, o.exec.InboxPurgePayloads, CleanupParams{OlderThan: params.OlderThan, DryRun: params.DryRun, BatchSize: params.BatchSize})
}

// deleteInBatches deletes BatchSize rows a statement until a statement deletes fewer,
// so that no statement holds many locks or runs long; with DryRun it counts.
func deleteInBatches(ctx context.Context, del func(context.Context, *driver.InboxDeleteParams) (int, error), params CleanupParams) (int, error) {
	if params.DryRun {
		return del(ctx, &driver.InboxDeleteParams{OlderThan: params.OlderThan, DryRun: true})
	}
	total := 0
	for {
		n, err := del(ctx, &driver.InboxDeleteParams{OlderThan: params.OlderThan, Limit: params.BatchSize})
		total += n
		if err != nil || n < params.BatchSize {
			return total, err
		}
	}
}

// MinRetention is the shortest retention Cleanup accepts without Force.
func (o *Operator) MinRetention() time.Duration { return o.config.MinRetention }

// MinRetention is the longest retry window of the configured endpoints' providers (72
// hours when none is configured): the shortest retention the inbox's Operator accepts
// for Cleanup unforced.
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
