package hookinbox

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// The hand-off: while this process's workers run (Run) and have room, the receipt of
// an async endpoint is inserted already leased to them (driver.InboxInsertParams.Lease:
// its first attempt counted, hidden from claims for a lease, as a claim leaves a
// receipt) and, once its insert committed, given to a worker in memory. The worker
// processes it as it would a claimed one (lock, re-check, handler, mark, in one
// transaction), so nothing about processing changes but the claim statement, which
// the receipt never needs: the claim was about 28 % of PostgreSQL's statement time
// on the async path (docs/BENCHMARKS.md).
//
// Every guarantee of a claim holds, because the insert is one: the attempt is counted
// before the handler runs (a poison pill still reaches review), and a process that
// dies with receipts in hand leaves them to be claimed when their leases end. A
// receipt of an endpoint paused at the insert is parked there instead, and the
// worker's lock finds it parked and leaves it to the resume. When Run stops, the
// receipts handed off that no worker took get their leases ended at once, for any
// process's workers to claim.

// handoff is the inbox's channel to its workers. room is how many more receipts may be
// leased to them: the channel's free capacity, reserved before the insert, so that a
// committed receipt never waits for a place; it is negative while no workers run.
type handoff struct {
	room atomic.Int64
	mu   sync.RWMutex // held for reading to give, for writing to open and close
	ch   chan handedOff
}

// handedOff is a receipt leased at its insert, and a time no later than the start of
// its lease.
type handedOff struct {
	r  *hookinboxtype.Receipt
	at time.Time
}

const handoffClosed = math.MinInt64 / 2

// openHandoff makes room for a batch per worker and returns the channel the workers
// take from.
func (i *Inbox[TTx]) openHandoff() <-chan handedOff {
	room := i.worker.Concurrency * i.worker.BatchSize
	h := &i.handoff
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ch = make(chan handedOff, room)
	h.room.Store(int64(room))
	return h.ch
}

// closeHandoff ends the hand-off once the workers stopped: receipts given later are
// released by their receivers (give), and those still in ch are released here.
func (i *Inbox[TTx]) closeHandoff(ctx context.Context, ch <-chan handedOff) {
	h := &i.handoff
	h.mu.Lock()
	h.room.Store(handoffClosed)
	h.ch = nil
	h.mu.Unlock()
	var left []*hookinboxtype.Receipt
	for len(ch) > 0 {
		left = append(left, (<-ch).r)
	}
	i.release(ctx, left)
}

// reserve takes room for one receipt, if the workers have any.
func (h *handoff) reserve() bool {
	for {
		n := h.room.Load()
		if n <= 0 {
			return false
		}
		if h.room.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// give hands a committed leased receipt to the workers; false once they stopped.
func (h *handoff) give(r handedOff) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.ch == nil {
		return false
	}
	h.ch <- r // never blocks: the room was reserved
	return true
}

// unreserve returns the room of a receipt that was not handed off (closed, the room
// stays far below zero).
func (h *handoff) unreserve() { h.room.Add(1) }

// release ends the leases of receipts handed off that no worker will process, so
// that any process's workers claim them at once. Their first attempts stay counted,
// as a claimed receipt's do when its worker stops.
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

// acceptAsync stores the receipt of an async endpoint and, when this process's
// workers have room, leases it to them and hands it over (see handoff).
func (i *Inbox[TTx]) acceptAsync(ctx context.Context, ev Event) (Outcome, error) {
	p := i.withTraceParent(ctx, i.receiptParams(ev, false, ""))
	leased := i.handoff.reserve()
	var at time.Time
	if leased {
		p.Lease = i.worker.Lease
		at = time.Now() // the database's lease, from its now(), starts no earlier
	}
	inserted, err := i.accept(ctx, p)
	switch {
	case err != nil || !inserted:
		if leased {
			i.handoff.unreserve()
		}
		if err != nil {
			return "", err
		}
		return OutcomeDuplicate, nil
	case !leased:
		i.announce()
		return OutcomeAccepted, nil
	}
	r := &hookinboxtype.Receipt{Key: p.Key, EventType: p.EventType, State: hookinboxtype.StatePending,
		Attempts: 1, MaxAttempts: p.MaxAttempts}
	if !i.handoff.give(handedOff{r: r, at: at}) {
		i.release(ctx, []*hookinboxtype.Receipt{r})
	}
	return OutcomeAccepted, nil
}

// processHandedOff processes h and the receipts handed off after it, up to a batch,
// as a claimed batch.
func (i *Inbox[TTx]) processHandedOff(ctx context.Context, h handedOff, ch <-chan handedOff, worker string) {
	batch := []*hookinboxtype.Receipt{h.r}
	start := h.at
more:
	for len(batch) < i.worker.BatchSize {
		select {
		case next := <-ch:
			batch = append(batch, next.r)
			if next.at.Before(start) {
				start = next.at
			}
		default:
			break more
		}
	}
	i.handoff.room.Add(int64(len(batch)))
	i.processBatch(ctx, batch, start, worker)
}
