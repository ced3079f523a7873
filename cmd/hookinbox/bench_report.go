package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// benchReport is everything a run measured, printed as text or, with --json, as one
// JSON object.
type benchReport struct {
	Mode   string `json:"mode"`
	Target string `json:"target"` // "in-process" or the --url
	// Database is the database as given, without its password; Schema the run's.
	Database        string  `json:"database,omitempty"`
	Schema          string  `json:"schema,omitempty"`
	SchemaKept      bool    `json:"schema_kept,omitempty"`
	Concurrency     int     `json:"concurrency"`
	Count           int     `json:"count,omitempty"`
	DurationSeconds float64 `json:"duration_seconds,omitempty"`
	Duplicates      float64 `json:"duplicates_fraction,omitempty"`

	// The sending phase (drain: the backlog's).
	Requests       int64            `json:"requests"`
	DuplicatesSent int64            `json:"duplicates_sent"`
	Outcomes       map[string]int64 `json:"outcomes"`
	Errors         map[string]int64 `json:"errors"`
	ErrorCount     int64            `json:"error_count"`
	FirstError     string           `json:"first_error,omitempty"`
	ElapsedSeconds float64          `json:"elapsed_seconds"`
	// RequestRate is the 2xx answers per second.
	RequestRate float64         `json:"request_rate"`
	Latency     *latencySummary `json:"latency_ms,omitempty"`
	// CPU is the sending phase's CPU time per request (Linux, see cpuMeter).
	CPU *cpuReport `json:"cpu,omitempty"`

	// Rate is the mode's figure: 2xx answers per second for sync and accept, events
	// processed (drain) or delivered (forward) per second.
	Rate     float64 `json:"rate"`
	RateUnit string  `json:"rate_unit"`

	Drain   *drainReport   `json:"drain,omitempty"`
	Forward *forwardReport `json:"forward,omitempty"`
	Pgbench *pgbenchReport `json:"pgbench,omitempty"`
	// Groups are the in-process server's group commits, by kind (accept, sync).
	Groups []groupReport `json:"groups,omitempty"`
	// Ratio is Rate / Pgbench.TPS: the share of the database's own limit for the same
	// SQL that hookinbox reached.
	Ratio *float64 `json:"ratio,omitempty"`

	Settings benchSettings `json:"settings"`
	// After counts the rows in the run's database once it is over.
	After *dbCounts `json:"database_after,omitempty"`

	// Notes say what to keep in mind reading the figures: why there is no ratio,
	// answers another mode gives.
	Notes []string `json:"notes,omitempty"`

	Interrupted bool   `json:"interrupted,omitempty"`
	Incomplete  string `json:"incomplete,omitempty"`
}

// drainReport is drain's figures from the workers' start.
type drainReport struct {
	Backlog        int64        `json:"backlog"`
	BacklogVia     string       `json:"backlog_via"`
	Workers        int          `json:"workers"`
	Processed      int64        `json:"processed"`
	FailedAttempts int64        `json:"failed_attempts"`
	ElapsedSeconds float64      `json:"elapsed_seconds"`
	Rate           float64      `json:"rate"`
	Tenths         []drainTenth `json:"tenths"`
	// CPU is the workers' CPU time per event processed (Linux, see cpuMeter).
	CPU *cpuReport `json:"cpu,omitempty"`
}

// drainTenth is one tenth of the backlog.
type drainTenth struct {
	FromPercent int     `json:"from_percent"`
	ToPercent   int     `json:"to_percent"`
	Events      int64   `json:"events"`
	Seconds     float64 `json:"seconds"`
	Rate        float64 `json:"rate"`
}

// forwardReport is forward's deliveries.
type forwardReport struct {
	Accepted     int64 `json:"accepted"`
	Delivered    int64 `json:"delivered"`
	Redeliveries int64 `json:"redeliveries"`
	// ElapsedSeconds runs from the first request to the last event's first delivery.
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	Rate           float64 `json:"rate"`
	// EndToEnd is each event's latency from its request's start to its delivery.
	EndToEnd *latencySummary `json:"end_to_end_ms,omitempty"`
}

