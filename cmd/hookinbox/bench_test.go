package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/bench"
	"github.com/hookinbox/hookinbox/internal/testdb"
	"github.com/hookinbox/hookinbox/internal/testnats"
)

// benchJSON is the part of bench --json the tests read: counts, never a rate or a
// time, which depend on the machine.
type benchJSON struct {
	Mode          string                `json:"mode"`
	Requests      int64                 `json:"requests"`
	Outcomes      map[string]int64      `json:"outcomes"`
	Errors        map[string]int64      `json:"errors"`
	ErrorCount    int64                 `json:"error_count"`
	Incomplete    string                `json:"incomplete"`
	Schema        string                `json:"schema"`
	DatabaseAfter *bench.DBCounts       `json:"database_after"`
	Drain         *bench.DrainReport    `json:"drain"`
	Forward       *bench.ForwardReport  `json:"forward"`
	Mixed         *bench.MixedReport    `json:"mixed"`
	Dispatch      *bench.DispatchReport `json:"dispatch"`
	Pgbench       *bench.PgbenchReport  `json:"pgbench"`
	Naive         *bench.NaiveReport    `json:"naive"`
	Ratio         *float64              `json:"ratio"`
	RatioNaive    *float64              `json:"ratio_naive"`
	Settings      bench.Settings        `json:"settings"`
	CPU           *bench.CPUReport      `json:"cpu"`
}

