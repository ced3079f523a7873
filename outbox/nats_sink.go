package outbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// NATSSink publishes the payload to a JetStream subject with Nats-Msg-Id set to the
// message's idempotency key, so that JetStream drops a redelivery that arrives within
// the stream's duplicate window. The publish acknowledgement is the delivery; a
// duplicate acknowledgement counts as delivered too.
type NATSSink struct {
	// JetStream is the connection's JetStream context. Required.
	JetStream jetstream.JetStream
	// Subject receives the messages; a stream must capture it. Required.
	Subject string
	// DuplicateFunc, when set, is called when JetStream acknowledges a publish as a
	// duplicate of one it already stored: a redelivery that the broker absorbed.
	DuplicateFunc func(m *hookinboxtype.OutboxMessage)
}

// Deliver publishes m and waits for the acknowledgement.
func (s *NATSSink) Deliver(ctx context.Context, m *hookinboxtype.OutboxMessage) error {
	if s.JetStream == nil || s.Subject == "" {
		return errors.New("nats sink needs a JetStream context and a subject")
	}
	msg := nats.NewMsg(s.Subject)
	msg.Data = m.Payload
	for k, v := range m.Headers() {
		msg.Header.Set(k, v)
	}
	msg.Header.Set(jetstream.MsgIDHeader, m.IdempotencyKey())
	injectNATS(ctx, msg.Header)
	ack, err := s.JetStream.PublishMsg(ctx, msg)
	if err != nil {
		return fmt.Errorf("error publishing to %s: %w", s.Subject, err)
	}
	if ack.Duplicate && s.DuplicateFunc != nil {
		s.DuplicateFunc(m)
	}
	return nil
}
