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
	ctx    context.Context
	ev     Event
	fn     HandlerFunc[TTx]
	hybrid bool
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
func (i *Inbox[TTx]) receiveSyncGrouped(ctx context.Context, ev Event, fn HandlerFunc[TTx], hybrid bool) (Outcome, error) {
	res, err := i.syncer.Do(ctx, &syncDelivery[TTx]{ctx: ctx, ev: ev, fn: fn, hybrid: hybrid})
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
	res := make([]syncResult, len(group))
	alone := 0 // deliveries from here on are received alone
	if len(group) > 1 {
		if done, err := i.receiveTogether(ctx, group, res); err == nil {
			alone = done
		}
	}
	for n := alone; n < len(group); n++ {
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

// receiveTogether receives group[:done] in one transaction and commits; it stops
// taking deliveries once groupBudget has passed, and the caller receives the rest
// alone. An error means nothing was committed.
func (i *Inbox[TTx]) receiveTogether(ctx context.Context, group []*syncDelivery[TTx], res []syncResult) (done int, err error) {
	tx, err := i.driver.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after commit

	start := time.Now()
	done = len(group)
	var hybridFailures []int
	for n, d := range group {
		if n > 0 && time.Since(start) > groupBudget {
			done = n
			break
		}
		hctx, cancel := i.handlerContext(ctx, d)
		out, err := i.receiveInGroup(hctx, tx, d)
		cancel()
		switch {
		case err == nil:
			res[n] = syncResult{out: out}
		case errors.Is(err, errGroupFailed):
			return 0, err
		default:
			// Rolled back to its savepoint: the delivery's failure is its own.
			res[n] = syncResult{err: err}
			var herr *HandlerError
			if d.hybrid && errors.As(err, &herr) {
				hybridFailures = append(hybridFailures, n)
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
		inserted, err := tx.InboxInsert(ctx, p)
		if err != nil {
			return 0, err
		}
		res[n] = syncResult{out: OutcomeDuplicate}
		if inserted {
			res[n] = syncResult{out: OutcomeAccepted}
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, err
	}
	for _, n := range hybridFailures {
		if res[n].out == OutcomeAccepted {
			i.logger.WarnContext(ctx, "hookinbox: handler failed, receipt kept for workers",
				"endpoint", group[n].ev.Endpoint, "event_id", group[n].ev.ID, "event_type", group[n].ev.Type)
			i.announce()
		}
	}
	return done, nil
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
		if errors.Is(err, driver.ErrUnavailable) || errors.Is(err, driver.ErrConflict) ||
			errors.Is(err, context.DeadlineExceeded) {
			// Not the delivery's own failure: alone, in its own transaction, it may succeed.
			return "", errGroupFailed
		}
		if rerr := tx.RollbackToSavepoint(ctx); rerr != nil {
			return "", errGroupFailed
		}
		return "", err
	}
	inserted, err := tx.SavepointInboxInsert(ctx, i.receiptParams(d.ev, true, OutcomeProcessed))
	if errors.Is(err, driver.ErrSavepoint) {
		return "", errGroupFailed // the transaction failed before this delivery began
	}
	if err != nil {
		return undo(err)
	}
	out := OutcomeDuplicate // received before, or by an earlier copy in this very group
	if inserted {
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
