package hookinbox

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
)

// HandlerFunc applies one event inside the inbox transaction tx, whose native type
// depends on the driver (pgx.Tx for PostgreSQL, *sql.Tx for SQLite). Its writes commit
// together with the receipt, or not at all. It must be written as a state transition:
// creation with INSERT ... ON CONFLICT DO NOTHING, guarded updates, unique constraints
// on business keys, because the same fact can arrive under a second event id and in
// any order.
//
// It must not make external calls (HTTP, brokers, the provider's API): they cannot
// roll back. Write an outbox message instead (InsertOutboxTx).
//
// Like any pgx.Tx or *sql.Tx, tx is not safe for concurrent use: a handler that starts
// goroutines lets one statement on tx run at a time, outbox messages included, and
// none after it returns.
//
// An error, or a panic, rolls the transaction back. A panic is recovered and treated
// as the attempt's failure (a *PanicError), so one broken handler never takes down the
// process or the other endpoints.
type HandlerFunc[TTx any] func(ctx context.Context, tx TTx, ev Event) error

// BatchHandlerFunc applies several events at once inside the inbox transaction tx: the
// set-based form of a HandlerFunc, for handlers whose statements can take many rows
// each (INSERT … SELECT FROM unnest(…) on PostgreSQL), so that deliveries which share a
// transaction also share their statements. Register it with Inbox.HandleBatch.
//
// The events are distinct (no two share an id), new (their receipts were inserted in
// tx just before), of one endpoint and one registration (its event type, or the
// endpoint's "*"), and in no defined order: they arrived concurrently. The function
// must leave the state that applying them one at a time, in some order, would leave;
// like a HandlerFunc it is a state transition, and the rules of HandlerFunc hold for
// it. It may return an error to refuse a batch it cannot apply as a set (two events of
// one business object, say): nothing is lost by that.
//
// An error or a panic rolls the batch back, receipts included, and each event is then
// applied alone by the same function with a one-event slice, behind a savepoint of its
// own, so that one bad event fails only its own delivery. Workers, and a delivery that
// shares its transaction with no other of its registration, call it with one event.
type BatchHandlerFunc[TTx any] func(ctx context.Context, tx TTx, events []Event) error

// JSONHandler returns a handler that decodes the verified payload into a T once and
// passes it to fn beside the event. A payload that does not decode into T fails the
// attempt like any handler error.
//
//	type invoiceEvent struct {
//		Data struct {
//			Object struct{ ID string `json:"id"` } `json:"object"`
//		} `json:"data"`
//	}
//	inbox.Handle("billing", "invoice.paid", hookinbox.JSONHandler(
//		func(ctx context.Context, tx pgx.Tx, ev hookinbox.Event, e invoiceEvent) error { ... }))
func JSONHandler[T, TTx any](fn func(ctx context.Context, tx TTx, ev Event, data T) error) HandlerFunc[TTx] {
	return func(ctx context.Context, tx TTx, ev Event) error {
		var data T
		if err := json.Unmarshal(ev.Payload, &data); err != nil {
			return fmt.Errorf("error decoding %s payload into %T: %w", ev.Type, data, err)
		}
		return fn(ctx, tx, ev, data)
	}
}

// HandlerError is a failure returned by a handler. The receipt was rolled back with it.
type HandlerError struct {
	EventType string
	Err       error
}

func (e *HandlerError) Error() string {
	return fmt.Sprintf("handler for %s failed: %v", e.EventType, e.Err)
}

func (e *HandlerError) Unwrap() error { return e.Err }

// PanicError is a panic recovered from a handler (or, in package outbox, a sink),
// turned into the failure of that attempt. Its message is the panic's value; the stack
// goes to the log, never to the database or an HTTP answer.
type PanicError struct {
	// Value is what was passed to panic.
	Value any
	// Stack is the panicking goroutine's stack.
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Unwrap returns the panic's value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// callHandler runs fn, turning a panic into a *PanicError that is logged with its
// stack (and the event's key and type, never its payload).
func (i *Inbox[TTx]) callHandler(ctx context.Context, fn HandlerFunc[TTx], tx TTx, ev Event) (err error) {
	ctx, span := i.startHandler(ctx, &ev)
	defer func() { endSpan(span, err) }()
	defer func() {
		if v := recover(); v != nil {
			perr := &PanicError{Value: v, Stack: debug.Stack()}
			i.logger.ErrorContext(ctx, "hookinbox: handler panicked",
				"endpoint", ev.Endpoint, "event_id", ev.ID, "event_type", ev.Type,
				"attempt", ev.Attempt, "panic", perr.Error(), "stack", string(perr.Stack))
			err = perr
		}
	}()
	return fn(ctx, tx, ev)
}

// callBatchHandler runs fn as callHandler runs a handler; a panic is logged with the
// batch's endpoint and size.
func (i *Inbox[TTx]) callBatchHandler(ctx context.Context, fn BatchHandlerFunc[TTx], tx TTx, evs []Event) (err error) {
	ctx, span := i.startBatchHandler(ctx, evs)
	defer func() { endSpan(span, err) }()
	defer func() {
		if v := recover(); v != nil {
			perr := &PanicError{Value: v, Stack: debug.Stack()}
			i.logger.ErrorContext(ctx, "hookinbox: batch handler panicked",
				"endpoint", evs[0].Endpoint, "events", len(evs), "panic", perr.Error(), "stack", string(perr.Stack))
			err = perr
		}
	}()
	return fn(ctx, tx, evs)
}
