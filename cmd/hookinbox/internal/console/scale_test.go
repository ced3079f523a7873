package console_test

import (
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestConsole_OverviewAtScale fills a schema of its own with HOOKINBOX_OVERVIEW_ROWS
// receipts (one INSERT ... SELECT generate_series: 30 days on four endpoints, 0.5 %
// pending, 0.5 % needing review, the rest processed; attempt history for the last two
// days; an outbox of a fifth of the receipts, 1 % undelivered), VACUUM ANALYZEs it
// (the test server runs without autovacuum), rolls the overview's counts up as serve
// does, and times GET /console/ and /console/?window=day through the console's
// handler, printing each run. It only reports: speed is measured, not asserted. The
// schema is dropped at the end. docs/CONSOLE.md has its output at 1M and 10M.
//
//	HOOKINBOX_OVERVIEW_ROWS=10000000 go test -count=1 -run OverviewAtScale -v ./cmd/hookinbox/internal/console/
func TestConsole_OverviewAtScale(t *testing.T) {
	rows, _ := strconv.Atoi(os.Getenv("HOOKINBOX_OVERVIEW_ROWS"))
	if rows <= 0 {
		t.Skip("set HOOKINBOX_OVERVIEW_ROWS (e.g. 1000000) to time the overview on that many receipts")
	}
	b := setup(t, "postgres")
	start := time.Now()
	step := func(what, q string) {
		t.Helper()
		s := time.Now()
		b.run(t, q)
		t.Logf("%s: %s", what, time.Since(s).Round(time.Millisecond))
	}
	step("receipts", fmt.Sprintf(`
INSERT INTO hookinbox_inbox (provider, endpoint, event_id, event_type, payload, received_at, available_at,
                             attempts, max_attempts, last_error, error_fingerprint, processed_at, outcome, state)
SELECT 'stripe', (ARRAY['billing', 'gateway', 'crm', 'ledger'])[g %% 4 + 1], 'evt_' || g, 'invoice.type' || (g %% 10),
       jsonb_build_object('id', 'evt_' || g, 'amount', g), ts.t, ts.t,
       CASE WHEN g %% 200 = 0 THEN 10 ELSE 1 END, 10,
       CASE WHEN g %% 200 = 0 THEN 'invoice in_' || g || ' not found (cause ' || (g / 200 %% 5) || ')' END,
       CASE WHEN g %% 200 = 0 THEN 'invoice # not found (cause ' || (g / 200 %% 5) || ')' END,
       CASE WHEN g %% 100 <> 0 AND g %% 200 <> 0 THEN ts.t + interval '1 second' END,
       CASE WHEN g %% 100 <> 0 AND g %% 200 <> 0 THEN 'processed' END,
       CASE WHEN g %% 200 = 0 THEN 'needs_review' WHEN g %% 100 = 0 THEN 'pending' ELSE 'processed' END
  FROM generate_series(1, %d) AS g,
       LATERAL (SELECT now() - interval '30 days' + g * (interval '30 days' / %d) AS t) AS ts`, rows, rows))
	step("attempts", fmt.Sprintf(`
INSERT INTO hookinbox_attempt (provider, endpoint, event_id, attempt, started_at, finished_at, worker, error, next_retry_at)
SELECT 'stripe', (ARRAY['billing', 'gateway', 'crm', 'ledger'])[g %% 4 + 1], 'evt_' || g, 1, ts.t, ts.t + interval '1 second',
       'host/1/0', CASE WHEN g %% 50 = 0 THEN 'boom' END, CASE WHEN g %% 100 = 0 THEN ts.t + interval '1 minute' END
  FROM generate_series(%d, %d) AS g,
       LATERAL (SELECT now() - interval '30 days' + g * (interval '30 days' / %d) AS t) AS ts`, rows-rows/15, rows, rows))
	step("outbox", fmt.Sprintf(`
INSERT INTO hookinbox_outbox (aggregate_type, aggregate_id, event_type, payload, source_provider, source_endpoint,
                              source_event_id, state, published_at, created_at)
SELECT 'Invoice', 'in_' || g, 'InvoicePaid', '{}', 'stripe', (ARRAY['billing', 'gateway', 'crm', 'ledger'])[g %% 4 + 1],
       'evt_' || (g * 5), CASE WHEN g %% 100 = 0 THEN 'pending' ELSE 'published' END,
       CASE WHEN g %% 100 = 0 THEN NULL ELSE now() END, now() - interval '30 days' + g * (interval '30 days' / %d)
  FROM generate_series(1, %d) AS g`, rows/5, rows/5))
	step("VACUUM ANALYZE", `VACUUM ANALYZE hookinbox_inbox, hookinbox_attempt, hookinbox_outbox`)
	s := time.Now()
	n, err := b.exec.ConsoleRollup(b.ctx, time.Now().Add(-5*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("first roll-up (two days of minutes): %d rows in %s; loaded in %s", n, time.Since(s).Round(time.Millisecond), time.Since(start).Round(time.Second))
	c := b.client(t)
	c.login(operatorToken)
	for _, page := range []string{"/console/", "/console/?window=day"} {
		var times []time.Duration
		for i := range 11 {
			s := time.Now()
			code, _ := c.get(page)
			d := time.Since(s)
			if code != http.StatusOK {
				t.Fatalf("GET %s: %d", page, code)
			}
			if i > 0 { // the first reads the pages from disk
				times = append(times, d)
			}
		}
		slices.Sort(times)
		t.Logf("GET %s at %d receipts: min %s, median %s, max %s (10 runs after one warm-up)", page, rows,
			times[0].Round(10*time.Microsecond), times[len(times)/2].Round(10*time.Microsecond), times[len(times)-1].Round(10*time.Microsecond))
	}
	// And the overview without the roll-up, counting every minute live: what it costs
	// before serve's first roll-up, or without the workers role.
	b.run(t, `DELETE FROM hookinbox_rollup`)
	b.run(t, `DELETE FROM hookinbox_backlog`)
	for _, page := range []string{"/console/", "/console/?window=day"} {
		s := time.Now()
		c.get(page)
		t.Logf("GET %s without the roll-up: %s", page, time.Since(s).Round(time.Millisecond))
	}
}
