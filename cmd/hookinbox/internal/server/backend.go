// Package server wires the hookinbox binary: an inbox on the configured database with
// the built-in handlers, the outbox dispatcher with its HTTP and NATS JetStream sinks,
// the HTTP server that exposes the endpoints with /healthz, /readyz and /metrics, the
// workers, and the graceful shutdown that ties them together.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/driver/sqlitedriver"
	"github.com/hookinbox/hookinbox/examples/billing"
	"github.com/hookinbox/hookinbox/outbox"
)

// Receiver is what serve uses of a *hookinbox.Inbox beside its operator functions:
// the endpoints' HTTP handlers and the workers.
type Receiver interface {
	Endpoint(name string) http.Handler
	Run(ctx context.Context) error
}

// Backend is an inbox on an open database, with the configured handlers registered,
// and the outbox's dispatcher.
type Backend struct {
	// Inbox receives and processes.
	Inbox Receiver

	// Operator runs the inbox's operator functions (status, list, retry, cleanup).
	Operator *hookinbox.Operator

	// Executor runs the driver's statements outside any transaction: what backfill
	// and reconcile keep their checkpoints and read receipts with, and the operator
	// console's queries.
	Executor driver.Executor

	// Billing reads the billing tables, for reconcile; nil unless an endpoint uses the
	// billing handlers.
	Billing billing.Store

	// Outbox is the outbox's dispatcher, with cfg.Outbox's settings. Its operator
	// functions (Stats, List, Retry, RetryNeedsReview) need no sink and always work;
	// it delivers only when opened with OpenOptions.Dispatch (see Dispatching).
	Outbox *outbox.Dispatcher

	// Database is the store the backend was opened on.
	Database config.Database

	// PoolMaxConns is the size of the PostgreSQL pool (0 on SQLite).
	PoolMaxConns int32

	sinks *sinks
	// lines are the migration lines this configuration needs: hookinbox's own, and
	// billing's when an endpoint uses the billing handlers.
	lines []migrationLine
	close func()
}

// migrationLine migrates one line of migrations and reads its version.
type migrationLine struct {
	name    string
	migrate func(ctx context.Context) error
	version func(ctx context.Context) (applied, latest int, err error)
}

// ErrUnsupportedDatabase is returned by Open for a database URL no driver handles.
var ErrUnsupportedDatabase = config.ErrUnsupportedDatabase

// OpenOptions tune Open.
type OpenOptions struct {
	// Logger receives the inbox's delivery and worker lines.
	Logger *slog.Logger
	// Observer is told of every delivery and attempt.
	Observer hookinbox.Observer

	// Dispatch builds the outbox's sinks (forward endpoints and outbox.sink),
	// connecting to NATS when one publishes there, so that Server.Run delivers the
	// outbox. Operator commands leave it unset: they list, count and retry.
	Dispatch bool
	// OutboxObserver is told of every outbox delivery when Dispatch is set.
	OutboxObserver OutboxObserver

	// TracerProvider receives the inbox's and the dispatcher's spans; nil is off.
	TracerProvider trace.TracerProvider
	// TraceDB adds a span per PostgreSQL statement (otelpgx) when tracing is on.
	TraceDB bool
}

// poolConfig is the PostgreSQL pool's config: db's URL, sized for cfg unless the URL
// sizes it, traced as opts asks, and each new connection readied for hookinbox's
// transactions (pgxdriver.ConfigurePool).
func poolConfig(db config.Database, cfg *config.Config, opts OpenOptions) (*pgxpool.Config, error) {
	pcfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnsupportedDatabase, err) // pgx redacts the password
	}
	if !strings.Contains(db.URL, "pool_max_conns") {
		pcfg.MaxConns = poolSize(cfg)
	}
	traceDB(pcfg, opts)
	pgxdriver.ConfigurePool(pcfg)
	return pcfg, nil
}

