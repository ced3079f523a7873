package driver

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// ConsoleExecutor is what the operator console reads and does, a part of Executor.
// Every list answers with one indexed query and a bounded number of rows; every action
// changes rows and writes its audit entry in one transaction.
type ConsoleExecutor interface {
	// ConsoleEndpoints summarises each endpoint: arrivals and processed receipts since
	// since (a minute's start), what is pending or needs review now (receipts and
	// outbox messages), and whether it is paused. Minutes the roll-up covers
	// (ConsoleRollup) are read from it, the rest counted live.
	ConsoleEndpoints(ctx context.Context, since time.Time) ([]*EndpointSummary, error)

	// ConsoleSeries counts arrivals, processed receipts, failed attempts and attempts
	// that put a receipt to review in buckets of bucket (whole minutes) from since to
	// now, oldest first, every bucket present; from the roll-up where it covers them.
	ConsoleSeries(ctx context.Context, since time.Time, bucket time.Duration) ([]*SeriesPoint, error)

	// ConsoleRollup brings the per-minute counts up to through (rounded down to a
	// minute): it counts each minute after the last one rolled up (at most two days
	// back) and drops minutes older than three days; and it counts what waits per
	// endpoint now (the backlog the overview shows when it is large). It returns the
	// minutes' rows it wrote; 0 when another process was rolling up at the time
	// (PostgreSQL).
	ConsoleRollup(ctx context.Context, through time.Time) (int, error)

	// ConsoleReviewGroups groups the receipts that need review by endpoint and error
	// fingerprint, largest first, at most limit groups, each with its newest receipt's
	// error and payload as the example.
	ConsoleReviewGroups(ctx context.Context, limit int) ([]*ReviewGroup, error)

	// ConsoleOutboxReviewGroups groups the outbox messages that need review by
	// destination and error fingerprint, as ConsoleReviewGroups does receipts.
	ConsoleOutboxReviewGroups(ctx context.Context, limit int) ([]*ReviewGroup, error)

	// ConsoleReceipts lists receipts matching filter, newest first, after (older than)
	// filter's cursor, or the page before it (newer) with filter.Before, at most limit.
	ConsoleReceipts(ctx context.Context, filter *ReceiptFilter, limit int) ([]*hookinboxtype.Receipt, error)

	// ConsoleCountReceipts counts the receipts matching filter, stopping at limit.
	ConsoleCountReceipts(ctx context.Context, filter *ReceiptFilter, limit int) (int, error)

	// ConsoleReceiptDetail returns what the event page shows beside the receipt: the
	// request's record and the last conflicting body's hash and time; nil when there
	// is no such receipt.
	ConsoleReceiptDetail(ctx context.Context, key hookinboxtype.Key) (*ReceiptDetail, error)

	// ConsoleAttempts returns a receipt's attempt history, newest first, at most limit.
	ConsoleAttempts(ctx context.Context, key hookinboxtype.Key, limit int) ([]*Attempt, error)

	// ConsoleOutbox lists outbox messages, newest first: those a receipt's processing
	// wrote when filter.Source is set, else those matching the filter, before
	// filter.BeforeID (or the page after filter.AfterID).
	ConsoleOutbox(ctx context.Context, filter *OutboxFilter, limit int) ([]*hookinboxtype.OutboxMessage, error)

	// ConsoleCountOutbox counts the outbox messages matching filter, stopping at limit.
	ConsoleCountOutbox(ctx context.Context, filter *OutboxFilter, limit int) (int, error)

	// ConsoleOutboxGet returns one outbox message, or nil.
	ConsoleOutboxGet(ctx context.Context, id int64) (*hookinboxtype.OutboxMessage, error)

	// ConsoleDeliveries returns an outbox message's delivery history, newest first,
	// at most limit.
	ConsoleDeliveries(ctx context.Context, outboxID int64, limit int) ([]*Delivery, error)

	// ConsoleAudit returns audit entries, newest first: those before page.BeforeID
	// (0: from the newest), or the page after page.AfterID; at most limit.
	ConsoleAudit(ctx context.Context, page IDPage, limit int) ([]*AuditEntry, error)

	// ConsoleEndpointStates returns the stored state of every endpoint that has one
	// (was paused, resumed or seeded), by name.
	ConsoleEndpointStates(ctx context.Context) ([]*EndpointState, error)

	// ConsoleSeedEndpoints stores the configured default state of each endpoint that
	// has none yet, as actor, and writes an audit entry for each one it stores paused;
	// an endpoint with a stored state keeps it. It returns how many it stored.
	ConsoleSeedEndpoints(ctx context.Context, seeds []EndpointSeed, actor string) (int, error)

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
	// OutboxPending and OutboxNeedsReview count the undelivered outbox messages its
	// processing wrote: waiting for (or held by) a dispatcher, and out of attempts.
	OutboxPending     int64
	OutboxNeedsReview int64
	// Paused is the endpoint's stored state (false when it has none).
	Paused bool
	// CountedAt is when the roll-up counted Pending, NeedsReview, OldestPendingAge
	// and the outbox's figures, for a backlog too large to count at every view
	// (LiveCountLimit); zero when they were counted live.
	CountedAt time.Time
}

