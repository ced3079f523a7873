package hookinbox

import "time"

// Observer is told of every delivery and every worker attempt, for metrics. Its
// methods are called synchronously on the request or worker goroutine and must be
// quick and safe for concurrent use. The information carries no secret or payload.
type Observer interface {
	// Delivery is called once per HTTP request to an endpoint, after the answer.
	Delivery(DeliveryInfo)
	// Attempt is called once per worker processing attempt.
	Attempt(AttemptInfo)
}

// DeliveryInfo describes one HTTP request to an endpoint.
type DeliveryInfo struct {
	Endpoint string
	Provider string
	// EventType is empty when the request was refused before verification succeeded.
	EventType string
	// Outcome is empty when the answer was not 2xx.
	Outcome Outcome
	// Status is the HTTP status of the answer.
	Status int
	// Reason is the refusal's short class for non-2xx answers: "method", "too_large",
	// "read", "signature", "unauthorized", "invalid_event", "unavailable", "overloaded" or "error".
	Reason string
	// SecretIndex is the position of the secret that verified the signature, or -1.
	SecretIndex int
	// BodyConflict is true for a duplicate whose body differs from the first
	// delivery's (which was kept).
	BodyConflict bool
	Latency      time.Duration
}

// AttemptResult classifies a worker attempt.
type AttemptResult string

const (
	// AttemptProcessed: the handler's work committed.
	AttemptProcessed AttemptResult = "processed"
	// AttemptFailed: the handler or the database failed; the receipt is retried.
	AttemptFailed AttemptResult = "failed"
	// AttemptTimeout: the statement timeout or the lease ran out.
	AttemptTimeout AttemptResult = "timeout"
	// AttemptAlreadyProcessed: another worker completed it first (a lease ran out).
	AttemptAlreadyProcessed AttemptResult = "already_processed"
)

// AttemptInfo describes one worker attempt.
type AttemptInfo struct {
	Endpoint  string
	EventType string
	Attempt   int
	Result    AttemptResult
	// NeedsReview is true when the attempt failed and was the last one allowed.
	NeedsReview bool
	Latency     time.Duration
}

// A GroupObserver is an Observer that is also told of every group commit: each
// batch of accepted receipts (one INSERT) and each shared transaction of sync
// deliveries. Inbox tells it when Config.Observer implements it. Group is called
// on the flusher's goroutine, after the commit (or the failure), and must be quick.
type GroupObserver interface {
	Observer
	Group(GroupInfo)
}

// The group commits a GroupInfo describes.
const (
	GroupAccept = "accept" // a batch of accepted receipts: one INSERT
	GroupSync   = "sync"   // sync and hybrid deliveries sharing a transaction
)

// GroupInfo describes one group commit.
type GroupInfo struct {
	// Kind is GroupAccept or GroupSync.
	Kind string
	// Size is the number of deliveries in the group. A group of 1 is a delivery that
	// found no other waiting: groups grow with load.
	Size int
	// Failed is true when the group's statement or shared transaction failed as a
	// whole. An accept group's deliveries are then inserted in halves, each reported
	// as a group of its own; a sync group's are received each alone, which are not
	// reported again.
	Failed  bool
	Latency time.Duration
}

type nopObserver struct{}

func (nopObserver) Delivery(DeliveryInfo) {}
func (nopObserver) Attempt(AttemptInfo)   {}
