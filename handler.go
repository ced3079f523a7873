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
// An error, or a panic, rolls the transaction back. A panic is recovered and treated
// as the attempt's failure (a *PanicError), so one broken handler never takes down the
// process or the other endpoints.
type HandlerFunc[TTx any] func(ctx context.Context, tx TTx, ev Event) error

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
