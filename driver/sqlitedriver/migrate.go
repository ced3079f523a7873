package sqlitedriver

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order. A file is named
// NNN_name.sql; versions are forward-only and never renumbered. They keep the
// PostgreSQL driver's numbering: version N has the same tables and columns on both.
func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, fmt.Errorf("error reading embedded migrations: %w", err)
	}
	var all []migration
	for _, e := range entries {
		num, name, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		version, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration file %q is not named NNN_name.sql", e.Name())
		}
		body, err := migrationFS.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, fmt.Errorf("error reading migration %s: %w", e.Name(), err)
		}
		all = append(all, migration{version: version, name: name, sql: string(body)})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].version < all[j].version })
	return all, nil
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
		if m.version <= applied {
			continue
		}
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return translate(fmt.Errorf("error applying migration %03d_%s: %w", m.version, m.name, err))
		}
		if _, err := tx.ExecContext(ctx, sqlMigrationRecord, m.version, m.name); err != nil {
			return translate(fmt.Errorf("error recording migration %03d_%s: %w", m.version, m.name, err))
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
	latest = all[len(all)-1].version
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