// TestBench_CountsAreWhatTheDatabaseHolds runs every mode of bench against a schema of
// its own and checks that what bench reports is what the database holds: 200
// requests, 200 receipts (mixed: 200 more to its sync endpoint), no error, and the
// anchors' 200 requests or transactions where they ran.
func TestBench_CountsAreWhatTheDatabaseHolds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mode    string
		args    []string
		outcome string
		// pending receipts and pending outbox messages afterwards; ledger entries.
		pending, outboxPending, ledger int64
		// receipts afterwards, when not 200.
		receipts int64
	}{
		{mode: "accept", args: []string{"--concurrency", "4"}, outcome: "accepted", pending: 200},
		{mode: "sync", args: []string{"--concurrency", "4"}, outcome: "processed", ledger: 200, outboxPending: 200},
		{mode: "drain", outcome: "accepted", ledger: 200, outboxPending: 200},
		{mode: "drain", args: []string{"--backlog", "receive"}, outcome: "accepted", ledger: 200, outboxPending: 200},
		{mode: "forward", args: []string{"--concurrency", "4"}, outcome: "accepted"},
		{mode: "forward", args: []string{"--concurrency", "4", "--sink", "nats"}, outcome: "accepted"},
		{mode: "mixed", args: []string{"--concurrency", "4", "--workers", "2"}, outcome: "accepted", receipts: 400, ledger: 400, outboxPending: 400},
		{mode: "mixed", args: []string{"--concurrency", "4", "--workers", "2", "--rounds", "3"}, outcome: "accepted", receipts: 1200, ledger: 1200, outboxPending: 1200},
	}
	for _, tt := range tests {
		name := strings.Join(append([]string{tt.mode}, tt.args...), "_")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := testdb.New(t)
			args := append([]string{"bench", "--mode", tt.mode, "--count", "200", "--json",
				"--database-url", testdb.URL(), "--schema", db.Schema}, tt.args...)
			var stream *testnats.Stream
			if slices.Contains(tt.args, "nats") {
				stream = testnats.New(t) // the test's NATS server; bench makes its own stream
				args = append(args, "--nats-url", stream.Conn.ConnectedUrl())
			}
			out := mustRun(t, childEnv(), args...)
			var r benchJSON
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("bench --json printed no JSON object: %v\n%s", err, out)
			}
			if r.Requests != 200 || r.ErrorCount != 0 || len(r.Errors) != 0 || r.Outcomes[tt.outcome] != 200 || r.Incomplete != "" {
				t.Fatalf("requests %d, errors %d %v, outcomes %v, incomplete %q; want 200 %s, none else:\n%s",
					r.Requests, r.ErrorCount, r.Errors, r.Outcomes, r.Incomplete, tt.outcome, out)
			}
			if r.Schema != db.Schema {
				t.Errorf("schema %q, want --schema %q", r.Schema, db.Schema)
			}

			var got bench.DBCounts
			ctx := context.Background()
			if err := db.Pool.QueryRow(ctx, `
SELECT (SELECT count(*) FROM hookinbox_inbox),
       (SELECT count(*) FROM hookinbox_inbox WHERE state = 'pending'),
       (SELECT count(*) FROM hookinbox_outbox),
       (SELECT count(*) FROM hookinbox_outbox WHERE state = 'pending')`).Scan(
				&got.Receipts, &got.ReceiptsPending, &got.OutboxMessages, &got.OutboxPending); err != nil {
				t.Fatal(err)
			}
			var ledger int64
			if tt.mode != "forward" {
				if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM ledger_entries`).Scan(&ledger); err != nil {
					t.Fatal(err)
				}
			}
			want := bench.DBCounts{Receipts: cmp.Or(tt.receipts, 200), ReceiptsPending: tt.pending, OutboxPending: tt.outboxPending}
			if tt.mode != "accept" {
				want.OutboxMessages = want.Receipts
			}
			if got != want || ledger != tt.ledger {
				t.Errorf("database holds %+v and %d ledger entries, want %+v and %d", got, ledger, want, tt.ledger)
			}
			if a := r.DatabaseAfter; a == nil || a.Receipts != got.Receipts || a.ReceiptsPending != got.ReceiptsPending ||
				a.OutboxMessages != got.OutboxMessages || a.OutboxPending != got.OutboxPending {
				t.Errorf("database_after %+v, the database holds %+v", a, got)
			}

			checkCPU(t, r.CPU, map[bool]string{true: "receipt", false: "request"}[slices.Contains(tt.args, "receive")])

			switch tt.mode {
			case "drain":
				if r.Drain != nil {
					checkCPU(t, r.Drain.CPU, "event")
				}
				if d := r.Drain; d == nil || d.Backlog != 200 || d.Processed != 200 || d.FailedAttempts != 0 || len(d.Tenths) != 10 {
					t.Errorf("drain %+v, want a backlog of 200 processed in ten tenths", d)
				} else {
					var sum int64
					for _, tenth := range d.Tenths {
						sum += tenth.Events
					}
					if sum != 200 {
						t.Errorf("the tenths add up to %d events, want 200", sum)
					}
				}
			case "forward":
				if f := r.Forward; f == nil || f.Accepted != 200 || f.Delivered != 200 || f.Redeliveries != 0 || f.Ratio == nil || f.EndToEnd == nil {
					t.Errorf("forward %+v, want 200 accepted and delivered once, their ratio and latency", f)
				} else if stream != nil {
					if !strings.Contains(f.Sink, "JetStream") || !strings.HasPrefix(f.Stream, "HOOKINBOX_BENCH_") {
						t.Errorf("forward to %q, stream %q: want bench's JetStream stream", f.Sink, f.Stream)
					}
					if _, err := stream.JetStream.Stream(ctx, f.Stream); !errors.Is(err, jetstream.ErrStreamNotFound) {
						t.Errorf("stream %s after the run: %v, want it deleted", f.Stream, err)
					}
				} else if !strings.Contains(f.Sink, "HTTP") {
					t.Errorf("forward to %q, want the HTTP sink", f.Sink)
				}
			case "mixed":
				m := r.Mixed
				if m == nil || m.Workers != 2 || m.Accepted != 200 || m.ProcessedWhileAccepting+m.BacklogAtEnd != 200 || m.FailedAttempts != 0 {
					t.Fatalf("mixed %+v, want 200 accepted by 2 workers, processed while accepting or after", m)
				}
				if s := m.Sync; s == nil || s.Requests != 200 || s.Outcomes["processed"] != 200 || s.ErrorCount != 0 || m.Ratio == nil {
					t.Errorf("mixed's sync run %+v and ratio %v, want 200 processed and a ratio", s, m.Ratio)
				} else {
					checkCPU(t, s.CPU, "request")
				}
				if !slices.Contains(tt.args, "--rounds") {
					if len(m.Rounds) != 0 || m.MedianRatio != nil {
						t.Errorf("one round reported rounds %+v, median %v", m.Rounds, m.MedianRatio)
					}
					break
				}
				if len(m.Rounds) != 3 || m.MedianRatio == nil || m.Rounds[0].Ratio == nil || *m.Rounds[0].Ratio != *m.Ratio {
					t.Fatalf("rounds %+v, median %v: want 3, the first the report's own (ratio %v)", m.Rounds, m.MedianRatio, m.Ratio)
				}
				ratios := []float64{}
				for _, rd := range m.Rounds {
					if rd.Accepted != 200 || rd.Ratio == nil || *rd.Ratio <= 0 || rd.SyncRate <= 0 {
						t.Fatalf("round %+v, want 200 accepted and a ratio", rd)
					}
					ratios = append(ratios, *rd.Ratio)
				}
				slices.Sort(ratios)
				if *m.MedianRatio != ratios[1] {
					t.Errorf("median %v of ratios %v, want %v", *m.MedianRatio, ratios, ratios[1])
				}
			}
			checkPgbench(t, tt.mode, r.Pgbench)
			checkNaive(t, tt.mode, r)
		})
	}
}

// TestBench_DispatchDeliversTheBacklogOnce writes an outbox backlog of 200 and checks
// that bench reports what the sink and the database saw: every message delivered
// once and published, in ten tenths.
func TestBench_DispatchDeliversTheBacklogOnce(t *testing.T) {
	t.Parallel()
	for _, sinkKind := range []string{"http", "nats"} {
		t.Run(sinkKind, func(t *testing.T) {
			t.Parallel()
			db := testdb.New(t)
			args := []string{"bench", "--mode", "dispatch", "--count", "200", "--json",
				"--database-url", testdb.URL(), "--schema", db.Schema, "--sink", sinkKind}
			if sinkKind == "nats" {
				args = append(args, "--nats-url", testnats.New(t).Conn.ConnectedUrl())
			}
			out := mustRun(t, childEnv(), args...)
			var r benchJSON
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("bench --json printed no JSON object: %v\n%s", err, out)
			}
			d := r.Dispatch
			if r.Incomplete != "" || d == nil || d.Backlog != 200 || d.Delivered != 200 || d.Redeliveries != 0 || len(d.Tenths) != 10 || d.Concurrency < 1 {
				t.Fatalf("incomplete %q, dispatch %+v; want 200 delivered once in ten tenths:\n%s", r.Incomplete, d, out)
			}
			var sum int64
			for _, tenth := range d.Tenths {
				sum += tenth.Events
			}
			if sum != 200 {
				t.Errorf("the tenths add up to %d messages, want 200", sum)
			}
			var published int64
			if err := db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM hookinbox_outbox WHERE state = 'published'`).Scan(&published); err != nil {
				t.Fatal(err)
			}
			if published != 200 {
				t.Errorf("%d outbox messages published, want 200", published)
			}
			checkCPU(t, d.CPU, "message")
		})
	}
}

