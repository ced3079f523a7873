package pgxdriver

import (
	"context"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/driver"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

func migrations() ([]driver.Migration, error) {
	return driver.ReadMigrations(migrationFS, "migrations")
}

// Migrate applies the migrations not yet applied, all in one transaction under an
// advisory lock scoped to the current schema: a concurrent Migrate waits for it and
// then finds nothing left to do, and a failed migration leaves the schema as it was.
func (d *Driver) Migrate(ctx context.Context) error {
	all, err := migrations()
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, sqlMigrationLock); err != nil {
			return fmt.Errorf("error taking the migration lock: %w", err)
		}
		if _, err := tx.Exec(ctx, sqlMigrationTable); err != nil {
			return fmt.Errorf("error creating the migration table: %w", err)
		}
		var applied int
		if err := tx.QueryRow(ctx, sqlMigrationApplied).Scan(&applied); err != nil {
			return fmt.Errorf("error reading applied migrations: %w", err)
		}
		for _, m := range all {
			if m.Version <= applied {
				continue
			}
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("error applying migration %03d_%s: %w", m.Version, m.Name, err)
			}
			if _, err := tx.Exec(ctx, sqlMigrationRecord, m.Version, m.Name); err != nil {
				return fmt.Errorf("error recording migration %03d_%s: %w", m.Version, m.Name, err)
			}
		}
		return nil
	})
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
	if err := d.pool.QueryRow(ctx, sqlMigrationTableExists).Scan(&exists); err != nil {
		return 0, latest, d.TranslateError(fmt.Errorf("error reading schema version: %w", err))
	}
	if !exists {
		return 0, latest, nil
	}
	if err := d.pool.QueryRow(ctx, sqlMigrationApplied).Scan(&applied); err != nil {
		return 0, latest, d.TranslateError(fmt.Errorf("error reading schema version: %w", err))
	}
	return applied, latest, nil
}
