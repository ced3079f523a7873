package billing

import (
	"context"
	"embed"
	"fmt"

	"github.com/hookinbox/hookinbox/driver"
)

//go:embed migrations/postgres/*.sql migrations/sqlite/*.sql
var migrationFS embed.FS

// MigrationTable is the version table of billing's own migrations, beside hookinbox's.
const MigrationTable = "billing_migration"

// Migrations returns billing's migrations for the named driver ("postgres" or
// "sqlite", a driver's Name), for teams that apply migrations with their own tool.
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
// billing_anomalies) through d, on PostgreSQL or SQLite. hookinbox's own Migrate never
// creates them: only an application that uses the billing handlers calls this. It is
// safe to run twice and from several processes at once.
func Migrate[TTx any](ctx context.Context, d driver.Driver[TTx]) error {
	line, err := Migrations(d.Name())
	if err != nil {
		return err
	}
	if err := d.MigrateLine(ctx, line); err != nil {
		return fmt.Errorf("error migrating billing: %w", err)
	}
	return nil
}

// SchemaVersion returns billing's newest applied migration and the newest it has.
func SchemaVersion[TTx any](ctx context.Context, d driver.Driver[TTx]) (applied, latest int, err error) {
	line, err := Migrations(d.Name())
	if err != nil {
		return 0, 0, err
	}
	return d.LineVersion(ctx, line)
}
