// Package config reads the hookinbox binary's configuration: a YAML file with
// environment overrides, and signing secrets taken only from environment variables
// or files. Load refuses anything it does not understand with an *Error
// that names the bad key and the reason, so the binary refuses to start rather than
// run with a configuration that would lose or double-apply events.
//
//	cfg, err := config.Load("hookinbox.yaml", config.Options{ResolveSecrets: true})
package config

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/outbox"
	"github.com/hookinbox/hookinbox/provider"
)

// Defaults of the values a config file may leave out.
const (
	DefaultListen          = "127.0.0.1:8080"
	DefaultRetention       = 720 * time.Hour
	DefaultCleanerInterval = time.Hour
	DefaultShutdownTimeout = 25 * time.Second
	DefaultNATSURL         = "nats://127.0.0.1:4222"
)

// Defaults of the outbox block. They are the outbox package's own defaults, written
// out so that operator commands count "needs review" against the same max_attempts
// as the dispatcher in serve, and so that delivery_timeout can be checked against
// the lease with the key's name.
const (
	DefaultOutboxConcurrency  = 32
	DefaultOutboxBatchSize    = 100
	DefaultOutboxLease        = time.Minute
	DefaultOutboxMaxAttempts  = 20
	DefaultOutboxPollInterval = time.Second
	// The delivery timeout defaults to the smaller of this and half the lease.
	DefaultOutboxDeliveryTimeout = 10 * time.Second
)

// The roles a serve process runs.
const (
	RoleReceivers  = "receivers"
	RoleWorkers    = "workers"
	RoleDispatcher = "dispatcher"
)

// AllRoles is every role, in the order they are listed.
var AllRoles = []string{RoleReceivers, RoleWorkers, RoleDispatcher}

// Roles is a set of roles. The zero value runs all of them.
type Roles map[string]bool

// Has reports whether role is in the set (every role for an empty set).
func (r Roles) Has(role string) bool { return len(r) == 0 || r[role] }

// List returns the roles in the set, in AllRoles' order.
func (r Roles) List() []string {
	var out []string
	for _, role := range AllRoles {
		if r.Has(role) {
			out = append(out, role)
		}
	}
	return out
}

// ParseRoles reads a list of roles ("receivers,workers"); an unknown name is an error.
func ParseRoles(names []string) (Roles, error) {
	r := Roles{}
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if !slices.Contains(AllRoles, n) {
			return nil, fmt.Errorf("unknown role %q (want %s)", n, strings.Join(AllRoles, ", "))
		}
		r[n] = true
	}
	if len(r) == 0 {
		return nil, fmt.Errorf("no role given (want some of %s)", strings.Join(AllRoles, ", "))
	}
	return r, nil
}

// Environment variables that override the file.
const (
	EnvDatabaseURL = "HOOKINBOX_DATABASE_URL"
	EnvListenerURL = "HOOKINBOX_LISTENER_DATABASE_URL"
	EnvListen      = "HOOKINBOX_LISTEN"
	EnvNATSURL     = "HOOKINBOX_NATS_URL"
)

// Config is a validated configuration.
type Config struct {
	// Path is the file the configuration was read from, empty for Default.
	Path string

	// DatabaseURL is database_url, or HOOKINBOX_DATABASE_URL when set, as written.
	// Empty means none was given; the command line may still supply one.
	DatabaseURL string

	// Database is the store: DatabaseURL parsed when set, else the SQLite file
	// sqlite_path, a relative path resolved against the config file's directory. The
	// command line's --database-url overrides it.
	//
	// Defaults to the SQLite file ./hookinbox.db in the working directory
	// (DefaultSQLitePath).
	Database Database

	// ListenerDatabaseURL is the PostgreSQL URL the workers listen for other
	// processes' receipts on (LISTEN/NOTIFY): listener_database_url, or
	// HOOKINBOX_LISTENER_DATABASE_URL when set. Give it when the database URL goes
	// through PgBouncer (or another pooler) in transaction mode, which cannot keep a
	// listening session: a direct URL to the same database, user and search_path (it
	// may list several hosts with target_session_attrs=read-write, like the database
	// URL). It may hold a password.
	//
	// Defaults to none: the listener takes a connection of the database URL's pool.
	ListenerDatabaseURL string

	// Listen is the address serve listens on.
	//
	// Defaults to 127.0.0.1:8080.
	Listen string

	// HTTP bounds what one client can hold of the server: timeouts, header size,
	// connections (the http block).
	HTTP HTTP

	// Endpoints are the configured endpoints, in file order.
	Endpoints []Endpoint

	// Worker configures the workers; zero fields take the library's defaults.
	Worker hookinbox.WorkerConfig

	// PollOnly turns off LISTEN/NOTIFY between processes (worker.poll_only).
	PollOnly bool

	// RecordRequests keeps with each receipt what its request carried besides the
	// body (headers without credentials, remote address), for the console's event
	// page (record_requests).
	//
	// Defaults to true.
	RecordRequests bool

	// Accept and Sync tune the group commits of async and of sync deliveries; zero
	// fields take the library's defaults.
	Accept, Sync hookinbox.GroupConfig

	// Retention is how long processed receipts are kept (retention.processed). It is
	// never shorter than the longest retry window of the configured providers.
	//
	// Defaults to 720 hours.
	Retention time.Duration

	// CleanerInterval is how often the workers' process runs the cleaner (Cleanup with
	// Retention, and the payload purge) in process (retention.interval); 0 (off) leaves
	// it to `hookinbox cleanup` from a scheduler.
	//
	// Defaults to 1 hour.
	CleanerInterval time.Duration

	// PurgePayloadsAfter, when positive, drops the payloads of processed receipts this
	// long after processing (retention.payloads), keeping the receipts. It may be
	// shorter than the retry windows. 0 keeps payloads as long as their receipts.
	PurgePayloadsAfter time.Duration

	// AdminTokenEnv names the environment variable that holds the admin page's token.
	AdminTokenEnv string

	// Console is the operator console (the console block); nil when the block names
	// no access tokens, and the console is off.
	Console *Console

	// NATSURL is the NATS server (or comma-separated servers) that serve connects to
	// when a sink publishes to a JetStream subject: nats_url, or HOOKINBOX_NATS_URL
	// when set. It is not used otherwise.
	//
	// Defaults to nats://127.0.0.1:4222.
	NATSURL string

	// Outbox configures the outbox dispatcher (the outbox block). Concurrency, Lease,
	// DeliveryTimeout, MaxAttempts and PollInterval are always set, to the defaults
	// above when the file leaves them out; serve adds the sinks.
	Outbox outbox.Config

	// OutboxSink (outbox.sink) delivers the outbox messages written without a
	// destination, such as the billing handler's InvoicePaymentBooked. Nil leaves
	// them pending: the dispatcher does not claim them.
	OutboxSink *Sink

	// Roles are what this serve runs (roles: in the file, serve --role): RoleReceivers
	// (the endpoints), RoleWorkers (async and hybrid processing), RoleDispatcher (the
	// outbox). All three by default; split them to scale each on its own.
	Roles Roles

	// ShutdownTimeout bounds a graceful shutdown: in-flight requests and events in
	// progress finish within it.
	//
	// Defaults to 25 seconds, inside Kubernetes' default 30 s grace period.
	ShutdownTimeout time.Duration
}