// setLoad records the sending phase.
func (r *benchReport) setLoad(res *loadResult) {
	r.Requests, r.DuplicatesSent = res.Requests, res.Duplicates
	r.Outcomes, r.Errors = res.Outcomes, res.Errors
	r.ErrorCount, r.FirstError = res.errorCount(), res.FirstError
	r.ElapsedSeconds = round3(res.Elapsed.Seconds())
	if res.Elapsed > 0 {
		r.RequestRate = round1(float64(res.ok()) / res.Elapsed.Seconds())
	}
	r.Latency = summarize(res.Latencies)
	r.CPU = res.CPU
}

func (r *benchReport) setRate(rate float64, unit string) { r.Rate, r.RateUnit = rate, unit }

// expectedOutcome is the answer to a new event in the modes that compare with pgbench.
var expectedOutcome = map[string]string{benchSync: "processed", benchAccept: "accepted"}

// finish computes the ratio, and notes what it does not compare.
func (r *benchReport) finish() {
	if r.Outcomes == nil {
		r.Outcomes = map[string]int64{}
	}
	if r.Errors == nil {
		r.Errors = map[string]int64{}
	}
	if want, ok := expectedOutcome[r.Mode]; ok {
		for outcome, n := range r.Outcomes {
			if outcome != want && outcome != "duplicate" {
				r.Notes = append(r.Notes, fmt.Sprintf("--mode %s expects %s answers, but %d were %s: is the endpoint %s?", r.Mode, want, n, outcome, map[string]string{benchSync: "sync with the billing handler", benchAccept: "async"}[r.Mode]))
			}
		}
		slices.Sort(r.Notes)
	}
	if r.Pgbench == nil || r.Pgbench.TPS <= 0 || r.Rate <= 0 || r.Interrupted {
		return
	}
	if r.DuplicatesSent > 0 {
		r.Notes = append(r.Notes, "no ratio: --duplicates sends answers that write nothing, and pgbench's transactions are all new events")
		return
	}
	ratio := round3(r.Rate / r.Pgbench.TPS)
	r.Ratio = &ratio
}

// failure is the run's error for the exit code: nil when everything was answered
// 2xx and, for drain and forward, processed or delivered.
func (r *benchReport) failure() error {
	var problems []string
	if r.ErrorCount > 0 {
		problems = append(problems, fmt.Sprintf("%d of %d requests were not answered 2xx", r.ErrorCount, r.Requests))
	}
	if r.Incomplete != "" {
		problems = append(problems, r.Incomplete)
	}
	if r.Interrupted {
		problems = append(problems, "interrupted")
	}
	if len(problems) == 0 {
		return nil
	}
	return errors.New(strings.Join(problems, "; "))
}

