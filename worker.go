package hookinbox

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// Run starts the workers that process the receipts of async and hybrid endpoints and
// blocks until ctx is cancelled. Each worker claims a receipt in a short committed
// transaction (counting the attempt and taking a lease), then processes it in a second
// transaction that locks the row, re-checks that it is unprocessed, applies the handler
// and marks it processed. While Run runs, an async receipt this inbox receives is
// inserted already claimed by these workers when they have room, and handed to one
// without a claim statement (see handoff.go).
//
// When ctx is cancelled, workers stop claiming and Run returns once every event in
// progress has finished or, past its lease, been abandoned; an abandoned event keeps
// its counted attempt and is claimed again when its lease ends. Receipts handed off
// and not yet taken are processed before Run returns, as claimed batches are, and so
// are those of accept batches in flight at the stop, which it waits for, up to about
// 11 s (the accept timeout and a second).
// Nothing is lost.
func (i *Inbox[TTx]) Run(ctx context.Context) error {
	endpoints := i.workerEndpoints()
	if len(endpoints) == 0 {
		<-ctx.Done()
		return nil
	}
	if i.openHandoff() {
		defer i.closeHandoff(ctx, fmt.Sprintf("%s/%d/stop", host(), os.Getpid()))
	}
	var wg sync.WaitGroup
	wg.Go(func() { i.listen(ctx) })
	for n := range i.worker.Concurrency {
		// The name each attempt of this worker is recorded under in the history.
		worker := fmt.Sprintf("%s/%d/%d", host(), os.Getpid(), n)
		wg.Go(func() { i.workLoop(ctx, endpoints, worker) })
	}
	wg.Wait()
	return nil
}

