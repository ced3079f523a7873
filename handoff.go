package hookinbox

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// The hand-off: while this process's workers run (Run) and have room, the receipt of
// an async endpoint is inserted already leased to them (driver.InboxInsertParams.Lease:
// its first attempt counted, hidden from claims for a lease, as a claim leaves a
// receipt) and, once its insert committed, given to a worker in memory with the other
// receipts its batch leased. The worker processes them as it would a claimed batch
// (lock, re-check, handlers, mark, in one transaction), so nothing about processing
// changes but the claim statement, which the receipts never need: the claim was about 28 % of PostgreSQL's statement time
// on the async path (docs/BENCHMARKS.md).
//
// Every guarantee of a claim holds, because the insert is one: the attempt is counted
// before the handler runs (a poison pill still reaches review), and a process that
// dies with receipts in hand leaves them to be claimed when their leases end. A
// receipt of an endpoint paused at the insert is parked there instead, and the
// worker's lock finds it parked (or, resumed since, without an attempt) and leaves it
// to the resume and the claims. When Run stops, the receipts handed off that no
// worker took are processed before it returns, as claimed batches are.

// handoff is what the inbox's receivers leased to its workers, waiting for them as
// rows wait for a claim: a worker takes up to a batch of it where it would claim, and
// a batch handed off wakes the workers as an announcement does (only when none is at
// work: the one at work takes what arrived meanwhile, as one batch). room is how many
// more receipts may be leased to them, reserved before each insert; it is zero or
// negative while no workers run.
type handoff struct {
	room atomic.Int64
	mu   sync.Mutex
	open bool
	q    []handedOff
	n    int // receipts in q
	// taken counts the receipts workers took from the hand-off.
	taken atomic.Int64
	// inflight counts the receipts reserved whose batch has not settled (handed off,
	// or handed back); settled (settledCh) has a token when it fell to zero.
	inflight    atomic.Int64
	settledOnce sync.Once
	settled     chan struct{}
}

// handedOff is the receipts one batch of the accept path leased, and a time no later
// than the start of their leases.
type handedOff struct {
	rs []*hookinboxtype.Receipt
	at time.Time
}

const handoffClosed = math.MinInt64 / 2

// openHandoff makes room for a batch per worker, and says whether this Run manages
// the hand-off (false while another Run of the inbox does).
func (i *Inbox[TTx]) openHandoff() bool {
	h := &i.handoff
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.open {
		return false
	}
	h.open, h.q, h.n = true, nil, 0
	// Less what an earlier Run's stop left in flight (its wait ran out): those
	// batches hand their receipts to this Run, or their room back, when they settle.
	h.room.Store(int64(i.worker.Concurrency*i.worker.BatchSize) - h.inflight.Load())
	return true
}

// closeHandoff ends the hand-off once the workers stopped, and processes what waited
// for them, as the workers finish the batches they claimed: a hand-off is a claimed
// batch, its attempt counted. It first takes no more reservations and waits for the
// batches in flight to settle (up to acceptTimeout and a second), so that their
// receipts are processed too: a batch that commits after the hand-off closed is
// released by its flusher (handOff) with its attempt counted and unused, which at an
// attempt limit of 1 would send a receipt to review unprocessed. (A Run started
// meanwhile, as any Run while another runs, leaves the hand-off to this one and only
// claims.)
func (i *Inbox[TTx]) closeHandoff(ctx context.Context, worker string) {
	h := &i.handoff
	h.room.Store(handoffClosed)
	if !i.stopWithoutWaiting {
		h.awaitSettled(acceptTimeout + time.Second)
	}
	h.mu.Lock()
	h.open = false
	if i.abandonHandoffs {
		h.q, h.n = nil, 0 // the stop test's broken variant
	}
	h.mu.Unlock()
	for i.processHandedOff(context.WithoutCancel(ctx), worker) {
	}
}

// reserve takes room for one receipt, if the workers have any. A receipt reserved is
// in flight until its batch settles it.
func (h *handoff) reserve() bool {
	if h.room.Load() <= 0 {
		return false
	}
	// Counted in flight before the room is taken: once closeHandoff closed the room,
	// every reservation that succeeded is already counted.
	h.inflight.Add(1)
	for {
		n := h.room.Load()
		if n <= 0 {
			h.settle(1)
			return false
		}
		if h.room.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// unreserve returns the room of n receipts that were not handed off (closed, the
// room stays far below zero).
func (h *handoff) unreserve(n int) { h.room.Add(int64(n)) }

// settle ends n reservations' flight: their batch handed them off or back.
func (h *handoff) settle(n int) {
	if h.inflight.Add(int64(-n)) == 0 {
		select {
		case h.settledCh() <- struct{}{}:
		default:
		}
	}
}

func (h *handoff) settledCh() chan struct{} {
	h.settledOnce.Do(func() { h.settled = make(chan struct{}, 1) })
	return h.settled
}

// awaitSettled waits up to d for every reservation to settle.
func (h *handoff) awaitSettled(d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for h.inflight.Load() > 0 {
		select {
		case <-h.settledCh():
		case <-timer.C:
			return
		}
	}
}

// give queues committed leased receipts for the workers; false once they stopped.
func (h *handoff) give(u handedOff) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.open {
		return false
	}
	h.q = append(h.q, u)
	h.n += len(u.rs)
	return true
}

// take returns whole hand-offs, oldest first, up to about max receipts (at least one
// hand-off when any waits), and a time no later than the start of their leases; the
// room they held is free again.
func (h *handoff) take(max int) ([]*hookinboxtype.Receipt, time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var (
		batch []*hookinboxtype.Receipt
		at    time.Time
		k     int
	)
	for ; k < len(h.q) && (k == 0 || len(batch)+len(h.q[k].rs) <= max); k++ {
		batch = append(batch, h.q[k].rs...)
		if k == 0 || h.q[k].at.Before(at) {
			at = h.q[k].at
		}
	}
	h.q = h.q[k:]
	h.n -= len(batch)
	h.taken.Add(int64(len(batch)))
	h.room.Add(int64(len(batch)))
	return batch, at
}

// waiting says whether hand-offs wait.
func (h *handoff) waiting() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n > 0
}

