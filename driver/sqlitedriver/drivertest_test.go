package sqlitedriver_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/driver/drivertest"
	"github.com/hookinbox/hookinbox/driver/sqlitedriver"
)

// The driver contract's behaviour suite, on a database file of each behaviour's own.
func TestDriver(t *testing.T) {
	t.Parallel()
	drivertest.Exercise(t, func(t *testing.T) *drivertest.Harness[*sql.Tx] {
		path := filepath.Join(t.TempDir(), "hookinbox.db")
		db := open(t, path)
		return &drivertest.Harness[*sql.Tx]{
			Driver: sqlitedriver.New(db),
			// Another process: a database of its own on the file, with one connection.
			Other: func(t *testing.T) driver.Driver[*sql.Tx] {
				other := open(t, path)
				other.SetMaxOpenConns(1)
				return sqlitedriver.New(other)
			},
			Unreachable: func(t *testing.T) driver.Driver[*sql.Tx] {
				closed := open(t, filepath.Join(t.TempDir(), "closed.db"))
				_ = closed.Close()
				return sqlitedriver.New(closed)
			},
			Elapse: func(ctx context.Context, d time.Duration) error { return elapse(ctx, db, d) },
		}
	})
}

// elapse moves every time of the hookinbox_* tables back by d: the INTEGER columns
// named at, *_at and *_until, in unix microseconds.
func elapse(ctx context.Context, db *sql.DB, d time.Duration) error {
	rows, err := db.QueryContext(ctx, `
SELECT m.name, group_concat(format('"%w" = "%w" - ?1', p.name, p.name), ', ')
  FROM sqlite_schema AS m, pragma_table_info(m.name) AS p
 WHERE m.type = 'table' AND m.name LIKE 'hookinbox\_%' ESCAPE '\'
   AND (p.name = 'at' OR p.name LIKE '%\_at' ESCAPE '\' OR p.name LIKE '%\_until' ESCAPE '\')
 GROUP BY m.name`)
	if err != nil {
		return err
	}
	var updates []string
	for rows.Next() {
		var table, sets string
		if err := rows.Scan(&table, &sets); err != nil {
			_ = rows.Close()
			return err
		}
		updates = append(updates, fmt.Sprintf(`UPDATE "%s" SET %s`, strings.ReplaceAll(table, `"`, `""`), sets))
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, u := range updates {
		if _, err := db.ExecContext(ctx, u, d.Microseconds()); err != nil {
			return fmt.Errorf("%s: %w", u, err)
		}
	}
	return nil
}
