package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/server"
)

// The pgbench anchors: the SQL hookinbox sends for one request of --mode accept and
// --mode sync, for pgbench to send without anything in front. bench/accept.pgbench and
// bench/sync.pgbench are the same text (a test keeps them so), for running by hand or
// with bench/pgbench.sh.

// pgbenchAccept is bench/accept.pgbench.
const pgbenchAccept = `-- The SQL of one accept on an async endpoint: the anchor of hookinbox bench --mode
-- accept. The receipt insert of one delivery (driver/pgxdriver/queries.go,
-- sqlInboxInsert), committed on its own, with the values the driver binds for a new
-- pending receipt: not processed, no outcome, 0 attempts, no error, no delay,
-- max_attempts 10 (the workers' default). The event's JSON is a bound parameter, as
-- pgx binds it, so that PostgreSQL parses it at every insert, as it does for hookinbox.
-- One delivery per commit is the seed's receiver; hookinbox may commit several
-- receipts together (group commit), and the ratio to this script shows what that gains.
--
--   pgbench -n -M prepared -D seq=0 -D payload=JSON -f bench/accept.pgbench
--
-- :seq counts each client's transactions; with :client_id it makes every event id new.
\set seq :seq + 1
INSERT INTO hookinbox_inbox
       (provider, endpoint, event_id, event_type, payload,
        processed_at, outcome, attempts, last_error, available_at, max_attempts, state)
VALUES ('stripe', 'bench', 'evt_pgb_' || :client_id || '_' || :seq, 'invoice.paid', :payload,
        CASE WHEN false THEN now() END, NULL, 0::integer, NULL,
        now() + make_interval(secs => 0::float8), 10::integer,
        CASE WHEN false THEN 'processed'
             WHEN 0::integer >= 10::integer THEN 'needs_review'
             ELSE 'pending' END)
ON CONFLICT (provider, endpoint, event_id) DO NOTHING
RETURNING true;
`

// pgbenchSync is bench/sync.pgbench.
const pgbenchSync = `-- The SQL of one sync delivery to the billing handler: the anchor of hookinbox bench
-- --mode sync. An invoice.paid of a new invoice, as Inbox.Receive and billing's paid
-- handler send it, in one transaction: the receipt, inserted already processed
-- (driver/pgxdriver/queries.go, sqlInboxInsert); the invoice upsert, which reads the
-- status back in the same statement (billing/queries.go, sqlInvoicePay); the ledger
-- entry (sqlLedgerBookPayment); the InvoicePaymentBooked outbox message
-- (driver/pgxdriver/queries.go, sqlOutboxInsert); commit. The sync path inserts the
-- receipt as processed, so no statement marks it processed afterwards, and billing's
-- second status read (sqlInvoiceStatus) runs only when the upsert changed nothing,
-- never for a new invoice. The event's and the message's JSON are bound parameters, as
-- pgx binds them. One delivery per commit is the seed's receiver; hookinbox may run
-- several deliveries in one transaction (group commit, a savepoint each), and the
-- ratio to this script shows what that gains.
--
--   pgbench -n -M prepared -D seq=0 -D payload=JSON -D message=JSON -f bench/sync.pgbench
--
-- :seq counts each client's transactions; with :client_id it makes every event id and
-- invoice id new.
\set seq :seq + 1
BEGIN;
INSERT INTO hookinbox_inbox
       (provider, endpoint, event_id, event_type, payload,
        processed_at, outcome, attempts, last_error, available_at, max_attempts, state)
VALUES ('stripe', 'bench', 'evt_pgb_' || :client_id || '_' || :seq, 'invoice.paid', :payload,
        CASE WHEN true THEN now() END, 'processed', 0::integer, NULL,
        now() + make_interval(secs => 0::float8), 10::integer,
        CASE WHEN true THEN 'processed'
             WHEN 0::integer >= 10::integer THEN 'needs_review'
             ELSE 'pending' END)
ON CONFLICT (provider, endpoint, event_id) DO NOTHING
RETURNING true;
WITH upsert AS (
    INSERT INTO invoices (id, customer_id, status, amount_paid, currency, paid_at)
    VALUES ('in_pgb_' || :client_id || '_' || :seq, 'cus_hookinbox_bench', 'paid', 1000, 'usd', now())
    ON CONFLICT (id) DO UPDATE
       SET status      = 'paid',
           amount_paid = EXCLUDED.amount_paid,
           currency    = coalesce(EXCLUDED.currency, invoices.currency),
           paid_at     = coalesce(invoices.paid_at, EXCLUDED.paid_at),
           updated_at  = now()
     WHERE invoices.status NOT IN ('paid', 'void')
    RETURNING status
)
SELECT status FROM upsert
UNION ALL
SELECT status FROM invoices
 WHERE id = 'in_pgb_' || :client_id || '_' || :seq AND NOT EXISTS (SELECT 1 FROM upsert);
INSERT INTO ledger_entries (invoice_id, kind, amount, currency, event_id)
VALUES ('in_pgb_' || :client_id || '_' || :seq, 'payment', 1000, 'usd', 'evt_pgb_' || :client_id || '_' || :seq)
ON CONFLICT (invoice_id, kind) DO NOTHING
RETURNING id;
INSERT INTO hookinbox_outbox (aggregate_type, aggregate_id, event_type, payload,
                    source_provider, source_endpoint, source_event_id, destination)
VALUES ('Invoice', 'in_pgb_' || :client_id || '_' || :seq, 'InvoicePaymentBooked', :message,
        'stripe', 'bench', 'evt_pgb_' || :client_id || '_' || :seq, NULL)
RETURNING id;
COMMIT;
`

