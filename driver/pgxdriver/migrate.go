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
// applies, for teams that apply migrations with their own tool (see WriteMigrations).
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
	return MigrateLine(ctx, d.pool, line)
}

// SchemaVersion returns the newest applied migration of hookinbox (0 when none) and the
// newest embedded one.
func (d *Driver) SchemaVersion(ctx context.Context) (applied, latest int, err error) {
	line, err := Migrations()
	if err != nil {
		return 0, 0, err
	}
	return LineVersion(ctx, d.pool, line)
}

// MigrateLine applies the migrations of line not yet applied, all in one transaction
// under an advisory lock scoped to the line and the current schema: a concurrent
// MigrateLine waits for it and then finds nothing left to do, and a failed migration
// leaves the schema as it was. It is safe to run twice.
func MigrateLine(ctx context.Context, pool *pgxpool.Pool, line driver.MigrationLine) error {
	table := pgx.Identifier{line.Table}.Sanitize()
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, sqlMigrationLock, lockKey(line.Table)); err != nil {
			return fmt.Errorf("error taking the migration lock: %w", err)
		}
		if _, err := tx.Exec(ctx, fmt.Sprintf(sqlMigrationTable, table)); err != nil {
			return fmt.Errorf("error creating the migration table: %w", err)
		}
		var applied int
		if err := tx.QueryRow(ctx, fmt.Sprintf(sqlMigrationApplied, table)).Scan(&applied); err != nil {
			return fmt.Errorf("error reading applied migrations: %w", err)
		}
		for _, m := range line.Migrations {
			if m.Version <= applied {
				continue
			}
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("error applying %s migration %03d_%s: %w", line.Name, m.Version, m.Name, err)
			}
			if _, err := tx.Exec(ctx, fmt.Sprintf(sqlMigrationRecord, table), m.Version, m.Name); err != nil {
				return fmt.Errorf("error recording %s migration %03d_%s: %w", line.Name, m.Version, m.Name, err)
			}
		}
		return nil
	})
	return translate(err)
}

// LineVersion returns the newest applied migration of line (0 when none) and the newest
// one it has.
func LineVersion(ctx context.Context, pool *pgxpool.Pool, line driver.MigrationLine) (applied, latest int, err error) {
	latest = line.Latest()
	var exists bool
	if err := pool.QueryRow(ctx, sqlMigrationTableExists, line.Table).Scan(&exists); err != nil {
		return 0, latest, translate(fmt.Errorf("error reading schema version: %w", err))
	}
	if !exists {
		return 0, latest, nil
	}
	table := pgx.Identifier{line.Table}.Sanitize()
	if err := pool.QueryRow(ctx, fmt.Sprintf(sqlMigrationApplied, table)).Scan(&applied); err != nil {
		return 0, latest, translate(fmt.Errorf("error reading schema version: %w", err))
	}
	return applied, latest, nil
}

// WriteMigrations writes the migrations of line newer than version from as one plain SQL
// script, for teams that run migrations with their own tool (goose, golang-migrate,
// Atlas): each migration under a header naming its version, followed by the statement
// that records it in the line's version table, so that hookinbox (its readiness check,
// a later Migrate) sees the schema as current. Apply each migration in one transaction.
func WriteMigrations(w io.Writer, line driver.MigrationLine, from int) error {
	table := pgx.Identifier{line.Table}.Sanitize()
	if _, err := fmt.Fprintf(w, "-- %s migrations for PostgreSQL, after version %d. Version table: %s.\n%s;\n",
		line.Name, from, line.Table, fmt.Sprintf(sqlMigrationTable, table)); err != nil {
		return err
	}
	for _, m := range line.Migrations {
		if m.Version <= from {
			continue
		}
		_, err := fmt.Fprintf(w, "\n-- %s migration %03d_%s\n%s\nINSERT INTO %s (version, name) VALUES (%d, '%s') ON CONFLICT DO NOTHING;\n",
			line.Name, m.Version, m.Name, m.SQL, table, m.Version, m.Name)
		if err != nil {
			return err
		}
	}
	return nil
}

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