// checkCPU checks that on Linux a phase's CPU time was measured, per unit of work,
// with PostgreSQL's (the test database is on this machine). Never its figures, which
// depend on the machine.
func checkCPU(t *testing.T, r *bench.CPUReport, per string) {
	t.Helper()
	if runtime.GOOS != "linux" {
		return
	}
	if r == nil || r.Per != per || r.Process == "" || r.PostgresUS == nil || r.BusyPercent < 0 || r.BusyPercent > 100 {
		t.Errorf("cpu %+v, want one per %s, with PostgreSQL's", r, per)
	}
}

// checkPgbench checks the anchor's count where pgbench is installed: the same 200
// transactions, none failed. Elsewhere bench must say why it did not run.
func checkPgbench(t *testing.T, mode string, p *bench.PgbenchReport) {
	t.Helper()
	switch {
	case mode != "sync" && mode != "accept":
		if p != nil {
			t.Errorf("--mode %s has no pgbench anchor, but pgbench reported %+v", mode, p)
		}
	case p == nil:
		t.Errorf("no pgbench report")
	case p.Skipped != "":
		t.Logf("pgbench not run: %s", p.Skipped)
	case p.Error != "" || p.Transactions != 200 || p.Failed != 0:
		t.Errorf("pgbench: %d transactions, %d failed, error %q; want 200, 0, none", p.Transactions, p.Failed, p.Error)
	default:
		checkCPU(t, p.CPU, "transaction")
		if runtime.GOOS == "linux" && p.CPU != nil && p.CPU.Process != "pgbench" {
			t.Errorf("pgbench's cpu is of %q, want pgbench's own", p.CPU.Process)
		}
	}
}

