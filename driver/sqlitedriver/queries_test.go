package sqlitedriver

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// SQLite uses a partial index only for a query whose WHERE repeats the index's own
// condition: state = 'pending' alone does not imply state IN ('pending',
// 'needs_review') to its planner. The queries that read the unprocessed rows repeat it;
// this keeps them from losing the index to a simplification.
func TestQueries_UnprocessedRowsReadThroughThePartialIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := Open(filepath.Join(t.TempDir(), "hookinbox.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := New(db).Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, query, index string
		args               []any
	}{
		{"inbox claim", sqlInboxClaim, "hookinbox_inbox_unprocessed", []any{`["async"]`, 1, 10, 10, int64(1)}},
		{"inbox stats", sqlInboxStats, "hookinbox_inbox_unprocessed", nil},
		{"inbox retry needs review", sqlInboxRetryNeedsReview, "hookinbox_inbox_unprocessed", nil},
		{"outbox claim", sqlOutboxClaim, "hookinbox_outbox_claim_order", []any{10, 1, 20, "", false, int64(1)}},
		{"outbox claim, ordered", sqlOutboxClaim, "hookinbox_outbox_claim_order", []any{10, 1, 20, "", true, int64(1)}},
		{"outbox stats", sqlOutboxStats, "hookinbox_outbox_unpublished", nil},
		{"outbox retry needs review", sqlOutboxRetryNeedsReview, "hookinbox_outbox_unpublished", nil},
	} {
		rows, err := db.QueryContext(ctx, "EXPLAIN QUERY PLAN "+tc.query, tc.args...)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, notUsed int
			var detail string
			if err := rows.Scan(&id, &parent, &notUsed, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(plan, "\n"), "INDEX "+tc.index) {
			t.Errorf("%s does not use %s:\n%s", tc.name, tc.index, strings.Join(plan, "\n"))
		}
	}
}
