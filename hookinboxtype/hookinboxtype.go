// Package hookinboxtype holds the types of hookinbox's rows and keys: a receipt of the
// inbox, an outbox message, the key that names a receipt and the state both store. The
// root package, the drivers and package outbox share them, so one concept has one type
// and nothing converts between copies of it (River's rivertype is the model). It
// imports nothing but the standard library.
package hookinboxtype

import (
	"encoding/json"
	"time"
)

// Key identifies a receipt: provider, endpoint and the provider's event id. It is the
// primary key of the inbox table, so two endpoints that receive the same event each
// process it.
type Key struct {
	Provider string
	Endpoint string
	EventID  string
}

// State is where a receipt or an outbox message stands. Each row stores its own, so
// every process and every operator command agree on it without sharing a
// configuration.
type State string

const (
	// StatePending: waiting for a worker (or a dispatcher), or held by one.
	StatePending State = "pending"
	// StateProcessed: a receipt whose handler's work committed, or that had nothing
	// to do (see Receipt.Outcome).
	StateProcessed State = "processed"
	// StatePublished: an outbox message its sink accepted.
	StatePublished State = "published"
	// StateNeedsReview: every allowed attempt failed; it waits for a person (a retry
	// gives it back to the workers or the dispatcher).
	StateNeedsReview State = "needs_review"
	// StateDiscarded: a person decided it is not to be processed or delivered.
	StateDiscarded State = "discarded"
)

// Receipt is a row of the inbox (hookinbox_inbox).
type Receipt struct {
	Key
	EventType string
	// Payload is the verified body as stored (PostgreSQL normalises jsonb: key order
	// and white space may differ from the bytes received).
	Payload json.RawMessage
	State   State
	// Outcome is what processing came to once processed: "processed" or "ignored"
	// (hookinbox.OutcomeProcessed, hookinbox.OutcomeIgnored); "" before.
	Outcome     string
	ReceivedAt  time.Time
	AvailableAt time.Time
	Attempts    int
	// MaxAttempts is the attempt limit of the process that last took the receipt (the
	// receiver, then each worker's claim); 0 when it was never recorded (a row from
	// before schema version 3).
	MaxAttempts int
	LastError   string
	ProcessedAt *time.Time
	// BodySHA256 is the SHA-256 of the body as first received (nil for receipts from
	// before schema version 3).
	BodySHA256 []byte
	// Conflicts counts later deliveries of this key with another body.
	Conflicts int
	// TraceParent is the W3C traceparent of the span that wrote the row, "" when
	// tracing was off (schema version 6).
	TraceParent string
}

// OutboxMessage is a row of the outbox (hookinbox_outbox): a downstream notification
// a handler wrote in its inbox transaction, as the dispatcher delivers it and as
// operators list it.
type OutboxMessage struct {
	ID            int64
	AggregateType string
	AggregateID   string
	EventType     string
	// Payload is the JSON body to deliver.
	Payload json.RawMessage
	// Source is the receipt whose processing wrote the message.
	Source Key
	// Destination names the dispatcher's sink that delivers it; "" for the default.
	Destination string
	State       State
	CreatedAt   time.Time
	// Attempts counts deliveries of this message: 1 for the first.
	Attempts int
	// MaxAttempts is the limit of the dispatcher that last claimed it; 0 before.
	MaxAttempts int
	// FencingToken is the token of the claim that returned the message. It is larger
	// than the token of every earlier claim of this message, so a receiver that
	// remembers the largest it has seen can refuse a delivery from a dispatcher whose
	// lease ran out. 0 on rows read outside a claim.
	FencingToken int64
	LastError    string
	PublishedAt  *time.Time
	// TraceParent is the W3C traceparent of the span that wrote the message, which
	// the dispatcher's delivery continues; "" when tracing was off.
	TraceParent string
}

// RequestRecord is what a receipt keeps of the request that delivered it besides the
// body (hookinbox_inbox.request, JSON), for the operator console's event page: who
// sent it, to which path, which secret verified it, and its headers, those that may
// carry a credential left out.
type RequestRecord struct {
	Method        string `json:"method"`
	Path          string `json:"path"`
	RemoteAddr    string `json:"remote_addr"`
	ContentLength int64  `json:"content_length"`
	// SecretSlot is the position of the secret that verified the request (0: the
	// first configured); nil when the scheme does not say.
	SecretSlot *int                `json:"secret_slot,omitempty"`
	Headers    map[string][]string `json:"headers"`
}
