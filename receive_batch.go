package hookinbox

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hookinbox/hookinbox/driver"
)

// ErrBatchIncomplete means some events of a batch (ReceiveBatch) were not recorded;
// the error is a *BatchError that says which and why. The events whose outcome is set
// were committed, and are duplicates on a retry.
var ErrBatchIncomplete = errors.New("some events of the batch were not recorded")

// BatchError is ReceiveBatch's error when some events were not recorded: Failed maps
// each one's position in the batch to its error. It wraps ErrBatchIncomplete.
type BatchError struct {
	Failed map[int]error
}

func (e *BatchError) Error() string {
	ks := make([]int, 0, len(e.Failed))
	for k := range e.Failed {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	parts := make([]string, 0, len(ks))
	for _, k := range ks {
		parts = append(parts, fmt.Sprintf("event %d: %v", k, e.Failed[k]))
	}
	return fmt.Sprintf("%v: %s", ErrBatchIncomplete, strings.Join(parts, "; "))
}

func (e *BatchError) Unwrap() error { return ErrBatchIncomplete }

// Refused reports whether every failure is a refusal of the event itself (the database
// refused its payload): retrying the request cannot record them.
func (e *BatchError) Refused() bool { return e.all(isRefusal) }

// Unavailable reports whether every failure is the database being unreachable.
func (e *BatchError) Unavailable() bool {
	return e.all(func(err error) bool { return errors.Is(err, driver.ErrUnavailable) })
}

func (e *BatchError) all(f func(error) bool) bool {
	for _, err := range e.Failed {
		if !f(err) {
			return false
		}
	}
	return len(e.Failed) > 0
}

func isRefusal(err error) bool {
	return errors.Is(err, driver.ErrInvalidInput) || errors.Is(err, ErrInvalidEvent)
}

// ReceiveBatch records several verified events of one endpoint that arrived in one
// request (SendGrid's event arrays): each event gets its own receipt, under its own
// key, and the provider gets one answer for the request.
//
// On an async endpoint the receipts are inserted by one statement (up to
// Config.Accept's MaxBatch a statement): all or none, unless the database refuses one
// event's row, which is then isolated (the statement split until it stands alone) so
// that the others are recorded; while Run's workers have room, they are inserted
// leased to them and handed over in memory, as Receive's are. On a sync or hybrid endpoint the events are received
// as a group of sync deliveries is, in one transaction (up to Config.Sync's MaxBatch
// a transaction): a savepoint each, or one call of a set-based handler per
// registration; an event whose handler fails is rolled back alone — kept as pending on
// a hybrid endpoint — and the others commit; when the shared transaction fails as a
// whole, each event is received alone. Copies of one event id in the request are
// received once; the later copies are duplicates. Events with no handler are kept as
// ignored.
//
// outcomes[k] is the outcome of evs[k] once committed. A *BatchError (wrapping
// ErrBatchIncomplete) means some outcomes are empty, and says why for each: the
// sender must retry, and the committed events will be duplicates then. An invalid
// event (ErrInvalidEvent) refuses the whole batch before anything is written.
func (i *Inbox[TTx]) ReceiveBatch(ctx context.Context, evs []Event) ([]Outcome, error) {
	for k := range evs {
		evs[k].payloadIsJSON = false // vouched for by the endpoint's verifier only
	}
	return i.receiveBatch(ctx, evs)
}

// receiveBatch is ReceiveBatch of events as the endpoint's verifier gave them.
func (i *Inbox[TTx]) receiveBatch(ctx context.Context, evs []Event) ([]Outcome, error) {
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
	failed := map[int]error{}
	if ep.Mode == ModeAsync {
		i.acceptBatch(ctx, evs, outs, failed)
	} else {
		for start := 0; start < len(evs); start += i.batchMax[1] {
			end := min(start+i.batchMax[1], len(evs))
			i.receiveSyncBatch(ctx, ep, evs, start, end, outs, failed)
		}
	}
	for k, out := range outs {
		if out == OutcomeDuplicate {
			i.noteDuplicate(ctx, evs[k])
		}
	}
	if len(failed) > 0 {
		return outs, &BatchError{Failed: failed}
	}
	return outs, nil
}

// acceptBatch inserts the batch's receipts, pending, or ignored (processed) for events
// with no handler: one statement a chunk, split on a row the database refuses. The
// pending ones are leased to this process's workers while they have room, and handed
// to them once their chunk committed, as acceptAsync's are (handoff.go).
func (i *Inbox[TTx]) acceptBatch(ctx context.Context, evs []Event, outs []Outcome, failed map[int]error) {
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
			continue
		}
		p := i.receiptParams(ev, false, "")
		if !i.claimBatches && i.handoff.reserve() {
			p.Lease = i.worker.Lease // handed to this process's workers, as acceptAsync's
		}
		params = append(params, p)
	}
	announce := false
	var insert func(lo, hi int)
	insert = func(lo, hi int) {
		start := time.Now()
		sctx, cancel := context.WithTimeout(ctx, acceptTimeout) // as an accept batch's
		inserted, err := i.driver.Executor().InboxInsertMany(sctx, params[lo:hi])
		cancel()
		if err != nil {
			if hi-lo > 1 && !errors.Is(err, driver.ErrUnavailable) && !errors.Is(err, context.DeadlineExceeded) {
				// One refused row fails its statement: halve until it stands alone.
				mid := lo + (hi-lo)/2
				insert(lo, mid)
				insert(mid, hi)
				return
			}
			i.handBack(params[lo:hi])
			for j := lo; j < hi; j++ {
				failed[firsts[j]] = err
			}
			return
		}
		i.handOff(params[lo:hi], inserted, start)
		for j := lo; j < hi; j++ {
			k := firsts[j]
			switch {
			case !inserted[j-lo]:
				outs[k] = OutcomeDuplicate
			case params[j].Processed:
				outs[k] = OutcomeIgnored
			default:
				outs[k] = OutcomeAccepted
				announce = announce || params[j].Lease <= 0
			}
		}
	}
	for lo := 0; lo < len(params); lo += i.batchMax[0] {
		insert(lo, min(lo+i.batchMax[0], len(params)))
	}
	for k, ev := range evs {
		if f := first[ev.ID]; f != k {
			// Committed with its first copy, or failed with it.
			if err, bad := failed[f]; bad {
				failed[k] = err
			} else {
				outs[k] = OutcomeDuplicate
			}
		}
	}
	if announce {
		i.announce() // the receipts not handed off
	}
}