// pgbenchScripts are the anchors by mode, with their file names in bench/.
var pgbenchScripts = map[string]struct{ file, text string }{
	benchAccept: {"accept.pgbench", pgbenchAccept},
	benchSync:   {"sync.pgbench", pgbenchSync},
}

// pgbenchReport is pgbench's run beside hookinbox's.
type pgbenchReport struct {
	Script                string          `json:"script,omitempty"`
	Clients               int             `json:"clients,omitempty"`
	Threads               int             `json:"threads,omitempty"`
	DurationSeconds       int             `json:"duration_seconds,omitempty"`
	TransactionsPerClient int             `json:"transactions_per_client,omitempty"`
	Transactions          int64           `json:"transactions"`
	Failed                int64           `json:"failed"`
	TPS                   float64         `json:"tps"`
	Latency               *latencySummary `json:"latency_ms,omitempty"`
	// CPU is pgbench's and the server's CPU time per transaction (Linux, see cpuMeter).
	CPU *cpuReport `json:"cpu,omitempty"`
	// Skipped says why pgbench did not run; Error why it failed.
	Skipped string `json:"skipped,omitempty"`
	Error   string `json:"error,omitempty"`
}

// runPgbenchFor runs the anchor of f.mode on a fresh schema of the database at raw,
// migrated with cfg's migration lines, at f's concurrency, for f's duration or count.
// It runs CHECKPOINT first, as before hookinbox's run (settings.checkpoint).
func runPgbenchFor(ctx context.Context, f *benchFlags, admin *pgxpool.Pool, raw string, cfg *config.Config, gen *eventGen,
	settings *benchSettings) *pgbenchReport {
	script, ok := pgbenchScripts[f.mode]
	switch {
	case !ok:
		return &pgbenchReport{Skipped: fmt.Sprintf("--mode %s has no pgbench anchor", f.mode)}
	case admin == nil:
		return &pgbenchReport{Skipped: "the database is SQLite"}
	case f.pgbench == "off":
		return &pgbenchReport{Skipped: "--pgbench off"}
	}
	bin, err := exec.LookPath(f.pgbench)
	if err != nil {
		return &pgbenchReport{Skipped: fmt.Sprintf("%s not found (--pgbench): install PostgreSQL's client programs for the anchor", f.pgbench)}
	}
	pr := &pgbenchReport{Script: "bench/" + script.file, Clients: f.concurrency, Threads: min(f.concurrency, runtime.NumCPU())}
	fail := func(format string, args ...any) *pgbenchReport {
		pr.Error = fmt.Sprintf(format, args...)
		return pr
	}

	schema := "hookinbox_pgbench_" + randomHex(4)
	sctx := context.WithoutCancel(ctx)
	if _, err := admin.Exec(sctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return fail("error creating schema %s: %v", schema, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(sctx, time.Minute)
		defer cancel()
		_, _ = admin.Exec(dctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	}()
	db, err := schemaDatabase(raw, schema)
	if err != nil {
		return fail("%v", err)
	}
	b, err := server.Open(sctx, db, cfg, server.OpenOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return fail("%v", err)
	}
	_, err = b.Migrate(sctx)
	b.Close()
	if err != nil {
		return fail("error migrating schema %s: %v", schema, err)
	}

	dir, err := os.MkdirTemp("", "hookinbox-bench-")
	if err != nil {
		return fail("%v", err)
	}
	defer os.RemoveAll(dir)
	scriptPath := filepath.Join(dir, script.file)
	if err := os.WriteFile(scriptPath, []byte(script.text), 0o600); err != nil {
		return fail("%v", err)
	}
	conn, err := libpqURL(raw)
	if err != nil {
		return fail("%v", err)
	}
	args := []string{"-n", "-M", "prepared", "-c", strconv.Itoa(pr.Clients), "-j", strconv.Itoa(pr.Threads)}
	if f.count > 0 {
		pr.TransactionsPerClient = (f.count + f.concurrency - 1) / f.concurrency
		args = append(args, "-t", strconv.Itoa(pr.TransactionsPerClient))
	} else {
		pr.DurationSeconds = max(1, int(math.Ceil(f.duration.Seconds())))
		args = append(args, "-T", strconv.Itoa(pr.DurationSeconds))
	}
	payload, message := pgbenchPayloads(gen)
	args = append(args, "-D", "seq=0", "-D", "payload="+payload, "-D", "message="+message,
		"-l", "--log-prefix", filepath.Join(dir, "log"), "-f", scriptPath, conn)
	settings.checkpoint(ctx, admin)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "PGOPTIONS=-c search_path="+schema, "PGAPPNAME=hookinbox-bench-pgbench")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	endCPU := newCPUMeter("pgbench", raw).start("transaction")
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		return fail("pgbench: %v: %s", err, msg)
	}
	parsePgbench(stdout.String(), pr)
	pr.CPU = endCPU(pr.Transactions, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
	lat, err := pgbenchLatencies(dir)
	if err != nil {
		return fail("%v", err)
	}
	pr.Latency = summarize(lat)
	return pr
}

// pgbenchPayloads are the JSON values pgbench binds: an event as bench sends it, and
// the billing handler's InvoicePaymentBooked message.
func pgbenchPayloads(gen *eventGen) (payload, message string) {
	m, _ := json.Marshal(map[string]any{
		"invoice_id": "in_pgb_0_1", "customer_id": "cus_hookinbox_bench",
		"amount": 1000, "currency": "usd", "ledger_entry_id": 1,
	})
	return string(gen.sample("evt_pgb_0_1", "in_pgb_0_1")), string(m)
}

var (
	pgbenchTPS       = regexp.MustCompile(`(?m)^tps = ([0-9.]+)`)
	pgbenchProcessed = regexp.MustCompile(`(?m)^number of transactions actually processed: ([0-9]+)`)
	pgbenchFailed    = regexp.MustCompile(`(?m)^number of failed transactions: ([0-9]+)`)
)

// parsePgbench reads pgbench's summary.
func parsePgbench(out string, pr *pgbenchReport) {
	if m := pgbenchTPS.FindStringSubmatch(out); m != nil {
		tps, _ := strconv.ParseFloat(m[1], 64)
		pr.TPS = round1(tps)
	}
	if m := pgbenchProcessed.FindStringSubmatch(out); m != nil {
		pr.Transactions, _ = strconv.ParseInt(m[1], 10, 64)
	}
	if m := pgbenchFailed.FindStringSubmatch(out); m != nil {
		pr.Failed, _ = strconv.ParseInt(m[1], 10, 64)
	}
}

// pgbenchLatencies reads every transaction's latency from pgbench's per-transaction
// logs (-l): "client_id transaction_no time script_no time_epoch time_us", time in
// microseconds, or "failed" / "skipped".
func pgbenchLatencies(dir string) ([]time.Duration, error) {
	files, err := filepath.Glob(filepath.Join(dir, "log.*"))
	if err != nil {
		return nil, err
	}
	var lat []time.Duration
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		lat, err = appendLatencies(lat, f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("error reading pgbench's log %s: %w", name, err)
		}
	}
	slices.Sort(lat)
	return lat, nil
}

