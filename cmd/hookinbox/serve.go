package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/server"
)

func (a *app) serveCommand() *cobra.Command {
	var (
		f        dbFlags
		listen   string
		roles    []string
		logLevel string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Receive webhooks on the configured endpoints and process them",
		Long: `Serve every configured endpoint on its path, run the workers for async and hybrid
endpoints and the outbox dispatcher (handler forward, outbox.sink), and serve
GET /healthz (process alive), GET /readyz (database reachable and schema current)
and GET /metrics (Prometheus). Logs are JSON lines on stderr, one per delivery
(endpoint, event id, type, outcome, latency), never a secret or a body.

When a sink publishes to NATS, serve connects to nats_url (HOOKINBOX_NATS_URL) but
does not wait for it: while NATS is unreachable, deliveries to it fail and are
retried with backoff, and /readyz reports "nats":"disconnected" without failing.

The config is validated before anything starts; a bad key is refused with exit 2.
The listeners are bound next, before the database is opened: an address in use
exits 1 with nothing created on disk.

The operator console (docs/CONSOLE.md) is served under console.path (/console) when
the config's console block names access tokens (console.tokens[].token_env, read
from the environment): on the main listener, or on console.listen's own.

Roles: by default one serve runs all three of receivers (the endpoints), workers
(async and hybrid processing) and dispatcher (the outbox). --role (or roles: in the
config) runs some of them, so that each scales on its own on one database, e.g.
replicas with --role receivers behind a load balancer and a few with --role
workers,dispatcher. A process without receivers answers 404 on the endpoints' paths;
/readyz and the hookinbox_role metric say which roles it runs. Workers in other
processes are woken by LISTEN/NOTIFY (worker.poll_only turns it off), else they
poll; behind PgBouncer in transaction mode give listener_database_url, a direct URL
(docs/SCALING.md).

Without a database URL (--database-url, HOOKINBOX_DATABASE_URL, database_url) serve
keeps everything in the SQLite file sqlite_path, default ./hookinbox.db: it creates
the file and migrates it at start, and logs that it did, so that a first run needs
nothing installed. A PostgreSQL database is not migrated by serve: run "hookinbox
migrate" first (/readyz says so until then).

On SIGTERM or SIGINT serve stops accepting connections, lets in-flight requests,
events and outbox deliveries in progress finish within shutdown_timeout, and exits 0
(1 if the deadline passed). A second signal exits at once with 128+signal. Either
way nothing that was answered 2xx is lost: a 2xx is only ever sent after commit.

Tracing (OpenTelemetry) is on when OTEL_EXPORTER_OTLP_ENDPOINT (or
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set: spans go there over OTLP/HTTP
(protobuf), named by OTEL_SERVICE_NAME (default hookinbox) and sampled as
OTEL_TRACES_SAMPLER says; HOOKINBOX_TRACE_DB=true adds a span per PostgreSQL
statement. Without an endpoint no span is made. Spans name the event (provider,
endpoint, id, type), never its body or a secret.`,
		Example: `  STRIPE_WEBHOOK_SECRET=whsec_... hookinbox serve --config examples/hookinbox.yaml
  STRIPE_WEBHOOK_SECRET=whsec_... hookinbox serve --config examples/hookinbox.yaml --database-url postgres://postgres@127.0.0.1:5432/postgres`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return usagef("--log-level %q: want debug, info, warn or error", logLevel)
			}
			cfg, err := a.loadConfig(&f, true, true)
			if err != nil {
				return err
			}
			if len(cfg.Endpoints) == 0 {
				return &config.Error{File: cfg.Path, Key: "endpoints", Reason: "at least one endpoint is required"}
			}
			if len(roles) > 0 {
				r, err := config.ParseRoles(roles)
				if err != nil {
					return usagef("--role: %v", err)
				}
				cfg.Roles = r
			}
			if listen != "" {
				if _, _, err := net.SplitHostPort(listen); err != nil {
					return usagef("--listen %q is not a host:port address", listen)
				}
				cfg.Listen = listen
			}
			db, err := a.database(&f, cfg)
			if err != nil {
				return err
			}
			logger := slog.New(slog.NewJSONHandler(a.stderr, &slog.HandlerOptions{Level: level}))
			return a.serve(cmd.Context(), cfg, db, logger)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&listen, "listen", "", "address to listen on, host:port (overrides $"+config.EnvListen+" and listen)")
	cmd.Flags().StringSliceVar(&roles, "role", nil, "what this process runs: receivers, workers, dispatcher, comma-separated (overrides roles in the config; default all three)")
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	return cmd
}

