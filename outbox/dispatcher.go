package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// Config configures a Dispatcher.
type Config struct {
	// Sinks deliver messages by destination name. The dispatcher claims only messages
	// whose destination it has a sink for, so dispatchers of different services can
	// share one outbox. Run requires at least one; the operator functions need none.
	Sinks map[string]Sink

	// DefaultSink names the sink of messages with no destination. Empty means such
	// messages are not claimed by this dispatcher (they wait for one that has a
	// default); a lone sink is never picked implicitly, since it would receive other
	// handlers' messages.
	DefaultSink string

	// Concurrency is the number of messages delivered at once by this dispatcher.
	//
	// Defaults to 4.
	Concurrency int

	// Lease is how long a claimed message is hidden from other dispatchers. A
	// dispatcher that outlives its lease loses the message to the next claim, and its
	// late result is ignored.
	//
	// Defaults to 1 minute.
	Lease time.Duration

	// DeliveryTimeout bounds one delivery. It must be shorter than Lease.
	//
	// Defaults to 10 seconds.
	DeliveryTimeout time.Duration

	// RecordTimeout bounds each statement that records a delivery's result: marking
	// the message published, or recording the failure. A result is recorded even
	// after a stop request (the delivery was made), so this bound is what keeps a
	// database that stopped answering (a lock held, a partition) from holding Run. A
	// result not recorded in time is logged and left to the lease: the message is
	// delivered again when its lease ends, with the same idempotency key.
	//
	// Run returns at most DeliveryTimeout + RecordTimeout after its context is
	// cancelled.
	//
	// Defaults to 10 seconds.
	RecordTimeout time.Duration

	// MaxAttempts is the number of deliveries after which a message is no longer
	// claimed and needs review.
	//
	// Defaults to 20.
	MaxAttempts int

	// PollInterval is how often an idle dispatcher looks for messages.
	//
	// Defaults to 1 second.
	PollInterval time.Duration

	// RetryDelayFunc returns the wait after the given failed attempt.
	//
	// Defaults to a jittered exponential delay capped at 10 minutes.
	RetryDelayFunc func(attempt int) time.Duration

	// Logger receives one line per failed delivery and per lost lease. Payloads are
	// never logged.
	//
	// Defaults to slog.Default().
	Logger *slog.Logger

	// ObserveFunc, when set, is called after every delivery attempt with the sink's
	// name and the result ("delivered", "failed", "stale"), e.g. for metrics.
	ObserveFunc func(sink, result string, latency time.Duration)

	// TracerProvider receives a client span per delivery, in the trace of the handler
	// that wrote the message; the sinks send its W3C traceparent downstream (an HTTP
	// header, a NATS message header). Spans name the message and its source event,
	// never the payload.
	//
	// Defaults to none: no span is made, at no cost.
	TracerProvider trace.TracerProvider
}