func appendLatencies(lat []time.Duration, r io.Reader) ([]time.Duration, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 {
			continue
		}
		us, err := strconv.ParseInt(fields[2], 10, 64)
		if err != nil {
			continue // failed or skipped
		}
		lat = append(lat, time.Duration(us)*time.Microsecond)
	}
	return lat, sc.Err()
}

// libpqParams are the URL parameters libpq knows; pgx's own (pool_max_conns,
// search_path as a run-time parameter, ...) are dropped for pgbench, which sets the
// schema with PGOPTIONS.
var libpqParams = map[string]bool{
	"host": true, "hostaddr": true, "port": true, "dbname": true, "user": true, "password": true,
	"passfile": true, "channel_binding": true, "connect_timeout": true, "client_encoding": true,
	"options": true, "application_name": true, "fallback_application_name": true,
	"keepalives": true, "keepalives_idle": true, "keepalives_interval": true, "keepalives_count": true,
	"tcp_user_timeout": true, "sslmode": true, "sslcompression": true, "sslcert": true, "sslkey": true,
	"sslpassword": true, "sslrootcert": true, "sslcrl": true, "sslcrldir": true, "sslsni": true,
	"requirepeer": true, "ssl_min_protocol_version": true, "ssl_max_protocol_version": true,
	"gssencmode": true, "krbsrvname": true, "gsslib": true, "service": true,
	"target_session_attrs": true, "load_balance_hosts": true,
}

