package bench

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// writeText prints the report for a person.
func (r *Report) writeText(w io.Writer) {
	run := fmt.Sprintf("%d requests", r.Count)
	if r.Count == 0 {
		run = time.Duration(r.DurationSeconds * float64(time.Second)).String()
	}
	if r.Mode == ModeDrain {
		run = fmt.Sprintf("a backlog of %d", r.Count)
	}
	target := "a server in this process"
	if r.Target != "in-process" {
		target = r.Target
	}
	if r.Mode == ModeDispatch {
		// No request is sent: the backlog is written to the outbox directly.
		fmt.Fprintf(w, "hookinbox bench --mode dispatch: an outbox backlog of %d, against %s\n", r.Count, target)
		r.writeSettings(w)
		r.writeResults(w, "")
		return
	}
	fmt.Fprintf(w, "hookinbox bench --mode %s: %d senders, %s, against %s\n", r.Mode, r.Concurrency, run, target)
	r.writeSettings(w)

	what := "requests"
	if r.Mode == ModeDrain {
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
	if r.Mode == ModeDrain && r.Drain != nil && r.Drain.BacklogVia == "receive" {
		unit = "receipts/s, Inbox.Receive without HTTP"
	}
	of := ""
	if r.Mode == ModeDrain {
		of = " (the backlog's)"
	}
	fmt.Fprintf(w, "%-10s %.1f %s%s\n", "rate", r.RequestRate, unit, of)
	r.writeResults(w, of)
}

// writeResults prints what the run measured after its load: latency and CPU (of
// says whose), each mode's own figures, the group commits, the anchors and what was
// left in the database.
func (r *Report) writeResults(w io.Writer, of string) {
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
		fmt.Fprintf(w, "%-10s %d of %d accepted events delivered to %s", "forward", fr.Delivered, fr.Accepted, fr.Sink)
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
		if fr.Ratio != nil {
			fmt.Fprintf(w, "%-10s %.3f (delivered %.1f events/s / accepted %.1f events/s, the same run)\n", "ratio", *fr.Ratio, fr.Rate, fr.AcceptRate)
		}
	}
	if d := r.Dispatch; d != nil {
		fmt.Fprintf(w, "%-10s %d of %d outbox messages delivered to %s, %d in flight", "dispatch", d.Delivered, d.Backlog, d.Sink, d.Concurrency)
		if d.Rate > 0 {
			fmt.Fprintf(w, ", in %.2f s: %.1f messages/s", d.ElapsedSeconds, d.Rate)
		}
		if d.Redeliveries > 0 {
			fmt.Fprintf(w, " (%d redeliveries)", d.Redeliveries)
		}
		fmt.Fprintln(w)
		for _, t := range d.Tenths {
			fmt.Fprintf(w, "  %3d-%3d%%  %6d messages in %7.3f s: %8.1f messages/s\n", t.FromPercent, t.ToPercent, t.Events, t.Seconds, t.Rate)
		}
		if d.CPU != nil {
			fmt.Fprintf(w, "%-10s %s (the dispatch's)\n", "cpu", d.CPU)
		}
	}
	r.writeMixed(w)

	for _, g := range r.Groups {
		fmt.Fprintf(w, "%-10s %s: %d commits, %.1f deliveries each", "groups", g.Kind, g.Commits, g.MeanSize)
		if g.Failed > 0 {
			fmt.Fprintf(w, ", %d failed as a whole", g.Failed)
		}
		fmt.Fprintln(w)
	}
	r.writeAnchors(w)
	if a := r.After; a != nil {
		fmt.Fprintf(w, "%-10s %s\n", "left", a)
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

func (r *Report) writeSettings(w io.Writer) {
	s := r.Settings
	switch s.Database {
	case "postgres":
		fmt.Fprintf(w, "%-10s PostgreSQL %s", "database", orDash(s.ServerVersion))
		if s.SettingsError != "" {
			fmt.Fprintf(w, " (settings not read: %s)", s.SettingsError)
		} else {
			fmt.Fprintf(w, ", fsync=%s, synchronous_commit=%s, autovacuum=%s, tls=%s", s.Fsync, s.SynchronousCommit, s.Autovacuum, s.TLS)
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
	if s.GOGC != "" {
		fmt.Fprintf(w, ", GOGC=%s", s.GOGC)
	}
	if s.GOMEMLIMIT != "" {
		fmt.Fprintf(w, ", GOMEMLIMIT=%s", s.GOMEMLIMIT)
	}
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

func (l *LatencySummary) String() string {
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

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// writeAnchors prints the anchors' runs and hookinbox's ratios to them.
func (r *Report) writeAnchors(w io.Writer) {
	switch p := r.Pgbench; {
	case r.Mode == ModeDrain || r.Mode == ModeForward || r.Mode == ModeDispatch:
		fmt.Fprintf(w, "%-10s no anchor for --mode %s: the workers' claims and processing and the outbox deliveries are not one SQL script\n", "pgbench", r.Mode)
	case r.Mode == ModeMixed:
		fmt.Fprintf(w, "%-10s no anchor for --mode mixed: its anchor is the sync endpoint above\n", "pgbench")
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
	if n := r.Naive; n != nil {
		switch {
		case n.Skipped != "":
			fmt.Fprintf(w, "%-10s not run: %s\n", "naive", n.Skipped)
		case n.Error != "":
			fmt.Fprintf(w, "%-10s failed: %s\n", "naive", n.Error)
		default:
			var ok int64
			for _, c := range n.Outcomes {
				ok += c
			}
			fmt.Fprintf(w, "%-10s %.1f req/s, %d requests, %d answered 2xx: net/http + pgx, %s's statements, one transaction per request, a pool of %d\n",
				"naive", n.RequestRate, n.Requests, ok, n.Script, n.PoolMaxConns)
			n.writeDetail(w)
			if a := n.After; a != nil {
				fmt.Fprintf(w, "%-10s left %s\n", "", a)
			}
		}
	}
	if r.RatioNaive != nil {
		fmt.Fprintf(w, "%-10s %.3f (hookinbox %.1f %s / naive receiver %.1f req/s on the same load)\n", "ratio", *r.RatioNaive, r.Rate, r.RateUnit, r.Naive.RequestRate)
	}
}

// String prints the counts as bench's left line.
func (a *DBCounts) String() string {
	s := fmt.Sprintf("%d receipts (%d pending)", a.Receipts, a.ReceiptsPending)
	if a.LedgerEntries != nil {
		s += fmt.Sprintf(", %d ledger entries", *a.LedgerEntries)
	}
	return s + fmt.Sprintf(", %d outbox messages (%d pending)", a.OutboxMessages, a.OutboxPending)
}

// writeMixed prints mixed's two runs and their ratio.
func (r *Report) writeMixed(w io.Writer) {
	m := r.Mixed
	if m == nil {
		return
	}
	fmt.Fprintf(w, "%-10s %d accepted, %.1f/s, by the async billing endpoint while %d workers processed %d: %.1f events/s",
		"mixed", m.Accepted, m.AcceptRate, m.Workers, m.ProcessedWhileAccepting, m.ProcessedRate)
	if m.FailedAttempts > 0 {
		fmt.Fprintf(w, " (%d failed attempts)", m.FailedAttempts)
	}
	fmt.Fprintln(w)
	if m.Sync == nil {
		return
	}
	fmt.Fprintf(w, "%-10s %d left at the last answer, processed %.2f s later\n", "", m.BacklogAtEnd, m.DrainSeconds)
	s := m.Sync
	fmt.Fprintf(w, "%-10s %d requests in %.2f s to the sync billing endpoint, the same senders: %s; %.1f req/s\n",
		"sync", s.Requests, s.ElapsedSeconds, counts(s.Outcomes), s.RequestRate)
	s.writeDetail(w)
	if m.Ratio != nil {
		fmt.Fprintf(w, "%-10s %.3f (processed while accepting %.1f events/s / sync %.1f req/s, the same run)\n", "ratio", *m.Ratio, m.ProcessedRate, s.RequestRate)
	}
	if len(m.Rounds) > 1 {
		ratios := make([]string, len(m.Rounds))
		for n, rd := range m.Rounds {
			ratios[n] = "none"
			if rd.Ratio != nil {
				ratios[n] = fmt.Sprintf("%.3f", *rd.Ratio)
			}
		}
		fmt.Fprintf(w, "%-10s %s", "rounds", strings.Join(ratios, ", "))
		if m.MedianRatio != nil {
			fmt.Fprintf(w, ": median %.3f", *m.MedianRatio)
		}
		fmt.Fprintf(w, " (each an async run, its backlog processed, then a sync run; the lines above are the first, the groups every round's)\n")
	}
}

// writeDetail prints an anchor's or a second run's errors, latency and CPU time,
// indented under the line that names it.
func (l *LoadReport) writeDetail(w io.Writer) {
	if l.ErrorCount > 0 {
		fmt.Fprintf(w, "%-10s %d not 2xx: %s; first: %s\n", "", l.ErrorCount, counts(l.Errors), l.FirstError)
	}
	if l.Latency != nil {
		fmt.Fprintf(w, "%-10s %s\n", "", l.Latency)
	}
	if l.CPU != nil {
		fmt.Fprintf(w, "%-10s %s\n", "", l.CPU)
	}
}