func (c Config) withDefaults() Config {
	if c.Concurrency == 0 {
		c.Concurrency = 4
	}
	if c.Lease == 0 {
		c.Lease = time.Minute
	}
	if c.DeliveryTimeout == 0 {
		c.DeliveryTimeout = min(10*time.Second, c.Lease/2)
	}
	if c.RecordTimeout == 0 {
		c.RecordTimeout = defaultRecordTimeout
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 20
	}
	if c.PollInterval == 0 {
		c.PollInterval = time.Second
	}
	if c.RetryDelayFunc == nil {
		c.RetryDelayFunc = defaultRetryDelay
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// WithDefaults returns a copy of c with zero values replaced by defaults, as
// NewDispatcher applies them.
func (c Config) WithDefaults() Config { return c.withDefaults() }

func (c Config) validate() error {
	switch {
	case c.DefaultSink != "" && c.Sinks[c.DefaultSink] == nil:
		return fmt.Errorf("outbox: default sink %q is not configured", c.DefaultSink)
	case c.Concurrency < 1, c.MaxAttempts < 1, c.PollInterval <= 0:
		return errors.New("outbox: concurrency, max attempts and poll interval must be positive")
	case c.DeliveryTimeout <= 0 || c.DeliveryTimeout >= c.Lease:
		return fmt.Errorf("outbox: delivery timeout (%s) must be positive and shorter than the lease (%s)", c.DeliveryTimeout, c.Lease)
	case c.RecordTimeout < 0:
		return fmt.Errorf("outbox: record timeout (%s) must be positive", c.RecordTimeout)
	}
	return nil
}

// defaultRetryDelay waits about 2^attempt seconds, capped at 10 minutes, jittered in its
// upper half.
func defaultRetryDelay(attempt int) time.Duration {
	const maxDelay = 10 * time.Minute
	d := maxDelay
	if attempt < 10 {
		d = min(maxDelay, time.Duration(1<<max(attempt, 0))*time.Second)
	}
	return d/2 + rand.N(d/2+1)
}

// claimTimeout bounds one claim statement; defaultRecordTimeout is the default of
// Config.RecordTimeout.
const (
	claimTimeout         = 10 * time.Second
	defaultRecordTimeout = 10 * time.Second
)

// Dispatcher delivers outbox messages. It is safe to run several, in one process or
// many, on one database.
type Dispatcher struct {
	ex           driver.Executor
	config       Config
	destinations []string
	wake         chan struct{}
	tracer       trace.Tracer // nil: tracing off
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
	d := &Dispatcher{ex: ex, config: c, wake: make(chan struct{}, 1)}
	if c.TracerProvider != nil {
		d.tracer = c.TracerProvider.Tracer(TracerName)
	}
	for name := range c.Sinks {
		d.destinations = append(d.destinations, name)
	}
	if c.DefaultSink != "" && c.Sinks[""] == nil {
		d.destinations = append(d.destinations, "") // messages without a destination
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
// mid-flight, it could still commit on the server and hide its message for a lease
// with nobody delivering it), and what it claimed is delivered. It shares the same
// allowance, though: whatever is still running when it has passed is abandoned. An
// abandoned message, like one whose result was not recorded, keeps its counted
// attempt and is delivered again, with the same idempotency key, when its lease
// ends.
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
	var wg sync.WaitGroup
	for range d.config.Concurrency {
		wg.Go(func() { d.loop(ctx, work) })
	}
	wg.Wait()
	return nil
}

// loop dispatches until ctx is cancelled. work is the context of the dispatching
// itself, which a stop does not cancel.
func (d *Dispatcher) loop(ctx, work context.Context) {
	idle := time.NewTimer(0)
	defer idle.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
		case <-idle.C:
		}
		for ctx.Err() == nil {
			n, err := d.dispatchOnce(work)
			if err != nil {
				if ctx.Err() == nil {
					d.config.Logger.ErrorContext(ctx, "hookinbox: outbox: error claiming", "error", err.Error())
				}
				break
			}
			if n == 0 {
				break
			}
			d.Notify() // more may be waiting: let an idle loop look too
		}
		p := d.config.PollInterval
		idle.Reset(p*8/10 + rand.N(p*4/10+1))
	}
}

// DispatchOnce claims one message and delivers it. It returns how many it claimed (0
// or 1). Run calls it in a loop; a cron-like caller may call it directly.
//
// Cancelling ctx does not interrupt it (a claimed message is delivered and its result
// recorded), but every step is bounded: the claim by 10 seconds, the delivery by
// DeliveryTimeout, recording its result by RecordTimeout.
func (d *Dispatcher) DispatchOnce(ctx context.Context) (int, error) {
	return d.dispatchOnce(context.WithoutCancel(ctx))
}

// dispatchOnce is DispatchOnce under a context that a stop request does not cancel.
func (d *Dispatcher) dispatchOnce(ctx context.Context) (int, error) {
	msgs, err := d.claim(ctx)
	if err != nil || len(msgs) == 0 {
		return 0, err
	}
	for _, m := range msgs {
		d.deliverAndMark(ctx, m)
	}
	return len(msgs), nil
}

// claim leases a message in its own committed statement: no transaction is held open
// while the sink is called. A stop request does not interrupt the statement (ctx is
// not cancelled by one): a claim cancelled in flight may still commit, and would hide
// its message for a whole lease with nobody delivering it. A message that was claimed
// is delivered. claimTimeout bounds the statement.
func (d *Dispatcher) claim(ctx context.Context) ([]*hookinboxtype.OutboxMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, claimTimeout)
	defer cancel()
	return d.ex.OutboxClaim(ctx, &driver.OutboxClaimParams{
		Destinations: d.destinations, Limit: 1, Lease: d.config.Lease, MaxAttempts: d.config.MaxAttempts,
	})
}

