package sqlitedriver

import (
	"context"
	"embed"
	"fmt"

	"github.com/hookinbox/hookinbox/driver"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

func migrations() ([]driver.Migration, error) {
	return driver.ReadMigrations(migrationFS, "migrations")
}

// Migrate applies the migrations not yet applied, all in one transaction. The
// transaction begins IMMEDIATE (with Open's settings) and so holds the database's
// write lock from the start: a concurrent Migrate, from this process or another, waits
// at BEGIN and then finds nothing left to do. A failed migration leaves the schema as
// it was, since SQLite's DDL is transactional.
func (d *Driver) Migrate(ctx context.Context) error {
	all, err := migrations()
	if err != nil {
		return err
	}
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return translate(fmt.Errorf("error beginning migration: %w", err))
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after commit
	if _, err := tx.ExecContext(ctx, sqlMigrationTable); err != nil {
		return translate(fmt.Errorf("error creating the migration table: %w", err))
	}
	var applied int
	if err := tx.QueryRowContext(ctx, sqlMigrationApplied).Scan(&applied); err != nil {
		return translate(fmt.Errorf("error reading applied migrations: %w", err))
	}
	for _, m := range all {
		if m.Version <= applied {
			continue
		}
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return translate(fmt.Errorf("error applying migration %03d_%s: %w", m.Version, m.Name, err))
		}
		if _, err := tx.ExecContext(ctx, sqlMigrationRecord, m.Version, m.Name); err != nil {
			return translate(fmt.Errorf("error recording migration %03d_%s: %w", m.Version, m.Name, err))
		}
	}
	if err := tx.Commit(); err != nil {
		return translate(fmt.Errorf("error committing migrations: %w", err))
	}
	return nil
}

// SchemaVersion returns the newest applied migration (0 when none) and the newest
// embedded one.
func (d *Driver) SchemaVersion(ctx context.Context) (applied, latest int, err error) {
	all, err := migrations()
	if err != nil {
		return 0, 0, err
	}
	latest = all[len(all)-1].Version
	var exists bool
	if err := d.db.QueryRowContext(ctx, sqlMigrationTableExists).Scan(&exists); err != nil {
		return 0, latest, translate(fmt.Errorf("error reading schema version: %w", err))
	}
	if !exists {
		return 0, latest, nil
	}
	if err := d.db.QueryRowContext(ctx, sqlMigrationApplied).Scan(&applied); err != nil {
		return 0, latest, translate(fmt.Errorf("error reading schema version: %w", err))
	}
	return applied, latest, nil
}