// Open opens db and builds an inbox for cfg's endpoints, with the built-in handlers
// on that database's driver. Close releases the connections.
//
// On PostgreSQL it does not wait for the server: a server must start (and report not
// ready) while the database is down. A SQLite file is created when it does not exist
// (with no schema: see Migrate); an error opening it is returned at once, since no
// later retry fixes a path or a permission. A URL pgx cannot parse wraps
// ErrUnsupportedDatabase.
func Open(ctx context.Context, db config.Database, cfg *config.Config, opts OpenOptions) (*Backend, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	switch db.Driver {
	case config.DriverPostgres:
		pcfg, err := poolConfig(db, cfg, opts)
		if err != nil {
			return nil, err
		}
		var dcfg pgxdriver.Config
		if cfg.ListenerDatabaseURL != "" {
			if dcfg.ListenConnConfig, err = pgx.ParseConfig(cfg.ListenerDatabaseURL); err != nil {
				return nil, fmt.Errorf("%w: listener_database_url: %w", ErrUnsupportedDatabase, err) // pgx redacts the password
			}
		}
		pool, err := pgxpool.NewWithConfig(ctx, pcfg)
		if err != nil {
			return nil, fmt.Errorf("error opening database pool: %w", err)
		}
		b, err := newBackend(db, pgxdriver.NewWithConfig(pool, &dcfg), pool.Close, cfg, opts)
		if err == nil {
			b.PoolMaxConns = pcfg.MaxConns
		}
		return b, err
	case config.DriverSQLite:
		if cfg.ListenerDatabaseURL != "" {
			return nil, fmt.Errorf("listener_database_url is PostgreSQL's: the database is the SQLite file %s", db.Path)
		}
		// SQLite's own message for this is "unable to open database file (14)".
		if dir := filepath.Dir(db.Path); !isDir(dir) {
			return nil, fmt.Errorf("error opening %s: directory %s does not exist (hookinbox creates the file, not its directory)", db.Path, dir)
		}
		sdb, err := sqlitedriver.Open(db.Path)
		if err != nil {
			return nil, err
		}
		return newBackend(db, sqlitedriver.New(sdb), func() { _ = sdb.Close() }, cfg, opts)
	default:
		return nil, fmt.Errorf("%w: driver %q", ErrUnsupportedDatabase, db.Driver)
	}
}

// poolSize is the connections serve can use at once, unless the URL's pool_max_conns
// says otherwise: every worker's transaction, the group commits' flushers, the
// dispatcher's (its claim, its batched marks and the occasional failure: deliveries
// hold no connection), and a few for claims, /readyz and the status figures. pgx's own
// default (4 on a 4-core machine) would make them queue for each other.
func poolSize(cfg *config.Config) int32 {
	w := cfg.Worker.WithDefaults()
	accept := max(cfg.Accept.Flushers, 2)
	sync := max(cfg.Sync.Flushers, 2)
	const dispatcher = 4
	return int32(w.Concurrency + accept + sync + dispatcher + 4)
}