func (a *app) serve(ctx context.Context, cfg *config.Config, db config.Database, logger *slog.Logger) error {
	ctx, shutdown := context.WithCancel(ctx)
	defer shutdown()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		sig := <-sigs
		logger.Info("hookinbox: signal received, shutting down; send it again to exit at once", "signal", sig.String())
		shutdown()
		sig = <-sigs
		logger.Warn("hookinbox: second signal, exiting now", "signal", sig.String())
		// Safe: a request still in its transaction has not been answered, and the
		// database rolls it back when the connection closes.
		os.Exit(128 + int(sig.(syscall.Signal)))
	}()

	// The addresses first: one in use fails here, before the database is opened and
	// a SQLite file created and migrated for a server that cannot run.
	listeners, err := server.Listen(cfg)
	if err != nil {
		return err
	}
	served := false
	defer func() {
		if !served {
			listeners.Close()
		}
	}()
	tracing, err := a.startTracing(ctx, logger)
	if err != nil {
		return err
	}
	defer a.stopTracing(tracing, logger)
	metrics := server.NewMetrics()
	backend, err := server.Open(ctx, db, cfg, server.OpenOptions{
		Logger: logger, Observer: metrics, Dispatch: true, OutboxObserver: metrics,
		TracerProvider: tracing.Provider, TraceDB: tracing.DB,
	})
	if err != nil {
		if errors.Is(err, server.ErrUnsupportedDatabase) {
			return &usageError{err}
		}
		return err
	}
	logDatabase(db, logger)
	if db.Driver == config.DriverSQLite {
		if err := migrateSQLite(ctx, backend, logger); err != nil {
			backend.Close()
			return err
		}
	}
	// Not fatal: the server starts and /readyz reports until the database is back
	// or migrated, as an orchestrator expects.
	checkCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	if err := backend.CheckSchema(checkCtx); err != nil {
		logger.Warn("hookinbox: not ready yet", "error", err.Error())
	}
	cancel()
	if cfg.AdminTokenEnv != "" {
		logger.Warn("hookinbox: admin.token_env is ignored; the operator console is configured with console.tokens (see docs/CONSOLE.md)")
	}
	for _, ep := range cfg.Endpoints {
		args := []any{"name", ep.Name, "path", ep.Path, "provider", ep.Provider,
			"mode", string(ep.Mode), "handler", string(ep.Handler), "secrets", strings.Join(ep.SecretSources, ", ")}
		if ep.Forward != nil {
			args = append(args, "forward", ep.Forward.String())
		}
		logger.Info("hookinbox: endpoint", args...)
	}
	logOutbox(cfg, logger)

	served = true
	err = server.New(cfg, backend, metrics, logger).Serve(ctx, listeners)
	if err == nil {
		// Only after a complete shutdown: Close waits for connections in use.
		backend.Close()
	}
	return err
}

// logOutbox says where the outbox goes, and what stays pending for want of a sink.
func logOutbox(cfg *config.Config, logger *slog.Logger) {
	if cfg.OutboxSink != nil {
		logger.Info("hookinbox: outbox messages without a destination go to outbox.sink", "sink", cfg.OutboxSink.String())
		return
	}
	for _, ep := range cfg.Endpoints {
		if ep.Handler == config.HandlerBilling {
			logger.Info("hookinbox: no outbox.sink: the billing handler's outbox messages stay pending (see hookinbox outbox list --pending)",
				"endpoint", ep.Name)
			return
		}
	}
}

// logDatabase says which database serve uses and where that choice came from.
func logDatabase(db config.Database, logger *slog.Logger) {
	if db.Driver == config.DriverSQLite {
		abs, _ := filepath.Abs(db.Path)
		logger.Info("hookinbox: database", "driver", string(db.Driver), "path", db.Path, "file", abs, "from", db.Source)
		return
	}
	logger.Info("hookinbox: database", "driver", string(db.Driver), "url", db.String(), "from", db.Source)
}

// migrateSQLite brings a SQLite file's schema up to date. The embedded store is for
// one user on one machine, and a newcomer's first serve should just work; PostgreSQL
// is production, where a schema change is an explicit step of a deploy (hookinbox
// migrate), so serve never migrates it. A failure is fatal: unlike a server that is
// down, nothing fixes a file serve cannot write by waiting.
func migrateSQLite(ctx context.Context, backend *server.Backend, logger *slog.Logger) error {
	path := backend.Database.Path
	done, err := backend.Migrate(ctx)
	if err != nil {
		return fmt.Errorf("error migrating %s: %w", path, err)
	}
	for _, m := range done {
		if m.To == m.From {
			continue
		}
		what := "schema"
		if m.Line != "hookinbox" {
			what = m.Line + " schema"
		}
		logger.Info(fmt.Sprintf("hookinbox: migrated %s to %s version %d", path, what, m.To),
			"path", path, "line", m.Line, "from_version", m.From, "to_version", m.To)
	}
	return nil
}