func (r *benchReport) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// writeText prints the report for a person.
func (r *benchReport) writeText(w io.Writer) {
	run := fmt.Sprintf("%d requests", r.Count)
	if r.Count == 0 {
		run = time.Duration(r.DurationSeconds * float64(time.Second)).String()
	}
	if r.Mode == benchDrain {
		run = fmt.Sprintf("a backlog of %d", r.Count)
	}
	target := "a server in this process"
	if r.Target != "in-process" {
		target = r.Target
	}
	fmt.Fprintf(w, "hookinbox bench --mode %s: %d senders, %s, against %s\n", r.Mode, r.Concurrency, run, target)
	r.writeSettings(w)

	what := "requests"
	if r.Mode == benchDrain {
		what = "backlog"
	}
	answers := counts(r.Outcomes)
	if len(r.Outcomes) == 0 {
		answers = "no 2xx answer"
	}
	fmt.Fprintf(w, "%-10s %d in %.2f s: %s", what, r.Requests, r.ElapsedSeconds, answers)
	if r.DuplicatesSent > 0 {
		fmt.Fprintf(w, " (%d resent as duplicates)", r.DuplicatesSent)
	}
	fmt.Fprintln(w)
	if r.ErrorCount > 0 {
		fmt.Fprintf(w, "%-10s %d: %s; first: %s\n", "errors", r.ErrorCount, counts(r.Errors), r.FirstError)
	} else {
		fmt.Fprintf(w, "%-10s none\n", "errors")
	}
	unit := "req/s"
	if r.Mode == benchDrain && r.Drain != nil && r.Drain.BacklogVia == "receive" {
		unit = "receipts/s, Inbox.Receive without HTTP"
	}
	of := ""
	if r.Mode == benchDrain {
		of = " (the backlog's)"
	}
	fmt.Fprintf(w, "%-10s %.1f %s%s\n", "rate", r.RequestRate, unit, of)
	if r.Latency != nil {
		fmt.Fprintf(w, "%-10s %s%s\n", "latency", r.Latency, of)
	}
	if r.CPU != nil {
		fmt.Fprintf(w, "%-10s %s%s\n", "cpu", r.CPU, of)
	}

	if d := r.Drain; d != nil {
		fmt.Fprintf(w, "%-10s %d of %d receipts processed by %d workers", "drain", d.Processed, d.Backlog, d.Workers)
		if d.Rate > 0 {
			fmt.Fprintf(w, " in %.2f s: %.1f events/s", d.ElapsedSeconds, d.Rate)
		}
		if d.FailedAttempts > 0 {
			fmt.Fprintf(w, " (%d failed attempts)", d.FailedAttempts)
		}
		fmt.Fprintln(w)
		for _, t := range d.Tenths {
			fmt.Fprintf(w, "  %3d-%3d%%  %6d events in %7.3f s: %8.1f events/s\n", t.FromPercent, t.ToPercent, t.Events, t.Seconds, t.Rate)
		}
		if d.CPU != nil {
			fmt.Fprintf(w, "%-10s %s (the drain's)\n", "cpu", d.CPU)
		}
	}
	if fr := r.Forward; fr != nil {
		fmt.Fprintf(w, "%-10s %d of %d accepted events delivered", "forward", fr.Delivered, fr.Accepted)
		if fr.Rate > 0 {
			fmt.Fprintf(w, ", the last %.2f s after the first request: %.1f events/s", fr.ElapsedSeconds, fr.Rate)
		}
		if fr.Redeliveries > 0 {
			fmt.Fprintf(w, " (%d redeliveries)", fr.Redeliveries)
		}
		fmt.Fprintln(w)
		if fr.EndToEnd != nil {
			fmt.Fprintf(w, "%-10s %s (request start to delivery)\n", "end-to-end", fr.EndToEnd)
		}
	}

	for _, g := range r.Groups {
		fmt.Fprintf(w, "%-10s %s: %d commits, %.1f deliveries each", "groups", g.Kind, g.Commits, g.MeanSize)
		if g.Failed > 0 {
			fmt.Fprintf(w, ", %d failed as a whole", g.Failed)
		}
		fmt.Fprintln(w)
	}
	switch p := r.Pgbench; {
	case r.Mode == benchDrain || r.Mode == benchForward:
		fmt.Fprintf(w, "%-10s no anchor for --mode %s: the workers' claims and processing and the outbox deliveries are not one SQL script\n", "pgbench", r.Mode)
	case p == nil:
	case p.Skipped != "":
		fmt.Fprintf(w, "%-10s not run: %s\n", "pgbench", p.Skipped)
	case p.Error != "":
		fmt.Fprintf(w, "%-10s failed: %s\n", "pgbench", p.Error)
	default:
		span := fmt.Sprintf("%d s", p.DurationSeconds)
		if p.TransactionsPerClient > 0 {
			span = fmt.Sprintf("%d transactions per client", p.TransactionsPerClient)
		}
		fmt.Fprintf(w, "%-10s %.1f tps, %d transactions (%d failed): %s, %d clients, %d threads, %s\n",
			"pgbench", p.TPS, p.Transactions, p.Failed, p.Script, p.Clients, p.Threads, span)
		if p.Latency != nil {
			fmt.Fprintf(w, "%-10s %s\n", "", p.Latency)
		}
		if p.CPU != nil {
			fmt.Fprintf(w, "%-10s %s\n", "", p.CPU)
		}
	}
	if r.Ratio != nil {
		fmt.Fprintf(w, "%-10s %.3f (hookinbox %.1f %s / pgbench %.1f tps on the same SQL)\n", "ratio", *r.Ratio, r.Rate, r.RateUnit, r.Pgbench.TPS)
	}
	if a := r.After; a != nil {
		fmt.Fprintf(w, "%-10s %d receipts (%d pending)", "left", a.Receipts, a.ReceiptsPending)
		if a.LedgerEntries != nil {
			fmt.Fprintf(w, ", %d ledger entries", *a.LedgerEntries)
		}
		fmt.Fprintf(w, ", %d outbox messages (%d pending)\n", a.OutboxMessages, a.OutboxPending)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "%-10s %s\n", "note", n)
	}
	if r.Incomplete != "" {
		fmt.Fprintf(w, "incomplete: %s\n", r.Incomplete)
	}
	if r.Interrupted {
		fmt.Fprintln(w, "interrupted: the figures are of what was measured until then")
	}
}

