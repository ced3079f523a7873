package sqlitedriver

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/hookinbox/hookinbox/driver"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// MigrationTable is the version table of hookinbox's own migrations.
const MigrationTable = "hookinbox_migration"

// Migrations returns hookinbox's SQLite migrations, oldest first: what Migrate applies,
// for teams that apply migrations with their own tool (see WriteMigrations).
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
	return MigrateLine(ctx, d.db, line)
}

// SchemaVersion returns the newest applied migration of hookinbox (0 when none) and the
// newest embedded one.
func (d *Driver) SchemaVersion(ctx context.Context) (applied, latest int, err error) {
	line, err := Migrations()
	if err != nil {
		return 0, 0, err
	}
	return LineVersion(ctx, d.db, line)
}

// MigrateLine applies the migrations of line not yet applied, all in one transaction,
// and records each in the line's version table. The transaction begins IMMEDIATE (with
// Open's settings, or DSN's _txlock=immediate) and so holds the database's write lock
// from the start: a concurrent MigrateLine, from this process or another, waits at BEGIN
// and then finds nothing left to do. A failed migration leaves the schema as it was,
// since SQLite's DDL is transactional. It is safe to run twice.
//
// For hookinbox's own line, a database created before schema version 3 has its tables
// renamed to hookinbox's names in the same transaction, just before migration 003 (see
// WriteMigrations for the statements).
func MigrateLine(ctx context.Context, db *sql.DB, line driver.MigrationLine) error {
	if line.Table == "" {
		return errors.New("migration line has no version table")
	}
	table := quoteIdent(line.Table)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return translate(fmt.Errorf("error beginning %s migrations: %w", line.Name, err))
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after commit
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(sqlMigrationTable, table)); err != nil {
		return translate(fmt.Errorf("error creating the migration table: %w", err))
	}
	var applied int
	if err := tx.QueryRowContext(ctx, fmt.Sprintf(sqlMigrationApplied, table)).Scan(&applied); err != nil {
		return translate(fmt.Errorf("error reading applied migrations: %w", err))
	}
	for _, m := range line.Migrations {
		if m.Version <= applied {
			continue
		}
		if isLegacyRenameStep(line, m.Version) {
			if err := legacyRename(ctx, tx); err != nil {
				return translate(fmt.Errorf("error renaming the tables of a database from before %s migration %03d_%s: %w",
					line.Name, m.Version, m.Name, err))
			}
		}
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return translate(fmt.Errorf("error applying %s migration %03d_%s: %w", line.Name, m.Version, m.Name, err))
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(sqlMigrationRecord, table), m.Version, m.Name); err != nil {
			return translate(fmt.Errorf("error recording %s migration %03d_%s: %w", line.Name, m.Version, m.Name, err))
		}
	}
	if err := tx.Commit(); err != nil {
		return translate(fmt.Errorf("error committing %s migrations: %w", line.Name, err))
	}
	return nil
}

// LineVersion returns the newest applied migration of line (0 when none) and the newest
// one it has.
func LineVersion(ctx context.Context, db *sql.DB, line driver.MigrationLine) (applied, latest int, err error) {
	latest = line.Latest()
	exists, err := tableExists(ctx, db, line.Table)
	if err != nil {
		return 0, latest, translate(fmt.Errorf("error reading schema version: %w", err))
	}
	if !exists {
		return 0, latest, nil
	}
	if err := db.QueryRowContext(ctx, fmt.Sprintf(sqlMigrationApplied, quoteIdent(line.Table))).Scan(&applied); err != nil {
		return 0, latest, translate(fmt.Errorf("error reading schema version: %w", err))
	}
	return applied, latest, nil
}

// WriteMigrations writes the migrations of line newer than version from as one plain SQL
// script, for teams that run migrations with their own tool (goose, golang-migrate,
// Atlas): each migration under a header naming its version, followed by the statement
// that records it in the line's version table, so that hookinbox (its readiness check,
// a later Migrate) sees the schema as current. Apply each migration in one transaction.
//
// A script of hookinbox's line that includes migration 003 says, in comments, which
// statements a database created before version 3 needs first: the rename that Migrate
// does itself, which a plain script cannot make conditional.
func WriteMigrations(w io.Writer, line driver.MigrationLine, from int) error {
	table := quoteIdent(line.Table)
	if _, err := fmt.Fprintf(w, "-- %s migrations for SQLite, after version %d. Version table: %s.\n%s;\n",
		line.Name, from, line.Table, fmt.Sprintf(sqlMigrationTable, table)); err != nil {
		return err
	}
	for _, m := range line.Migrations {
		if m.Version <= from {
			continue
		}
		if _, err := fmt.Fprintf(w, "\n-- %s migration %03d_%s\n", line.Name, m.Version, m.Name); err != nil {
			return err
		}
		if isLegacyRenameStep(line, m.Version) {
			if _, err := io.WriteString(w, legacyRenameNote()); err != nil {
				return err
			}
		}
		_, err := fmt.Fprintf(w, "%s\nINSERT INTO %s (version, name) VALUES (%d, '%s') ON CONFLICT DO NOTHING;\n",
			m.SQL, table, m.Version, m.Name)
		if err != nil {
			return err
		}
	}
	return nil
}

// legacyRenameVersion is the migration of hookinbox's line before which a database
// created with the old names is renamed.
const legacyRenameVersion = 3

func isLegacyRenameStep(line driver.MigrationLine, version int) bool {
	return line.Table == MigrationTable && version == legacyRenameVersion
}

// legacyRename moves a database created before schema version 3 to hookinbox's own
// names, with its rows: only when it has webhook_inbox and no hookinbox_inbox. It runs
// only while migration 003 is being applied, so on a database created at version 3
// (whose 001 made hookinbox_inbox, in the same transaction when it is new) nothing is
// renamed, and an application's own webhook_inbox or outbox stays untouched. The
// billing tables stay where they are.
func legacyRename(ctx context.Context, tx *sql.Tx) error {
	old, err := tableExists(ctx, tx, "webhook_inbox")
	if err != nil {
		return err
	}
	current, err := tableExists(ctx, tx, "hookinbox_inbox")
	if err != nil || !old || current {
		return err
	}
	for _, q := range sqlLegacyRename {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// legacyRenameNote is legacyRename as comments of a migration script.
func legacyRenameNote() string {
	var b strings.Builder
	b.WriteString(`-- A database at version 2 (created before version 3, with the old names webhook_inbox,
-- outbox and effects) needs first the rename step that Migrate runs in this migration's
-- transaction, just before it, when webhook_inbox exists and hookinbox_inbox does not.
-- Never run it on a database created at version 3: a webhook_inbox or outbox there is
-- the application's own. The billing tables stay where they are.
`)
	for _, q := range sqlLegacyRename {
		b.WriteString("--     " + q + ";\n")
	}
	return b.String()
}

// tableExists reports whether the main schema has a table of that name (table names
// are case-insensitive in SQLite).
func tableExists(ctx context.Context, q dbtx, name string) (bool, error) {
	var exists bool
	err := q.QueryRowContext(ctx, sqlTableExists, name).Scan(&exists)
	return exists, err
}

// quoteIdent quotes a table name for the version table's statements. The names are
// constants of the code, never input; quoting makes any of them valid SQL.
func quoteIdent(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}
