package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/hookinboxtest"
)

// The modes of hookinbox bench.
const (
	benchSync    = "sync"
	benchAccept  = "accept"
	benchDrain   = "drain"
	benchForward = "forward"
)

// benchDefaultDatabase is bench's database without --database-url. bench reads
// neither HOOKINBOX_DATABASE_URL nor a config file, so that a load generator never
// lands on a production database because of the environment it runs in.
const benchDefaultDatabase = "postgres://postgres@127.0.0.1:5432/postgres"

// benchDefaultDrainCount is the backlog of --mode drain without --count.
const benchDefaultDrainCount = 10000

// benchFlags are bench's options.
type benchFlags struct {
	mode           string
	count          int
	duration       time.Duration
	concurrency    int
	duplicates     float64
	databaseURL    string
	schema         string
	keep           bool
	url            string
	provider       string
	options        map[string]string
	secret         string
	secretEnv      string
	workers        int
	dispatchers    int
	syncFlushers   int
	acceptFlushers int
	backlog        string
	pgbench        string
	timeout        time.Duration
	requestTimeout time.Duration
	serverLog      string
	json           bool
}

func (a *app) benchCommand() *cobra.Command {
	var cpuProfile string
	var f benchFlags
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure hookinbox's throughput and latency, beside pgbench on the same SQL",
		Long: `Generate load against hookinbox and print what it reached: the requests, the answers
by outcome, the errors by status, the rate, the latency (p50, p90, p99, max), the
in-process server's group commits (how many, and their mean size), where the CPU
time went, and the settings it ran under (PostgreSQL's version, fsync,
synchronous_commit and autovacuum, the pool size, the machine's cores, GOMAXPROCS
and load average). --json prints all of it as one JSON object.

The cpu line (Linux, from /proc) is the CPU time per request of bench's own process
(the load generator, and the in-process server when there is one) and, when the
database is on this machine (a loopback address or a socket), of every process named
postgres; with how busy the cores were meanwhile. pgbench's run has the same, per
transaction, with pgbench's own process. On a machine whose cores the load
generator, the server and PostgreSQL share, these say what a rate is made of: the
cost per request of each side, and the idle share that waiting (round trips,
fsync) leaves unused.

By default bench starts a server in this process, wired as serve wires it, with a
generated config (one endpoint, provider stripe, a random signing secret) on a fresh
PostgreSQL schema hookinbox_bench_<random>, which it creates, migrates and drops at
the end (--keep keeps it; --schema NAME uses that schema, creating and migrating it
if needed, and keeps it). The database is --database-url, default
` + benchDefaultDatabase + `; sqlite:PATH benches a SQLite
file instead (created and migrated if needed, kept). bench reads neither
HOOKINBOX_DATABASE_URL nor a config file, so that it never loads a production
database by accident.

--concurrency N senders run closed loops: each signs a request, sends it, waits for
the answer and only then sends the next, over kept-alive connections, one per
sender. To take less of the cores the server shares with it, a sender writes its
HTTP/1.1 request in one buffer and reads the answer with net/http's parser; https://
URLs go through net/http's client. Every request
is a new event: a new event id and, for stripe, a new invoice. --duplicates F makes a
fraction F of the requests resend an event the same sender had sent before (answered
duplicate). A run is --count requests, or as many as fit in --duration (default 10s).

Modes (--mode):
  sync     (default) the endpoint is sync with the billing handler: each request is
           an invoice.paid of a new invoice, applied in the request's transaction
           (receipt, invoice upsert, ledger entry, outbox message) and answered
           processed. The server runs as serve runs it, workers and dispatcher too.
  accept   the endpoint is async: each request commits a pending receipt and is
           answered accepted. No worker may run while this is measured, and serve
           always runs workers (worker.concurrency is at least 1), so bench serves the
           endpoint's handler on its own HTTP server, with serve's timeouts, without
           the workers. The receipts stay pending.
  drain    first a backlog of --count (default 10000) accepted receipts, as accept
           does over HTTP (--backlog http) or through Inbox.Receive without HTTP
           (--backlog receive, faster); then --workers workers start, and bench
           measures how fast they empty it. It prints the rate of each tenth of the
           backlog: a rate that falls tenth after tenth is a collapse (scans that
           grow, dead rows), not noise.
  forward  the endpoint is async with handler forward, to an HTTP sink that bench
           runs and that records every delivery (--workers workers, --dispatchers
           outbox deliveries in flight). Measured until every accepted event is
           delivered: the rate is delivered events/s, with the latency from a
           request's start to its event's delivery.

--url URL sends to a server that is already running instead (--mode sync or accept,
which then only say which answer a new event should get: bench notes others), signed
with --secret-env (or --secret), --provider and --option as send signs. bench then
starts nothing; with --database-url it also reads that database's settings and runs
pgbench there.

pgbench. On PostgreSQL, when pgbench is installed (--pgbench names it; off skips it),
sync and accept also run pgbench in the same run, at the same concurrency (clients),
for the same --duration or the same number of transactions as --count, in a fresh
schema with the same tables (hookinbox_pgbench_<random>, dropped after), on the SQL
that hookinbox sends for one request: bench/accept.pgbench (one INSERT ... ON
CONFLICT DO NOTHING per commit) and bench/sync.pgbench (the billing transaction),
prepared (-M prepared) as pgx prepares it. The ratio hookinbox/pgbench is hookinbox's
rate divided by pgbench's transactions per second: the share of the database's own
limit for that SQL that hookinbox reaches with HTTP, signature checks, JSON, its
handlers and its pool in front of it (1.0: none of that costs throughput). pgbench
opens one session per client, hookinbox's pool at most pool_max_conns (by default
serve's: enough for every worker, flusher and outbox delivery at once; a
?pool_max_conns=N in --database-url sets it), so the ratio can exceed 1 where fewer
sessions do better, and so it can where hookinbox
commits several deliveries in one transaction (group commit): the scripts commit
each delivery alone, as the seed's receiver does. With --duplicates there is no
ratio: duplicates write nothing, pgbench's transactions are all new events. drain
and forward have no pgbench anchor: what they measure, the workers' claims and
processing and the dispatcher's deliveries, is not one SQL script that pgbench could
run in their place. The load generator, the server, pgbench and the database share
this machine. Before hookinbox's run and before pgbench's, bench runs CHECKPOINT
(when its role may: a superuser or pg_checkpoint), so that neither run starts with
a checkpoint due and the other not.

The figures depend on the settings printed with them. This repository's CI machine
runs its PostgreSQL with autovacuum off (SHOW autovacuum), and so does a benchmark
there: nothing is vacuumed or analyzed during a run, the dead rows of the workers'
and the dispatcher's updates stay, and long runs are not what a production server
with autovacuum would show.

Ctrl-C stops sending, prints what was measured and drops the schemas. Progress goes
to stderr once a second, only when it is a terminal. The server's logs are
formatted as serve formats them and discarded, or written to --server-log FILE.

Exit codes: 0 when every request was answered 2xx (and, for drain and forward, every
event was processed or delivered within --timeout), 1 otherwise, 2 usage error.`,
		Example: `  # the sync receive path, 8 senders for 10 s, beside pgbench
  hookinbox bench --mode sync --concurrency 8 --duration 10s

  # async accepts, 32 senders, on another PostgreSQL, as JSON
  hookinbox bench --mode accept --concurrency 32 --database-url postgres://postgres@db:5432/app --json

  # how fast 4 workers drain 20000 receipts
  hookinbox bench --mode drain --count 20000 --workers 4

  # a running server
  hookinbox bench --url http://127.0.0.1:8080/webhooks/stripe --secret-env STRIPE_WEBHOOK_SECRET --duration 30s`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.checkBenchFlags(cmd, &f); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			if cpuProfile != "" {
				// Where the load generator and the in-process server spend the
				// cores, for `go tool pprof`.
				out, err := os.Create(cpuProfile)
				if err != nil {
					return fmt.Errorf("error creating the CPU profile: %w", err)
				}
				defer out.Close()
				if err := pprof.StartCPUProfile(out); err != nil {
					return fmt.Errorf("error starting the CPU profile: %w", err)
				}
				defer pprof.StopCPUProfile()
			}
			return a.bench(ctx, &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.mode, "mode", benchSync, "what to measure: sync, accept, drain or forward")
	fl.IntVar(&f.count, "count", 0, "requests to send (drain: the backlog, default 10000); not with --duration")
	fl.DurationVar(&f.duration, "duration", 0, "send for this long (default 10s without --count)")
	fl.IntVar(&f.concurrency, "concurrency", 8, "closed-loop senders (requests in flight), and pgbench's clients")
	fl.Float64Var(&f.duplicates, "duplicates", 0, "fraction of requests that resend an earlier event, 0 to 0.9")
	fl.StringVar(&f.databaseURL, "database-url", "", "postgres://... or sqlite:PATH (default "+benchDefaultDatabase+"; HOOKINBOX_DATABASE_URL is not read)")
	fl.StringVar(&f.schema, "schema", "", "PostgreSQL schema to use and keep, created and migrated if needed (default a fresh hookinbox_bench_<random>, dropped)")
	fl.BoolVar(&f.keep, "keep", false, "keep the fresh schema hookinbox_bench_<random> for a look afterwards")
	fl.StringVar(&f.url, "url", "", "send to this running endpoint instead of a server in this process (sync or accept)")
	fl.StringVar(&f.provider, "provider", "stripe", "signature scheme and event shape (another than stripe: with --url or --mode forward)")
	fl.StringToStringVar(&f.options, "option", nil, "scheme option key=value for --url, as in the endpoint's options (repeatable)")
	fl.StringVar(&f.secret, "secret", "", "signing secret of the --url endpoint (prefer --secret-env)")
	fl.StringVar(&f.secretEnv, "secret-env", "", "environment variable holding the --url endpoint's signing secret")
	fl.IntVar(&f.workers, "workers", 4, "workers (worker.concurrency) of drain and forward")
	fl.IntVar(&f.dispatchers, "dispatchers", config.DefaultOutboxConcurrency, "outbox deliveries in flight (outbox.concurrency) of forward")
	fl.IntVar(&f.syncFlushers, "sync-flushers", 0, "shared transactions of sync deliveries in flight (group_commit.sync.flushers; default the server's)")
	fl.IntVar(&f.acceptFlushers, "accept-flushers", 0, "batch inserts of accepted receipts in flight (group_commit.accept.flushers; default the server's)")
	fl.StringVar(&f.backlog, "backlog", "http", "how drain inserts its backlog: http (accepted over HTTP) or receive (Inbox.Receive, no HTTP)")
	fl.StringVar(&f.pgbench, "pgbench", "pgbench", `the pgbench binary for the anchor of sync and accept, or "off"`)
	fl.DurationVar(&f.timeout, "timeout", 10*time.Minute, "how long drain and forward wait for the last event to be processed or delivered")
	fl.DurationVar(&f.requestTimeout, "request-timeout", 30*time.Second, "timeout of each request")
	fl.StringVar(&f.serverLog, "server-log", "", "write the in-process server's JSON log lines to this file (default: discarded)")
	fl.BoolVar(&f.json, "json", false, "print one JSON object instead of text")
	fl.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the run (load generator and server) to this file")
	return cmd
}

