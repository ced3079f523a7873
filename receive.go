package hookinbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/hookinbox/hookinbox/internal/reqcheck"
)

// ErrInvalidEvent means a verified event cannot be recorded: it has no id or type, an
// id or type too long to be a key, or a payload that is not JSON.
var ErrInvalidEvent = errors.New("invalid event")

const (
	maxEventIDBytes   = 512
	maxEventTypeBytes = 256
	maxLastErrorBytes = 2000
)

// Receive records a verified event on its endpoint (ev.Endpoint) and processes it as
// the endpoint's mode says. It returns only after the receipt is committed; an error
// means nothing was committed (or, if the database failed during commit, that the
// outcome is unknown), so the sender must retry.
//
// Receive does not verify signatures: the HTTP handler from Endpoint does that first.
// Call it directly only with events verified by other means.
//
// A duplicate whose body differs from the first delivery's is still a duplicate (the
// first body won), but it is counted on the receipt (Receipt.Conflicts, ListParams'
// Conflicts) and logged with both bodies' SHA-256: a provider's bug, a replay with a
// changed body under a leaked secret, or two senders sharing one id space.
func (i *Inbox[TTx]) Receive(ctx context.Context, ev Event) (Outcome, error) {
	ev.payloadIsJSON = false // vouched for by the endpoint's verifier only, never by a caller
	out, _, err := i.receiveTraced(ctx, ev)
	return out, err
}

// receive is Receive, also reporting a duplicate whose body differs from the receipt's.
func (i *Inbox[TTx]) receive(ctx context.Context, ev Event) (Outcome, bool, error) {
	if ep, ok := i.endpoints[ev.Endpoint]; ok && ev.Provider == "" {
		ev.Provider = ep.provider
	}
	out, err := i.receiveOutcome(ctx, ev)
	if err != nil || out != OutcomeDuplicate {
		return out, false, err
	}
	return out, i.noteDuplicate(ctx, ev), nil
}

// noteDuplicate compares a duplicate's body with the receipt's and records a conflict.
// It runs after the delivery's outcome is settled and never changes it: an error here
// is logged, not returned.
func (i *Inbox[TTx]) noteDuplicate(ctx context.Context, ev Event) bool {
	sum := sha256.Sum256(ev.Payload)
	key := hookinboxtype.Key{Provider: ev.Provider, Endpoint: ev.Endpoint, EventID: ev.ID}
	nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	stored, conflict, err := i.driver.Executor().InboxNoteDuplicate(nctx, key, sum[:])
	if err != nil {
		i.logger.WarnContext(ctx, "hookinbox: error comparing a duplicate's body", "endpoint", ev.Endpoint, "event_id", ev.ID, "error", err.Error())
		return false
	}
	if conflict {
		i.logger.WarnContext(ctx, "hookinbox: duplicate with another body; the first body was kept",
			"endpoint", ev.Endpoint, "event_id", ev.ID, "event_type", ev.Type,
			"stored_sha256", hex.EncodeToString(stored), "received_sha256", hex.EncodeToString(sum[:]))
	}
	return conflict
}

func (i *Inbox[TTx]) receiveOutcome(ctx context.Context, ev Event) (Outcome, error) {
	ep, ok := i.endpoints[ev.Endpoint]
	if !ok {
		return "", fmt.Errorf("%w %q", ErrUnknownEndpoint, ev.Endpoint)
	}
	if ev.Provider == "" {
		ev.Provider = ep.provider
	}
	if err := checkEvent(ev, ep); err != nil {
		return "", err
	}
	fn, batch, reg := i.handlerFor(ev.Endpoint, ev.Type)
	if fn == nil {
		// Kept as processed so that the provider's retries stay duplicates.
		return i.insertReceipt(ctx, ev, true, OutcomeIgnored)
	}
	switch ep.Mode {
	case ModeAsync:
		return i.acceptAsync(ctx, ev)
	default:
		return i.receiveSyncGrouped(ctx, &syncDelivery[TTx]{ctx: ctx, ev: ev, fn: fn,
			batch: batch, registration: reg, hybrid: ep.Mode == ModeHybrid})
	}
}

func checkEvent(ev Event, ep *endpoint) error {
	switch {
	case ev.Provider != ep.provider:
		return fmt.Errorf("%w: provider %q does not match endpoint %q (%s)", ErrInvalidEvent, ev.Provider, ep.Name, ep.provider)
	case ev.ID == "":
		return fmt.Errorf("%w: no event id", ErrInvalidEvent)
	case ev.Type == "":
		return fmt.Errorf("%w: no event type", ErrInvalidEvent)
	case len(ev.ID) > maxEventIDBytes:
		return fmt.Errorf("%w: event id longer than %d bytes", ErrInvalidEvent, maxEventIDBytes)
	case len(ev.Type) > maxEventTypeBytes:
		return fmt.Errorf("%w: event type longer than %d bytes", ErrInvalidEvent, maxEventTypeBytes)
	case !reqcheck.KeyText(ev.ID) || !reqcheck.KeyText(ev.Type):
		return fmt.Errorf("%w: event id or type is not UTF-8 text without control characters", ErrInvalidEvent)
	case !utf8.Valid(ev.Payload):
		return fmt.Errorf("%w: payload is not valid UTF-8", ErrInvalidEvent)
	case !ev.payloadIsJSON && !json.Valid(ev.Payload):
		return fmt.Errorf("%w: payload is not JSON", ErrInvalidEvent)
	}
	return nil
}

