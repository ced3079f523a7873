package pgxdriver

import (
	"context"
	"embed"
	"fmt"
	"hash/fnv"
	"io"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox/driver"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// MigrationTable is the version table of hookinbox's own migrations.
const MigrationTable = "hookinbox_migration"

// Migrations returns hookinbox's PostgreSQL migrations, oldest first: what Migrate
// applies, for teams that apply migrations with their own tool (see
// driver.WriteMigrations with MigrationDialect).
func Migrations() (driver.MigrationLine, error) {
	all, err := driver.ReadMigrations(migrationFS, "migrations")
	if err != nil {
		return driver.MigrationLine{}, err
	}
	return driver.MigrationLine{Name: "hookinbox", Table: MigrationTable, Migrations: all}, nil
}

// Migrate applies hookinbox's migrations not yet applied (see MigrateLine).
func (d *Driver) Migrate(ctx context.Context) error {
	line, err := Migrations()
	if err != nil {
		return err
	}
	return d.MigrateLine(ctx, line)
}

// SchemaVersion returns the newest applied migration of hookinbox (0 when none) and the
// newest embedded one.
func (d *Driver) SchemaVersion(ctx context.Context) (applied, latest int, err error) {
	line, err := Migrations()
	if err != nil {
		return 0, 0, err
	}
	return d.LineVersion(ctx, line)
}

// MigrateLine applies the migrations of line not yet applied, all in one transaction
// under a transaction-level advisory lock scoped to the line and the current schema
// (see driver.MigrateLine). It is safe to run twice and from several processes at once.
func (d *Driver) MigrateLine(ctx context.Context, line driver.MigrationLine) error {
	return translate(driver.MigrateLine(ctx, d.migrator(), line))
}

// LineVersion returns the newest applied migration of line (0 when none) and the newest
// one it has.
func (d *Driver) LineVersion(ctx context.Context, line driver.MigrationLine) (applied, latest int, err error) {
	applied, latest, err = driver.LineVersion(ctx, d.migrator(), line)
	return applied, latest, translate(err)
}

// MigrationDialect returns PostgreSQL's SQL for the migration runner, for
// driver.WriteMigrations (hookinbox migrate --print).
func MigrationDialect() driver.MigrationDialect {
	return driver.MigrationDialect{
		Database:           "PostgreSQL",
		CreateVersionTable: sqlMigrationTable,
		RecordVersion:      sqlMigrationRecord,
		VersionTableExists: sqlMigrationTableExists,
	}
}

// migrator is the dialect on the driver's pool.
type migrator struct {
	migrationConn
	pool *pgxpool.Pool
}

func (d *Driver) migrator() migrator {
	return migrator{migrationConn: migrationConn{d.pool}, pool: d.pool}
}

func (migrator) Dialect() driver.MigrationDialect { return MigrationDialect() }

// BeginMigration begins a transaction and takes the line's advisory lock in it,
// released when it ends.
func (m migrator) BeginMigration(ctx context.Context, line driver.MigrationLine) (driver.MigrationTx, error) {
	tx, err := m.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, sqlMigrationLock, lockKey(line.Table)); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("error taking the migration lock: %w", err)
	}
	return migrationTx{migrationConn{tx}, tx}, nil
}

// BeforeMigration does nothing: PostgreSQL's migrations need no step of the driver's.
func (migrator) BeforeMigration(context.Context, driver.MigrationConn, driver.MigrationLine, driver.Migration) error {
	return nil
}

// migrationConn runs the runner's statements on a pool or a transaction.
type migrationConn struct{ db dbtx }

func (c migrationConn) Exec(ctx context.Context, sql string, args ...any) error {
	_, err := c.db.Exec(ctx, sql, args...)
	return err
}

func (c migrationConn) QueryInt(ctx context.Context, sql string, args ...any) (int, error) {
	var n int
	err := c.db.QueryRow(ctx, sql, args...).Scan(&n)
	return n, err
}

type migrationTx struct {
	migrationConn
	tx pgx.Tx
}

func (t migrationTx) Commit(ctx context.Context) error   { return t.tx.Commit(ctx) }
func (t migrationTx) Rollback(ctx context.Context) error { return t.tx.Rollback(ctx) }

// lockKey is the first key of the migration lock: hookinbox's own constant for its
// line (the key every version of hookinbox has taken), a hash of the table for others.
func lockKey(table string) int32 {
	if table == MigrationTable {
		return 1751150
	}
	h := fnv.New32a()
	_, _ = io.WriteString(h, table)
	return int32(h.Sum32())
}
