package pgxdriver_test

import (
	"context"
	"testing"

	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/internal/testdb"
)

func TestMigrate_TwiceIsANoOp(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	d := pgxdriver.New(db.Pool)
	ctx := context.Background()
	if applied, latest, err := d.SchemaVersion(ctx); err != nil || applied != 0 || latest < 1 {
		t.Fatalf("fresh schema: applied=%d latest=%d err=%v", applied, latest, err)
	}
	for range 2 {
		if err := d.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
	}
	applied, latest, err := d.SchemaVersion(ctx)
	if err != nil || applied != latest {
		t.Fatalf("applied=%d latest=%d err=%v", applied, latest, err)
	}
	var n int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM hookinbox_migration`).Scan(&n); err != nil || n != migrationCount(t) {
		t.Fatalf("migration rows %d (%v), want %d", n, err, migrationCount(t))
	}
}

// migrationCount is the number of hookinbox's migrations: a migrated database has a
// row for each. Versions need not be contiguous (a version reserved by a branch not
// yet merged), so it is not the latest version.
func migrationCount(t *testing.T) int {
	t.Helper()
	line, err := pgxdriver.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	return len(line.Migrations)
}