// usesBilling reports whether an endpoint of cfg uses the billing handlers, whose
// tables are billing's own migration line.
func usesBilling(cfg *config.Config) bool {
	for _, ep := range cfg.Endpoints {
		if ep.Handler == config.HandlerBilling {
			return true
		}
	}
	return false
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// newBackend builds the inbox and the dispatcher on drv, whatever its transaction
// type, with billing's store and migration line when an endpoint uses its handlers.
// closeDB releases the database.
func newBackend[TTx any](db config.Database, drv driver.Driver[TTx], closeDB func(), cfg *config.Config, opts OpenOptions) (*Backend, error) {
	b := &Backend{Database: db, Executor: drv.Executor(), lines: []migrationLine{{name: "hookinbox", migrate: drv.Migrate, version: drv.SchemaVersion}}}
	if usesBilling(cfg) {
		b.Billing = billing.NewStore(drv)
		b.lines = append(b.lines, migrationLine{
			name:    "billing",
			migrate: func(ctx context.Context) error { return billing.Migrate(ctx, drv) },
			version: func(ctx context.Context) (int, int, error) { return billing.SchemaVersion(ctx, drv) },
		})
	}
	var err error
	if opts.Dispatch {
		if b.sinks, err = openSinks(cfg, opts.OutboxObserver, opts.Logger); err != nil {
			closeDB()
			return nil, err
		}
	}
	b.close = func() {
		closeDB()
		b.sinks.close()
	}
	if b.Outbox, err = outbox.NewDispatcher(drv.Executor(), outboxConfig(cfg, b.sinks, opts)); err != nil {
		b.close()
		return nil, err
	}
	observer := opts.Observer
	if b.Dispatching() {
		observer = &wakeDispatcher{Observer: observer, notify: b.Outbox.Notify, endpoints: outboxWriters(cfg)}
	}
	hc := inboxConfig(cfg, opts.Logger, observer)
	hc.TracerProvider = opts.TracerProvider
	inbox, err := hookinbox.New(drv, hc)
	if err != nil {
		b.close()
		return nil, err
	}
	for _, ep := range cfg.Endpoints {
		switch ep.Handler {
		case config.HandlerBilling:
			billing.Register(inbox, ep.Name)
		case config.HandlerForward:
			inbox.HandleBatch(ep.Name, "*", inbox.ForwardTo(ForwardDestination(ep.Name)))
		}
		// HandlerNone registers nothing: every event is recorded as ignored.
	}
	b.Inbox = inbox
	b.Operator = inbox.Operator()
	return b, nil
}

// Dispatching reports whether the backend has sinks to deliver the outbox to, so
// that Server.Run runs the dispatcher.
func (b *Backend) Dispatching() bool { return b.sinks != nil && len(b.sinks.byName) > 0 }

// NATSState returns "connected" or "disconnected", and false when no sink publishes
// to NATS.
func (b *Backend) NATSState() (string, bool) { return b.sinks.natsState() }

// outboxConfig is the dispatcher's configuration: cfg.Outbox, and the sinks when
// there are any.
func outboxConfig(cfg *config.Config, s *sinks, opts OpenOptions) *outbox.Config {
	oc := cfg.Outbox
	oc.Logger = opts.Logger
	oc.TracerProvider = opts.TracerProvider
	if s != nil {
		oc.Sinks, oc.SinkOptions, oc.DefaultSink = s.byName, s.options, s.defaultSink
		if opts.OutboxObserver != nil {
			oc.ObserveFunc = opts.OutboxObserver.OutboxDelivery
		}
	}
	return &oc
}

// outboxWriters are the endpoints whose handlers write outbox messages that this
// configuration delivers: forward endpoints, and billing ones when outbox.sink is set.
func outboxWriters(cfg *config.Config) map[string]bool {
	m := map[string]bool{}
	for _, ep := range cfg.Endpoints {
		if ep.Handler == config.HandlerForward || (ep.Handler == config.HandlerBilling && cfg.OutboxSink != nil) {
			m[ep.Name] = true
		}
	}
	return m
}

// inboxConfig is the library configuration for cfg.
func inboxConfig(cfg *config.Config, logger *slog.Logger, observer hookinbox.Observer) *hookinbox.Config {
	hc := &hookinbox.Config{Worker: cfg.Worker, Accept: cfg.Accept, Sync: cfg.Sync, PollOnly: cfg.PollOnly, Logger: logger, Observer: observer,
		OmitRequestRecord: !cfg.RecordRequests}
	for _, ep := range cfg.Endpoints {
		hc.Endpoints = append(hc.Endpoints, hookinbox.EndpointConfig{
			Name: ep.Name, Verifier: ep.Verifier, Mode: ep.Mode, MaxBodyBytes: ep.MaxBodyBytes,
		})
	}
	return hc
}

// ErrSchemaNotCurrent means the database's schema is older than this binary's.
var ErrSchemaNotCurrent = errors.New("database schema is not current")

// SchemaVersion returns hookinbox's newest applied migration and the newest one this
// binary knows.
func (b *Backend) SchemaVersion(ctx context.Context) (applied, latest int, err error) {
	return b.lines[0].version(ctx)
}

// CheckSchema returns nil when every migration line this configuration needs
// (hookinbox's, and billing's when an endpoint uses it) is at least this binary's
// version, an error wrapping ErrSchemaNotCurrent when one is older, or the database's
// error. A newer schema is accepted: migrations are forward-only and additive, and
// during a rolling deploy the old binary keeps working against the new schema.
func (b *Backend) CheckSchema(ctx context.Context) error {
	for _, l := range b.lines {
		applied, latest, err := l.version(ctx)
		if err != nil {
			return err
		}
		if applied < latest {
			if l.name == "hookinbox" {
				return fmt.Errorf("%w: version %d, this binary needs %d: run hookinbox migrate", ErrSchemaNotCurrent, applied, latest)
			}
			return fmt.Errorf("%w: %s schema version %d, this binary needs %d: run hookinbox migrate", ErrSchemaNotCurrent, l.name, applied, latest)
		}
	}
	return nil
}

// Migrated is what Migrate did to one migration line.
type Migrated struct {
	// Line is "hookinbox" or a domain's name ("billing").
	Line     string
	From, To int
}

// Migrate applies the migrations the database lacks, hookinbox's first and then
// those of the domains the configuration uses (billing), and returns each line's
// versions before and after, hookinbox's first.
func (b *Backend) Migrate(ctx context.Context) ([]Migrated, error) {
	var done []Migrated
	for _, l := range b.lines {
		from, _, err := l.version(ctx)
		if err != nil {
			return done, err
		}
		if err := l.migrate(ctx); err != nil {
			return done, err
		}
		to, _, err := l.version(ctx)
		if err != nil {
			return done, err
		}
		done = append(done, Migrated{Line: l.name, From: from, To: to})
	}
	return done, nil
}

// Close releases the database connections, waiting for connections in use, and the
// NATS connection.
func (b *Backend) Close() { b.close() }
