package sqlitedriver_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/driver/sqlitedriver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// The broken variant that the driver's _txlock=immediate exists to avoid, kept so that
// the reason stays demonstrated. With SQLite's default deferred transactions, a
// worker's processing transaction re-checks the receipt under a read snapshot; another
// worker (whose lease let it in) commits a write meanwhile; the first worker's write
// then cannot upgrade its stale snapshot and fails at once with SQLITE_BUSY_SNAPSHOT
// instead of waiting. With IMMEDIATE the first worker holds the write lock from BEGIN:
// the other waits, and both succeed one after the other.
func TestBrokenVariant_DeferredTransactionFailsWhereImmediateWaits(t *testing.T) {
	t.Parallel()
	for _, txlock := range []string{"deferred", "immediate"} {
		t.Run(txlock, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dsn := "file:" + filepath.Join(t.TempDir(), "hookinbox.db") +
				"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=" + txlock
			var dbs [2]*sql.DB
			for i := range dbs {
				db, err := sql.Open("sqlite", dsn)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = db.Close() })
				dbs[i] = db
			}
			first, other := sqlitedriver.New(dbs[0]), sqlitedriver.New(dbs[1])
			if err := first.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			k := key("evt_1")
			if _, err := first.Executor().InboxInsert(ctx, &driver.InboxInsertParams{Key: k, EventType: "t", Payload: payload("evt_1"), MaxAttempts: testMaxAttempts}); err != nil {
				t.Fatal(err)
			}

			tx, err := first.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx) //nolint:errcheck
			if r, err := lockOne(ctx, tx, k); err != nil || r == nil {
				t.Fatalf("re-check: %+v %v", r, err)
			}
			otherDone := make(chan error, 1)
			go func() {
				otherDone <- other.Executor().InboxRecordFailure(ctx, &driver.InboxFailureParams{Key: k, Error: "other worker"})
			}()

			if txlock == "deferred" {
				if err := <-otherDone; err != nil { // nothing made it wait
					t.Fatal(err)
				}
				err := tx.InboxMarkProcessed(ctx, []hookinboxtype.Key{k}, "processed", nil)
				if !errors.Is(err, driver.ErrUnavailable) {
					t.Fatalf("write on a stale snapshot: %v, want SQLITE_BUSY_SNAPSHOT (unavailable)", err)
				}
				return
			}
			if err := tx.InboxMarkProcessed(ctx, []hookinboxtype.Key{k}, "processed", nil); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-otherDone; err != nil {
				t.Fatal(err)
			}
			if r, err := first.Executor().InboxGet(ctx, k); err != nil || r.State != hookinboxtype.StateProcessed || r.ProcessedAt == nil || r.LastError != "" {
				t.Fatalf("receipt %+v %v: want processed, and the other's late failure not recorded", r, err)
			}
		})
	}
}
