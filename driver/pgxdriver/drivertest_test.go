package pgxdriver_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/driver/drivertest"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/internal/testdb"
)

// The driver contract's behaviour suite, on a schema of each behaviour's own. The
// drivers listen past any pooler (Config.ListenConnConfig), as a deployment behind
// PgBouncer in transaction mode must (scripts/pgbouncer-test.sh runs this suite so).
func TestDriver(t *testing.T) {
	t.Parallel()
	drivertest.Exercise(t, func(t *testing.T) *drivertest.Harness[pgx.Tx] {
		db := testdb.New(t, testdb.Options{MaxConns: 4})
		return &drivertest.Harness[pgx.Tx]{
			Driver: pgxdriver.NewWithConfig(db.Pool, &pgxdriver.Config{ListenConnConfig: db.ListenConnConfig(t)}),
			Other: func(t *testing.T) driver.Driver[pgx.Tx] {
				cfg := db.Config(t)
				cfg.MaxConns = 2
				pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(pool.Close)
				return pgxdriver.NewWithConfig(pool, &pgxdriver.Config{ListenConnConfig: db.ListenConnConfig(t)})
			},
			Unreachable: func(t *testing.T) driver.Driver[pgx.Tx] {
				cfg, err := pgxpool.ParseConfig("postgres://postgres@127.0.0.1:1/none?connect_timeout=2")
				if err != nil {
					t.Fatal(err)
				}
				pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(pool.Close)
				return pgxdriver.New(pool)
			},
			Elapse: func(ctx context.Context, d time.Duration) error { return elapse(ctx, db.Pool, d) },
		}
	})
}

// elapse moves every timestamptz column of the schema's hookinbox_* tables back by d.
func elapse(ctx context.Context, pool *pgxpool.Pool, d time.Duration) error {
	rows, err := pool.Query(ctx, `
SELECT table_name, string_agg(format('%1$I = %1$I - make_interval(secs => $1::float8)', column_name), ', ')
  FROM information_schema.columns
 WHERE table_schema = current_schema() AND table_name LIKE 'hookinbox\_%' AND data_type = 'timestamp with time zone'
 GROUP BY table_name`)
	if err != nil {
		return err
	}
	updates, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (string, error) {
		var table, sets string
		err := row.Scan(&table, &sets)
		return fmt.Sprintf("UPDATE %s SET %s", pgx.Identifier{table}.Sanitize(), sets), err
	})
	if err != nil {
		return err
	}
	for _, u := range updates {
		if _, err := pool.Exec(ctx, u, d.Seconds()); err != nil {
			return fmt.Errorf("%s: %w", u, err)
		}
	}
	return nil
}