// SeriesPoint is one bucket of the console's chart.
type SeriesPoint struct {
	Start     time.Time
	Received  int64
	Processed int64
	// Failed counts failed attempts; Exhausted those of them that were the receipt's
	// last allowed one, which put it to review.
	Failed    int64
	Exhausted int64
}

// ReviewGroup is the receipts of one endpoint (or the outbox messages of one
// destination) that need review for one cause.
type ReviewGroup struct {
	Endpoint string
	// Destination is the outbox messages' destination ("" for the default sink);
	// unset for receipts.
	Destination string
	Fingerprint string
	// Example is the newest member's error as recorded, ExamplePayload its payload
	// (for redaction: a handler's error may quote the payload's values).
	Example        string
	ExamplePayload json.RawMessage
	Count          int64
	Oldest         time.Time
	Newest         time.Time
}

// ReceiptDetail is what the console shows of a receipt beyond hookinboxtype.Receipt.
type ReceiptDetail struct {
	// Request is the receiver's record of the request (JSON: method, path,
	// remote_addr, headers, secret_slot), nil when none was recorded.
	Request json.RawMessage
	// ConflictSHA256 and ConflictAt are the hash and time of the last delivery of the
	// key that came with another body; nil when none did.
	ConflictSHA256 []byte
	ConflictAt     *time.Time
	// Origin is "" for a webhook delivery, "backfill" or "reconcile".
	Origin string
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
	// Search selects the receipts whose payload's text holds it, ignoring case.
	Search string
	// Since and Until bound received_at: Since <= received_at < Until.
	Since, Until time.Time
	// EventID with Keys selects exact keys: EventID under each (provider, endpoint)
	// pair of Keys (their EventID is ignored), looked up by primary key.
	EventID string
	Keys    []hookinboxtype.Key
	// After is the cursor of the next (older) page: the last receipt of the previous
	// one. Before is the cursor of the previous (newer) page: the first receipt of
	// the one shown; at most one of them is set.
	After  *Cursor
	Before *Cursor
}

// Cursor is a position in the newest-first order of receipts.
type Cursor struct {
	ReceivedAt time.Time
	hookinboxtype.Key
}

// OutboxFilter selects outbox messages for the console's list, counts and bulk
// actions. Empty fields do not filter.
type OutboxFilter struct {
	// Source selects the messages one receipt's processing wrote (and nothing else
	// filters).
	Source *hookinboxtype.Key
	State  hookinboxtype.State
	// Destination selects one destination; "" is the default sink's. Nil: any.
	Destination *string
	// Endpoint selects the messages whose source receipt came to this endpoint.
	Endpoint  string
	EventType string
	// Fingerprint selects the messages whose last delivery error has this fingerprint.
	Fingerprint string
	// Since and Until bound created_at: Since <= created_at < Until.
	Since, Until time.Time
	// BeforeID pages older (id < BeforeID), AfterID newer (id > AfterID).
	BeforeID int64
	AfterID  int64
}

// IDPage is a page of a list in id order: before BeforeID (older; 0 from the newest),
// or after AfterID (newer) when it is set.
type IDPage struct {
	BeforeID int64
	AfterID  int64
}

// EndpointState is an endpoint's stored state.
type EndpointState struct {
	Endpoint  string
	Paused    bool
	ChangedAt time.Time
	ChangedBy string
}

// EndpointSeed is an endpoint's configured default state.
type EndpointSeed struct {
	Endpoint string
	Paused   bool
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
	// ActionRetryOutbox makes undelivered outbox messages pending and available now
	// with their attempts reset: OutboxID's, or up to Limit matching OutboxFilter.
	ActionRetryOutbox = "retry_outbox"
	// ActionResolveOutbox marks undelivered outbox messages discarded: never
	// delivered, kept.
	ActionResolveOutbox = "resolve_outbox"
	// ActionRedeliver makes published outbox messages pending again, with their
	// attempts reset and their ids (so their idempotency keys) unchanged: the sink
	// receives each once more under the key it already saw.
	ActionRedeliver = "redeliver"
	// ActionPause pauses Endpoint: its receipts and the outbox messages its processing
	// wrote are not claimed until it is resumed. Receiving goes on.
	ActionPause = "pause"
	// ActionResume resumes Endpoint, making what waited available now.
	ActionResume = "resume"
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

	// OutboxID selects one outbox message; else OutboxFilter does, up to Limit
	// messages in FromStates (for one message: the states its action starts from).
	OutboxID     int64
	OutboxFilter *OutboxFilter

	// Endpoint is the endpoint to pause or resume.
	Endpoint string
}