// receiveSync commits the receipt and the handler's business update in one
// transaction. If the handler or the commit fails, both are gone and a retry is
// processed normally; once the commit succeeds, every retry is a duplicate.
func (i *Inbox[TTx]) receiveSync(ctx context.Context, ev Event, fn HandlerFunc[TTx]) (Outcome, error) {
	tx, err := i.driver.Begin(ctx)
	if err != nil {
		return "", err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after commit

	// Inserted as processed up front: the row and the business update commit together
	// or not at all, so there is no moment where it is visible but unprocessed.
	inserted, err := tx.InboxInsert(ctx, i.receiptParams(ev, true, OutcomeProcessed))
	if err != nil {
		return "", err
	}
	if !inserted {
		return OutcomeDuplicate, nil
	}
	ev.Attempt = 1
	if err := i.callHandler(ctx, fn, tx.Native(), ev); err != nil {
		return "", &HandlerError{EventType: ev.Type, Err: i.driver.TranslateError(err)}
	}
	if err := tx.Commit(ctx); err != nil {
		// A driver may send the handler's last statements only with COMMIT (the
		// PostgreSQL driver does with outbox messages): a failure there is the
		// handler's, as it would have been had they been sent at once, so that a
		// hybrid endpoint keeps the receipt for its workers. The database's own
		// failures (unreachable, a conflict, the deadline) stay the database's.
		if !isGroupFailure(err) && !i.commitNotTheHandlers {
			return "", &HandlerError{EventType: ev.Type, Err: err}
		}
		return "", err
	}
	return OutcomeProcessed, nil
}

// receiveAfterHandlerFailure stores the receipt of a hybrid endpoint as pending, with
// the handler's error and the attempt counted, so that workers retry it.
func (i *Inbox[TTx]) receiveAfterHandlerFailure(ctx context.Context, ev Event, herr *HandlerError) (Outcome, error) {
	p := i.receiptParams(ev, false, "")
	p.Attempts = 1
	p.LastError = errorText(herr.Err)
	p.Delay = i.worker.RetryDelayFunc(1)
	p.MaxAttempts = i.worker.MaxAttempts
	p.TraceParent = i.traceParent(ctx)
	inserted, err := i.driver.Executor().InboxInsert(ctx, p)
	if err != nil {
		return "", errors.Join(herr, err)
	}
	if !inserted {
		// A concurrent copy committed while our transaction was rolling back.
		return OutcomeDuplicate, nil
	}
	i.logger.WarnContext(ctx, "hookinbox: handler failed, receipt kept for workers",
		"endpoint", ev.Endpoint, "event_id", ev.ID, "event_type", ev.Type, "error", herr.Err.Error())
	i.announce()
	return OutcomeAccepted, nil
}

func (i *Inbox[TTx]) insertReceipt(ctx context.Context, ev Event, processed bool, out Outcome) (Outcome, error) {
	outcome := ""
	if processed {
		outcome = string(out)
	}
	inserted, err := i.accept(ctx, i.withTraceParent(ctx, i.receiptParams(ev, processed, Outcome(outcome))))
	if err != nil {
		return "", err
	}
	if !inserted {
		return OutcomeDuplicate, nil
	}
	return out, nil
}

func (i *Inbox[TTx]) receiptParams(ev Event, processed bool, out Outcome) *driver.InboxInsertParams {
	return &driver.InboxInsertParams{
		Key:       hookinboxtype.Key{Provider: ev.Provider, Endpoint: ev.Endpoint, EventID: ev.ID},
		EventType: ev.Type,
		Payload:   ev.Payload,
		Processed: processed,
		Outcome:   string(out),
		BodySHA256: func() []byte {
			sum := sha256.Sum256(ev.Payload)
			return sum[:]
		}(),
		// The receiver's limit until a worker's claim stores its own.
		MaxAttempts: i.worker.MaxAttempts,
		Request:     ev.request,
	}
}

// errorText is the error as stored in last_error, bounded so that a huge message
// cannot bloat the row.
func errorText(err error) string {
	s := err.Error()
	if len(s) > maxLastErrorBytes {
		s = s[:maxLastErrorBytes]
	}
	// Text PostgreSQL stores: valid UTF-8 (a cut may split a rune, a handler may quote
	// bytes) and no NUL, or the failure could not be recorded at all.
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\ufffd"), "\x00", "\\0")
}
