package billing

import (
	"context"
	"database/sql"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/driver/sqlitedriver"
)

//go:embed migrations/postgres/*.sql migrations/sqlite/*.sql
var migrationFS embed.FS

// MigrationTable is the version table of billing's own migrations, beside hookinbox's.
const MigrationTable = "billing_migration"

// Migrations returns billing's migrations for the named driver ("postgres" or
// "sqlite"), for teams that apply migrations with their own tool.
func Migrations(driverName string) (driver.MigrationLine, error) {
	switch driverName {
	case "postgres", "sqlite":
	default:
		return driver.MigrationLine{}, fmt.Errorf("billing: no migrations for driver %q", driverName)
	}
	all, err := driver.ReadMigrations(migrationFS, "migrations/"+driverName)
	if err != nil {
		return driver.MigrationLine{}, err
	}
	return driver.MigrationLine{Name: "billing", Table: MigrationTable, Migrations: all}, nil
}

// Migrate creates or updates billing's tables (invoices, ledger_entries,
// billing_anomalies) on PostgreSQL. hookinbox's own Migrate never creates them: only
// an application that uses the billing handlers calls this. It is safe to run twice
// and from several processes at once.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	line, err := Migrations("postgres")
	if err != nil {
		return err
	}
	if err := pgxdriver.MigrateLine(ctx, pool, line); err != nil {
		return fmt.Errorf("error migrating billing: %w", err)
	}
	return nil
}

// MigrateSQLite is Migrate for a SQLite database opened with sqlitedriver.Open.
func MigrateSQLite(ctx context.Context, db *sql.DB) error {
	line, err := Migrations("sqlite")
	if err != nil {
		return err
	}
	if err := sqlitedriver.MigrateLine(ctx, db, line); err != nil {
		return fmt.Errorf("error migrating billing: %w", err)
	}
	return nil
}

// SchemaVersion returns billing's newest applied migration on PostgreSQL and the newest
// it has.
func SchemaVersion(ctx context.Context, pool *pgxpool.Pool) (applied, latest int, err error) {
	line, err := Migrations("postgres")
	if err != nil {
		return 0, 0, err
	}
	return pgxdriver.LineVersion(ctx, pool, line)
}

// SchemaVersionSQLite is SchemaVersion for a SQLite database.
func SchemaVersionSQLite(ctx context.Context, db *sql.DB) (applied, latest int, err error) {
	line, err := Migrations("sqlite")
	if err != nil {
		return 0, 0, err
	}
	return sqlitedriver.LineVersion(ctx, db, line)
}