// Bounds that stand for "no bound" in a ReceiptFilter's time range and cursor, so
// that every list statement has the same indexable conditions.
var (
	TimeMin = time.Unix(0, 0).UTC()
	TimeMax = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
)

// ParkedAt is the available_at of a pending row that waits for its paused endpoint:
// a claim that meets such a row parks it there (rather than skipping it at every
// claim), and a resume makes the endpoint's parked rows available now.
var ParkedAt = TimeMax

// Range returns the filter's time range and its cursor with the open ends filled in:
// After, or Before when newer reports that the page before it is asked for.
func (f *ReceiptFilter) Range() (since, until time.Time, cursor Cursor, newer bool) {
	since, until, cursor = f.Since, f.Until, Cursor{ReceivedAt: TimeMax}
	if since.IsZero() {
		since = TimeMin
	}
	if until.IsZero() {
		until = TimeMax
	}
	switch {
	case f.Before != nil:
		cursor, newer = *f.Before, true
	case f.After != nil:
		cursor = *f.After
	}
	return since, until, cursor, newer
}

// Range returns the filter's created_at range with the open ends filled in.
func (f *OutboxFilter) Range() (since, until time.Time) {
	since, until = f.Since, f.Until
	if since.IsZero() {
		since = TimeMin
	}
	if until.IsZero() {
		until = TimeMax
	}
	return since, until
}

// Unpublished reports whether the filter selects only pending or needs-review
// messages, which the drivers read through their partial index of undelivered rows.
func (f *OutboxFilter) Unpublished() bool {
	return f.State == hookinboxtype.StatePending || f.State == hookinboxtype.StateNeedsReview
}

// The roll-up's bounds: minutes are rolled up once they ended RollupLag ago (a
// receive or processing transaction stamps its rows with its start, and commits
// later), at most RollupSpan back on a first run or after a pause (the overview shows
// a day at most), and kept RollupKeep.
const (
	RollupLag  = 5 * time.Minute
	RollupSpan = 48 * time.Hour
	RollupKeep = 72 * time.Hour
)

// LiveCountLimit is the largest backlog (receipts pending or needing review, and
// undelivered outbox messages, as the last roll-up counted them) that the overview
// counts live; above it, it shows the roll-up's count when that is at most
// BacklogFresh old. Counting reads the unprocessed partial indexes, whose size is the
// backlog's.
const (
	LiveCountLimit = 20000
	BacklogFresh   = 3 * time.Minute
)

// CountedBacklog reports whether the overview shows the roll-up's count of the
// backlog rather than counting it: it is recent, and large.
func CountedBacklog(countedAt time.Time, total int64, now time.Time) bool {
	return !countedAt.IsZero() && now.Sub(countedAt) <= BacklogFresh && total > LiveCountLimit
}

// RollupFrom returns where a roll-up up to through starts: after the last minute
// rolled up (last, zero when none), at most RollupSpan back.
func RollupFrom(last, through time.Time) time.Time {
	from := through.Add(-RollupSpan)
	if last.After(from) {
		from = last
	}
	return from
}

// LiveFrom returns where the overview's live counts start for a window from since:
// after what the roll-up covers (rolled, zero when nothing is), never before since.
func LiveFrom(since, rolled time.Time) time.Time {
	if rolled.After(since) {
		return rolled
	}
	return since
}

// SeriesBuckets returns the empty buckets of a chart from since to now.
func SeriesBuckets(since, now time.Time, bucket time.Duration) []*SeriesPoint {
	var points []*SeriesPoint
	for t := since; t.Before(now); t = t.Add(bucket) {
		points = append(points, &SeriesPoint{Start: t})
	}
	return points
}

// AddToSeries adds counts to bucket n of points. A bucket out of range (a clock step)
// is dropped.
func AddToSeries(points []*SeriesPoint, n int, received, processed, failed, exhausted int64) {
	if n < 0 || n >= len(points) {
		return
	}
	p := points[n]
	p.Received += received
	p.Processed += processed
	p.Failed += failed
	p.Exhausted += exhausted
}

// Unprocessed reports whether the filter selects only pending or needs-review
// receipts, which the drivers read through their partial index of unprocessed rows.
func (f *ReceiptFilter) Unprocessed() bool {
	return f.State == hookinboxtype.StatePending || f.State == hookinboxtype.StateNeedsReview
}

// OutboxActionStates are the states an outbox action starts from: undelivered
// messages for a retry or a resolve, published ones for a redelivery.
func OutboxActionStates(action string) []hookinboxtype.State {
	if action == ActionRedeliver {
		return []hookinboxtype.State{hookinboxtype.StatePublished}
	}
	return []hookinboxtype.State{hookinboxtype.StatePending, hookinboxtype.StateNeedsReview}
}
