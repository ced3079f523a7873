// Command river measures hookinbox's workers beside River's on the same work: a
// backlog of Stripe invoice.paid events, each applied with the billing domain's
// transaction (invoice upserted as paid, the payment booked once in the ledger, an
// outbox message), River's job completed in that same transaction with
// river.JobCompleteTx. See README.md.
//
//	cd bench/river && go run . --events 20000 --workers 32
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox"
)

type options struct {
	events             int
	workers            int
	pool               int
	databaseURL        string
	only               string
	json               bool
	poll               time.Duration
	timeout            time.Duration
	riverFetchCooldown time.Duration
	riverFetchPoll     time.Duration
	keepSchemas        bool
	statements         bool
	riverNoArgsIndex   bool
	batchSize          int
	analyze            bool

	log io.Writer
}

func (o *options) logf(format string, args ...any) {
	fmt.Fprintf(o.log, format+"\n", args...)
}

func main() {
	o := &options{}
	flag.IntVar(&o.events, "events", 20000, "events (River: jobs) in the backlog of each side")
	flag.IntVar(&o.workers, "workers", 32, "workers of each side: WorkerConfig.Concurrency, River's MaxWorkers of the one queue")
	flag.IntVar(&o.batchSize, "batch-size", 0, "hookinbox's WorkerConfig.BatchSize, receipts per claim and per transaction (0: the library's default; 1: one event per transaction, as River's one job per transaction)")
	flag.IntVar(&o.pool, "pool", 0, "connections in each side's pool (0: workers + 4)")
	flag.StringVar(&o.databaseURL, "database-url", "postgres://postgres@127.0.0.1:5432/test", "PostgreSQL to run on; each side creates and drops a schema of its own")
	flag.StringVar(&o.only, "only", "", "run one side only: river or hookinbox")
	flag.BoolVar(&o.json, "json", false, "print the report as JSON on stdout (progress goes to stderr)")
	flag.DurationVar(&o.poll, "poll", 10*time.Millisecond, "how often the database is polled for the end of a side's backlog once every commit is counted (before that, once a second)")
	flag.DurationVar(&o.timeout, "timeout", 30*time.Minute, "give up on a side after this long")
	flag.DurationVar(&o.riverFetchCooldown, "river-fetch-cooldown", 2*time.Millisecond, "River's FetchCooldown (River's default is 100ms, which caps a queue at MaxWorkers jobs per 100ms; 2ms is River's own benchmark's)")
	flag.DurationVar(&o.riverFetchPoll, "river-fetch-poll", 20*time.Millisecond, "River's FetchPollInterval (River's default is 1s; 20ms is River's own benchmark's)")
	flag.BoolVar(&o.statements, "statements", false, "also report the statements each side sent during its measured window, by SQL")
	flag.BoolVar(&o.riverNoArgsIndex, "river-no-args-index", false, "drop River's GIN index on river_job.args after its migrations (to see what indexing the carried payload costs River)")
	flag.BoolVar(&o.analyze, "analyze", false, "ANALYZE each side's tables after its setup (with autovacuum off nothing else does; the planner then has no statistics for the backlog)")
	flag.BoolVar(&o.keepSchemas, "keep-schemas", false, "keep each side's schema for inspection instead of dropping it")
	flag.Parse()
	if o.pool == 0 {
		o.pool = o.workers + 4
	}
	o.log = os.Stdout
	if o.json {
		o.log = os.Stderr
	}
	switch {
	case o.events < 1, o.workers < 1, o.pool < 1, o.poll <= 0, o.batchSize < 0:
		fmt.Fprintln(os.Stderr, "--events, --workers, --pool and --poll must be positive, --batch-size not negative")
		os.Exit(2)
	case o.only != "" && o.only != "river" && o.only != "hookinbox":
		fmt.Fprintf(os.Stderr, "--only %q: want river or hookinbox\n", o.only)
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// Report is the whole run, as printed with --json.
type Report struct {
	Events   int               `json:"events"`
	Workers  int               `json:"workers"`
	Pool     int               `json:"pool_conns"`
	Analyzed bool              `json:"analyzed"`
	Settings map[string]string `json:"settings"`
	Results  []*Result         `json:"results"`
	// Ratio is hookinbox's rate over River's, when both ran.
	Ratio float64 `json:"ratio_hookinbox_over_river,omitempty"`
	// OK is false when a side's end state is wrong (see each result's verified).
	OK bool `json:"ok"`
}

func run(ctx context.Context, o *options) error {
	admin, err := newAdminPool(ctx, o.databaseURL)
	if err != nil {
		return err
	}
	defer admin.Close()

	rep := &Report{Events: o.events, Workers: o.workers, Pool: o.pool, Analyzed: o.analyze, OK: true}
	if rep.Settings, err = settings(ctx, admin); err != nil {
		return err
	}
	if !o.json {
		printHeader(o, rep.Settings)
	}

	var river, hib *Result
	if o.only == "" || o.only == "river" {
		if river, err = runRiver(ctx, o, admin); err != nil {
			return fmt.Errorf("river: %w", err)
		}
		rep.Results = append(rep.Results, river)
		if !o.json {
			printResult(river)
		}
	}
	if o.only == "" || o.only == "hookinbox" {
		if hib, err = runHookinbox(ctx, o, admin); err != nil {
			return fmt.Errorf("hookinbox: %w", err)
		}
		rep.Results = append(rep.Results, hib)
		if !o.json {
			printResult(hib)
		}
	}
	if river != nil && hib != nil && river.PerSec > 0 {
		rep.Ratio = hib.PerSec / river.PerSec
	}
	for _, r := range rep.Results {
		if len(r.Verified.Problems) > 0 {
			rep.OK = false
		}
	}
	if o.json {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else if rep.Ratio > 0 {
		fmt.Printf("\nhookinbox/River = %.2f  (hookinbox %.0f events/s, River %.0f jobs/s)\n", rep.Ratio, hib.PerSec, river.PerSec)
	}
	if !rep.OK {
		return errors.New("a side's end state is wrong (see verified)")
	}
	return nil
}

func newAdminPool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("error parsing database URL: %w", err)
	}
	cfg.MaxConns = 2
	cfg.ConnConfig.RuntimeParams["application_name"] = appName + ":admin"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("error connecting to %s: %w", cfg.ConnConfig.Host, err)
	}
	return pool, nil
}

