package outbox

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"go.opentelemetry.io/otel/trace"
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

	// SinkOptions tune the delivery to a destination, by the name its sink has in
	// Sinks: its concurrency, a rate limit, ordered delivery. A destination without
	// options gets the defaults.
	SinkOptions map[string]SinkOptions

	// Concurrency is the most deliveries in flight to one destination at once,
	// unless its SinkOptions say otherwise. Each destination is claimed only up to its
	// free slots, so a slow one never holds the others' messages.
	//
	// Defaults to 32.
	Concurrency int

	// BatchSize is the most messages of one destination claimed in one statement.
	//
	// Defaults to 100.
	BatchSize int

	// Lease is how long a claimed message is hidden from other dispatchers. A
	// dispatcher that outlives its lease loses the message to the next claim, and its
	// late result is ignored.
	//
	// Defaults to 1 minute.
	Lease time.Duration

	// DeliveryTimeout bounds one delivery. It must be shorter than Lease: a delivery
	// starts only when it can end before its claim's lease does, so the sink never
	// receives a message from a dispatcher that lost it (a message that waited too
	// long for its turn is left to its lease and claimed again with a larger token).
	//
	// Defaults to 10 seconds, or half the lease when that is shorter.
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
		c.Concurrency = 32
	}
	if c.BatchSize == 0 {
		c.BatchSize = 100
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
	case c.Concurrency < 1, c.BatchSize < 1, c.MaxAttempts < 1, c.PollInterval <= 0:
		return errors.New("outbox: concurrency, batch size, max attempts and poll interval must be positive")
	case c.DeliveryTimeout <= 0 || c.DeliveryTimeout >= c.Lease:
		return fmt.Errorf("outbox: delivery timeout (%s) must be positive and shorter than the lease (%s)", c.DeliveryTimeout, c.Lease)
	case c.RecordTimeout < 0:
		return fmt.Errorf("outbox: record timeout (%s) must be positive", c.RecordTimeout)
	}
	for name, o := range c.SinkOptions {
		if c.Sinks[name] == nil {
			return fmt.Errorf("outbox: options for sink %q, which is not configured", name)
		}
		if err := o.validate(); err != nil {
			return fmt.Errorf("outbox: sink %q: %w", name, err)
		}
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