// checkNaive checks the hand-written receiver's run: the same 200 requests, all 2xx,
// its rows in its own schema, and the ratio to it. Never a figure.
func checkNaive(t *testing.T, mode string, r benchJSON) {
	t.Helper()
	n := r.Naive
	switch {
	case mode != "sync" && mode != "accept":
		if n != nil || r.RatioNaive != nil {
			t.Errorf("--mode %s has no naive anchor, but it reported %+v", mode, n)
		}
		return
	case n == nil || n.Skipped != "" || n.Error != "":
		t.Fatalf("naive %+v, want a run", n)
	}
	if n.Requests != 200 || n.ErrorCount != 0 || n.Outcomes["200"] != 200 || n.PoolMaxConns != 4 || n.Script != "bench/"+mode+".pgbench" {
		t.Errorf("naive: %d requests, %d errors (%s), outcomes %v, pool %d, script %q; want 200 answered 200 by a pool of 4 running bench/%s.pgbench",
			n.Requests, n.ErrorCount, n.FirstError, n.Outcomes, n.PoolMaxConns, n.Script, mode)
	}
	wantLedger := map[string]int64{"sync": 200, "accept": 0}[mode]
	if a := n.After; a == nil || a.Receipts != 200 || a.LedgerEntries == nil || *a.LedgerEntries != wantLedger {
		t.Errorf("naive left %v, want 200 receipts and %d ledger entries", a, wantLedger)
	}
	checkCPU(t, n.CPU, "request")
	if r.RatioNaive == nil {
		t.Error("no ratio_naive")
	}
}