// libpqURL is raw with only the parameters libpq accepts.
func libpqURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("cannot parse the database URL for pgbench")
	}
	q := u.Query()
	for k := range q {
		if !libpqParams[k] {
			q.Del(k)
		}
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// benchSettings are the settings a run's figures depend on.
type benchSettings struct {
	Database          string `json:"database,omitempty"` // postgres or sqlite
	ServerVersion     string `json:"server_version,omitempty"`
	Fsync             string `json:"fsync,omitempty"`
	SynchronousCommit string `json:"synchronous_commit,omitempty"`
	Autovacuum        string `json:"autovacuum,omitempty"`
	// PoolMaxConns is the in-process server's pool size.
	PoolMaxConns int32 `json:"pool_max_conns,omitempty"`
	// SyncFlushers is --sync-flushers, when given.
	SyncFlushers int `json:"sync_flushers,omitempty"`
	// AcceptFlushers is --accept-flushers, when given.
	AcceptFlushers int    `json:"accept_flushers,omitempty"`
	Workers        int    `json:"workers,omitempty"`
	Dispatchers    int    `json:"dispatchers,omitempty"`
	Cores          int    `json:"cores"`
	GOMAXPROCS     int    `json:"gomaxprocs"`
	GoVersion      string `json:"go_version"`
	// LoadAverage is the machine's 1-minute load average before the run (Linux): on a
	// machine that other work shares, the figures are of what was left.
	LoadAverage float64 `json:"load_average,omitempty"`
	// SettingsError says why the database's settings could not be read.
	SettingsError string `json:"settings_error,omitempty"`
	// Checkpoint is "before each run" when bench ran CHECKPOINT before hookinbox's
	// run and before pgbench's, else why not (the role may not).
	Checkpoint string `json:"checkpoint,omitempty"`
}

// checkpoint runs CHECKPOINT before a measured run, so that no run starts with a
// checkpoint due: after one, every page's first change writes the whole page to the
// WAL, and a checkpoint that falls in one run and not the other moves their ratio.
// It needs a superuser or pg_checkpoint; without, the settings say so and the runs go
// on.
func (s *benchSettings) checkpoint(ctx context.Context, admin *pgxpool.Pool) {
	if s.Checkpoint != "" && s.Checkpoint != checkpointed {
		return // refused once: it will be again
	}
	if _, err := admin.Exec(ctx, "CHECKPOINT"); err != nil {
		s.Checkpoint = "not run: " + err.Error()
		return
	}
	s.Checkpoint = checkpointed
}

const checkpointed = "before each run"

func hostSettings() benchSettings {
	s := benchSettings{Cores: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version()}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			s.LoadAverage, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	return s
}

// readPostgres reads the server's settings; serverURL, when set, is the URL of the
// in-process server's pool, whose size it reports.
func (s *benchSettings) readPostgres(ctx context.Context, admin *pgxpool.Pool, serverURL string) {
	s.Database = "postgres"
	for _, q := range []struct {
		name string
		dst  *string
	}{
		{"server_version", &s.ServerVersion}, {"fsync", &s.Fsync},
		{"synchronous_commit", &s.SynchronousCommit}, {"autovacuum", &s.Autovacuum},
	} {
		if err := admin.QueryRow(ctx, "SHOW "+q.name).Scan(q.dst); err != nil {
			s.SettingsError = err.Error()
			return
		}
	}
	if serverURL != "" {
		if pcfg, err := pgxpool.ParseConfig(serverURL); err == nil {
			s.PoolMaxConns = pcfg.MaxConns
		}
	}
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
