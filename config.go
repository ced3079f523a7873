package hookinbox

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/hookinbox/hookinbox/provider"
)

// Config configures an Inbox.
type Config struct {
	// Endpoints are the webhook endpoints this inbox receives on. Names must be unique.
	Endpoints []EndpointConfig

	// Worker configures the workers that process async and hybrid receipts.
	Worker WorkerConfig

	// Accept configures the group commit of receipts stored without processing (async
	// endpoints, events with no handler): a group is one INSERT statement.
	//
	// Defaults to 2 flushers (1 on SQLite, which has one writer) and groups of up to
	// 500.
	Accept GroupConfig

	// Sync configures the group commit of sync and hybrid deliveries: a group is one
	// transaction in which each delivery's receipt and handler run behind a savepoint
	// of their own, so that one delivery's failure undoes only its own work. A
	// transaction that fails as a whole (a lost connection, a deadlock with another
	// group) commits nothing, and each of its deliveries is received again alone.
	//
	// Defaults to 2 flushers (1 on SQLite) and groups of up to 32 (PostgreSQL keeps 64
	// subtransactions per backend in memory): fewer transactions in flight make larger
	// groups, which set-based handlers (HandleBatch) apply in a few statements. Each
	// flusher applies its group's deliveries one after another, so endpoints whose sync
	// handlers wait on slow queries want more flushers.
	Sync GroupConfig

	// Logger receives one line per delivery and per worker failure. Secrets and
	// payloads are never logged.
	//
	// Defaults to slog.Default().
	Logger *slog.Logger

	// PollOnly turns off waking other processes' workers (PostgreSQL's LISTEN/NOTIFY):
	// workers then find receipts received by other processes at their next poll
	// (WorkerConfig.PollInterval). Set it behind a pooler in transaction mode, where a
	// listening session cannot be kept.
	PollOnly bool

	// Observer is told of every delivery and worker attempt, e.g. to export metrics.
	//
	// Defaults to none.
	Observer Observer

	// OmitRequestRecord keeps receipts from recording what their request carried
	// besides the body (method, path, remote address, headers without credentials:
	// hookinbox_inbox.request, shown on the console's event page), saving the few
	// hundred bytes a receipt it takes.
	//
	// Defaults to false: every receipt delivered over HTTP records its request.
	OmitRequestRecord bool

	// TracerProvider receives OpenTelemetry spans: each request's server span, the
	// signature check, the receipt and the handler, and each worker attempt, linked
	// to the span that received its receipt. Spans name the event (provider,
	// endpoint, id, type), never its payload, headers or secrets.
	//
	// Defaults to none: no span is made, at no cost.
	TracerProvider trace.TracerProvider
}

// EndpointConfig configures one endpoint.
type EndpointConfig struct {
	// Name identifies the endpoint; it is part of every receipt's key, so two endpoints
	// that receive the same event each process it. Required.
	Name string

	// Verifier checks the provider's signature on every request. Required.
	Verifier provider.Verifier

	// Mode is ModeSync, ModeAsync or ModeHybrid.
	//
	// Defaults to ModeSync.
	Mode Mode

	// MaxBodyBytes is the largest body accepted; a larger one is answered 413.
	//
	// Defaults to DefaultMaxBodyBytes.
	MaxBodyBytes int64
}

// DefaultMaxBodyBytes is EndpointConfig.MaxBodyBytes when it is left zero: 1 MiB,
// above the events of every provider hookinbox verifies.
const DefaultMaxBodyBytes = 1 << 20

// WorkerConfig configures the workers started by Inbox.Run.
type WorkerConfig struct {
	// Concurrency is the number of workers in this process.
	//
	// Defaults to 4.
	Concurrency int

	// BatchSize is the most receipts a worker claims in one statement and processes
	// in one transaction. When one of them fails, the batch's transaction rolls back
	// and the batch is split in halves, each processed the same way, down to single
	// receipts in transactions of their own.
	//
	// Defaults to 25.
	BatchSize int

	// Lease is how long a claimed receipt is hidden from other workers. A worker that
	// dies mid-event leaves the receipt to be claimed again when it ends.
	//
	// Defaults to 2 minutes.
	Lease time.Duration

	// MaxAttempts is the number of attempts after which a receipt is no longer claimed
	// and needs review by a person.
	//
	// Defaults to 10.
	MaxAttempts int

	// StatementTimeout bounds every statement of a processing transaction, including
	// the wait for a row another worker holds. It must be shorter than Lease.
	//
	// Defaults to 30 seconds.
	StatementTimeout time.Duration

	// PollInterval is how often an idle worker looks for work that was not announced
	// in this process (receipts of another process, retries coming due).
	//
	// Defaults to 1 second.
	PollInterval time.Duration

	// RetryDelayFunc returns how long to wait before the next attempt after the given
	// failed attempt (1 for the first).
	//
	// Defaults to DefaultRetryDelay: jittered exponential, capped at 5 minutes.
	RetryDelayFunc func(attempt int) time.Duration
}

// WithDefaults returns a copy of c with zero values replaced by defaults.
func (c WorkerConfig) WithDefaults() WorkerConfig {
	if c.Concurrency == 0 {
		c.Concurrency = 4
	}
	if c.BatchSize == 0 {
		c.BatchSize = 25
	}
	if c.Lease == 0 {
		c.Lease = 2 * time.Minute
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 10
	}
	if c.StatementTimeout == 0 {
		c.StatementTimeout = min(30*time.Second, c.Lease/2)
	}
	if c.PollInterval == 0 {
		c.PollInterval = time.Second
	}
	if c.RetryDelayFunc == nil {
		c.RetryDelayFunc = DefaultRetryDelay
	}
	return c
}

func (c WorkerConfig) validate() error {
	switch {
	case c.Concurrency < 0:
		return errors.New("worker concurrency must not be negative")
	case c.Lease < 0:
		return errors.New("worker lease must be positive")
	case c.BatchSize < 1:
		return errors.New("worker batch size must be at least 1")
	case c.MaxAttempts < 1:
		return errors.New("worker max attempts must be at least 1")
	case c.StatementTimeout <= 0 || c.StatementTimeout >= c.Lease:
		return fmt.Errorf("worker statement timeout (%s) must be positive and shorter than the lease (%s)", c.StatementTimeout, c.Lease)
	case c.PollInterval <= 0:
		return errors.New("worker poll interval must be positive")
	}
	return nil
}

func (c EndpointConfig) withDefaults() EndpointConfig {
	if c.Mode == "" {
		c.Mode = ModeSync
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	return c
}

func (c EndpointConfig) validate() error {
	if c.Name == "" {
		return errors.New("endpoint name is required")
	}
	if c.Verifier == nil {
		return fmt.Errorf("endpoint %q: a verifier is required", c.Name)
	}
	switch c.Mode {
	case ModeSync, ModeAsync, ModeHybrid:
	default:
		return fmt.Errorf("endpoint %q: unknown mode %q (want sync, async or hybrid)", c.Name, c.Mode)
	}
	if c.MaxBodyBytes < 0 {
		return fmt.Errorf("endpoint %q: max body bytes must be positive", c.Name)
	}
	return nil
}
