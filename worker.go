package hookinbox

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/hookinbox/hookinbox/driver"
)

// Run starts the workers that process the receipts of async and hybrid endpoints and
// blocks until ctx is cancelled. Each worker claims a receipt in a short committed
// transaction (counting the attempt and taking a lease), then processes it in a second
// transaction that locks the row, re-checks that it is unprocessed, applies the handler
// and marks it processed.
//
// When ctx is cancelled, workers stop claiming and Run returns once every event in
// progress has finished or, past its lease, been abandoned; an abandoned event keeps
// its counted attempt and is claimed again when its lease ends. Nothing is lost.
func (i *Inbox[TTx]) Run(ctx context.Context) error {
	endpoints := i.workerEndpoints()
	if len(endpoints) == 0 {
		<-ctx.Done()
		return nil
	}
	var wg sync.WaitGroup
	for range i.worker.Concurrency {
		wg.Go(func() { i.workLoop(ctx, endpoints) })
	}
	wg.Wait()
	return nil
}

func (i *Inbox[TTx]) workerEndpoints() []string {
	var names []string
	for name, ep := range i.endpoints {
		if ep.Mode != ModeSync {
			names = append(names, name)
		}
	}
	return names
}

func (i *Inbox[TTx]) workLoop(ctx context.Context, endpoints []string) {
	idle := time.NewTimer(0)
	defer idle.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-i.wake:
		case <-idle.C:
		}
		// Work until the queue is empty, then sleep until woken or the next poll.
		for ctx.Err() == nil {
			r, err := i.claim(ctx, endpoints)
			if err != nil {
				if ctx.Err() == nil {
					i.logger.ErrorContext(ctx, "hookinbox: error claiming receipt", "error", err.Error())
				}
				break
			}
			if r == nil {
				break
			}
			// More may be waiting: let an idle worker look too.
			i.notifyWorkers()
			i.processClaimed(ctx, r)
		}
		idle.Reset(jitter(i.worker.PollInterval))
	}
}

// claim counts an attempt on the next available receipt and leases it, in its own
// committed statement, so the attempt survives a worker that dies while processing.
//
// A stop request does not interrupt the statement: a claim cancelled in flight may
// still commit on the server, and would then hide its receipt for a whole lease while
// nobody works on it. The loop checks for a stop before claiming, and a receipt that
// was claimed is processed.
func (i *Inbox[TTx]) claim(ctx context.Context, endpoints []string) (*driver.Receipt, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
	defer cancel()
	return i.driver.Executor().InboxClaim(ctx, &driver.InboxClaimParams{
		Endpoints:   endpoints,
		Lease:       i.worker.Lease,
		MaxAttempts: i.worker.MaxAttempts,
	})
}

// recordTimeout bounds the statement that records a failed attempt, and claimTimeout
// a claim.
const (
	recordTimeout = 10 * time.Second
	claimTimeout  = 10 * time.Second
)

// errAlreadyProcessed reports that a claimed receipt was found processed by another
// worker (its lease had run out) when this one locked it.
var errAlreadyProcessed = errors.New("already processed by another worker")

// processClaimed processes one claimed receipt and records a failure for a retry. It
// returns the processing error, nil on success, or errAlreadyProcessed.
func (i *Inbox[TTx]) processClaimed(ctx context.Context, r *driver.Receipt) error {
	// A stop request lets the event finish; the lease bounds how long that may take.
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), i.worker.Lease)
	defer cancel()
	start := time.Now()
	err := i.process(pctx, r.Key)
	info := AttemptInfo{Endpoint: r.Endpoint, EventType: r.EventType, Attempt: r.Attempts}
	defer func() {
		info.Latency = time.Since(start)
		i.observer.Attempt(info)
	}()
	switch {
	case err == nil:
		info.Result = AttemptProcessed
		return nil
	case errors.Is(err, errAlreadyProcessed):
		info.Result = AttemptAlreadyProcessed
		return err
	}
	info.Result = AttemptFailed
	if errors.Is(err, driver.ErrStatementTimeout) || errors.Is(err, context.DeadlineExceeded) {
		info.Result = AttemptTimeout
		err = fmt.Errorf("timeout after %s: %w", time.Since(start).Round(time.Millisecond), err)
	}
	info.NeedsReview = r.Attempts >= r.MaxAttempts
	delay := i.worker.RetryDelayFunc(r.Attempts)
	// Not pctx: when processing ran out of time, pctx has too, and the failure must
	// still be recorded.
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer rcancel()
	ferr := i.driver.Executor().InboxRecordFailure(rctx, &driver.InboxFailureParams{
		Key: r.Key, Error: errorText(err), Delay: delay,
	})
	level := "retry"
	if info.NeedsReview {
		level = "needs review"
	}
	i.logger.WarnContext(ctx, "hookinbox: processing failed",
		"endpoint", r.Endpoint, "event_id", r.EventID, "event_type", r.EventType,
		"attempt", r.Attempts, "next", level, "error", err.Error())
	if ferr != nil {
		// The lease still hides the receipt and the attempt is counted; it is retried
		// when the lease ends.
		i.logger.ErrorContext(ctx, "hookinbox: error recording failure", "event_id", r.EventID, "error", ferr.Error())
	}
	return err
}

// process applies the handler of a claimed receipt in one transaction. The row lock
// and the re-check of processed_at make the business update commit at most once even
// when a lease ran out and two workers hold the same receipt.
func (i *Inbox[TTx]) process(ctx context.Context, key driver.Key) error {
	tx, err := i.driver.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after commit

	if err := tx.SetStatementTimeout(ctx, i.worker.StatementTimeout); err != nil {
		return err
	}
	r, err := tx.InboxLockUnprocessed(ctx, key)
	if err != nil {
		return err
	}
	if r == nil {
		return errAlreadyProcessed
	}
	fn := i.handler(r.Endpoint, r.EventType)
	if fn == nil {
		// A receipt is stored pending only when a handler existed; one removed since
		// waits for a person rather than being dropped.
		return fmt.Errorf("no handler registered for %q on endpoint %q", r.EventType, r.Endpoint)
	}
	ev := Event{Provider: r.Provider, Endpoint: r.Endpoint, ID: r.EventID, Type: r.EventType, Payload: r.Payload, Attempt: r.Attempts}
	if err := i.callHandler(ctx, fn, tx.Native(), ev); err != nil {
		return &HandlerError{EventType: r.EventType, Err: i.driver.TranslateError(err)}
	}
	if err := tx.InboxMarkProcessed(ctx, key, string(OutcomeProcessed)); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// jitter returns d ± 20%, so that idle workers of many processes do not poll in step.
func jitter(d time.Duration) time.Duration {
	return d*8/10 + rand.N(d*4/10+1)
}
