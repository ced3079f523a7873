// Package bench is the machinery of `hookinbox bench`: a closed-loop load generator
// that signs every request, the in-process server it loads (wired as serve wires it,
// on a schema of the run's own), and the anchors it runs in the same run, beside
// which a rate means something: pgbench on the same SQL, and the receiver a team
// would write by hand.
//
// Speed is measured here, never asserted: tests check what bench counts and which
// fields it reports, not a figure.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
)

// The modes of hookinbox bench.
const (
	ModeSync    = "sync"
	ModeAccept  = "accept"
	ModeDrain   = "drain"
	ModeForward = "forward"
	ModeMixed   = "mixed"
	// ModeDispatch drains an outbox backlog (runDispatch).
	ModeDispatch = "dispatch"
)

// The anchors bench runs beside hookinbox, in the same run (Config.Anchors).
const (
	// AnchorPgbench is pgbench on the SQL hookinbox sends for one request.
	AnchorPgbench = "pgbench"
	// AnchorNaive is the receiver a team writes by hand (naiveReceiver), driven by
	// the same load generator.
	AnchorNaive = "naive"
)

// DefaultDatabase is bench's database without --database-url. bench reads neither
// HOOKINBOX_DATABASE_URL nor a config file, so that a load generator never lands on a
// production database because of the environment it runs in.
const DefaultDatabase = "postgres://postgres@127.0.0.1:5432/postgres"

// DefaultDrainCount is the backlog of --mode drain without --count.
const DefaultDrainCount = 10000

// Config is one run, as the command's flags give it. The command checks and fills
// every field before Run; Run does not default them.
type Config struct {
	// Mode is one of the Mode constants.
	Mode string
	// Count requests in all, or as many as fit in Duration; one of them is zero.
	Count    int
	Duration time.Duration
	// Concurrency is the number of closed-loop senders, and pgbench's clients.
	Concurrency int
	// Duplicates is the fraction of requests that resend an earlier event.
	Duplicates float64

	// DatabaseURL is postgres://... or sqlite:PATH. Empty: DefaultDatabase for the
	// server in this process, no database for URL.
	DatabaseURL string
	// Schema, when set, is used and kept instead of a fresh one.
	Schema string
	// Keep keeps the fresh schema.
	Keep bool

	// URL, when set, is a running endpoint to send to instead of a server in this
	// process, signed with Provider's scheme, Secret and Options.
	URL      string
	Provider string
	Options  map[string]string
	Secret   string

	// Workers is worker.concurrency of drain, forward and mixed; Dispatchers
	// outbox.concurrency of forward.
	Workers     int
	Dispatchers int
	// SyncFlushers and AcceptFlushers, when positive, set group_commit's flushers.
	SyncFlushers   int
	AcceptFlushers int
	// Sink is forward's destination, SinkHTTP or SinkNATS; NATSURL the NATS server
	// of SinkNATS.
	Sink    string
	NATSURL string
	// Rounds is how many times mixed runs its async and its sync run, alternating.
	Rounds int
	// Backlog is how drain inserts its backlog: "http" or "receive".
	Backlog string
	// Anchors are the anchors to run, where the mode and the database allow them.
	Anchors []string
	// Pgbench is the pgbench binary, or "off".
	Pgbench string
	// Timeout bounds the wait of drain, forward and mixed for the last event;
	// RequestTimeout each request.
	Timeout        time.Duration
	RequestTimeout time.Duration
	// ServerLog, when set, receives the in-process server's JSON log lines.
	ServerLog string
	// JSON prints one JSON object instead of text.
	JSON bool

	// TemplateFunc builds the events the generator sends.
	TemplateFunc TemplateFunc
}

func (c *Config) anchor(name string) bool { return slices.Contains(c.Anchors, name) }

// UsageError is a command line that bench refuses before measuring anything: the
// command exits 2 for it.
type UsageError struct{ err error }

func (e *UsageError) Error() string { return e.err.Error() }
func (e *UsageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &UsageError{fmt.Errorf(format, args...)}
}

// Run runs the measurement c describes and prints it to stdout, as text or JSON;
// progress goes to stderr when it is a terminal. It returns an error when a request
// was not answered 2xx, an event was not processed or delivered within c.Timeout, or
// the run was interrupted: the report is printed first.
func Run(ctx context.Context, c *Config, stdout, stderr io.Writer) error {
	if c.TemplateFunc == nil {
		return errors.New("bench: no TemplateFunc")
	}
	r := &Report{
		Mode: c.Mode, Concurrency: c.Concurrency, Count: c.Count,
		DurationSeconds: c.Duration.Seconds(), Duplicates: c.Duplicates,
		Settings: hostSettings(),
	}
	p := newProgress(stderr)
	var err error
	if c.URL != "" {
		err = runRemote(ctx, c, r, p)
	} else {
		err = runInProcess(ctx, c, r, p)
	}
	p.untrack()
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		r.Interrupted = true
	}
	r.finish()
	if c.JSON {
		if err := r.writeJSON(stdout); err != nil {
			return err
		}
	} else {
		r.writeText(stdout)
	}
	return r.failure()
}
