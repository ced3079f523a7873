package hookinbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/internal/groupcommit"
)

// syncDelivery is one sync or hybrid delivery waiting for a shared transaction.
type syncDelivery[TTx any] struct {
	ctx context.Context
	ev  Event
	fn  HandlerFunc[TTx]
	// batch is fn's set-based form, when registered with HandleBatch; deliveries of one
	// registration in a group are applied together.
	batch        BatchHandlerFunc[TTx]
	registration handlerKey
	hybrid       bool
}

type syncResult struct {
	out Outcome
	err error
}

// syncTimeout bounds one shared transaction of sync deliveries.
const syncTimeout = 30 * time.Second

func (i *Inbox[TTx]) newSyncer(c GroupConfig) *groupcommit.Committer[*syncDelivery[TTx], syncResult] {
	return groupcommit.New(groupcommit.Config{
		Flushers: c.Flushers, MaxBatch: c.MaxBatch, QueueSize: c.QueueSize, Timeout: syncTimeout,
	}, i.receiveGroup)
}

// receiveSyncGrouped hands a sync or hybrid delivery to the group commit and returns
// its own outcome, after the transaction that holds it committed.
func (i *Inbox[TTx]) receiveSyncGrouped(ctx context.Context, d *syncDelivery[TTx]) (Outcome, error) {
	res, err := i.syncer.Do(ctx, d)
	if errors.Is(err, groupcommit.ErrFull) {
		return "", ErrOverloaded
	}
	if err != nil {
		return "", err
	}
	return res.out, res.err
}

// receiveGroup commits a group of sync deliveries in one transaction, each behind a
// savepoint: a delivery whose receipt insert or handler fails is rolled back to its
// savepoint, answered with its own error (or, on a hybrid endpoint, stored as pending
// in the same transaction), and the others go on. Everything else that fails — the
// commit, a lost connection, a deadlock with another group — leaves nothing committed,
// and each delivery is received again in a transaction of its own: its receipt makes
// that safe even when the failed commit did in fact commit (the retry then finds the
// receipt and answers duplicate, which is what the delivery is).
func (i *Inbox[TTx]) receiveGroup(ctx context.Context, group []*syncDelivery[TTx]) ([]syncResult, error) {
	traceGroup(group)
	start := time.Now()
	res := make([]syncResult, len(group))
	handled := make([]bool, len(group)) // by the shared transaction, which committed
	failed := false
	if len(group) > 1 {
		if h, err := i.receiveTogether(ctx, group, res); err == nil {
			handled = h
		} else {
			failed = true
		}
	}
	defer func() {
		i.observeGroup(GroupInfo{Kind: GroupSync, Size: len(group), Failed: failed, Latency: time.Since(start)})
	}()
	for n := range group {
		if handled[n] {
			continue
		}
		// A fresh deadline each: what the group spent is not taken from them.
		hctx, cancel := context.WithTimeout(context.WithoutCancel(group[n].ctx), syncTimeout)
		res[n].out, res[n].err = i.receiveAlone(hctx, group[n])
		cancel()
	}
	return res, nil
}

// handlerContext is the delivery's own context (its values, e.g. a trace), no longer
// cancelled by its request — its group goes on when one sender hangs up — but bounded
// by the group's deadline.
func (i *Inbox[TTx]) handlerContext(group context.Context, d *syncDelivery[TTx]) (context.Context, context.CancelFunc) {
	deadline, _ := group.Deadline()
	return context.WithDeadline(context.WithoutCancel(d.ctx), deadline)
}

func (i *Inbox[TTx]) receiveAlone(ctx context.Context, d *syncDelivery[TTx]) (Outcome, error) {
	if d.fn == nil {
		return i.insertReceipt(ctx, d.ev, true, OutcomeIgnored) // a batch's event with no handler
	}
	out, err := i.receiveSync(ctx, d.ev, d.fn)
	var herr *HandlerError
	if !d.hybrid || !errors.As(err, &herr) {
		return out, err
	}
	return i.receiveAfterHandlerFailure(ctx, d.ev, herr)
}

// groupBudget is how long a group takes deliveries in before it commits what it has:
// slow handlers must not hold the rest of the group, nor its transaction, for long.
// The deliveries left over are received alone.
const groupBudget = syncTimeout / 6

// errGroupFailed reports that the shared transaction cannot go on.
var errGroupFailed = errors.New("the group's transaction failed")

