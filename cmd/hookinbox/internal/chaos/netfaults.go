package chaos

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// netFaults injects a scenario's network faults through its proxies. Each kind's
// occurrences alternate between the database links (one per serve process, drawn at
// random) and the sink link, so that both see every kind asked for twice or more.
type netFaults struct {
	db       []*Proxy // every process's link to PostgreSQL
	receive  []*Proxy // those of the processes that receive: where COMMIT cuts go
	dispatch []*Proxy // those of the processes that dispatch: where late results go
	sink     *Proxy

	mu     sync.Mutex
	counts map[string]int
}

func (n *netFaults) count(fig string, k int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.counts == nil {
		n.counts = map[string]int{}
	}
	n.counts[fig] += k
}

// link returns the i-th occurrence's link, and whether it is a database link.
func (n *netFaults) link(i int, r *rand.Rand) (*Proxy, bool) {
	if i%2 == 1 && n.sink != nil {
		return n.sink, false
	}
	return n.db[r.IntN(len(n.db))], true
}

func pick(db bool, dbFig, sinkFig string) string {
	if db {
		return dbFig
	}
	return sinkFig
}

// latency adds 50 to 400 ms to every chunk of a link, both ways, for one to three
// seconds at each moment.
func (n *netFaults) latency(ctx context.Context, at []time.Duration, r *rand.Rand) {
	atEach(ctx, at, func(i int) {
		p, db := n.link(i, r)
		p.SetLatency(50*time.Millisecond + time.Duration(r.Int64N(int64(350*time.Millisecond))))
		n.count(pick(db, FigNetLatencyDB, FigNetLatencySink), 1)
		sleepOrDone(ctx, time.Second+time.Duration(r.Int64N(int64(2*time.Second))))
		p.SetLatency(0)
	})
}

// blackholes hold a link's bytes for d, longer than every lease, then let them
// through in order. On a database link every other one holds only the answers:
// PostgreSQL executes what it receives (a claim, a lock, a mark) and the process
// hears of it past the lease, when another may have taken the work over; the others
// hold both ways, so that what the process sent (a mark, a COMMIT) arrives late.
func (n *netFaults) blackholes(ctx context.Context, at []time.Duration, d time.Duration, r *rand.Rand) {
	atEach(ctx, at, func(i int) {
		p, db := n.link(i, r)
		p.Hold(db && (i/2)%2 == 0)
		n.count(pick(db, FigNetHoldDB, FigNetHoldSink), 1)
		sleepOrDone(ctx, d)
		p.Release()
	})
}

// resets reset one to three connections of a link at each moment, wherever they
// are: in a request, in an answer, idle in a pool. A sink moment that found no
// connection to reset (a mode whose dispatcher delivers little, its process being
// restarted) passes the sink on to the next moment, so that a reset asked for on
// the sink happens: a sync run once reported none in all four of its sink moments.
func (n *netFaults) resets(ctx context.Context, at []time.Duration, r *rand.Rand) {
	sinkOwed := false
	atEach(ctx, at, func(i int) {
		p, db := n.link(i, r)
		if sinkOwed {
			p, db = n.sink, false
		}
		done := p.Reset(1+r.IntN(3), r)
		if !db {
			sinkOwed = done == 0
		}
		n.count(pick(db, FigNetResetDB, FigNetResetSink), done)
	})
}

// cuts arm, at each moment, a COMMIT cut on a receiving process's database link:
// every other one of a transaction that wrote a receipt, the others of any
// transaction that wrote (a claim, a worker's processing, a mark).
func (n *netFaults) cuts(ctx context.Context, at []time.Duration, r *rand.Rand) {
	atEach(ctx, at, func(i int) { n.receive[r.IntN(len(n.receive))].ArmCut(i%2 == 0) })
}

// lateClaims arm, at each moment, a late claim answer on a database link drawn at
// random: the next claim there that takes work is heard of past the lease.
func (n *netFaults) lateClaims(ctx context.Context, at []time.Duration, r *rand.Rand) {
	atEach(ctx, at, func(int) { n.db[r.IntN(len(n.db))].ArmLateClaim() })
}

// lateResults arm, at each moment, a late result on a dispatching process's
// database link: the next statement there that records a delivery's result reaches
// PostgreSQL past the lease.
func (n *netFaults) lateResults(ctx context.Context, at []time.Duration, r *rand.Rand) {
	atEach(ctx, at, func(int) { n.dispatch[r.IntN(len(n.dispatch))].ArmLateResult() })
}

// sleepOrDone waits d, or less when ctx ends.
func sleepOrDone(ctx context.Context, d time.Duration) {
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}
