package pgxdriver_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

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

// Four processes migrating one fresh schema at once, each on its own connection: the
// advisory lock lets one apply and the others find nothing to do.
func TestMigrate_ConcurrentlyFromFourConnections(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	var start, wg sync.WaitGroup
	start.Add(1)
	errs := make(chan error, 4)
	for range 4 {
		cfg := db.Config(t)
		cfg.MaxConns = 1
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		wg.Go(func() {
			start.Wait()
			errs <- pgxdriver.New(pool).Migrate(ctx)
		})
	}
	start.Done()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	applied, latest, err := pgxdriver.New(db.Pool).SchemaVersion(ctx)
	if err != nil || applied != latest {
		t.Fatalf("applied=%d latest=%d err=%v", applied, latest, err)
	}
}

// migrationCount is the number of embedded migrations, one version-table row each.
// Versions may skip numbers (taken by migrations of other branches), so it is not
// the latest version.
func migrationCount(t *testing.T) int {
	t.Helper()
	line, err := pgxdriver.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	return len(line.Migrations)
}