// Handler names a built-in handler set.
type Handler string

const (
	// HandlerBilling applies Stripe invoice events to invoices and ledger_entries
	// (package billing).
	HandlerBilling Handler = "billing"
	// HandlerNone registers no handler: every event is recorded as ignored, so
	// retries stay duplicates.
	HandlerNone Handler = "none"
	// HandlerForward forwards every event (its verified JSON payload) through the
	// outbox to the endpoint's Forward sink: the gateway mode for services not
	// written in Go.
	HandlerForward Handler = "forward"
)

// Sink is where outbox messages are delivered: exactly one field is set.
type Sink struct {
	// URL receives each message as a JSON POST; an absolute http or https URL.
	URL string
	// NATSSubject receives each message as a JetStream publish; a stream must
	// capture it. It has no wildcards.
	NATSSubject string
	// Options are the sink's delivery options (concurrency, rate, ordered); zero
	// values mean the dispatcher's defaults.
	Options outbox.SinkOptions
}

// String describes the sink for logs, without a password the URL may hold.
func (s *Sink) String() string {
	if s.NATSSubject != "" {
		return "nats_subject " + s.NATSSubject
	}
	if u, err := url.Parse(s.URL); err == nil {
		return "url " + u.Redacted()
	}
	return "url"
}

// Endpoint is one validated endpoint.
type Endpoint struct {
	Name string
	Path string
	// Provider is the provider's name as the file writes it, one of provider.Names().
	// Receipts are stored under Verifier.Name(), which is the same except for an
	// alias: an endpoint of provider svix has a standardwebhooks verifier.
	Provider string
	Mode     hookinbox.Mode
	Handler  Handler

	// Tolerance is the signing timestamp's allowed distance from now; zero means the
	// provider's default.
	Tolerance time.Duration

	// Options are the provider's scheme-specific parameters.
	Options map[string]string

	// MaxBodyBytes is the largest accepted body; zero means the library's default
	// (1 MiB).
	MaxBodyBytes int64

	// Paused is the endpoint's default state: serve stores it for an endpoint the
	// database holds no state of yet (its first start), so that an endpoint can start
	// paused. From then on the database's state wins: hookinbox endpoints pause and
	// resume, and the console, change it for every process.
	//
	// Defaults to false.
	Paused bool

	// Forward is where handler forward delivers the endpoint's events; nil for the
	// other handlers.
	Forward *Sink

	// SecretSources say where each secret came from ("env STRIPE_WEBHOOK_SECRET",
	// "file /run/secrets/stripe"), in the order of the verifier's secret indexes.
	// They never hold a secret. For a provider verified with public keys they say
	// where each key came from ("config public_keys[0]", "env DISCORD_PUBLIC_KEY"),
	// in the order of the key indexes.
	SecretSources []string

	// Verifier checks the endpoint's signatures. When Load ran without
	// ResolveSecrets, it holds a placeholder secret and only its Name and
	// RetryWindow may be used.
	Verifier provider.Verifier
}

// BodyLimit returns the largest body the endpoint accepts: MaxBodyBytes, or the
// library's default when it is zero.
func (e *Endpoint) BodyLimit() int64 {
	if e.MaxBodyBytes == 0 {
		return hookinbox.DefaultMaxBodyBytes
	}
	return e.MaxBodyBytes
}

// MaxRetryWindow returns the longest retry window of the configured providers, and
// the endpoint that has it; zero and nil without endpoints.
func (c *Config) MaxRetryWindow() (time.Duration, *Endpoint) {
	var longest time.Duration
	var which *Endpoint
	for i := range c.Endpoints {
		if w := c.Endpoints[i].Verifier.RetryWindow(); w > longest {
			longest, which = w, &c.Endpoints[i]
		}
	}
	return longest, which
}

// UsesNATS reports whether a sink publishes to NATS, i.e. whether serve connects to
// NATSURL.
func (c *Config) UsesNATS() bool {
	if c.OutboxSink != nil && c.OutboxSink.NATSSubject != "" {
		return true
	}
	for _, ep := range c.Endpoints {
		if ep.Forward != nil && ep.Forward.NATSSubject != "" {
			return true
		}
	}
	return false
}