func (r *benchReport) writeSettings(w io.Writer) {
	s := r.Settings
	switch s.Database {
	case "postgres":
		fmt.Fprintf(w, "%-10s PostgreSQL %s", "database", orDash(s.ServerVersion))
		if s.SettingsError != "" {
			fmt.Fprintf(w, " (settings not read: %s)", s.SettingsError)
		} else {
			fmt.Fprintf(w, ", fsync=%s, synchronous_commit=%s, autovacuum=%s", s.Fsync, s.SynchronousCommit, s.Autovacuum)
		}
		if s.PoolMaxConns > 0 {
			fmt.Fprintf(w, ", pool_max_conns=%d", s.PoolMaxConns)
		}
		if s.AcceptFlushers > 0 {
			fmt.Fprintf(w, ", group_commit.accept.flushers=%d", s.AcceptFlushers)
		}
		if s.SyncFlushers > 0 {
			fmt.Fprintf(w, ", group_commit.sync.flushers=%d", s.SyncFlushers)
		}
		if r.Schema != "" {
			kept := "dropped after"
			if r.SchemaKept {
				kept = "kept"
			}
			fmt.Fprintf(w, "; schema %s (%s)", r.Schema, kept)
		}
		fmt.Fprintln(w)
	case "sqlite":
		fmt.Fprintf(w, "%-10s %s\n", "database", r.Database)
	default:
		fmt.Fprintf(w, "%-10s unknown (--url without --database-url)\n", "database")
	}
	fmt.Fprintf(w, "%-10s %d cores, GOMAXPROCS=%d, %s", "machine", s.Cores, s.GOMAXPROCS, s.GoVersion)
	if s.LoadAverage > 0 {
		fmt.Fprintf(w, ", load average %.2f before the run", s.LoadAverage)
	}
	if s.Workers > 0 {
		fmt.Fprintf(w, "; %d workers", s.Workers)
	}
	if s.Dispatchers > 0 {
		fmt.Fprintf(w, ", %d outbox deliveries in flight", s.Dispatchers)
	}
	fmt.Fprintln(w)
	if s.Checkpoint != "" {
		fmt.Fprintf(w, "%-10s CHECKPOINT %s\n", "note", s.Checkpoint)
	}
	if s.Autovacuum == "off" {
		fmt.Fprintf(w, "%-10s autovacuum is off: nothing is vacuumed or analyzed during the run\n", "note")
	}
}

func (l *latencySummary) String() string {
	return fmt.Sprintf("p50 %.3f ms, p90 %.3f ms, p99 %.3f ms, max %.3f ms", l.P50, l.P90, l.P99, l.Max)
}

// counts prints a count map as "accepted 200, duplicate 3", largest first.
func counts(m map[string]int64) string {
	if len(m) == 0 {
		return "none"
	}
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			return int(m[b] - m[a])
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// progress prints one line on a terminal, rewritten every second, with a count and
// its rate over the last second. It prints nothing when w is not a terminal.
type progress struct {
	w   io.Writer
	tty bool

	mu   sync.Mutex
	stop chan struct{}
	done chan struct{}
}

func newProgress(w io.Writer) *progress { return &progress{w: w, tty: isTerminal(w)} }

// track starts a line "label: N unit, R unit/s" for the count read.
func (p *progress) track(label, unit string, read func() int64) {
	if !p.tty {
		return
	}
	p.untrack()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	stop, done := p.stop, p.done
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		last, lastAt := read(), time.Now()
		for {
			select {
			case <-stop:
				fmt.Fprint(p.w, "\r\x1b[K")
				return
			case now := <-tick.C:
				n := read()
				rate := float64(n-last) / now.Sub(lastAt).Seconds()
				fmt.Fprintf(p.w, "\r\x1b[K%s: %d %s, %.0f/s", label, n, unit, rate)
				last, lastAt = n, now
			}
		}
	}()
}

// untrack stops the line and clears it.
func (p *progress) untrack() {
	p.mu.Lock()
	stop, done := p.stop, p.done
	p.stop, p.done = nil, nil
	p.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

// groupReport sums the group commits of one kind (hookinbox.GroupInfo).
type groupReport struct {
	Kind     string  `json:"kind"`
	Commits  int64   `json:"commits"`
	MeanSize float64 `json:"mean_size"`
	Failed   int64   `json:"failed,omitempty"`
}