// host is the machine's name, for the workers' names.
func host() string {
	h, _ := os.Hostname()
	return h
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

func (i *Inbox[TTx]) workLoop(ctx context.Context, endpoints []string, worker string) {
	idle := time.NewTimer(0)
	defer idle.Stop()
	for ctx.Err() == nil { // first: a stop is not raced by a hand-off waiting
		select {
		case <-ctx.Done():
			return
		case <-i.wake:
		case <-idle.C:
		}
		i.busy.Add(1)
		i.drain(ctx, endpoints, worker)
		for i.busy.Add(-1) == 0 && i.pending.Load() && ctx.Err() == nil {
			// Announced while this worker was the last at work: the announcement woke
			// nobody (see announce), so look again.
			i.busy.Add(1)
			i.drain(ctx, endpoints, worker)
		}
		idle.Reset(jitter(i.worker.PollInterval))
	}
}

// drain claims and processes batches until a claim finds none (or fails, or a stop).
// Receipts handed off (handoff.go) are taken first, as a claim would take them.
func (i *Inbox[TTx]) drain(ctx context.Context, endpoints []string, worker string) {
	for ctx.Err() == nil {
		i.pending.Store(false) // the claim, or the take, sees every receipt announced before it
		// Hand-offs first, but a claim at least every poll interval (and second), so
		// that retries that came due and other processes' receipts are not held back
		// by a sustained load of hand-offs.
		claimDue := time.Since(time.Unix(0, i.lastClaim.Load())) >= max(i.worker.PollInterval, time.Second)
		if !claimDue && i.processHandedOff(ctx, worker) {
			continue
		}
		// The lease is counted from before the claim is sent: the database's own
		// lease, from its now(), ends no earlier, however late the claim's answer
		// arrives.
		claimedAt := time.Now()
		i.lastClaim.Store(claimedAt.UnixNano())
		batch, err := i.claim(ctx, endpoints)
		if skipRecheck {
			// The broken build trusts its claim wholly: it also counts the lease
			// from the claim's answer, as workers once did, so that a late answer
			// leads it to process what another worker took over (recheck_broken.go).
			claimedAt = time.Now()
		}
		if err != nil {
			if ctx.Err() == nil {
				i.logger.ErrorContext(ctx, "hookinbox: error claiming receipts", "error", err.Error())
			}
			return
		}
		if len(batch) == 0 {
			if i.handoff.waiting() {
				continue // a claim was due: now the hand-offs
			}
			return
		}
		if len(batch) == i.worker.BatchSize {
			// A full batch: more may be waiting, so let an idle worker claim the next
			// one. A short batch was all there was: waking another worker would only
			// have it claim the few rows that arrived meanwhile and commit a batch of
			// one or two.
			i.notifyWorkers()
		}
		i.processBatch(ctx, batch, claimedAt, worker)
	}
}

// claim counts an attempt on each of up to BatchSize available receipts and leases
// them, in one committed statement, so the attempts survive a worker that dies while
// processing.
//
// A stop request does not interrupt the statement: a claim cancelled in flight may
// still commit on the server, and would then hide its receipt for a whole lease while
// nobody works on it. The loop checks for a stop before claiming, and a receipt that
// was claimed is processed.
func (i *Inbox[TTx]) claim(ctx context.Context, endpoints []string) ([]*hookinboxtype.Receipt, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
	defer cancel()
	defer i.claims.Add(1)
	return i.driver.Executor().InboxClaim(ctx, &driver.InboxClaimParams{
		Endpoints:   endpoints,
		Limit:       i.worker.BatchSize,
		Lease:       i.worker.Lease,
		MaxAttempts: i.worker.MaxAttempts,
	})
}

// extendLeases gives the receipts of batch a fresh lease; false if that failed.
func (i *Inbox[TTx]) extendLeases(ctx context.Context, batch []*hookinboxtype.Receipt) bool {
	keys := make([]hookinboxtype.Key, len(batch))
	for n, r := range batch {
		keys[n] = r.Key
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	if _, err := i.driver.Executor().InboxExtendLease(rctx, keys, i.worker.Lease); err != nil {
		i.logger.ErrorContext(ctx, "hookinbox: error extending the leases of a failed batch; its receipts wait for their leases",
			"receipts", len(keys), "error", err.Error())
		return false
	}
	return true
}

// errBatchFailed stops a batch at its first failing receipt, so that the batch is
// rolled back and processed again in halves.
var errBatchFailed = errors.New("a receipt of the batch failed")

// processBatch processes claimed receipts in one transaction: one lock statement, the
// handlers, one statement that marks them processed, one commit. When any of them
// fails, the whole transaction rolls back (no handler's work survives it) and the
// batch is split in halves, each processed the same way, down to single receipts,
// each in a transaction of its own, where a failure is recorded against that receipt
// alone. A batch of 25 with one failing receipt takes about ten transactions so, not
// 26. Every receipt's attempt was counted by the claim (or the insert that leased it,
// handoff.go) either way, and each ends as
// one row of the attempt history under worker's name (a rolled-back part records
// none: its receipts' attempts end in the parts after it).
func (i *Inbox[TTx]) processBatch(ctx context.Context, batch []*hookinboxtype.Receipt, leaseStart time.Time, worker string) {
	if len(batch) == 1 {
		_ = i.processClaimedBy(ctx, batch[0], leaseStart.Add(i.worker.Lease), worker)
		return
	}
	// The claim just leased the whole batch (or the insert did, at most a quarter of a
	// lease ago: see drain). Each part's transaction may take half of
	// the lease; after a failure, before the next part, the leases of the receipts
	// still waiting are extended (they are still this worker's: each part ends half
	// a lease after the extension), so that no receipt is ever processed after its
	// lease ran out, while another worker may claim it (and, at its last attempt, put
	// it to review without its handler having run).
	parts := [][]*hookinboxtype.Receipt{batch}
	for first := true; len(parts) > 0; first = false {
		part := parts[0]
		parts = parts[1:]
		if !first {
			if ctx.Err() != nil {
				// A stop: the rest keep their counted attempts and are claimed again
				// when their leases end, as after a worker that stopped.
				return
			}
			leaseStart = time.Now()
			if !i.extendLeases(ctx, waiting(part, parts)) {
				return // their leases end on their own
			}
		}
		if len(part) == 1 {
			_ = i.processClaimedBy(ctx, part[0], leaseStart.Add(i.worker.Lease/2), worker)
			continue
		}
		if !i.processPart(ctx, part, leaseStart.Add(i.worker.Lease/2), worker) {
			mid := len(part) / 2
			parts = append([][]*hookinboxtype.Receipt{part[:mid], part[mid:]}, parts...)
		}
	}
}

// waiting is every receipt of part and of the parts after it.
func waiting(part []*hookinboxtype.Receipt, parts [][]*hookinboxtype.Receipt) []*hookinboxtype.Receipt {
	all := append([]*hookinboxtype.Receipt(nil), part...)
	for _, p := range parts {
		all = append(all, p...)
	}
	return all
}

// processPart processes receipts together (processTogether) before deadline (half
// their lease), reports each attempt to the observer, and says whether they
// committed.
func (i *Inbox[TTx]) processPart(ctx context.Context, part []*hookinboxtype.Receipt, deadline time.Time, worker string) bool {
	start := time.Now()
	pctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	defer cancel()
	pctx, span := i.startBatchAttempt(pctx, part)
	done, err := i.processTogether(pctx, part, &driver.AttemptBy{Worker: worker, StartedAt: start})
	endSpan(span, err)
	if err != nil {
		return false
	}
	latency := time.Since(start)
	for _, r := range part {
		info := AttemptInfo{Endpoint: r.Endpoint, EventType: r.EventType, Attempt: r.Attempts, Latency: latency, Result: AttemptProcessed}
		processed, locked := done[r.Key]
		switch {
		case locked && !processed:
			continue // parked: no attempt was made
		case !processed:
			info.Result = AttemptAlreadyProcessed
		}
		i.observer.Attempt(info)
	}
	return true
}

// processTogether applies the handlers of a batch in one transaction and reports which
// receipts it processed (the others were completed by another worker whose lease
// overlapped ours). It returns an error, and commits nothing, if any receipt fails.
func (i *Inbox[TTx]) processTogether(ctx context.Context, batch []*hookinboxtype.Receipt, by *driver.AttemptBy) (map[hookinboxtype.Key]bool, error) {
	tx, err := i.driver.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after commit

	if err := tx.SetStatementTimeout(ctx, i.worker.StatementTimeout); err != nil {
		return nil, err
	}
	keys := make([]hookinboxtype.Key, len(batch))
	for n, r := range batch {
		keys[n] = r.Key
	}
	locked, err := tx.InboxLockUnprocessed(ctx, keys)
	if err != nil {
		return nil, err
	}
	if skipRecheck {
		locked = unchecked(ctx, tx, batch) // the broken build (recheck_broken.go)
	}
	done := make(map[hookinboxtype.Key]bool, len(locked))
	locked, parked := i.unparked(locked)
	for _, r := range parked {
		done[r.Key] = false // no attempt made: see processPart
	}
	lockedKeys := make([]hookinboxtype.Key, 0, len(locked))
	// Receipts of a set-based handler (HandleBatch) are applied by one call per
	// registration, after the others; any failure fails the batch as a whole.
	type registration struct {
		fn  BatchHandlerFunc[TTx]
		evs []Event
	}
	var sets []*registration
	setOf := map[handlerKey]*registration{}
	for _, r := range locked {
		fn, batch, reg := i.handlerFor(r.Endpoint, r.EventType)
		if fn == nil {
			return nil, errBatchFailed
		}
		ev := Event{Provider: r.Provider, Endpoint: r.Endpoint, ID: r.EventID, Type: r.EventType, Payload: r.Payload, Attempt: r.Attempts}
		switch {
		case batch != nil:
			set := setOf[reg]
			if set == nil {
				set = &registration{fn: batch}
				setOf[reg] = set
				sets = append(sets, set)
			}
			set.evs = append(set.evs, ev)
		default:
			if err := i.callHandler(ctx, fn, tx.Native(), ev); err != nil {
				return nil, errBatchFailed
			}
		}
		done[r.Key] = true
		lockedKeys = append(lockedKeys, r.Key)
	}
	for _, set := range sets {
		if err := i.callBatchHandler(ctx, set.fn, tx.Native(), set.evs); err != nil {
			return nil, errBatchFailed
		}
	}
	if len(lockedKeys) > 0 {
		if err := tx.InboxMarkProcessed(ctx, lockedKeys, string(OutcomeProcessed), by); err != nil {
			return nil, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, err
	}
	return done, nil
}

// recordTimeout bounds the statement that records a failed attempt, and claimTimeout
// a claim.
const (
	recordTimeout = 10 * time.Second
	claimTimeout  = 10 * time.Second
)

// errParked reports that a receipt handed off at its insert was parked there: its
// endpoint was paused (driver.InboxInsertParams.Lease). It waits for the resume, or,
// resumed already, for a claim.
var errParked = errors.New("parked: its endpoint is paused")

// unparked splits locked receipts into those to process and those parked at their
// insert: parked still, or resumed since but never claimed (no attempt counted; a
// claimed or leased receipt has one), which a claim is to take.
func (i *Inbox[TTx]) unparked(locked []*hookinboxtype.Receipt) (ready, parked []*hookinboxtype.Receipt) {
	isParked := func(r *hookinboxtype.Receipt) bool { return r.AvailableAt.Equal(driver.ParkedAt) || r.Attempts == 0 }
	if i.processParked || !slices.ContainsFunc(locked, isParked) {
		return locked, nil
	}
	for _, r := range locked {
		if isParked(r) {
			parked = append(parked, r)
		} else {
			ready = append(ready, r)
		}
	}
	return ready, parked
}

// errAlreadyProcessed reports that a claimed receipt was found processed by another
// worker (its lease had run out) when this one locked it.
var errAlreadyProcessed = errors.New("already processed by another worker")

// processClaimedBy processes one claimed receipt, with the end of its lease as the
// processing deadline, and records a failure for a retry; the attempt joins the
// history under worker's name. It returns the processing error, nil on success, or
// errAlreadyProcessed.
func (i *Inbox[TTx]) processClaimedBy(ctx context.Context, r *hookinboxtype.Receipt, leaseEnd time.Time, worker string) error {
	// A stop request lets the event finish; the lease bounds how long that may take.
	pctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), leaseEnd)
	defer cancel()
	start := time.Now()
	by := &driver.AttemptBy{Worker: worker, StartedAt: start}
	pctx, span := i.startAttempt(pctx, r)
	err := i.process(pctx, r, by)
	endAttempt(span, err)
	if errors.Is(err, errParked) {
		return err // no attempt was made
	}
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
		Key: r.Key, Error: errorText(err), Delay: delay, By: by,
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
func (i *Inbox[TTx]) process(ctx context.Context, claimed *hookinboxtype.Receipt, by *driver.AttemptBy) error {
	tx, err := i.driver.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after commit

	if err := tx.SetStatementTimeout(ctx, i.worker.StatementTimeout); err != nil {
		return err
	}
	key := claimed.Key
	locked, err := tx.InboxLockUnprocessed(ctx, []hookinboxtype.Key{key})
	if err != nil {
		return err
	}
	if skipRecheck {
		locked = unchecked(ctx, tx, []*hookinboxtype.Receipt{claimed}) // the broken build (recheck_broken.go)
	}
	if len(locked) == 0 {
		return errAlreadyProcessed
	}
	if _, parked := i.unparked(locked); len(parked) > 0 {
		return errParked
	}
	r := locked[0]
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
	if err := tx.InboxMarkProcessed(ctx, []hookinboxtype.Key{key}, string(OutcomeProcessed), by); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// unchecked is the broken build's stand-in for the lock (recheck_broken.go): the
// claimed receipts, processed since or not, with the payloads a claim does not carry.
func unchecked(ctx context.Context, ex driver.Executor, claimed []*hookinboxtype.Receipt) []*hookinboxtype.Receipt {
	out := make([]*hookinboxtype.Receipt, len(claimed))
	for n, c := range claimed {
		r := *c
		if now, err := ex.InboxGet(ctx, c.Key); err == nil && now != nil {
			r.Payload = now.Payload
		}
		out[n] = &r
	}
	return out
}

// jitter returns d ± 20%, so that idle workers of many processes do not poll in step.
func jitter(d time.Duration) time.Duration {
	return d*8/10 + rand.N(d*4/10+1)
}