// schemaName is what --schema accepts: a plain lower-case identifier, which needs no
// quoting in search_path or in SQL.
var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// checkBenchFlags refuses what bench cannot do, before it connects to anything.
func (a *app) checkBenchFlags(cmd *cobra.Command, f *benchFlags) error {
	changed := cmd.Flags().Changed
	switch f.mode {
	case benchSync, benchAccept, benchDrain, benchForward:
	default:
		return usagef("--mode %q: want sync, accept, drain or forward", f.mode)
	}
	switch {
	case f.count < 0:
		return usagef("--count must be at least 1")
	case changed("count") && f.count == 0:
		return usagef("--count must be at least 1")
	case changed("duration") && f.duration <= 0:
		return usagef("--duration must be positive")
	case changed("count") && changed("duration"):
		return usagef("give --count or --duration, not both")
	case f.concurrency < 1:
		return usagef("--concurrency must be at least 1")
	case f.duplicates < 0 || f.duplicates > 0.9:
		return usagef("--duplicates must be between 0 and 0.9, got %g", f.duplicates)
	case f.workers < 1:
		return usagef("--workers must be at least 1")
	case f.dispatchers < 1:
		return usagef("--dispatchers must be at least 1")
	case f.timeout <= 0:
		return usagef("--timeout must be positive")
	case f.requestTimeout <= 0:
		return usagef("--request-timeout must be positive")
	case f.backlog != "http" && f.backlog != "receive":
		return usagef("--backlog %q: want http or receive", f.backlog)
	case f.schema != "" && !schemaName.MatchString(f.schema):
		return usagef("--schema %q: want a lower-case identifier (letters, digits, _)", f.schema)
	case f.schema != "" && changed("keep"):
		return usagef("--schema is always kept; --keep is for the fresh schema")
	}
	if f.mode == benchDrain {
		switch {
		case changed("duration"):
			return usagef("--mode drain measures a backlog of --count receipts, not a --duration")
		case f.duplicates > 0:
			return usagef("--duplicates: --mode drain's backlog is distinct receipts")
		}
		if f.count == 0 {
			f.count = benchDefaultDrainCount
		}
	} else if changed("backlog") {
		return usagef("--backlog is for --mode drain")
	}
	if f.count == 0 && f.duration == 0 {
		f.duration = 10 * time.Second
	}
	if f.url != "" {
		switch {
		case f.mode == benchDrain || f.mode == benchForward:
			return usagef("--mode %s needs the server in this process (its workers, its sink): not with --url", f.mode)
		case changed("schema") || changed("keep") || changed("server-log") || changed("workers") || changed("dispatchers"):
			return usagef("--schema, --keep, --server-log, --workers and --dispatchers are for the server in this process, not --url")
		case f.secret != "" && f.secretEnv != "":
			return usagef("give --secret or --secret-env, not both")
		case f.secret == "" && f.secretEnv == "":
			return usagef("--url: no signing secret: pass --secret-env VAR (or --secret)")
		}
		if f.secretEnv != "" {
			if v, _ := a.lookupEnv(f.secretEnv); v == "" {
				return usagef("--secret-env: environment variable %s is empty or unset", f.secretEnv)
			}
		}
	} else {
		switch {
		case f.secret != "" || f.secretEnv != "" || len(f.options) > 0:
			return usagef("--secret, --secret-env and --option sign for a --url endpoint; the server in this process gets a random secret")
		case f.provider != "stripe" && f.mode != benchForward:
			return usagef("--provider %s: --mode %s uses the billing handler, which takes Stripe's events (other providers: --mode forward or --url)", f.provider, f.mode)
		}
	}
	if _, ok := templates[f.provider]; !ok || notBenched[f.provider] {
		return usagef("--provider %s: want one of %s", f.provider, strings.Join(flagProviders(), ", "))
	}
	if f.databaseURL != "" {
		if _, err := config.ParseDatabaseURL(f.databaseURL, config.SourceFlag); err != nil {
			return usagef("--database-url: %v", err)
		}
	}
	return nil
}