// deliverAndMark delivers one claimed message and records the result under its
// fencing token. ctx is not cancelled by a stop request, so the delivery finishes
// within DeliveryTimeout and its result is recorded within RecordTimeout.
func (d *Dispatcher) deliverAndMark(ctx context.Context, m *hookinboxtype.OutboxMessage) {
	start := time.Now()
	sinkName, err := d.deliver(ctx, m)
	result := "delivered"
	if err == nil {
		mctx, cancel := context.WithTimeout(ctx, d.config.RecordTimeout)
		ok, merr := d.ex.OutboxMarkPublished(mctx, m.ID, m.FencingToken)
		cancel()
		switch {
		case merr != nil:
			// Delivered but not marked (the database failed or did not answer in
			// time): the lease ends, it is delivered again with the same idempotency
			// key, and the receiver drops the copy. A mark still running on the server
			// is fenced by the token: it marks the message only while this claim owns
			// it.
			d.config.Logger.ErrorContext(ctx, "hookinbox: outbox: error marking published",
				"outbox_id", m.ID, "fencing_token", m.FencingToken, "error", merr.Error())
		case !ok:
			result = "stale"
			d.config.Logger.WarnContext(ctx, "hookinbox: outbox: lease lost before marking; a later claim owns the message",
				"outbox_id", m.ID, "fencing_token", m.FencingToken)
		}
	} else {
		result = "failed"
		d.recordFailure(ctx, m, err)
	}
	if d.config.ObserveFunc != nil {
		d.config.ObserveFunc(sinkName, result, time.Since(start))
	}
}

func (d *Dispatcher) deliver(ctx context.Context, m *hookinboxtype.OutboxMessage) (string, error) {
	name := m.Destination
	if name == "" {
		name = d.config.DefaultSink
	}
	sink := d.config.Sinks[name]
	if sink == nil {
		return name, fmt.Errorf("no sink named %q", name)
	}
	dctx, cancel := context.WithTimeout(ctx, d.config.DeliveryTimeout)
	defer cancel()
	dctx, span := d.startDelivery(dctx, name, m)
	err := d.callSink(dctx, sink, name, m)
	endDelivery(span, err)
	return name, err
}

// callSink delivers m, turning a sink's panic into that delivery's failure, so that
// one broken sink neither takes the process down nor stops the other sinks: the
// message is retried and eventually needs review like any failed delivery. The stack
// goes to the log; the payload never does.
func (d *Dispatcher) callSink(ctx context.Context, sink Sink, name string, m *hookinboxtype.OutboxMessage) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("sink %q panicked: %v", name, v)
			d.config.Logger.ErrorContext(ctx, "hookinbox: outbox: sink panicked",
				"outbox_id", m.ID, "sink", name, "attempt", m.Attempts, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		}
	}()
	return sink.Deliver(ctx, m)
}

func (d *Dispatcher) recordFailure(ctx context.Context, m *hookinboxtype.OutboxMessage, err error) {
	msg := err.Error()
	if len(msg) > 2000 {
		msg = strings.ToValidUTF8(msg[:2000], "")
	}
	next := "retry"
	if m.Attempts >= m.MaxAttempts {
		next = "needs review"
	}
	d.config.Logger.WarnContext(ctx, "hookinbox: outbox: delivery failed",
		"outbox_id", m.ID, "destination", m.Destination, "attempt", m.Attempts, "next", next, "error", msg)
	rctx, cancel := context.WithTimeout(ctx, d.config.RecordTimeout)
	defer cancel()
	if ferr := d.ex.OutboxRecordFailure(rctx, &driver.OutboxFailureParams{
		ID: m.ID, ClaimToken: m.FencingToken, Error: msg, Delay: d.config.RetryDelayFunc(m.Attempts),
	}); ferr != nil {
		// The attempt is counted and the lease still hides the message: it is
		// delivered again when the lease ends.
		d.config.Logger.ErrorContext(ctx, "hookinbox: outbox: error recording failure",
			"outbox_id", m.ID, "fencing_token", m.FencingToken, "error", ferr.Error())
	}
}
