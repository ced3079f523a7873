package outbox

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// Dispatcher delivers outbox messages. It is safe to run several, in one process or
// many, on one database.
//
// A running dispatcher claims messages in batches, one statement for up to BatchSize
// of each destination that has free delivery slots; delivers them concurrently, up to
// Concurrency per destination, with no transaction open; and marks the delivered ones
// published in batches too: while one mark statement runs, the results of the next
// deliveries gather for the one after it, as the inbox's group commit does for
// receipts. Every claim gives each message a fencing token larger than any before,
// every mark and failure is fenced by it, and a delivery starts only when it can end
// before its claim's lease does.
type Dispatcher struct {
	ex      driver.Executor
	config  Config
	dests   []*destination
	byValue map[string]*destination // by the destination column's value
	wake    chan struct{}
	tracer  trace.Tracer // nil: tracing off

	// freed is signalled when a delivery ends while the claim loop waits for a free
	// slot (starved is set), so that it claims again at once rather than at its next
	// poll; at low load a delivery's end costs no claim.
	freed   chan struct{}
	starved atomic.Bool

	// deliverLate, set only by tests (export_test.go), starts a delivery even after
	// the moment it could no longer end before its claim's lease: the broken variant
	// that the fencing test catches (the sink sees a message's tokens go down).
	deliverLate bool
	// ignoreRetryAfter, set only by tests, treats a RetryAfterError as any failure:
	// the broken variant of the Retry-After test.
	ignoreRetryAfter bool
}

// NewDispatcher returns a dispatcher on the executor of a driver (Driver.Executor()).
func NewDispatcher(ex driver.Executor, config *Config) (*Dispatcher, error) {
	if config == nil {
		config = &Config{}
	}
	c := config.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	d := &Dispatcher{
		ex: ex, config: c, byValue: map[string]*destination{},
		wake: make(chan struct{}, 1), freed: make(chan struct{}, 1),
	}
	if c.TracerProvider != nil {
		d.tracer = c.TracerProvider.Tracer(TracerName)
	}
	names := make([]string, 0, len(c.Sinks))
	for name := range c.Sinks {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		dst := newDestination(name, c.Sinks[name], c.SinkOptions[name], c.Concurrency)
		d.dests = append(d.dests, dst)
		d.byValue[name] = dst
	}
	if c.DefaultSink != "" && c.Sinks[""] == nil {
		// Messages without a destination share the default sink's slots and rate.
		d.byValue[""] = d.byValue[c.DefaultSink]
		d.byValue[c.DefaultSink].values = append(d.byValue[c.DefaultSink].values, "")
	}
	return d, nil
}

// Notify tells the dispatcher that messages were committed, so an idle one looks now
// rather than at its next poll. It never blocks.
func (d *Dispatcher) Notify() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run delivers messages until ctx is cancelled, then stops claiming and returns once
// the deliveries in progress have ended and their results are recorded: at most
// DeliveryTimeout + RecordTimeout after ctx is cancelled, whatever the database and
// the receivers do (a Sink must return when its context ends, as HTTPSink and
// NATSSink do).
//
// A claim in flight when ctx is cancelled is not interrupted by the stop (cancelled
// mid-flight, it could still commit on the server and hide its messages for a lease
// with nobody delivering them), and what it claimed is delivered. It shares the same
// allowance, though: whatever is still running when it has
// passed is abandoned. An abandoned message, like one whose result was not recorded,
// keeps its counted attempt and is delivered again, with the same idempotency key,
// when its lease ends.
func (d *Dispatcher) Run(ctx context.Context) error {
	if len(d.config.Sinks) == 0 {
		return errors.New("outbox: no sinks configured")
	}
	// work carries ctx's values but is cancelled only when the allowance after a stop
	// has passed: claims, deliveries and records run under it, each with its own
	// bound, so a stop lets them finish.
	work, abandon := context.WithCancel(context.WithoutCancel(ctx))
	defer abandon()
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		select {
		case <-finished:
			return
		case <-ctx.Done():
		}
		allowance := d.config.DeliveryTimeout + d.config.RecordTimeout
		t := time.NewTimer(allowance)
		defer t.Stop()
		select {
		case <-finished:
		case <-t.C:
			d.config.Logger.WarnContext(work, "hookinbox: outbox: stopping took longer than the delivery and record timeouts; abandoning what is in flight (it is delivered again when its lease ends)",
				"allowance", allowance.String())
			abandon()
		}
	}()

	r := d.newRound(work)
	idle := time.NewTimer(0)
	defer idle.Stop()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-d.wake:
		case <-d.freed:
		case <-idle.C:
		}
		for ctx.Err() == nil {
			more, err := r.claimAndStart()
			if err != nil {
				if ctx.Err() == nil {
					d.config.Logger.ErrorContext(ctx, "hookinbox: outbox: error claiming", "error", err.Error())
				}
				break
			}
			if !more {
				break
			}
		}
		idle.Reset(d.nextPoll(time.Now()))
	}
	r.finish()
	return nil
}