// handOff queues for the workers the receipts a committed batch of the accept path
// leased (one hand-off for the batch), returns the room of those it leased that were
// duplicates, and wakes the workers as an announcement does. Called by the accept
// path's flusher.
func (i *Inbox[TTx]) handOff(batch []*driver.InboxInsertParams, inserted []bool, at time.Time) {
	var rs []*hookinboxtype.Receipt
	duplicates, leased := 0, 0
	for n, p := range batch {
		if p.Lease > 0 {
			leased++
		}
		switch {
		case p.Lease <= 0:
		case !inserted[n]:
			duplicates++
		default:
			r := &hookinboxtype.Receipt{Key: p.Key, EventType: p.EventType, State: hookinboxtype.StatePending,
				Attempts: 1, MaxAttempts: p.MaxAttempts, TraceParent: p.TraceParent}
			if i.untracedHandoffs {
				r.TraceParent = "" // the trace test's broken variant
			}
			rs = append(rs, r)
		}
	}
	i.handoff.unreserve(duplicates)
	defer i.handoff.settle(leased) // after they are queued, or released
	if len(rs) == 0 {
		return
	}
	// In batches a worker takes whole: BatchSize caps a hand-off's transaction as it
	// caps a claim's.
	for len(rs) > 0 {
		n := min(len(rs), max(i.worker.BatchSize, 1))
		if !i.handoff.give(handedOff{rs: rs[:n], at: at}) {
			i.release(context.Background(), rs)
			return
		}
		rs = rs[n:]
	}
	i.pending.Store(true)
	if i.busy.Load() == 0 {
		i.notifyWorkers()
	}
}

// handBack returns the room of the receipts a failed batch of the accept path leased:
// nothing of theirs was committed to hand off. Called by the accept path's flusher
// once the failure is final, whether or not their receivers still wait: a receiver
// whose context ended cannot know how its batch turned out, so room freed by the
// receivers would leak with each batch that failed after they left, until a long
// outage with clients hanging up left no room, and no hand-off, until the next Run.
func (i *Inbox[TTx]) handBack(batch []*driver.InboxInsertParams) {
	n := 0
	for _, p := range batch {
		if p.Lease > 0 {
			n++
		}
	}
	if n > 0 && !i.roomByReceivers {
		i.handoff.unreserve(n)
	}
	i.handoff.settle(n)
}

// release ends the leases of receipts handed off that no worker will process (their
// batch committed after the workers stopped), so that any process's workers claim
// them at once. Their first attempts stay counted, unused: the one case where the
// hand-off costs an attempt that a claim would not have.
func (i *Inbox[TTx]) release(ctx context.Context, rs []*hookinboxtype.Receipt) {
	if len(rs) == 0 {
		return
	}
	keys := make([]hookinboxtype.Key, len(rs))
	for n, r := range rs {
		keys[n] = r.Key
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	if _, err := i.driver.Executor().InboxExtendLease(rctx, keys, 0); err != nil {
		i.logger.ErrorContext(ctx, "hookinbox: error releasing receipts handed to stopped workers; they wait for their leases",
			"receipts", len(keys), "error", err.Error())
	}
}

// acceptAsync stores the receipt of an async endpoint, leased to this process's
// workers when they have room (see handoff): the accept path's flusher then hands it
// over with its batch.
func (i *Inbox[TTx]) acceptAsync(ctx context.Context, ev Event) (Outcome, error) {
	p := i.withTraceParent(ctx, i.receiptParams(ev, false, ""))
	leased := i.handoff.reserve()
	if leased {
		p.Lease = i.worker.Lease
	}
	inserted, err := i.accept(ctx, p)
	switch {
	case err != nil:
		switch {
		case !leased:
		case errors.Is(err, ErrOverloaded):
			i.handoff.unreserve(1) // never queued: no batch will hand it back
			i.handoff.settle(1)
		case i.roomByReceivers && ctx.Err() == nil:
			i.handoff.unreserve(1) // the broken variant: leaks when the receiver left first
		}
		// Otherwise its batch runs on and returns its room, by handOff or
		// handBack, even when the receiver's context ended first.
		return "", err
	case !inserted:
		return OutcomeDuplicate, nil // its room was returned by handOff
	case !leased:
		i.announce()
	}
	return OutcomeAccepted, nil
}

// processHandedOff takes up to a batch of what waits and processes it as a claimed
// batch; false if nothing waited.
func (i *Inbox[TTx]) processHandedOff(ctx context.Context, worker string) bool {
	batch, leasedAt := i.handoff.take(i.worker.BatchSize)
	if len(batch) == 0 {
		return false
	}
	if i.handoff.waiting() {
		i.notifyWorkers() // as after a full claim: more is waiting
	}
	if time.Since(leasedAt) > i.worker.Lease/8 && !i.staleHandoffs {
		// The lease began at the insert, and these waited for a worker (slow
		// handlers): a fresh lease first, as a claim now would take one, so that
		// their parts keep about the deadlines a claimed batch gets.
		extendedAt := time.Now()
		if !i.extendLeases(ctx, batch) {
			return true // their leases end on their own, and claims take them
		}
		leasedAt = extendedAt
	}
	i.processBatch(ctx, batch, leasedAt, worker)
	return true
}