// notBenched are the providers send signs for that bench's generator cannot load:
// its events differ only in the id it writes into one template body, and its
// in-process server takes a secret. discord and sendgrid take public keys, linear's
// body carries a signing time that goes stale during a run, and twilio and zoom
// derive their ids from bodies the generator does not vary as they need.
var notBenched = map[string]bool{"discord": true, "sendgrid": true, "linear": true, "twilio": true, "zoom": true}

// flagProviders lists the providers bench signs for.
func flagProviders() []string {
	var names []string
	for name := range templates {
		if !notBenched[name] {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// bench runs the measurement f describes and prints it.
func (a *app) bench(ctx context.Context, f *benchFlags) error {
	r := &benchReport{
		Mode: f.mode, Concurrency: f.concurrency, Count: f.count,
		DurationSeconds: f.duration.Seconds(), Duplicates: f.duplicates,
		Settings: hostSettings(),
	}
	progress := newProgress(a.stderr)
	var err error
	if f.url != "" {
		err = a.benchRemote(ctx, f, r, progress)
	} else {
		err = a.benchInProcess(ctx, f, r, progress)
	}
	progress.untrack()
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		r.Interrupted = true
	}
	r.finish()
	if f.json {
		if err := r.writeJSON(a.stdout); err != nil {
			return err
		}
	} else {
		r.writeText(a.stdout)
	}
	return r.failure()
}

// benchEnvSecret is the variable the generated config reads the random secret from.
const benchEnvSecret = "HOOKINBOX_BENCH_SECRET"

// isTerminal reports whether w is a terminal, for the progress line.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// benchRemote sends to a server that is already running. With --database-url it
// also reads that database's settings and runs the pgbench anchor there.
func (a *app) benchRemote(ctx context.Context, f *benchFlags, r *benchReport, p *progress) error {
	r.Target = f.url
	secret := f.secret
	if f.secretEnv != "" {
		secret, _ = a.lookupEnv(f.secretEnv)
	}
	signer, err := hookinboxtest.SignerFor(f.provider, []string{secret}, f.options)
	if err != nil {
		return usagef("--provider %s: %v", f.provider, strings.TrimPrefix(err.Error(), "hookinboxtest: "))
	}
	gen, err := newEventGen(f.provider, f.options)
	if err != nil {
		return err
	}
	var admin *pgxpool.Pool
	if f.databaseURL != "" {
		db, _ := config.ParseDatabaseURL(f.databaseURL, config.SourceFlag)
		r.Database = db.String()
		if db.Driver == config.DriverSQLite {
			r.Settings.Database = "sqlite"
		} else {
			if admin, err = connectAdmin(ctx, f.databaseURL); err != nil {
				return err
			}
			defer admin.Close()
			r.Settings.readPostgres(ctx, admin, "")
			r.Settings.checkpoint(ctx, admin)
		}
	}
	lf := &loadFlags{f: f, signer: signer, gen: gen, cpu: newCPUMeter("bench (load generator)", f.databaseURL)}
	spec, answered := lf.spec(f.url)
	p.track(f.mode, "requests", answered.Load)
	res := runLoad(ctx, spec)
	p.untrack()
	r.setLoad(res)
	r.setRate(r.RequestRate, "req/s")
	if ctx.Err() != nil {
		return nil
	}
	if f.databaseURL == "" {
		r.Pgbench = &pgbenchReport{Skipped: "--url without --database-url: bench does not know the server's database"}
		return nil
	}
	// The anchor's schema has the tables of the mode's generated config.
	cfg, _, err := benchConfig(f.mode, "stripe", 1, 1, "")
	if err != nil {
		return err
	}
	anchorGen, err := newEventGen("stripe", nil)
	if err != nil {
		return err
	}
	r.Pgbench = runPgbenchFor(ctx, f, admin, f.databaseURL, cfg, anchorGen, &r.Settings)
	return nil
}
