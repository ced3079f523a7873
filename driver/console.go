package driver

import (
	"context"
	"time"

	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// ConsoleExecutor is what the operator console reads and does, a part of Executor.
// Every list answers
// with one indexed query and a bounded number of rows; every action changes rows and
// writes its audit entry in one transaction.
type ConsoleExecutor interface {
	// ConsoleEndpoints summarises each endpoint: arrivals and processed receipts since
	// since, and what is pending or needs review now (receipts and outbox messages).
	ConsoleEndpoints(ctx context.Context, since time.Time) ([]*EndpointSummary, error)

	// ConsoleSeries counts arrivals and processed receipts in buckets of bucket from
	// since to now, oldest first, every bucket present.
	ConsoleSeries(ctx context.Context, since time.Time, bucket time.Duration) ([]*SeriesPoint, error)

	// ConsoleReviewGroups groups the receipts that need review by endpoint and error
	// fingerprint, largest first, at most limit groups.
	ConsoleReviewGroups(ctx context.Context, limit int) ([]*ReviewGroup, error)

	// ConsoleReceipts lists receipts matching filter, newest first, after filter's
	// cursor, at most limit.
	ConsoleReceipts(ctx context.Context, filter *ReceiptFilter, limit int) ([]*hookinboxtype.Receipt, error)

	// ConsoleCountReceipts counts the receipts matching filter, stopping at limit.
	ConsoleCountReceipts(ctx context.Context, filter *ReceiptFilter, limit int) (int, error)

	// ConsoleAttempts returns a receipt's attempt history, newest first, at most limit.
	ConsoleAttempts(ctx context.Context, key hookinboxtype.Key, limit int) ([]*Attempt, error)

	// ConsoleOutbox lists outbox messages, newest first: those a receipt's processing
	// wrote when filter.Source is set, else by state, before filter.BeforeID.
	ConsoleOutbox(ctx context.Context, filter *OutboxFilter, limit int) ([]*hookinboxtype.OutboxMessage, error)

	// ConsoleOutboxGet returns one outbox message, or nil.
	ConsoleOutboxGet(ctx context.Context, id int64) (*hookinboxtype.OutboxMessage, error)

	// ConsoleDeliveries returns an outbox message's delivery history, newest first,
	// at most limit.
	ConsoleDeliveries(ctx context.Context, outboxID int64, limit int) ([]*Delivery, error)

	// ConsoleAudit returns audit entries, newest first, before beforeID (0: from the
	// newest), at most limit.
	ConsoleAudit(ctx context.Context, beforeID int64, limit int) ([]*AuditEntry, error)

	// ConsoleApply carries out an operator action and writes its audit entry, with the
	// number of rows it changed, in one transaction, and returns that number.
	ConsoleApply(ctx context.Context, action *ConsoleAction) (int, error)
}

// EndpointSummary is one endpoint's line of the console's overview.
type EndpointSummary struct {
	Endpoint         string
	Received         int64
	Processed        int64
	Pending          int64
	NeedsReview      int64
	OldestPendingAge time.Duration
	OutboxPending    int64
}

// SeriesPoint is one bucket of the console's chart.
type SeriesPoint struct {
	Start     time.Time
	Received  int64
	Processed int64
}

// ReviewGroup is the receipts of one endpoint that need review for one cause.
type ReviewGroup struct {
	Endpoint    string
	Fingerprint string
	// Example is one of the group's errors as recorded.
	Example string
	Count   int64
	Oldest  time.Time
	Newest  time.Time
}

// ReceiptFilter selects receipts for the console's list, counts and bulk actions.
// Empty fields do not filter.
type ReceiptFilter struct {
	Endpoint  string
	Provider  string
	EventType string
	State     hookinboxtype.State
	// Fingerprint selects the receipts whose error has this fingerprint.
	Fingerprint string
	// Since and Until bound received_at: Since <= received_at < Until.
	Since, Until time.Time
	// EventID with Keys selects exact keys: EventID under each (provider, endpoint)
	// pair of Keys (their EventID is ignored), looked up by primary key.
	EventID string
	Keys    []hookinboxtype.Key
	// After is the cursor: the last receipt of the previous page.
	After *Cursor
}

// Cursor is a position in the newest-first order of receipts.
type Cursor struct {
	ReceivedAt time.Time
	hookinboxtype.Key
}

// OutboxFilter selects outbox messages for the console.
type OutboxFilter struct {
	Source   *hookinboxtype.Key
	State    hookinboxtype.State
	BeforeID int64
}

// Attempt is one row of a receipt's attempt history.
type Attempt struct {
	Attempt     int
	StartedAt   time.Time
	FinishedAt  time.Time
	Worker      string
	Error       string
	NextRetryAt *time.Time
}

// Delivery is one row of an outbox message's delivery history.
type Delivery struct {
	Attempt     int
	ClaimToken  int64
	FinishedAt  time.Time
	Error       string
	NextRetryAt *time.Time
}

// AuditEntry is one operator action.
type AuditEntry struct {
	ID     int64
	At     time.Time
	Actor  string
	Action string
	Target string
	Rows   int
	Note   string
}

// The actions ConsoleApply carries out.
const (
	// ActionRetry makes receipts pending and available now with their attempts reset:
	// Key's, or up to Limit matching Filter.
	ActionRetry = "retry"
	// ActionResolve marks receipts discarded, kept with the note in the audit log: a
	// person decided they are not to be processed.
	ActionResolve = "resolve"
	// ActionRetryOutbox makes outbox message OutboxID pending and available now.
	ActionRetryOutbox = "retry_outbox"
)

// ConsoleAction is an operator action and who takes it.
type ConsoleAction struct {
	Action string
	Actor  string
	// Target describes the rows for the audit log.
	Target string
	Note   string

	// Key selects one receipt; else Filter does, up to Limit rows. Only receipts in
	// FromStates (for one key: pending or needs review when empty) change, so that a
	// confirmed action never touches a row that left the state it was shown in.
	Key        *hookinboxtype.Key
	Filter     *ReceiptFilter
	Limit      int
	FromStates []hookinboxtype.State

	OutboxID int64
}

// Bounds that stand for "no bound" in a ReceiptFilter's time range and cursor, so
// that every list statement has the same indexable conditions.
var (
	TimeMin = time.Unix(0, 0).UTC()
	TimeMax = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
)

// Range returns the filter's time range and cursor with the open ends filled in.
func (f *ReceiptFilter) Range() (since, until time.Time, after Cursor) {
	since, until, after = f.Since, f.Until, Cursor{ReceivedAt: TimeMax}
	if since.IsZero() {
		since = TimeMin
	}
	if until.IsZero() {
		until = TimeMax
	}
	if f.After != nil {
		after = *f.After
	}
	return since, until, after
}

// SeriesBuckets returns the empty buckets of a chart from since to now.
func SeriesBuckets(since, now time.Time, bucket time.Duration) []*SeriesPoint {
	var points []*SeriesPoint
	for t := since; t.Before(now); t = t.Add(bucket) {
		points = append(points, &SeriesPoint{Start: t})
	}
	return points
}

// AddToSeries adds count to bucket n of points: to Received for kind "r", to
// Processed for "p". A bucket out of range (a clock step) is dropped.
func AddToSeries(points []*SeriesPoint, kind string, n int, count int64) {
	if n < 0 || n >= len(points) {
		return
	}
	if kind == "r" {
		points[n].Received += count
	} else {
		points[n].Processed += count
	}
}

// Unprocessed reports whether the filter selects only pending or needs-review
// receipts, which the drivers read through their partial index of unprocessed rows.
func (f *ReceiptFilter) Unprocessed() bool {
	return f.State == hookinboxtype.StatePending || f.State == hookinboxtype.StateNeedsReview
}
