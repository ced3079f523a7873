package hookinbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/hookinbox/hookinbox/driver"
)

// ErrBatchIncomplete means some events of a batch (ReceiveBatch) were not recorded:
// the sender must retry the whole request. The events whose outcome is set were
// committed, and are duplicates on the retry.
var ErrBatchIncomplete = errors.New("some events of the batch were not recorded")

// ReceiveBatch records several verified events of one endpoint that arrived in one
// request (SendGrid's event arrays, Adyen's notification items): each event gets its
// own receipt, under its own key, and all of them are written in one transaction, so
// the provider gets one answer for the request.
//
// On an async endpoint the receipts are inserted by one statement: all or none. On a
// sync or hybrid endpoint the events are received as a group of sync deliveries is
// (a savepoint each, or one call of a set-based handler per registration): an event
// whose handler fails is rolled back alone — kept as pending on a hybrid endpoint —
// and the others commit. Copies of one event id in the request are received once; the
// later copies are duplicates. Events with no handler are kept as ignored.
//
// outcomes[k] is the outcome of evs[k] once committed. An error wrapping
// ErrBatchIncomplete means some outcomes are empty (their errors joined in it): the
// sender must retry, and the committed events will be duplicates then. Any other
// error means nothing was committed (or, if the database failed during commit, that
// the outcome is unknown). An invalid event (ErrInvalidEvent) refuses the whole batch
// before anything is written.
func (i *Inbox[TTx]) ReceiveBatch(ctx context.Context, evs []Event) ([]Outcome, error) {
	outs := make([]Outcome, len(evs))
	if len(evs) == 0 {
		return outs, nil
	}
	ep, ok := i.endpoints[evs[0].Endpoint]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownEndpoint, evs[0].Endpoint)
	}
	for k := range evs {
		if evs[k].Provider == "" {
			evs[k].Provider = ep.provider
		}
		if evs[k].Endpoint != ep.Name {
			return nil, fmt.Errorf("%w: a batch holds events of endpoints %q and %q", ErrInvalidEvent, ep.Name, evs[k].Endpoint)
		}
		if err := checkEvent(evs[k], ep); err != nil {
			return nil, fmt.Errorf("event %d of the batch: %w", k, err)
		}
	}
	var err error
	if ep.Mode == ModeAsync {
		err = i.acceptBatch(ctx, evs, outs)
	} else {
		err = i.receiveSyncBatch(ctx, ep, evs, outs)
	}
	if err != nil && !errors.Is(err, ErrBatchIncomplete) {
		return nil, err
	}
	for k, out := range outs {
		if out == OutcomeDuplicate {
			i.noteDuplicate(ctx, evs[k])
		}
	}
	return outs, err
}

// acceptBatch inserts the batch's receipts in one statement: pending, or ignored
// (processed) for events with no handler.
func (i *Inbox[TTx]) acceptBatch(ctx context.Context, evs []Event, outs []Outcome) error {
	var (
		params []*driver.InboxInsertParams
		firsts []int
		first  = make(map[string]int, len(evs)) // event id → its first copy
	)
	for k, ev := range evs {
		if _, dup := first[ev.ID]; dup {
			continue
		}
		first[ev.ID] = k
		firsts = append(firsts, k)
		if i.handler(ev.Endpoint, ev.Type) == nil {
			params = append(params, i.receiptParams(ev, true, OutcomeIgnored))
		} else {
			params = append(params, i.receiptParams(ev, false, ""))
		}
	}
	inserted, err := i.driver.Executor().InboxInsertMany(ctx, params)
	if err != nil {
		return err
	}
	accepted := false
	for j, k := range firsts {
		switch {
		case !inserted[j]:
			outs[k] = OutcomeDuplicate
		case params[j].Processed:
			outs[k] = OutcomeIgnored
		default:
			outs[k], accepted = OutcomeAccepted, true
		}
	}
	for k, ev := range evs {
		if first[ev.ID] != k {
			outs[k] = OutcomeDuplicate // committed with its first copy
		}
	}
	if accepted {
		i.announce()
	}
	return nil
}

// receiveSyncBatch receives the batch as one group of sync deliveries, in one
// transaction.
func (i *Inbox[TTx]) receiveSyncBatch(ctx context.Context, ep *endpoint, evs []Event, outs []Outcome) error {
	group := make([]*syncDelivery[TTx], len(evs))
	for k, ev := range evs {
		fn, batch, reg := i.handlerFor(ev.Endpoint, ev.Type)
		group[k] = &syncDelivery[TTx]{ctx: ctx, ev: ev, fn: fn, batch: batch, registration: reg, hybrid: ep.Mode == ModeHybrid}
		if fn == nil {
			group[k].batch = nil
		}
	}
	gctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	res := make([]syncResult, len(group))
	handled, err := i.receiveTogether(gctx, group, res)
	if err != nil {
		return err
	}
	var errs []error
	for k := range group {
		switch {
		case !handled[k]:
			errs = append(errs, fmt.Errorf("event %s: not received within the batch's time", evs[k].ID))
		case res[k].err != nil:
			errs = append(errs, fmt.Errorf("event %s: %w", evs[k].ID, res[k].err))
		default:
			outs[k] = res[k].out
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrBatchIncomplete, errors.Join(errs...))
	}
	return nil
}