// nextPoll is how long an idle dispatcher waits before it looks again unwoken: the
// jittered poll interval, or less when a paused destination resumes before that.
func (d *Dispatcher) nextPoll(now time.Time) time.Duration {
	p := d.config.PollInterval
	wait := p*8/10 + rand.N(p*4/10+1)
	for _, dst := range d.dests {
		if at := dst.resumesAt(now); !at.IsZero() {
			wait = min(wait, at.Sub(now))
		}
	}
	return max(wait, time.Millisecond)
}

// DispatchOnce claims one batch (up to BatchSize messages of each destination),
// delivers it and records the results, and returns how many it claimed. Run does this
// in a loop, without waiting for one batch to end before claiming the next; a
// cron-like caller may call it directly.
//
// Cancelling ctx does not interrupt it (a claimed message is delivered and its result
// recorded), but every step is bounded: the claim by 10 seconds, each delivery by
// DeliveryTimeout, recording the results by RecordTimeout.
func (d *Dispatcher) DispatchOnce(ctx context.Context) (int, error) {
	work := context.WithoutCancel(ctx)
	r := d.newRound(work)
	n, err := r.claimOnce()
	r.finish()
	return n, err
}

// round is the dispatching of one Run (or one DispatchOnce): the deliveries it started
// and the completer that marks them.
type round struct {
	d          *Dispatcher
	work       context.Context
	deliveries sync.WaitGroup
	marks      *completer
}

func (d *Dispatcher) newRound(work context.Context) *round {
	return &round{d: d, work: work, marks: d.startCompleter(work)}
}

// finish waits for the deliveries started, then for their marks.
func (r *round) finish() {
	r.deliveries.Wait()
	r.marks.close()
}

// claimAndStart claims a batch and starts its deliveries. It reports whether more may
// be waiting: the claim was full. When no destination had a free slot it reports
// false and marks the dispatcher starved, so that the end of a delivery wakes it.
func (r *round) claimAndStart() (bool, error) {
	claimed, requested, err := r.claim()
	return requested > 0 && claimed == requested, err
}

// claimOnce is claimAndStart for DispatchOnce: it returns how many it claimed.
func (r *round) claimOnce() (int, error) {
	claimed, _, err := r.claim()
	return claimed, err
}

// claimParams asks for as many messages of each destination as it has free slots,
// up to BatchSize, and returns how many in all.
func (d *Dispatcher) claimParams(now time.Time) (p *driver.OutboxClaimParams, requested int) {
	p = &driver.OutboxClaimParams{Lease: d.config.Lease, MaxAttempts: d.config.MaxAttempts}
	for _, dst := range d.dests {
		free := min(dst.free(now), d.config.BatchSize)
		if free < dst.limit && free < d.config.BatchSize {
			continue // too few to be worth a claim: wait for more deliveries to end
		}
		for _, v := range dst.values {
			p.Destinations = append(p.Destinations, v)
			p.Limits = append(p.Limits, free)
			requested += free
			if dst.ordered {
				p.Ordered = append(p.Ordered, v)
			}
		}
	}
	return p, requested
}