// settingNames are the server settings a run's figures depend on.
var settingNames = []string{
	"server_version", "fsync", "synchronous_commit", "autovacuum", "wal_sync_method",
	"full_page_writes", "commit_delay", "shared_buffers", "max_wal_size", "max_connections",
}

func settings(ctx context.Context, admin *pgxpool.Pool) (map[string]string, error) {
	s := map[string]string{}
	for _, name := range settingNames {
		var v string
		if err := admin.QueryRow(ctx, "SHOW "+name).Scan(&v); err != nil {
			return nil, fmt.Errorf("error reading setting %s: %w", name, err)
		}
		s[name] = v
	}
	s["GOMAXPROCS"] = fmt.Sprint(runtime.GOMAXPROCS(0))
	s["NumCPU"] = fmt.Sprint(runtime.NumCPU())
	s["go"] = runtime.Version()
	s["river"] = moduleVersion("github.com/riverqueue/river")
	s["hookinbox"] = hookinboxSource()
	s["loadavg"] = loadAvg()
	var others int
	if err := admin.QueryRow(ctx, `
SELECT count(*) FROM pg_stat_activity
 WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`).Scan(&others); err != nil {
		return nil, err
	}
	s["other_sessions"] = fmt.Sprint(others)
	return s, nil
}

// hookinboxSource says which hookinbox was measured: the replace directive builds
// the repository's working tree, so its commit and whether the library's files
// (Go, SQL, go.mod outside bench/) differ from it. Without git it says so.
func hookinboxSource() string {
	root := filepath.Join("..", "..")
	rev, err := exec.Command("git", "-C", root, "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "working tree at ../.. (no git information)"
	}
	out := "working tree of commit " + strings.TrimSpace(string(rev))
	st, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no", "--",
		":(glob)**/*.go", "go.mod", "go.sum", "**/*.sql", ":(exclude)bench").Output()
	if err == nil {
		n := 0
		for _, line := range strings.Split(string(st), "\n") {
			if strings.TrimSpace(line) != "" {
				n++
			}
		}
		if n > 0 {
			out += fmt.Sprintf(", with uncommitted changes to %d of its Go, SQL or go.mod files", n)
		} else {
			out += ", no uncommitted changes to its Go, SQL or go.mod files"
		}
	}
	return out
}

func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == path {
				return m.Version
			}
		}
	}
	return "unknown"
}