// receiveSyncBatch receives evs[start:end] as one group of sync deliveries, in one
// transaction; when that transaction fails as a whole, or its time is up, the events
// it did not commit are received alone, each with a fresh deadline.
func (i *Inbox[TTx]) receiveSyncBatch(ctx context.Context, ep *endpoint, evs []Event, start, end int, outs []Outcome, failed map[int]error) {
	group := make([]*syncDelivery[TTx], end-start)
	for k := range group {
		ev := evs[start+k]
		fn, batch, reg := i.handlerFor(ev.Endpoint, ev.Type)
		group[k] = &syncDelivery[TTx]{ctx: ctx, ev: ev, fn: fn, batch: batch, registration: reg, hybrid: ep.Mode == ModeHybrid}
		if fn == nil {
			group[k].batch = nil
		}
	}
	res := make([]syncResult, len(group))
	handled := make([]bool, len(group))
	gctx, cancel := context.WithTimeout(ctx, syncTimeout)
	if h, err := i.receiveTogether(gctx, group, res); err == nil {
		handled = h
	}
	cancel()
	for k, d := range group {
		if !handled[k] {
			hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), syncTimeout)
			res[k].out, res[k].err = i.receiveAlone(hctx, d)
			cancel()
		}
		if res[k].err != nil {
			failed[start+k] = res[k].err
		} else {
			outs[start+k] = res[k].out
		}
	}
}