func (r *round) claim() (claimed, requested int, err error) {
	d := r.d
	p, requested := d.claimParams(time.Now())
	if requested == 0 {
		d.starved.Store(true)
		return 0, 0, nil
	}
	d.starved.Store(false)
	// The lease is counted from before the statement is sent: the database's own
	// lease, from its now(), ends no earlier.
	leaseEnds := time.Now().Add(d.config.Lease)
	msgs, err := d.claimMessages(r.work, p)
	if err != nil {
		return 0, requested, err
	}
	for _, m := range msgs {
		dst := d.byValue[m.Destination]
		dst.take()
		r.deliveries.Go(func() {
			defer d.released(dst)
			r.deliverClaimed(dst, m, leaseEnds)
		})
	}
	return len(msgs), requested, nil
}

// released ends a delivery's hold on its destination, and wakes a claim loop that
// waits for a free slot.
func (d *Dispatcher) released(dst *destination) {
	dst.done()
	if d.starved.Load() && dst.refill() {
		select {
		case d.freed <- struct{}{}:
		default:
		}
	}
}

// claimMessages leases messages in their own committed statement: no transaction is
// held open while the sinks are called. A stop request does not interrupt the
// statement (ctx is not cancelled by one): a claim cancelled in flight may still
// commit, and would hide its messages for a whole lease with nobody delivering them.
// claimTimeout bounds the statement.
func (d *Dispatcher) claimMessages(ctx context.Context, p *driver.OutboxClaimParams) ([]*hookinboxtype.OutboxMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, claimTimeout)
	defer cancel()
	return d.ex.OutboxClaim(ctx, p)
}

// deliverClaimed delivers one claimed message when its destination has a free slot
// and its rate allows, and hands the result on: a delivery to the completer, a
// failure recorded at once. A message whose turn comes too late to end before its
// lease is not delivered: another dispatcher may claim it by then, and the sink
// would see its older fencing token after the newer one. It keeps its counted
// attempt and is claimed again when its lease ends.
func (r *round) deliverClaimed(dst *destination, m *hookinboxtype.OutboxMessage, leaseEnds time.Time) {
	d := r.d
	start := time.Now()
	latest := leaseEnds.Add(-d.config.DeliveryTimeout) // the last moment a delivery may start
	select {
	case dst.slots <- struct{}{}:
		defer func() { <-dst.slots }()
	case <-r.work.Done():
		return // abandoned: left to its lease
	case <-time.After(time.Until(latest)):
		d.tooLate(dst, m)
		return
	}
	if until := dst.resumesAt(time.Now()); !until.IsZero() && !d.ignoreRetryAfter {
		// The sink asked for a pause (Retry-After) while this message waited for its
		// turn: wait it out, or give the message back for after it.
		if until.After(latest) {
			d.recordFailure(r.work, dst, m, &RetryAfterError{Err: errors.New("not sent: the sink asked to be left alone"), After: time.Until(until)})
			return
		}
		select {
		case <-time.After(time.Until(until)):
		case <-r.work.Done():
			return
		}
	}
	if dst.limiter != nil {
		waitUntil := latest
		if d.deliverLate {
			waitUntil = leaseEnds.Add(time.Hour)
		}
		wctx, cancel := context.WithDeadline(r.work, waitUntil)
		err := dst.limiter.Wait(wctx)
		cancel()
		if err != nil {
			if r.work.Err() == nil {
				d.tooLate(dst, m)
			}
			return
		}
	}
	if !d.deliverLate && time.Now().After(latest) {
		d.tooLate(dst, m)
		return
	}
	deadline := time.Now().Add(d.config.DeliveryTimeout)
	if deadline.After(leaseEnds) && !d.deliverLate {
		deadline = leaseEnds
	}
	err := d.deliver(r.work, dst, m, deadline)
	if err == nil {
		r.marks.add(delivered{m: m, sink: dst.sinkName, start: start})
		return
	}
	d.recordFailure(r.work, dst, m, err)
	if d.config.ObserveFunc != nil {
		d.config.ObserveFunc(dst.sinkName, "failed", time.Since(start))
	}
}

// tooLate logs a claimed message left to its lease because its delivery could not
// start in time.
func (d *Dispatcher) tooLate(dst *destination, m *hookinboxtype.OutboxMessage) {
	d.config.Logger.Warn("hookinbox: outbox: a claimed message waited too long for its sink to start before its lease ends; it is delivered again when the lease ends",
		"outbox_id", m.ID, "sink", dst.sinkName, "fencing_token", m.FencingToken)
}