func printHeader(o *options, s map[string]string) {
	fmt.Printf("hookinbox's workers beside River's: %d Stripe invoice.paid events per side, %d workers, %d pool connections per side\n",
		o.events, o.workers, o.pool)
	fmt.Printf("PostgreSQL %s: fsync=%s synchronous_commit=%s autovacuum=%s wal_sync_method=%s full_page_writes=%s commit_delay=%s shared_buffers=%s max_wal_size=%s\n",
		s["server_version"], s["fsync"], s["synchronous_commit"], s["autovacuum"], s["wal_sync_method"],
		s["full_page_writes"], s["commit_delay"], s["shared_buffers"], s["max_wal_size"])
	if s["autovacuum"] == "off" {
		fmt.Println("autovacuum is OFF on this server (the CI machine's setting): the queue tables' dead tuples are never vacuumed during a run")
	}
	fmt.Printf("hookinbox measured: %s\n", s["hookinbox"])
	fmt.Printf("GOMAXPROCS=%s NumCPU=%s %s river %s; at start: load average %s, %s other sessions on the server\n",
		s["GOMAXPROCS"], s["NumCPU"], s["go"], s["river"], s["loadavg"], s["other_sessions"])
	argsIndex := "kept"
	if o.riverNoArgsIndex {
		argsIndex = "DROPPED (--river-no-args-index)"
	}
	wc := hookinbox.WorkerConfig{Concurrency: o.workers, BatchSize: o.batchSize}.WithDefaults()
	batch := "the library's default"
	if o.batchSize != 0 {
		batch = "--batch-size"
	}
	fmt.Printf("hookinbox: WorkerConfig Concurrency=%d BatchSize=%d (%s), Lease=%s, StatementTimeout=%s\n",
		wc.Concurrency, wc.BatchSize, batch, wc.Lease, wc.StatementTimeout)
	fmt.Printf("River: FetchCooldown=%s FetchPollInterval=%s, GIN index on river_job.args %s\n",
		o.riverFetchCooldown, o.riverFetchPoll, argsIndex)
	analyzed := "not analyzed after setup (autovacuum may analyze them during a run)"
	if s["autovacuum"] == "off" {
		analyzed = "not analyzed after setup (autovacuum is off: the planner has no statistics for them)"
	}
	if o.analyze {
		analyzed = "ANALYZEd after setup (--analyze)"
	}
	fmt.Printf("both: tables %s; end of a backlog polled every %s once all commits are counted, once a second before\n\n",
		analyzed, o.poll)
}

func printResult(r *Result) {
	name := fmt.Sprintf("%-10s", r.Side)
	rate := strings.TrimSuffix(r.Unit, "s") + "s/s"
	fmt.Printf("%s %d %s in %.3fs = %.0f %s  (last commit counted at %.3fs; %d attempts not processed)\n",
		name, r.Items, r.Unit, r.Seconds, r.PerSec, rate, r.LastCommitSeconds, r.Failed)
	var parts []string
	for _, s := range r.Slices {
		parts = append(parts, fmt.Sprintf("%.0f", s.PerSec))
	}
	fmt.Printf("%s by tenths of the backlog (%s): %s\n", strings.Repeat(" ", 10), rate, strings.Join(parts, " "))
	fmt.Printf("%s statements sent by the side's pool: %.2f/%s\n", strings.Repeat(" ", 10), r.StatementsPerItem, strings.TrimSuffix(r.Unit, "s"))
	for _, s := range r.BySQL {
		fmt.Printf("%s   %6.2f  %s\n", strings.Repeat(" ", 10), s.PerItem, s.SQL)
	}
	if d := r.DB; d != nil {
		fmt.Printf("%s database during the run: %.2f commits/%s, %.0f WAL bytes/%s, %d rollbacks (all sessions of the database; WAL of the cluster)\n",
			strings.Repeat(" ", 10), d.CommitsPerItem, strings.TrimSuffix(r.Unit, "s"), d.WALBytesPerItem, strings.TrimSuffix(r.Unit, "s"), d.Rollbacks)
	}
	if q := r.Queue; q != nil {
		fmt.Printf("%s %s at the end: %d updates (%d HOT), %d dead tuples, %.1f MB\n",
			strings.Repeat(" ", 10), q.Table, q.Updates, q.HOTUpdates, q.DeadTuples, float64(q.TotalBytes)/(1<<20))
	}
	if in := r.Interference; in != nil {
		warn := ""
		if in.BusySamples > 0 {
			warn = "  WARNING: other sessions were busy: not a clean measurement"
		}
		fmt.Printf("%s other sessions busy in %d of %d samples (at most %d at once)%s\n",
			strings.Repeat(" ", 10), in.BusySamples, in.Samples, in.OtherSessionsMax, warn)
	}
	v := r.Verified
	status := "ok"
	if len(v.Problems) > 0 {
		status = "WRONG: " + strings.Join(v.Problems, "; ")
	}
	fmt.Printf("%s verified: %d paid invoices, %d ledger entries, %d outbox rows, %d unfinished, %d attempts: %s\n\n",
		strings.Repeat(" ", 10), v.PaidInvoices, v.LedgerEntries, v.OutboxRows, v.Unfinished, v.Attempts, status)
}
