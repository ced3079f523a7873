package pgxdriver

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/hookinbox/hookinbox/internal/testdb"
)

// planOf returns the generic plan (the one a prepared statement settles on) of query.
func planOf(t *testing.T, db *testdb.DB, query string, args ...any) string {
	t.Helper()
	return planIn(t, db, "force_generic_plan", query, args...)
}

// planIn returns query's plan under plan_cache_mode mode: force_generic_plan, or
// force_custom_plan for the plans of a prepared statement's first executions.
func planIn(t *testing.T, db *testdb.DB, mode, query string, args ...any) string {
	t.Helper()
	ctx := context.Background()
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET plan_cache_mode = `+mode); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(ctx, `RESET plan_cache_mode`) //nolint:errcheck
	rows, err := conn.Query(ctx, "EXPLAIN "+query, args...)
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
	return strings.Join(plan, "\n")
}

// statsTakenBeforeABacklog builds the situation that slowed draining: statistics taken
// while no row was pending (processed history only), then a backlog.
func statsTakenBeforeABacklog(t *testing.T, db *testdb.DB, index string) {
	t.Helper()
	ctx := context.Background()
	for _, q := range []string{
		`INSERT INTO hookinbox_inbox (provider, endpoint, event_id, event_type, payload, processed_at, outcome, state)
		 SELECT 'stripe', 'q', 'old_' || g, 'x', '{}', now(), 'processed', 'processed' FROM generate_series(1, 20000) g`,
		`ANALYZE hookinbox_inbox`,
		`INSERT INTO hookinbox_inbox (provider, endpoint, event_id, event_type, payload, state)
		 SELECT 'stripe', 'q', 'new_' || g, 'x', '{}', 'pending' FROM generate_series(1, 5000) g`,
	} {
		if _, err := db.Pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if index != "" {
		if _, err := db.Pool.Exec(ctx, `DROP INDEX hookinbox_inbox_unprocessed`); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Pool.Exec(ctx, index); err != nil {
			t.Fatal(err)
		}
	}
}

var lockArgs = []any{[]string{"stripe"}, []string{"q"}, []string{"new_1"}}

// Locking a batch of claimed receipts by key uses the primary key even when the
// statistics say that nothing is pending, and the claim still reads the partial index.
func TestPlan_LockByKeyUsesThePrimaryKeyWhateverTheStatistics(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	if err := New(db.Pool).Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	statsTakenBeforeABacklog(t, db, "")
	if plan := planOf(t, db, sqlInboxLockUnprocessed, lockArgs...); strings.Contains(plan, "hookinbox_inbox_unprocessed") || !strings.Contains(plan, "hookinbox_inbox_pkey") {
		t.Errorf("the lock by key does not read the primary key:\n%s", plan)
	}
	if plan := planOf(t, db, sqlInboxClaim, []string{"q"}, 60.0, 10, 25); !strings.Contains(plan, "hookinbox_inbox_unprocessed") {
		t.Errorf("the claim does not read the partial index:\n%s", plan)
	}
	if plan := planOf(t, db, sqlInboxStats); !strings.Contains(plan, "hookinbox_inbox_unprocessed") {
		t.Errorf("the stats do not read the partial index:\n%s", plan)
	}
}

// The broken variant: the partial index as first written, whose predicate every
// "state = 'pending'" implies. The generic plan of the lock then scans every pending
// row for each batch of keys.
func TestBrokenPartialIndexWithoutGuard_LockScansTheBacklog(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	if err := New(db.Pool).Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	statsTakenBeforeABacklog(t, db, `CREATE INDEX hookinbox_inbox_unprocessed
    ON hookinbox_inbox (state, available_at) WHERE state IN ('pending', 'needs_review')`)
	if plan := planOf(t, db, sqlInboxLockUnprocessed, lockArgs...); !strings.Contains(plan, "hookinbox_inbox_unprocessed") {
		t.Fatalf("without the guard the lock still reads the primary key; the test cannot show the trap:\n%s", plan)
	}
}

// aBacklogNeverAnalyzed builds a table no ANALYZE has seen (a server with autovacuum
// off, or a table that grew faster than autoanalyze): 80,000 processed receipts and a
// backlog of 120,000, about what one worker left behind 32 senders in bench's mixed
// mode. The table's own autovacuum is off, so that a server with it on
// cannot analyze it during the test.
func aBacklogNeverAnalyzed(t *testing.T, db *testdb.DB) {
	t.Helper()
	ctx := context.Background()
	if err := New(db.Pool).Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`ALTER TABLE hookinbox_inbox SET (autovacuum_enabled = false)`,
		`INSERT INTO hookinbox_inbox (provider, endpoint, event_id, event_type, payload, processed_at, outcome, state, available_at)
		 SELECT 'stripe', 'q', 'old_' || g, 'x', '{}', now(), 'processed', 'processed', now() - interval '1 hour' FROM generate_series(1, 80000) g`,
		`INSERT INTO hookinbox_inbox (provider, endpoint, event_id, event_type, payload, state, available_at)
		 SELECT 'stripe', 'q', 'new_' || g, 'x', '{}', 'pending', now() - interval '1 hour' + g * interval '1 ms' FROM generate_series(1, 120000) g`,
	} {
		if _, err := db.Pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

var claimArgs = []any{[]string{"q"}, 60.0, 10, 25}

// claimSortsTheBacklog reports whether query's plan, custom or generic, sorts the
// pending rows instead of reading the partial index in order, with the plans it read.
func claimSortsTheBacklog(t *testing.T, db *testdb.DB, query string) (bool, string) {
	t.Helper()
	var plans []string
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		plan := planIn(t, db, mode, query, claimArgs...)
		plans = append(plans, mode+":\n"+plan)
		if strings.Contains(plan, "Sort") || !strings.Contains(plan, "Index Scan using hookinbox_inbox_unprocessed") {
			return true, strings.Join(plans, "\n")
		}
	}
	return false, strings.Join(plans, "\n")
}

// On a table never analyzed, the claim reads the unprocessed index in available_at
// order and stops at its limit, in its first plans and in the generic one, rather
// than sorting the whole backlog for each batch.
func TestPlan_ClaimReadsTheIndexInOrderOnATableNeverAnalyzed(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	aBacklogNeverAnalyzed(t, db)
	if sorts, plan := claimSortsTheBacklog(t, db, sqlInboxClaim); sorts {
		t.Errorf("the claim sorts the backlog:\n%s", plan)
	}
}

// The broken variant: the claim's endpoints matched with "endpoint = ANY($1)", as
// first written. Without statistics its plans sort every pending row.
func TestBrokenClaimWithAnyEndpoint_SortsTheBacklog(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	aBacklogNeverAnalyzed(t, db)
	broken := strings.Replace(sqlInboxClaim, "array_position($1::text[], endpoint) IS NOT NULL", "endpoint = ANY($1)", 1)
	if broken == sqlInboxClaim {
		t.Fatal("the claim no longer has the predicate this variant replaces")
	}
	if sorts, plans := claimSortsTheBacklog(t, db, broken); !sorts {
		t.Fatalf("with endpoint = ANY($1) the claim still reads the index in order; the test cannot show the trap:\n%s", plans)
	}
}

// planAsWorkerSends returns query's generic plan in a transaction, between
// sqlSeqScanOff and sqlSeqScanRestore when guarded (as a worker's executorTx sends its
// lookups by key), and checks that the restore gave the session's setting back.
func planAsWorkerSends(t *testing.T, db *testdb.DB, guarded bool, query string, args ...any) string {
	t.Helper()
	ctx := context.Background()
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	exec := func(q string) {
		t.Helper()
		if _, err := tx.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`SET LOCAL plan_cache_mode = force_generic_plan`)
	if guarded {
		exec(sqlSeqScanOff)
	}
	rows, err := tx.Query(ctx, "EXPLAIN "+query, args...)
	if err != nil {
		t.Fatalf("EXPLAIN %s: %v", query, err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if guarded {
		exec(sqlSeqScanRestore)
		var setting string
		if err := tx.QueryRow(ctx, `SELECT current_setting('enable_seqscan')`).Scan(&setting); err != nil || setting != "on" {
			t.Fatalf("enable_seqscan after the restore: %q %v, want the session's on", setting, err)
		}
	}
	return strings.Join(lines, "\n")
}

// On a table still empty and never analyzed (a new deployment), the generic plans a
// worker's lookups by key settle on, sent as the worker sends them, read the primary
// key: the plan cached then is the plan the connection keeps as the table grows.
func TestPlan_LookupsByKeyOnAnEmptyTableUseThePrimaryKey(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	if err := New(db.Pool).Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	mark, markArgs := markProcessedArgs([]hookinboxtype.Key{{Provider: "stripe", Endpoint: "q", EventID: "new_1"}}, "processed", nil)
	markAttempt, markAttemptArgs := markProcessedArgs([]hookinboxtype.Key{{Provider: "stripe", Endpoint: "q", EventID: "new_1"}}, "processed",
		&driver.AttemptBy{Worker: "w", StartedAt: time.Now()})
	for _, c := range []struct {
		name  string
		query string
		args  []any
	}{{"lock", sqlInboxLockUnprocessed, lockArgs}, {"mark", mark, markArgs}, {"mark with its attempt", markAttempt, markAttemptArgs}} {
		plan := planAsWorkerSends(t, db, true, c.query, c.args...)
		if strings.Contains(plan, "Seq Scan on hookinbox_inbox") || !strings.Contains(plan, "hookinbox_inbox_pkey") {
			t.Errorf("the %s's generic plan on an empty table does not read the primary key:\n%s", c.name, plan)
		}
	}
}

// The broken variant: the lock sent without the guard, as before. Its generic plan on
// the empty table scans the table.
func TestBrokenLookupWithoutGuard_ScansTheTable(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	if err := New(db.Pool).Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	if plan := planAsWorkerSends(t, db, false, sqlInboxLockUnprocessed, lockArgs...); !strings.Contains(plan, "Seq Scan on hookinbox_inbox") {
		t.Fatalf("without the guard the lock's generic plan on an empty table still reads the primary key; the test cannot show the trap:\n%s", plan)
	}
}