// receiveTogether receives deliveries of group in one transaction and commits, and
// reports which: it stops taking deliveries once groupBudget has passed, and the caller
// receives the rest alone. Deliveries of one registration with a set-based handler are
// applied by one call of it (receiveBatchInGroup); the others, and a batch that fails,
// one by one behind a savepoint each. An error means nothing was committed.
func (i *Inbox[TTx]) receiveTogether(ctx context.Context, group []*syncDelivery[TTx], res []syncResult) (handled []bool, err error) {
	tx, err := i.driver.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after commit

	start := time.Now()
	handled = make([]bool, len(group))
	var hybridFailures []int
	one := func(n int) error {
		d := group[n]
		hctx, cancel := i.handlerContext(ctx, d)
		out, err := i.receiveInGroup(hctx, tx, d)
		cancel()
		switch {
		case err == nil:
			res[n] = syncResult{out: out}
		case errors.Is(err, errGroupFailed):
			return err
		default:
			// Rolled back to its savepoint: the delivery's failure is its own.
			res[n] = syncResult{err: err}
			var herr *HandlerError
			if d.hybrid && errors.As(err, &herr) {
				hybridFailures = append(hybridFailures, n)
			}
		}
		handled[n] = true
		return nil
	}
	units := batchUnits(group)
	// A group that is one set-based unit (every delivery to one registration: the
	// common case) takes no savepoint: if its batch fails, so does the group, and each
	// delivery is received alone. That is one round trip and one subtransaction less
	// for every group that succeeds, paid for only by the groups that fail.
	whole := len(units) == 1
units:
	for u, unit := range units {
		if u > 0 && time.Since(start) > groupBudget {
			break
		}
		rest := unit
		if len(unit) > 1 {
			if rest, err = i.receiveBatchInGroup(ctx, tx, group, unit, whole, res, handled); err != nil {
				return nil, err
			}
		}
		for k, n := range rest {
			if (u > 0 || k > 0) && time.Since(start) > groupBudget {
				break units
			}
			if err := one(n); err != nil {
				return nil, err
			}
		}
	}
	// Hybrid receipts whose handler failed are kept as pending, with the error and
	// the attempt counted, in the same transaction.
	for _, n := range hybridFailures {
		d := group[n]
		herr := res[n].err
		p := i.receiptParams(d.ev, false, "")
		p.Attempts, p.LastError, p.Delay, p.MaxAttempts = 1, errorText(errors.Unwrap(herr)), i.worker.RetryDelayFunc(1), i.worker.MaxAttempts
		p.TraceParent = i.traceParent(d.ctx)
		inserted, err := tx.InboxInsert(ctx, p)
		if err != nil {
			return nil, err
		}
		res[n] = syncResult{out: OutcomeDuplicate}
		if inserted {
			res[n] = syncResult{out: OutcomeAccepted}
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, err
	}
	for _, n := range hybridFailures {
		if res[n].out == OutcomeAccepted {
			i.logger.WarnContext(ctx, "hookinbox: handler failed, receipt kept for workers",
				"endpoint", group[n].ev.Endpoint, "event_id", group[n].ev.ID, "event_type", group[n].ev.Type)
			i.announce()
		}
	}
	return handled, nil
}

// batchUnits splits a group into the units its transaction receives in turn, in order
// of arrival: the deliveries of one registration with a set-based handler together,
// every other delivery alone.
func batchUnits[TTx any](group []*syncDelivery[TTx]) [][]int {
	var units [][]int
	at := map[handlerKey]int{}
	for n, d := range group {
		if d.batch == nil {
			units = append(units, []int{n})
			continue
		}
		if u, ok := at[d.registration]; ok {
			units[u] = append(units[u], n)
			continue
		}
		at[d.registration] = len(units)
		units = append(units, []int{n})
	}
	return units
}

// receiveBatchInGroup receives the deliveries unit of group, of one registration with
// a set-based handler, behind one savepoint: their receipts in one statement, then one
// call of the handler with the events that were new. It returns the deliveries left to
// receive one by one: later copies of an event in the unit (each a duplicate, or the
// event itself if its first copy fails), or the whole unit when the batch failed and
// was rolled back to its savepoint. errGroupFailed means the transaction cannot go on.
//
// whole says that unit is all of the group's first deliveries: then there is no
// savepoint, and a batch that fails fails the group (errGroupFailed), whose
// deliveries are then received each alone, in transactions of their own.
func (i *Inbox[TTx]) receiveBatchInGroup(ctx context.Context, tx driver.ExecutorTx[TTx], group []*syncDelivery[TTx],
	unit []int, whole bool, res []syncResult, handled []bool) (rest []int, err error) {
	var (
		firsts  []int
		params  []*driver.InboxInsertParams
		seen    = make(map[string]bool, len(unit))
		copies  []int
		retreat = func() ([]int, error) {
			if whole {
				return nil, errGroupFailed
			}
			if err := tx.RollbackToSavepoint(ctx); err != nil {
				return nil, errGroupFailed
			}
			return unit, nil
		}
	)
	for _, n := range unit {
		if seen[group[n].ev.ID] {
			copies = append(copies, n)
			continue
		}
		seen[group[n].ev.ID] = true
		firsts = append(firsts, n)
		params = append(params, i.receiptParams(group[n].ev, true, OutcomeProcessed))
	}
	if len(firsts) == 1 {
		return unit, nil
	}
	var inserted []bool
	if whole {
		inserted, err = tx.InboxInsertMany(ctx, params)
	} else {
		inserted, err = tx.SavepointInboxInsertMany(ctx, params)
	}
	if errors.Is(err, driver.ErrSavepoint) || isGroupFailure(err) {
		return nil, errGroupFailed
	}
	if err != nil {
		return retreat()
	}
	var evs []Event
	for k, n := range firsts {
		if inserted[k] {
			ev := group[n].ev
			ev.Attempt = 1
			evs = append(evs, ev)
		}
	}
	if len(evs) > 0 {
		hctx, cancel := i.handlerContext(ctx, group[firsts[0]])
		err = i.callBatchHandler(hctx, group[firsts[0]].batch, tx.Native(), evs)
		cancel()
		if err != nil {
			if isGroupFailure(i.driver.TranslateError(err)) {
				return nil, errGroupFailed
			}
			return retreat()
		}
	}
	if !whole {
		if err := tx.ReleaseSavepoint(ctx); err != nil {
			if isGroupFailure(err) {
				return nil, errGroupFailed
			}
			return retreat()
		}
	}
	for k, n := range firsts {
		res[n] = syncResult{out: OutcomeDuplicate}
		if inserted[k] {
			res[n] = syncResult{out: OutcomeProcessed}
		}
		handled[n] = true
	}
	return copies, nil
}

// isGroupFailure says whether a failure is the shared transaction's rather than one
// delivery's: alone, in its own transaction, the delivery may succeed.
func isGroupFailure(err error) bool {
	return errors.Is(err, driver.ErrUnavailable) || errors.Is(err, driver.ErrConflict) ||
		errors.Is(err, context.DeadlineExceeded)
}

// receiveInGroup receives one delivery of a group behind a savepoint, and releases the
// savepoint once the delivery succeeded. An error of the delivery's own (its receipt
// refused, its handler failed, or its handler left the transaction failed while
// returning success) is returned after rolling back to its savepoint;
// errGroupFailed means the transaction cannot go on.
//
// The release is what makes a handler that swallowed a database error (the
// transaction is then aborted, though the handler returned nil) its own failure: the
// release fails, and the rollback to this delivery's savepoint undoes only its work.
// Without it, the next delivery's savepoint would fail and a rollback to the latest
// savepoint would undo the previous delivery, already counted as processed.
func (i *Inbox[TTx]) receiveInGroup(ctx context.Context, tx driver.ExecutorTx[TTx], d *syncDelivery[TTx]) (Outcome, error) {
	undo := func(err error) (Outcome, error) {
		if isGroupFailure(err) {
			return "", errGroupFailed
		}
		if rerr := tx.RollbackToSavepoint(ctx); rerr != nil {
			return "", errGroupFailed
		}
		return "", err
	}
	done := OutcomeProcessed
	if d.fn == nil {
		done = OutcomeIgnored // no handler: kept as processed, so retries stay duplicates
	}
	inserted, err := tx.SavepointInboxInsert(ctx, i.receiptParams(d.ev, true, done))
	if errors.Is(err, driver.ErrSavepoint) {
		return "", errGroupFailed // the transaction failed before this delivery began
	}
	if err != nil {
		return undo(err)
	}
	out := OutcomeDuplicate // received before, or by an earlier copy in this very group
	if inserted && d.fn == nil {
		out = OutcomeIgnored
	} else if inserted {
		ev := d.ev
		ev.Attempt = 1
		if err := i.callHandler(ctx, d.fn, tx.Native(), ev); err != nil {
			return undo(&HandlerError{EventType: ev.Type, Err: i.driver.TranslateError(err)})
		}
		out = OutcomeProcessed
	}
	if err := tx.ReleaseSavepoint(ctx); err != nil {
		if !inserted {
			return "", errGroupFailed
		}
		return undo(&HandlerError{EventType: d.ev.Type, Err: fmt.Errorf("the handler returned success but left its transaction failed: %w", err)})
	}
	return out, nil
}
