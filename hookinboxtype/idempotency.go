package hookinboxtype

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// maxIdempotencyKey is the longest key sent. Stripe's limit is 255 characters; most
// receivers' are similar.
const maxIdempotencyKey = 255

// IdempotencyKey is the same on every delivery of the message, however many days or
// dispatchers apart: "hookinbox:<provider>:<endpoint>:<event id>:<outbox id>". A key
// that would be longer than 255 characters is replaced by "hookinbox:sha256:" and the
// hex digest of that string.
func (m *OutboxMessage) IdempotencyKey() string {
	key := "hookinbox:" + m.Source.Provider + ":" + m.Source.Endpoint + ":" + m.Source.EventID + ":" + strconv.FormatInt(m.ID, 10)
	if len(key) <= maxIdempotencyKey {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return "hookinbox:sha256:" + hex.EncodeToString(sum[:])
}

// Headers are the metadata every sink sends beside the payload, as header name and
// value pairs.
func (m *OutboxMessage) Headers() map[string]string {
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
		"Hookinbox-Attempt":         strconv.Itoa(m.Attempts),
	}
}
