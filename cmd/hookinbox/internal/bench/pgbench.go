package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
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

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
)

// PgbenchReport is pgbench's run beside hookinbox's.
type PgbenchReport struct {
	Script                string          `json:"script,omitempty"`
	Clients               int             `json:"clients,omitempty"`
	Threads               int             `json:"threads,omitempty"`
	DurationSeconds       int             `json:"duration_seconds,omitempty"`
	TransactionsPerClient int             `json:"transactions_per_client,omitempty"`
	Transactions          int64           `json:"transactions"`
	Failed                int64           `json:"failed"`
	TPS                   float64         `json:"tps"`
	Latency               *LatencySummary `json:"latency_ms,omitempty"`
	// CPU is pgbench's and the server's CPU time per transaction (Linux, see cpuMeter).
	CPU *CPUReport `json:"cpu,omitempty"`
	// Skipped says why pgbench did not run; Error why it failed.
	Skipped string `json:"skipped,omitempty"`
	Error   string `json:"error,omitempty"`
}

// runPgbench runs the anchor of c.Mode on a fresh schema of the database at raw,
// migrated with cfg's migration lines, at f's concurrency, for f's duration or count.
// It runs CHECKPOINT first, as before hookinbox's run (settings.checkpoint).
func runPgbench(ctx context.Context, c *Config, admin *pgxpool.Pool, raw string, cfg *config.Config, gen *eventGen,
	settings *Settings) *PgbenchReport {
	script, ok := pgbenchScripts[c.Mode]
	switch {
	case !ok:
		return &PgbenchReport{Skipped: fmt.Sprintf("--mode %s has no pgbench anchor", c.Mode)}
	case !c.anchor(AnchorPgbench):
		return &PgbenchReport{Skipped: "not in --anchor"}
	case admin == nil:
		return &PgbenchReport{Skipped: "the database is SQLite"}
	case c.Pgbench == "off":
		return &PgbenchReport{Skipped: "--pgbench off"}
	}
	bin, err := exec.LookPath(c.Pgbench)
	if err != nil {
		return &PgbenchReport{Skipped: fmt.Sprintf("%s not found (--pgbench): install PostgreSQL's client programs for the anchor", c.Pgbench)}
	}
	pr := &PgbenchReport{Script: "bench/" + script.file, Clients: c.Concurrency, Threads: min(c.Concurrency, runtime.NumCPU())}
	fail := func(format string, args ...any) *PgbenchReport {
		pr.Error = fmt.Sprintf(format, args...)
		return pr
	}

	schema, _, drop, err := anchorSchema(ctx, admin, raw, "hookinbox_pgbench_", cfg)
	if err != nil {
		return fail("%v", err)
	}
	defer drop()

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
	if c.Count > 0 {
		pr.TransactionsPerClient = (c.Count + c.Concurrency - 1) / c.Concurrency
		args = append(args, "-t", strconv.Itoa(pr.TransactionsPerClient))
	} else {
		pr.DurationSeconds = max(1, int(math.Ceil(c.Duration.Seconds())))
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
func parsePgbench(out string, pr *PgbenchReport) {
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
