package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// appName is the application_name of this process's sessions, so that the
// interference check counts every other session, another run of this harness's
// included.
var appName = fmt.Sprintf("bench-river/%d", os.Getpid())

// newPool opens a pool of size conns whose connections all have search_path set to
// schema, so that River's, hookinbox's and billing's unqualified table names resolve
// to that side's own fresh schema.
func newPool(ctx context.Context, url, schema string, conns int, tracer pgx.QueryTracer) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("error parsing database URL: %w", err)
	}
	cfg.MaxConns = int32(conns)
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.ConnConfig.RuntimeParams["application_name"] = appName + ":" + schema
	cfg.ConnConfig.Tracer = tracer
	return pgxpool.NewWithConfig(ctx, cfg)
}

// withPool runs fn with a pool of its own on schema and closes it; a pool closed
// before a measured window has its backends' statistics reported by then.
func withPool(ctx context.Context, url, schema string, conns int, fn func(*pgxpool.Pool) error) error {
	pool, err := newPool(ctx, url, schema, conns, nil)
	if err != nil {
		return err
	}
	defer pool.Close()
	return fn(pool)
}

// warm opens every connection of a measured pool before its window, the same for both
// sides, so that neither pays for connecting while measured.
func warm(ctx context.Context, pool *pgxpool.Pool, conns int) error {
	held := make([]*pgxpool.Conn, 0, conns)
	defer func() {
		for _, c := range held {
			c.Release()
		}
	}()
	for range conns {
		c, err := pool.Acquire(ctx)
		if err != nil {
			return fmt.Errorf("error opening the pool: %w", err)
		}
		held = append(held, c)
	}
	return nil
}

// createSchema creates a fresh schema (dropping a leftover of the same name).
func createSchema(ctx context.Context, admin *pgxpool.Pool, schema string) error {
	if _, err := admin.Exec(ctx, `DROP SCHEMA IF EXISTS `+quoteIdent(schema)+` CASCADE`); err != nil {
		return err
	}
	_, err := admin.Exec(ctx, `CREATE SCHEMA `+quoteIdent(schema))
	return err
}