// A fresh schema is the run's own: dropped at the end, the pgbench schema too.
func TestBench_DropsItsSchemas(t *testing.T) {
	t.Parallel()
	db := testdb.New(t) // for a pool on the server; bench makes its own schemas
	out := mustRun(t, childEnv(), "bench", "--mode", "accept", "--count", "20", "--concurrency", "2", "--json",
		"--database-url", testdb.URL())
	var r benchJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.HasPrefix(r.Schema, "hookinbox_bench_") {
		t.Fatalf("schema %q, want a fresh hookinbox_bench_...", r.Schema)
	}
	var left int
	if err := db.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM pg_namespace WHERE nspname = $1`, r.Schema).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("schema %s is still there", r.Schema)
	}
	if r.Settings.Database != "postgres" || r.Settings.ServerVersion == "" || r.Settings.Autovacuum == "" ||
		r.Settings.Fsync == "" || r.Settings.SynchronousCommit == "" || r.Settings.Cores < 1 || r.Settings.GOMAXPROCS < 1 {
		t.Errorf("settings %+v: want the server's and the machine's", r.Settings)
	}
}

func TestBench_SQLite(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "bench.db")
	out := mustRun(t, childEnv(), "bench", "--mode", "sync", "--count", "50", "--concurrency", "2", "--json",
		"--database-url", "sqlite:"+path)
	var r benchJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if r.Requests != 50 || r.Outcomes["processed"] != 50 || r.ErrorCount != 0 {
		t.Errorf("requests %d, outcomes %v, errors %v: want 50 processed", r.Requests, r.Outcomes, r.Errors)
	}
	if a := r.DatabaseAfter; a == nil || a.Receipts != 50 || a.LedgerEntries == nil || *a.LedgerEntries != 50 {
		t.Errorf("database_after %+v, want 50 receipts and ledger entries", a)
	}
	if r.Pgbench == nil || r.Pgbench.Skipped == "" {
		t.Errorf("pgbench %+v on SQLite, want skipped", r.Pgbench)
	}
}

func TestBench_RefusesWhatItCannotMeasure(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		msg  string
	}{
		{[]string{"--mode", "batch"}, `--mode "batch": want sync, accept, drain, forward, mixed or dispatch`},
		{[]string{"--mode", "dispatch", "--duration", "5s"}, "--mode dispatch measures a backlog of --count outbox messages"},
		{[]string{"--url", "http://127.0.0.1:1/x", "--mode", "mixed", "--secret", "s"}, "--mode mixed needs the server in this process"},
		{[]string{"--mode", "forward", "--sink", "kafka"}, `--sink "kafka": want http or nats`},
		{[]string{"--sink", "nats"}, "--sink is for --mode forward"},
		{[]string{"--mode", "forward", "--nats-url", "nats://127.0.0.1:4222"}, "--nats-url is for --sink nats"},
		{[]string{"--mode", "mixed", "--anchor", "pgbench"}, "--anchor: --mode mixed has no anchor"},
		{[]string{"--mode", "sync", "--rounds", "3"}, "--rounds is for --mode mixed"},
		{[]string{"--mode", "mixed", "--rounds", "0"}, "--rounds must be at least 1"},
		{[]string{"--count", "10", "--duration", "1s"}, "give --count or --duration, not both"},
		{[]string{"--count", "0"}, "--count must be at least 1"},
		{[]string{"--concurrency", "0"}, "--concurrency must be at least 1"},
		{[]string{"--duplicates", "1"}, "--duplicates must be between 0 and 0.9"},
		{[]string{"--mode", "drain", "--duration", "5s"}, "not a --duration"},
		{[]string{"--mode", "drain", "--duplicates", "0.1"}, "distinct receipts"},
		{[]string{"--backlog", "receive"}, "--backlog is for --mode drain"},
		{[]string{"--mode", "drain", "--backlog", "copy"}, `--backlog "copy": want http or receive`},
		{[]string{"--url", "http://127.0.0.1:1/x", "--mode", "drain", "--secret", "s"}, "not with --url"},
		{[]string{"--url", "http://127.0.0.1:1/x"}, "no signing secret"},
		{[]string{"--url", "http://127.0.0.1:1/x", "--secret-env", "NOPE"}, "environment variable NOPE is empty or unset"},
		{[]string{"--url", "http://127.0.0.1:1/x", "--secret", "s", "--schema", "x"}, "not --url"},
		{[]string{"--secret", "s"}, "sign for a --url endpoint"},
		{[]string{"--provider", "github"}, "takes Stripe's events"},
		{[]string{"--mode", "forward", "--provider", "bitbucket"}, "--provider bitbucket: want one of"},
		{[]string{"--mode", "forward", "--provider", "discord"}, "--provider discord: want one of"},
		{[]string{"--schema", "Bench-1"}, `--schema "Bench-1": want a lower-case identifier`},
		{[]string{"--schema", "b", "--keep"}, "--schema is always kept"},
		{[]string{"--anchor", "river"}, `--anchor "river": want pgbench, naive or none`},
		{[]string{"--anchor", "none,naive"}, "--anchor none runs no anchor: not with naive"},
		{[]string{"--mode", "drain", "--anchor", "naive"}, "--anchor: --mode drain has no anchor"},
		{[]string{"--database-url", "mysql://x/y"}, `--database-url: unsupported database URL: scheme "mysql"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, "_"), func(t *testing.T) {
			t.Parallel()
			r := runInProcess(t, nil, append([]string{"bench"}, tt.args...)...)
			if r.code != exitUsage || !strings.Contains(r.stderr, tt.msg) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", r.code, r.stderr, tt.msg)
			}
		})
	}
}
