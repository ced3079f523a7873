package driver

import "time"

// Key identifies a receipt: the primary key of webhook_inbox. The endpoint is part of it
// so that two endpoints receiving the same event each process it.
type Key struct {
	Provider string
	Endpoint string
	EventID  string
}

// Receipt is a row of webhook_inbox.
type Receipt struct {
	Key
	EventType   string
	Payload     []byte
	ReceivedAt  time.Time
	AvailableAt time.Time
	Attempts    int
	LastError   string
	ProcessedAt *time.Time
	Outcome     string
}

// InboxInsertParams are the values of a new receipt.
type InboxInsertParams struct {
	Key
	EventType string
	Payload   []byte

	// Processed inserts the receipt as processed now, with Outcome. Used when the
	// business update happens in the same transaction, or when there is nothing to do.
	Processed bool
	Outcome   string

	// Attempts, LastError and Delay describe a receipt that already failed once (hybrid
	// mode): it becomes available after Delay.
	Attempts  int
	LastError string
	Delay     time.Duration
}

// InboxClaimParams select and lease a receipt for a worker.
type InboxClaimParams struct {
	Endpoints   []string
	Lease       time.Duration
	MaxAttempts int
}

// InboxFailureParams record a failed attempt.
type InboxFailureParams struct {
	Key
	Error string
	Delay time.Duration
}

// InboxListParams filter a listing of receipts.
type InboxListParams struct {
	// Endpoint restricts the list to one endpoint when set.
	Endpoint string
	// NeedsReview lists only unprocessed receipts with at least MaxAttempts attempts.
	NeedsReview bool
	// Unprocessed lists only unprocessed receipts.
	Unprocessed bool
	MaxAttempts int
	Limit       int
}

// InboxStatsParams configure InboxStats.
type InboxStatsParams struct {
	MaxAttempts int
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
	ReceivedByType       []TypeCount
}

// TypeCount is the number of receipts of one event type.
type TypeCount struct {
	EventType string
	Count     int64
}

// InboxRetryParams select receipts to retry: one Key, or every receipt that needs
// review.
type InboxRetryParams struct {
	Key         *Key
	NeedsReview bool
	MaxAttempts int
}

// InboxDeleteParams select processed receipts to delete.
type InboxDeleteParams struct {
	OlderThan time.Duration
	Limit     int
	DryRun    bool
}

// OutboxInsertParams are the values of an outbox message.
type OutboxInsertParams struct {
	AggregateType string
	AggregateID   string
	EventType     string
	Payload       []byte
	// Source is the receipt whose processing wrote the message; it seeds the
	// idempotency key that sinks send downstream.
	Source Key
	// Destination names the sink that delivers the message; empty means the
	// dispatcher's default.
	Destination string
}

// OutboxMessage is a row of the outbox as the dispatcher sees it.
type OutboxMessage struct {
	ID            int64
	AggregateType string
	AggregateID   string
	EventType     string
	Payload       []byte
	Source        Key
	Destination   string
	CreatedAt     time.Time
	Attempts      int
	// ClaimToken is the fencing token of the claim that returned the message.
	ClaimToken  int64
	LastError   string
	PublishedAt *time.Time
}

// OutboxClaimParams select and lease messages for a dispatcher.
type OutboxClaimParams struct {
	// Destinations are the destinations the dispatcher has sinks for ("" for messages
	// with none); other messages are left to other dispatchers.
	Destinations []string
	Limit        int
	Lease        time.Duration
	MaxAttempts  int
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
	NeedsReview bool
	Pending     bool
	MaxAttempts int
	Limit       int
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
	MaxAttempts int
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
