package driver

import (
	"errors"
	"time"

	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// InboxInsertParams are the values of a new receipt.
type InboxInsertParams struct {
	hookinboxtype.Key
	EventType string
	Payload   []byte

	// Processed inserts the receipt as processed now, with Outcome. Used when the
	// business update happens in the same transaction, or when there is nothing to do.
	Processed bool
	Outcome   string

	// Attempts, LastError and Delay describe a receipt that already failed once (hybrid
	// mode): it becomes available after Delay, or needs review at once when Attempts
	// reached MaxAttempts.
	Attempts  int
	LastError string
	Delay     time.Duration

	// MaxAttempts is the receiver's attempt limit, stored with the row.
	MaxAttempts int

	// Lease, when positive, stores the receipt claimed by its receiver's own workers,
	// as InboxClaim would at once: its first attempt counted and the row unavailable
	// to claims for Lease, so that the workers process it without a claim (Attempts
	// and Delay are then not used). A receipt of an endpoint that is paused at the
	// insert is parked instead (available at ParkedAt, no attempt counted), as a
	// claim would park it: the workers' lock then returns it with that AvailableAt,
	// and they leave it to the resume. The paused endpoints are read as the claim
	// reads them (a pause that commits during the insert may miss it).
	Lease time.Duration

	// BodySHA256 is the SHA-256 of the body as received, stored to tell a later
	// delivery of the key with another body.
	BodySHA256 []byte

	// TraceParent is the W3C traceparent of the span that received the event, stored
	// so that a worker's attempt can link to it; "" stores NULL.
	TraceParent string

	// Request is the receiver's record of the request (a JSON object: method, path,
	// remote address, headers without credentials), shown on the console's event
	// page; nil stores NULL.
	Request []byte
}

// InboxClaimParams select and lease a receipt for a worker.
type InboxClaimParams struct {
	Endpoints []string
	// Limit is the most receipts one claim takes.
	//
	// Defaults to 1.
	Limit int
	Lease time.Duration
	// MaxAttempts is the worker's attempt limit: it is stored with the claimed row, and
	// a pending row that already used that many attempts (its worker died during the
	// last one) is put to review instead of being claimed.
	MaxAttempts int
}

// InboxFailureParams record a failed attempt.
type InboxFailureParams struct {
	hookinboxtype.Key
	Error string
	Delay time.Duration
	// By, when set, adds the attempt to the receipt's history (hookinbox_attempt) in the
	// same statement; the failure's fingerprint (ErrorFingerprint) is stored either way.
	By *AttemptBy
}

// AttemptBy says who made an attempt and when it started, for the attempt history that
// InboxMarkProcessed and InboxRecordFailure write in the statement that records the
// attempt's end.
type AttemptBy struct {
	// Worker names the worker: host, process and worker number.
	Worker string
	// StartedAt is when the attempt (for a batch, the batch) began, on this process's
	// clock; the drivers store it as the database's clock minus the time elapsed.
	StartedAt time.Time
}

// InboxListParams filter a listing of receipts.
type InboxListParams struct {
	// Endpoint restricts the list to one endpoint when set.
	Endpoint string
	// NeedsReview lists only receipts in StateNeedsReview.
	NeedsReview bool
	// Unprocessed lists only receipts in StatePending or StateNeedsReview.
	Unprocessed bool
	// Conflicts lists only receipts that a delivery with another body repeated.
	Conflicts bool
	Limit     int
}

// InboxStatsParams configure InboxStats.
type InboxStatsParams struct {
	// RecentWindow is how far back ReceivedByType counts.
	RecentWindow time.Duration
}

// InboxStats summarise the inbox.
type InboxStats struct {
	Unprocessed int64
	// OldestUnprocessedAge is how long the oldest unprocessed receipt has waited; zero
	// when there is none.
	OldestUnprocessedAge time.Duration
	NeedsReview          int64
	// OldestPendingAge is how long the oldest pending receipt (not one that needs
	// review) has waited; zero when there is none.
	OldestPendingAge time.Duration
	ReceivedByType   []TypeCount
}

// TypeCount is the number of receipts of one event type.
type TypeCount struct {
	EventType string
	Count     int64
}

// InboxRetryParams select receipts to retry: one unprocessed Key, or every receipt in
// StateNeedsReview.
type InboxRetryParams struct {
	Key         *hookinboxtype.Key
	NeedsReview bool
}

// InboxDeleteParams select rows to delete for retention: processed receipts, published
// outbox messages, recorded effects.
type InboxDeleteParams struct {
	OlderThan time.Duration
	Limit     int
	DryRun    bool
}

// TableSize is the size of one of hookinbox's tables.
type TableSize struct {
	Table string
	// Rows is the number of rows, or the database's estimate of it; -1 when the
	// database has none (PostgreSQL before the table's first VACUUM or ANALYZE).
	Rows int64
	// Bytes is the space the table and its indexes take, or -1 when unknown.
	Bytes int64
}

// OutboxInsertParams are the values of an outbox message.
type OutboxInsertParams struct {
	AggregateType string
	AggregateID   string
	EventType     string
	Payload       []byte
	// Source is the receipt whose processing wrote the message; it seeds the
	// idempotency key that sinks send downstream.
	Source hookinboxtype.Key
	// Destination names the sink that delivers the message; empty means the
	// dispatcher's default.
	Destination string
	// TraceParent is the W3C traceparent of the span that wrote the message, which
	// the dispatcher's delivery continues; "" stores NULL.
	TraceParent string
}

// OutboxClaimParams select and lease messages for a dispatcher.
type OutboxClaimParams struct {
	// Destinations are the destinations the dispatcher has sinks for ("" for messages
	// with none); other messages are left to other dispatchers.
	Destinations []string
	// Limit is the most messages claimed of each destination, unless Limits gives
	// each its own (Limits[k] for Destinations[k]).
	Limit  int
	Limits []int
	// Ordered are destinations (of Destinations) delivered in order per aggregate: a
	// message is claimed only when no earlier message of its destination, aggregate
	// type and aggregate id is still pending or needs review, so one message of a
	// key is in flight at a time, oldest first.
	Ordered []string
	Lease   time.Duration
	// MaxAttempts is the dispatcher's attempt limit, stored with each claimed message;
	// a pending message that already used that many is put to review instead.
	MaxAttempts int
}

// OutboxMark names a delivered message and the fencing token of the claim that
// delivered it.
type OutboxMark struct {
	ID    int64
	Token int64
}

// LimitFor returns the most messages to claim of Destinations[k].
func (p *OutboxClaimParams) LimitFor(k int) int {
	if p.Limits != nil {
		return p.Limits[k]
	}
	return p.Limit
}

// OutboxFailureParams record a failed delivery.
type OutboxFailureParams struct {
	ID         int64
	ClaimToken int64
	Error      string
	Delay      time.Duration
}

// OutboxListParams filter a listing of outbox messages.
type OutboxListParams struct {
	// NeedsReview lists only messages in StateNeedsReview.
	NeedsReview bool
	// Pending lists only undelivered messages (StatePending or StateNeedsReview).
	Pending bool
	Limit   int
}

// OutboxStats summarise the outbox.
type OutboxStats struct {
	Pending          int64
	OldestPendingAge time.Duration
	NeedsReview      int64
}

// OutboxRetryParams select messages to retry: one ID, or every one that needs review.
type OutboxRetryParams struct {
	ID          int64
	NeedsReview bool
}

// EffectClaimParams take or renew the lease on an effect key.
type EffectClaimParams struct {
	Key   string
	Lease time.Duration
}

// EffectClaim is the state of an effect key after a claim attempt.
type EffectClaim struct {
	// Token is set when this caller now holds the lease and must make the call.
	Token int64
	// Done is true when the effect was already recorded; Result is its result.
	Done   bool
	Result []byte
	// LeaseUntil is when another caller's lease ends, when neither of the above.
	LeaseUntil time.Time
}

// ErrNoAttemptLimit is returned by a claim without a positive MaxAttempts: with none,
// every row it picked would count as having used all its attempts.
var ErrNoAttemptLimit = errors.New("a claim needs MaxAttempts of at least 1")

// AttemptLimit is the max_attempts value to store for limit: nil (unknown, never
// reached) unless limit is positive.
func AttemptLimit(limit int) *int {
	if limit < 1 {
		return nil
	}
	return &limit
}

// ClaimPending runs claim until it returns rows that are still pending, or no row at
// all, and returns those. The rows a claim put to review (their worker died during
// their last attempt) are committed as such and never handed out; a claim that found
// only those looks again, so that a short batch still means nothing else is
// available. state reads a row's state.
func ClaimPending[T any](claim func() ([]T, error), state func(T) hookinboxtype.State) ([]T, error) {
	for {
		list, err := claim()
		if err != nil || len(list) == 0 {
			return nil, err
		}
		kept := list[:0]
		for _, r := range list {
			if state(r) == hookinboxtype.StatePending {
				kept = append(kept, r)
			}
		}
		if len(kept) > 0 {
			return kept, nil
		}
	}
}

// ReceiptState and MessageState are the state readers ClaimPending takes.
func ReceiptState(r *hookinboxtype.Receipt) hookinboxtype.State       { return r.State }
func MessageState(m *hookinboxtype.OutboxMessage) hookinboxtype.State { return m.State }
