package pgxdriver

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/hookinbox/hookinbox/internal/testdb"
)

// TestConsole_ListsOnAMillionReceiptsAreIndexed fills a schema with 1,000,000
// receipts (one INSERT ... SELECT generate_series), 200,000 outbox messages, attempt
// history and audit entries, and prints the plan and timing of each console list
// statement as the console runs them (planned with the values), failing if one
// reads a table sequentially. It takes about a minute and a few hundred MB, so it runs
// only with HOOKINBOX_CONSOLE_EXPLAIN=1; docs/CONSOLE.md shows its output.
func TestConsole_ListsOnAMillionReceiptsAreIndexed(t *testing.T) {
	if os.Getenv("HOOKINBOX_CONSOLE_EXPLAIN") == "" {
		t.Skip("set HOOKINBOX_CONSOLE_EXPLAIN=1 to build 1M receipts and explain the console's lists")
	}
	db := testdb.New(t)
	ctx := context.Background()
	if err := New(db.Pool).Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for _, q := range []string{
		// 30 days of history, newest last; 0.5 % pending, 0.5 % needing review with five
		// causes, the rest processed; two endpoints, ten event types.
		`INSERT INTO hookinbox_inbox (provider, endpoint, event_id, event_type, payload, received_at, available_at,
                                      attempts, max_attempts, last_error, error_fingerprint, processed_at, outcome, state)
         SELECT 'stripe', CASE WHEN g % 4 = 0 THEN 'gateway' ELSE 'billing' END, 'evt_' || g,
                'invoice.type' || (g % 10), jsonb_build_object('id', 'evt_' || g, 'amount', g),
                t, t, CASE WHEN g % 200 = 0 THEN 10 ELSE 1 END, 10,
                CASE WHEN g % 200 = 0 THEN 'invoice in_' || g || ' not found (cause ' || (g / 200 % 5) || ')' END,
                CASE WHEN g % 200 = 0 THEN 'invoice # not found (cause ' || (g / 200 % 5) || ')' END,
                CASE WHEN g % 100 <> 0 AND g % 200 <> 0 THEN t END,
                CASE WHEN g % 100 <> 0 AND g % 200 <> 0 THEN 'processed' END,
                CASE WHEN g % 200 = 0 THEN 'needs_review' WHEN g % 100 = 0 THEN 'pending' ELSE 'processed' END
           FROM generate_series(1, 1000000) AS g,
                LATERAL (SELECT now() - interval '30 days' + g * interval '2.592 seconds' AS t) AS ts`,
		`INSERT INTO hookinbox_outbox (aggregate_type, aggregate_id, event_type, payload, source_provider,
                                       source_endpoint, source_event_id, state, published_at)
         SELECT 'Invoice', 'in_' || g, 'InvoicePaid', '{}', 'stripe', 'billing', 'evt_' || (g * 5),
                CASE WHEN g % 100 = 0 THEN 'pending' ELSE 'published' END,
                CASE WHEN g % 100 = 0 THEN NULL ELSE now() END
           FROM generate_series(1, 200000) AS g`,
		`INSERT INTO hookinbox_attempt (provider, endpoint, event_id, attempt, started_at, worker, error)
         SELECT 'stripe', 'billing', 'evt_' || (g / 3), g % 3 + 1, now(), 'host/1/0', 'boom'
           FROM generate_series(1, 300000) AS g`,
		`INSERT INTO hookinbox_audit (actor, action, target, rows) SELECT 'alice', 'retry', 'x', 1 FROM generate_series(1, 10000)`,
		`ANALYZE`,
	} {
		if _, err := db.Pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Logf("filled in %s", time.Since(start).Round(time.Second))

	mid := time.Now().Add(-15 * 24 * time.Hour)
	page := func(f driver.ReceiptFilter) []any { return append(filterArgs(&f), 50) }
	cursor := &driver.Cursor{ReceivedAt: mid, Key: hookinboxtype.Key{Provider: "stripe", Endpoint: "billing", EventID: "evt_500001"}}
	for _, c := range []struct {
		name, query string
		args        []any
	}{
		{"inbox, first page, no filter", sqlConsoleReceipts, page(driver.ReceiptFilter{})},
		{"inbox, a page half-way down (key-set cursor)", sqlConsoleReceipts, page(driver.ReceiptFilter{After: cursor})},
		{"inbox, endpoint and state processed", sqlConsoleReceipts, page(driver.ReceiptFilter{Endpoint: "gateway", State: "processed"})},
		{"inbox, needs review of one cause", sqlConsoleReceiptsUnprocessed, page(driver.ReceiptFilter{State: "needs_review", Fingerprint: "invoice # not found (cause 3)"})},
		{"inbox, one type in a day's range", sqlConsoleReceipts, page(driver.ReceiptFilter{EventType: "invoice.type7", Since: mid, Until: mid.Add(24 * time.Hour)})},
		{"inbox, exact event id", sqlConsoleReceiptsByID, []any{[]string{"stripe", "stripe"}, []string{"billing", "gateway"}, "evt_777777", 50}},
		{"inbox, pending, first page", sqlConsoleReceiptsUnprocessed, page(driver.ReceiptFilter{State: "pending"})},
		{"needs review, grouped", sqlConsoleReviewGroups, []any{200}},
		{"confirmation count (capped)", sqlConsoleCountUnprocessed, append(filterArgs(&driver.ReceiptFilter{State: "needs_review", Fingerprint: "invoice # not found (cause 3)"}), 1001)},
		{"event page: attempts", sqlConsoleAttempts, []any{"stripe", "billing", "evt_4242", 100}},
		{"event page: its outbox messages", sqlConsoleOutboxBySource, []any{"stripe", "billing", "evt_5000", 50}},
		{"outbox, first page", sqlConsoleOutbox, append(outboxFilterArgs(&driver.OutboxFilter{}), 50)},
		{"outbox, pending, a later page", sqlConsoleOutboxUnpublished, append(outboxFilterArgs(&driver.OutboxFilter{State: "pending", BeforeID: 100000}), 50)},
		{"outbox, published to one destination in a day's range", sqlConsoleOutbox, append(outboxFilterArgs(&driver.OutboxFilter{
			State: "published", Destination: new(string), Since: mid, Until: mid.Add(24 * time.Hour)}), 50)},
		{"inbox, a page newer than a cursor", sqlConsoleReceiptsNewer, page(driver.ReceiptFilter{Before: cursor})},
		{"inbox, payload search in a day's range", sqlConsoleReceipts, page(driver.ReceiptFilter{Search: "evt_77", Since: mid, Until: mid.Add(24 * time.Hour)})},
		{"outbox needs review, grouped", sqlConsoleOutboxReviewGroups, []any{200}},
		{"audit log", sqlConsoleAudit, []any{int64(1<<63 - 1), 50}},
	} {
		plan := explainAnalyze(t, db, c.query, c.args...)
		fmt.Printf("### %s\n\n```\n%s\n```\n\n", c.name, plan)
		if strings.Contains(plan, "Seq Scan") {
			t.Errorf("%s reads a table sequentially:\n%s", c.name, plan)
		}
	}
}

// explainAnalyze runs query under EXPLAIN (ANALYZE, BUFFERS) with args bound, as the
// console runs it (an unnamed statement, planned with the values).
func explainAnalyze(t *testing.T, db *testdb.DB, query string, args ...any) string {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) "+query, append([]any{consolePlan}, args...)...)
	if err != nil {
		t.Fatalf("EXPLAIN %s: %v", query, err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
	}
	if err := rows.Err(); err != nil || len(plan) == 0 {
		t.Fatalf("EXPLAIN %s: %v (%d lines)", query, err, len(plan))
	}
	return strings.Join(plan, "\n")
}
