// Package outbox delivers the messages that handlers write to the outbox table in the
// inbox transaction: to an HTTP service or to NATS JetStream, at least once, with an
// idempotency key that lets the receiver (or JetStream itself) make it once.
//
// Several dispatchers may run, in one process or many. Each claims messages with FOR
// UPDATE SKIP LOCKED, a lease and a fencing token that only grows; it delivers with no
// database transaction open, then marks the message published only if its token is
// still the message's token. A dispatcher that stalled past its lease therefore cannot
// overwrite the outcome of the one that took over, and the sink receives the token so
// it can refuse a stale delivery too.
package outbox

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/hookinbox/hookinbox/driver"
)

// Message is an outbox message being delivered.
type Message struct {
	ID            int64
	AggregateType string
	AggregateID   string
	EventType     string
	// Payload is the JSON body to deliver.
	Payload []byte
	// Source is the inbox receipt whose processing wrote the message.
	Source      Source
	Destination string
	CreatedAt   time.Time
	// Attempt counts deliveries of this message, 1 for the first.
	Attempt int
	// FencingToken is the claim's token. It is larger than the token of every earlier
	// claim of this message, so a receiver that remembers the largest it has seen can
	// refuse a delivery from a dispatcher whose lease ran out.
	FencingToken int64

	maxAttempts int    // the claim's limit, stored with the row
	traceParent string // the trace context of the handler that wrote it
}

// Source identifies the inbox receipt whose processing wrote a message.
type Source struct {
	Provider string
	Endpoint string
	EventID  string
}

func sourceFrom(k driver.Key) Source {
	return Source{Provider: k.Provider, Endpoint: k.Endpoint, EventID: k.EventID}
}

func messageFrom(m *driver.OutboxMessage) *Message {
	return &Message{
		ID: m.ID, AggregateType: m.AggregateType, AggregateID: m.AggregateID, EventType: m.EventType,
		Payload: m.Payload, Source: sourceFrom(m.Source), Destination: m.Destination, CreatedAt: m.CreatedAt,
		Attempt: m.Attempts, FencingToken: m.ClaimToken, maxAttempts: m.MaxAttempts,
		traceParent: m.TraceParent,
	}
}

// maxIdempotencyKey is the longest key sent. Stripe's limit is 255 characters; most
// receivers' are similar.
const maxIdempotencyKey = 255

// IdempotencyKey is the same on every delivery of the message, however many days or
// dispatchers apart: "hookinbox:<provider>:<endpoint>:<event id>:<outbox id>". A key
// that would be longer than 255 characters is replaced by "hookinbox:sha256:" and the
// hex digest of that string.
func (m *Message) IdempotencyKey() string {
	key := "hookinbox:" + m.Source.Provider + ":" + m.Source.Endpoint + ":" + m.Source.EventID + ":" + strconv.FormatInt(m.ID, 10)
	if len(key) <= maxIdempotencyKey {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return "hookinbox:sha256:" + hex.EncodeToString(sum[:])
}

// Headers are the metadata every sink sends beside the payload, as header name and
// value pairs.
func (m *Message) Headers() map[string]string {
	return map[string]string{
		"Idempotency-Key":           m.IdempotencyKey(),
		"Hookinbox-Fencing-Token":   strconv.FormatInt(m.FencingToken, 10),
		"Hookinbox-Outbox-Id":       strconv.FormatInt(m.ID, 10),
		"Hookinbox-Event-Type":      m.EventType,
		"Hookinbox-Aggregate-Type":  m.AggregateType,
		"Hookinbox-Aggregate-Id":    m.AggregateID,
		"Hookinbox-Source-Provider": m.Source.Provider,
		"Hookinbox-Source-Endpoint": m.Source.Endpoint,
		"Hookinbox-Source-Event-Id": m.Source.EventID,
		"Hookinbox-Attempt":         strconv.Itoa(m.Attempt),
	}
}