// dropSchema drops a side's schema; it runs at the end and on failure, with a context
// of its own so that an interrupt still cleans up.
func dropSchema(admin *pgxpool.Pool, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := admin.Exec(ctx, `DROP SCHEMA IF EXISTS `+quoteIdent(schema)+` CASCADE`); err != nil {
		fmt.Fprintf(os.Stderr, "warning: error dropping schema %s: %v\n", schema, err)
	}
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// analyzeSchema analyzes every table of a side's schema after its setup, as
// autovacuum would soon after a bulk insert on a server where it is on. Without it,
// on a server with autovacuum off, the planner never has statistics for the tables
// the backlog was just inserted into.
func analyzeSchema(ctx context.Context, admin *pgxpool.Pool, schema string) error {
	rows, err := admin.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY 1`, schema)
	if err != nil {
		return err
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, t := range tables {
		if _, err := admin.Exec(ctx, `ANALYZE `+quoteIdent(schema)+`.`+quoteIdent(t)); err != nil {
			return fmt.Errorf("error analyzing %s: %w", t, err)
		}
	}
	return nil
}

// checkpoint asks the server for a checkpoint after a side's setup, so that both sides
// start measuring right after one (the same full-page-image cost in the WAL, no
// checkpoint of the other side's setup in the middle). It needs a superuser or
// pg_checkpoint; without one it is skipped and said so.
func checkpoint(ctx context.Context, admin *pgxpool.Pool) string {
	if _, err := admin.Exec(ctx, `CHECKPOINT`); err != nil {
		return "skipped (" + err.Error() + ")"
	}
	return "done"
}

// stripeInvoicePaid is the body of the i-th event: a Stripe invoice.paid for a new
// invoice, the same bytes on both sides.
func stripeInvoicePaid(i int) (eventID string, payload []byte) {
	eventID = fmt.Sprintf("evt_bench_%07d", i)
	payload = fmt.Appendf(nil, `{"id":%q,"object":"event","api_version":"2024-06-20","created":1767225600,`+
		`"type":"invoice.paid","livemode":false,"pending_webhooks":1,"request":{"id":null,"idempotency_key":null},`+
		`"data":{"object":{"id":"in_bench_%07d","object":"invoice","customer":"cus_bench_%04d","status":"paid",`+
		`"amount_due":%d,"amount_paid":%d,"amount_remaining":0,"currency":"usd","paid":true}}}`,
		eventID, i, i%1000, 1000+i%5000, 1000+i%5000)
	return eventID, payload
}

// progress records when each tenth of the backlog was done, from in-process counts
// taken right after each commit (River: after tx.Commit in Work; hookinbox: the
// Observer's processed attempt, reported after the commit).
type progress struct {
	n     int64
	done  atomic.Int64
	mu    sync.Mutex
	start time.Time
	marks [11]time.Time // marks[k]: when k tenths were done; marks[0] = start
}

func newProgress(n int) *progress { return &progress{n: int64(n)} }

func (p *progress) begin() {
	p.mu.Lock()
	p.start = time.Now()
	p.marks[0] = p.start
	p.mu.Unlock()
}

// threshold is the count at which k tenths are done.
func (p *progress) threshold(k int) int64 { return (int64(k)*p.n + 9) / 10 }

func (p *progress) add() {
	v := p.done.Add(1)
	now := time.Now()
	for k := 1; k <= 10; k++ {
		if v == p.threshold(k) {
			p.mu.Lock()
			if p.marks[k].IsZero() {
				p.marks[k] = now
			}
			p.mu.Unlock()
		}
	}
}

// Slice is one tenth of the backlog.
type Slice struct {
	From    int     `json:"from"`
	To      int     `json:"to"`
	Seconds float64 `json:"seconds"`
	PerSec  float64 `json:"per_sec"`
}

func (p *progress) slices() []Slice {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Slice
	for k := 1; k <= 10; k++ {
		from, to := p.threshold(k-1), p.threshold(k)
		if p.marks[k].IsZero() || p.marks[k-1].IsZero() {
			break
		}
		d := p.marks[k].Sub(p.marks[k-1]).Seconds()
		s := Slice{From: int(from), To: int(to), Seconds: d}
		if d > 0 {
			s.PerSec = float64(to-from) / d
		}
		out = append(out, s)
	}
	return out
}

// lastCommit is when the last event's commit was counted, from the start.
func (p *progress) lastCommit() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.marks[10].IsZero() {
		return 0
	}
	return p.marks[10].Sub(p.start)
}

// dbCounters are database-wide figures read before and after a side's measured
// window: WAL written (the whole cluster's) and transactions of the benchmark's
// database (every session's, this harness's polls included).
type dbCounters struct {
	lsn       string
	commits   int64
	rollbacks int64
}

func readCounters(ctx context.Context, admin *pgxpool.Pool) (dbCounters, error) {
	var c dbCounters
	err := admin.QueryRow(ctx, `
SELECT pg_current_wal_lsn()::text, xact_commit, xact_rollback
  FROM pg_stat_database WHERE datname = current_database()`).Scan(&c.lsn, &c.commits, &c.rollbacks)
	return c, err
}

// DBDelta is what the database did during a side's measured window.
type DBDelta struct {
	WALBytes        int64   `json:"wal_bytes"`
	WALBytesPerItem float64 `json:"wal_bytes_per_item"`
	Commits         int64   `json:"commits"`
	CommitsPerItem  float64 `json:"commits_per_item"`
	Rollbacks       int64   `json:"rollbacks"`
}

func counterDelta(ctx context.Context, admin *pgxpool.Pool, before dbCounters, n int) (*DBDelta, error) {
	// The server's activity statistics are flushed by each backend when it goes idle
	// (at most once a second) and when it exits: the side's pool is closed by now, and
	// a short wait lets the exiting backends report.
	time.Sleep(1500 * time.Millisecond)
	if _, err := admin.Exec(ctx, `SELECT pg_stat_clear_snapshot()`); err != nil {
		return nil, err
	}
	after, err := readCounters(ctx, admin)
	if err != nil {
		return nil, err
	}
	var wal int64
	if err := admin.QueryRow(ctx, `SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::bigint`, after.lsn, before.lsn).Scan(&wal); err != nil {
		return nil, err
	}
	d := &DBDelta{
		WALBytes:  wal,
		Commits:   after.commits - before.commits,
		Rollbacks: after.rollbacks - before.rollbacks,
	}
	if n > 0 {
		d.WALBytesPerItem = float64(d.WALBytes) / float64(n)
		d.CommitsPerItem = float64(d.Commits) / float64(n)
	}
	return d, nil
}

// TableStats describes a queue table at the end of a side's run.
type TableStats struct {
	Table      string `json:"table"`
	Updates    int64  `json:"updates"`
	HOTUpdates int64  `json:"hot_updates"`
	DeadTuples int64  `json:"dead_tuples"`
	TotalBytes int64  `json:"total_bytes"`
}

func tableStats(ctx context.Context, admin *pgxpool.Pool, schema, table string) (*TableStats, error) {
	ts := &TableStats{Table: table}
	err := admin.QueryRow(ctx, `
SELECT n_tup_upd, n_tup_hot_upd, n_dead_tup, pg_total_relation_size(relid)
  FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = $2`, schema, table).
		Scan(&ts.Updates, &ts.HOTUpdates, &ts.DeadTuples, &ts.TotalBytes)
	return ts, err
}

// verifyBilling checks the business result of a side: n paid invoices, n ledger
// entries, n outbox messages.
func verifyBilling(ctx context.Context, pool *pgxpool.Pool, n int) (*Verified, error) {
	v := &Verified{}
	err := pool.QueryRow(ctx, `
SELECT (SELECT count(*) FROM invoices WHERE status = 'paid'),
       (SELECT count(*) FROM ledger_entries WHERE kind = 'payment'),
       (SELECT count(*) FROM hookinbox_outbox WHERE event_type = 'InvoicePaymentBooked')`).
		Scan(&v.PaidInvoices, &v.LedgerEntries, &v.OutboxRows)
	if err != nil {
		return nil, err
	}
	var problems []string
	if v.PaidInvoices != int64(n) {
		problems = append(problems, fmt.Sprintf("%d paid invoices, want %d", v.PaidInvoices, n))
	}
	if v.LedgerEntries != int64(n) {
		problems = append(problems, fmt.Sprintf("%d ledger entries, want %d", v.LedgerEntries, n))
	}
	if v.OutboxRows != int64(n) {
		problems = append(problems, fmt.Sprintf("%d outbox rows, want %d", v.OutboxRows, n))
	}
	v.Problems = problems
	return v, nil
}

// Verified is the end state of a side, checked after its workers stopped.
type Verified struct {
	PaidInvoices  int64 `json:"paid_invoices"`
	LedgerEntries int64 `json:"ledger_entries"`
	OutboxRows    int64 `json:"outbox_rows"`
	// Unfinished: hookinbox's Stats().Unprocessed, or River's jobs not completed.
	Unfinished int64 `json:"unfinished"`
	// Attempts: the sum of every receipt's or job's attempts (N when nothing was
	// retried).
	Attempts int64    `json:"attempts"`
	Problems []string `json:"problems,omitempty"`
}

// Result is one side's measurement.
type Result struct {
	Side  string `json:"side"`
	Items int    `json:"items"`
	Unit  string `json:"unit"`

	SetupSeconds float64 `json:"setup_seconds"`
	Checkpoint   string  `json:"checkpoint"`

	// Seconds: from starting the workers until a poll of the database saw every item
	// done; PerSec = Items / Seconds.
	Seconds float64 `json:"seconds"`
	PerSec  float64 `json:"per_sec"`
	// LastCommitSeconds: when the last item's commit was counted in process (no poll
	// granularity).
	LastCommitSeconds float64 `json:"last_commit_seconds"`
	// Failed counts attempts that did not process their item (failed, timed out,
	// already processed), from the workers' own reports.
	Failed int64 `json:"failed"`

	Slices []Slice `json:"slices"`
	// Statements: what the side's pool sent during the measured window (the harness's
	// own end-of-backlog polls included), in total and, with --statements, by SQL.
	Statements        int64            `json:"statements"`
	StatementsPerItem float64          `json:"statements_per_item"`
	BySQL             []StatementCount `json:"statements_by_sql,omitempty"`
	DB                *DBDelta         `json:"db,omitempty"`
	Queue             *TableStats      `json:"queue_table,omitempty"`
	Verified          *Verified        `json:"verified"`
	Interference      *Interference    `json:"interference"`
	Config            any              `json:"config"`
}

// statementCounter is a pgx QueryTracer counting the statements a side's pool sends
// (Query, QueryRow and Exec, BEGIN and COMMIT included), while it is on, by the first
// line of their SQL.
type statementCounter struct {
	on    atomic.Bool
	total atomic.Int64
	mu    sync.Mutex
	bySQL map[string]int64
}

func newStatementCounter() *statementCounter {
	return &statementCounter{bySQL: map[string]int64{}}
}

func (c *statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if !c.on.Load() {
		return ctx
	}
	c.total.Add(1)
	key := strings.Join(strings.Fields(data.SQL), " ")
	if len(key) > 72 {
		key = key[:72] + "…"
	}
	c.mu.Lock()
	c.bySQL[key]++
	c.mu.Unlock()
	return ctx
}

func (c *statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// StatementCount is how often one statement was sent during the measured window.
type StatementCount struct {
	SQL     string  `json:"sql"`
	Count   int64   `json:"count"`
	PerItem float64 `json:"per_item"`
}

func (c *statementCounter) counts(n int) []StatementCount {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []StatementCount
	for sql, k := range c.bySQL {
		out = append(out, StatementCount{SQL: sql, Count: k, PerItem: float64(k) / float64(n)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].SQL < out[j].SQL
	})
	return out
}

// Interference is what else the server and the machine were doing during a side's
// measured window: other sessions (not this harness's) found busy when sampled twice
// a second. Figures taken beside another benchmark
// or test suite are not comparable.
type Interference struct {
	Samples          int `json:"samples"`
	BusySamples      int `json:"samples_with_other_sessions_busy"`
	OtherSessionsMax int `json:"other_sessions_busy_max"`
}

// watchOthers samples other busy sessions until stop is closed.
func watchOthers(admin *pgxpool.Pool, stop <-chan struct{}) <-chan *Interference {
	out := make(chan *Interference, 1)
	go func() {
		in := &Interference{}
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				out <- in
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			var n int
			err := admin.QueryRow(ctx, `
SELECT count(*) FROM pg_stat_activity
 WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
   AND state IS DISTINCT FROM 'idle'
   AND coalesce(application_name, '') NOT LIKE $1 || ':%'`, appName).Scan(&n)
			cancel()
			if err != nil {
				continue
			}
			in.Samples++
			if n > 0 {
				in.BusySamples++
			}
			in.OtherSessionsMax = max(in.OtherSessionsMax, n)
		}
	}()
	return out
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
