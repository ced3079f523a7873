package outbox

import (
	"errors"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// SinkOptions tune the delivery to one destination.
type SinkOptions struct {
	// Concurrency is the most deliveries in flight to the destination at once.
	//
	// Defaults to Config.Concurrency.
	Concurrency int

	// Rate is the most deliveries started per second, so that a slow downstream is
	// not flooded (a burst of up to Concurrency is allowed). A delivery waits for its
	// turn before it starts, within its claim's lease.
	//
	// Defaults to 0: no limit.
	Rate float64

	// Ordered delivers the destination's messages in order per aggregate (aggregate
	// type and id): a message is claimed only when every earlier message of its key
	// has been delivered, so one message of a key is in flight at a time, oldest
	// first. A message that fails holds the later messages of its key back until it
	// is delivered, and one that needs review holds them until a person retries or
	// discards it. Messages of other keys are not held.
	//
	// Defaults to false: messages are delivered as they come, in parallel.
	Ordered bool
}

func (o SinkOptions) validate() error {
	if o.Concurrency < 0 || o.Rate < 0 {
		return errors.New("concurrency and rate must not be negative")
	}
	return nil
}

// destination is a sink of this dispatcher with the state of its deliveries, and the
// values of the outbox's destination column it delivers: its name, and "" too for
// the default sink.
type destination struct {
	sinkName string // the sink's name in Config.Sinks, for logs and metrics
	sink     Sink
	values   []string
	limit    int           // the most deliveries in flight
	slots    chan struct{} // one per delivery in flight
	limiter  *rate.Limiter // nil: no rate limit
	ordered  bool

	mu sync.Mutex
	// claimed counts the messages claimed and not yet done: in flight, or waiting
	// for a slot. Claims keep up to twice limit claimed, so that a delivery that ends
	// finds the next message already claimed rather than waiting for a claim's round
	// trip, and claims come in batches of at least half of that, not one per
	// delivery.
	claimed int
	// pausedUntil is when a sink's Retry-After ends: the destination is not claimed
	// before.
	pausedUntil time.Time
}

func newDestination(name string, sink Sink, o SinkOptions, defaultLimit int) *destination {
	d := &destination{sinkName: name, sink: sink, values: []string{name}, limit: o.Concurrency, ordered: o.Ordered}
	if d.limit == 0 {
		d.limit = defaultLimit
	}
	d.slots = make(chan struct{}, d.limit)
	if o.Rate > 0 {
		d.limiter = rate.NewLimiter(rate.Limit(o.Rate), d.limit)
	}
	return d
}

// free returns how many messages a claim may take now: 0 while paused.
func (d *destination) free(now time.Time) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if now.Before(d.pausedUntil) {
		return 0
	}
	return 2*d.limit - d.claimed
}

// refill reports whether enough deliveries have ended for a claim to be worth it: a
// batch of at least limit.
func (d *destination) refill() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return 2*d.limit-d.claimed >= d.limit
}

// take counts a claimed message; done counts it as ended.
func (d *destination) take() {
	d.mu.Lock()
	d.claimed++
	d.mu.Unlock()
}

func (d *destination) done() {
	d.mu.Lock()
	d.claimed--
	d.mu.Unlock()
}

// pause stops claims of the destination until until, when a sink asked to be left
// alone (a 429 or 503 with Retry-After).
func (d *destination) pause(until time.Time) {
	d.mu.Lock()
	if until.After(d.pausedUntil) {
		d.pausedUntil = until
	}
	d.mu.Unlock()
}

// resumesAt returns when a paused destination may be claimed again; zero when it is
// not paused.
func (d *destination) resumesAt(now time.Time) time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	if now.Before(d.pausedUntil) {
		return d.pausedUntil
	}
	return time.Time{}
}
