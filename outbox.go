package hookinbox

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/hookinbox/hookinbox/internal/tracectx"
)

// OutboxMessage is a downstream notification written by a handler.
type OutboxMessage struct {
	AggregateType string
	AggregateID   string
	EventType     string
	// Payload is marshalled to JSON unless it is already a json.RawMessage or []byte.
	Payload any
	// Destination names the dispatcher's sink that delivers the message.
	//
	// Defaults to the dispatcher's default sink.
	Destination string
}

// InsertOutboxTx writes msg to the outbox as part of transaction tx, on behalf of the
// event source being processed. If tx rolls back, so does the message; if it commits,
// the dispatcher delivers the message at least once, with an idempotency key derived
// from the source event and the message id. TDriver names the driver whose
// transaction tx is, so a handler needs nothing but its arguments:
//
//	id, err := hookinbox.InsertOutboxTx[*pgxdriver.Driver](ctx, tx, ev, hookinbox.OutboxMessage{...})
func InsertOutboxTx[TDriver driver.Driver[TTx], TTx any](ctx context.Context, tx TTx, source Event, msg OutboxMessage) (int64, error) {
	var d TDriver // UnwrapExecutor needs no driver state: a zero driver is enough
	return insertOutbox(ctx, d.UnwrapExecutor(tx), source, msg)
}

// InsertOutboxBatchTx is InsertOutboxTx for several messages, in one statement where
// the database allows it (PostgreSQL): messages[k] is written on behalf of
// sources[k]. All commit or roll back with tx; a batch handler (BatchHandlerFunc)
// writes the messages of its whole batch with it.
//
// On PostgreSQL, on the transaction hookinbox gave a handler, the statement is not
// sent at once: it leaves with the transaction's next statement (the handler's own
// included, so they run in the order they were written) or with its COMMIT, in the
// same round trip. An error of it (a trigger's, a lost connection) is then reported
// by that statement or by the commit, and the delivery fails as it would have here;
// a message the database refuses is never committed.
func InsertOutboxBatchTx[TDriver driver.Driver[TTx], TTx any](ctx context.Context, tx TTx, sources []Event, messages []OutboxMessage) error {
	if len(sources) != len(messages) {
		return fmt.Errorf("error inserting outbox messages: %d sources for %d messages", len(sources), len(messages))
	}
	ps := make([]*driver.OutboxInsertParams, len(messages))
	for k := range messages {
		p, err := outboxParams(sources[k], messages[k])
		if err != nil {
			return err
		}
		p.TraceParent = tracectx.Format(ctx)
		ps[k] = p
	}
	var d TDriver
	return d.UnwrapExecutor(tx).OutboxInsertMany(ctx, ps)
}

func insertOutbox(ctx context.Context, ex driver.Executor, source Event, msg OutboxMessage) (int64, error) {
	p, err := outboxParams(source, msg)
	if err != nil {
		return 0, err
	}
	// The dispatcher's delivery continues the trace of the handler that wrote it.
	p.TraceParent = tracectx.Format(ctx)
	return ex.OutboxInsert(ctx, p)
}

func outboxParams(source Event, msg OutboxMessage) (*driver.OutboxInsertParams, error) {
	var payload []byte
	switch p := msg.Payload.(type) {
	case json.RawMessage:
		payload = p
	case []byte:
		payload = p
	default:
		var err error
		if payload, err = json.Marshal(p); err != nil {
			return nil, fmt.Errorf("error encoding outbox payload: %w", err)
		}
	}
	return &driver.OutboxInsertParams{
		AggregateType: msg.AggregateType,
		AggregateID:   msg.AggregateID,
		EventType:     msg.EventType,
		Payload:       payload,
		Source:        hookinboxtype.Key{Provider: source.Provider, Endpoint: source.Endpoint, EventID: source.ID},
		Destination:   msg.Destination,
	}, nil
}

// ForwardTo returns a handler that forwards every event it receives, unchanged, through
// the outbox to the dispatcher's sink named destination: the gateway mode, for services
// not written in Go. The message commits with the receipt, so each verified,
// de-duplicated event is forwarded at least once, with an idempotency key the receiver
// uses to make it once. It is set-based: a worker's batch, or a group of sync
// deliveries, writes its messages in one statement.
//
//	inbox.HandleBatch("gateway", "*", inbox.ForwardTo("gateway"))
func (i *Inbox[TTx]) ForwardTo(destination string) BatchHandlerFunc[TTx] {
	return func(ctx context.Context, tx TTx, events []Event) error {
		ps := make([]*driver.OutboxInsertParams, len(events))
		for k, ev := range events {
			p, err := outboxParams(ev, OutboxMessage{
				AggregateType: ev.Provider,
				AggregateID:   ev.ID,
				EventType:     ev.Type,
				Payload:       ev.Payload,
				Destination:   destination,
			})
			if err != nil {
				return err
			}
			p.TraceParent = tracectx.Format(ctx)
			ps[k] = p
		}
		return i.driver.UnwrapExecutor(tx).OutboxInsertMany(ctx, ps)
	}
}
