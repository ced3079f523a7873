package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// The migration runner: the loop that applies a line's migrations and records them,
// its error messages, and the script of WriteMigrations, the same for every driver.
// A driver gives only its dialect: the statements of a version table (MigrationDialect)
// and, on a database, the transaction a line migrates in with its lock and a step of
// its own before a migration (Migrator).

// MigrationDialect is a driver's SQL for the migration runner. It needs no database,
// so that WriteMigrations prints a driver's migrations with nothing to connect to. The
// version table's statements take the table's quoted name for %s (a constant of the
// code, never input).
type MigrationDialect struct {
	// Database names the database in a script's header, e.g. "PostgreSQL".
	Database string

	// CreateVersionTable creates a line's version table if it does not exist.
	CreateVersionTable string

	// RecordVersion inserts a migration's row into the version table, with the
	// version and the name as parameters 1 and 2.
	RecordVersion string

	// VersionTableExists returns 1 when the table named by parameter 1 (unquoted)
	// exists where the driver works, 0 otherwise. It takes no %s.
	VersionTableExists string

	// BeforeMigrationNote, when set, returns the comments that a script writes before
	// migration m of line: what the Migrator's BeforeMigration does there, which a
	// plain script cannot make conditional; "" for none.
	BeforeMigrationNote func(line MigrationLine, m Migration) string
}

// MigrationConn runs the runner's statements: outside any transaction, or in the
// transaction of a line's migration.
type MigrationConn interface {
	Exec(ctx context.Context, sql string, args ...any) error
	// QueryInt runs a query that returns one integer.
	QueryInt(ctx context.Context, sql string, args ...any) (int, error)
}

// MigrationTx is the transaction in which a line's migrations are applied.
type MigrationTx interface {
	MigrationConn
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
}

// Migrator is a driver's MigrationDialect on its database: what MigrateLine and
// LineVersion run. Its own statements run outside any transaction.
type Migrator interface {
	MigrationConn

	// Dialect returns the driver's SQL.
	Dialect() MigrationDialect

	// BeginMigration begins the transaction in which line's migrations are applied,
	// holding a lock scoped to the line: a concurrent BeginMigration of the same line,
	// from this process or another, waits until the transaction ends.
	BeginMigration(ctx context.Context, line MigrationLine) (MigrationTx, error)

	// BeforeMigration runs in tx just before migration m of line is applied, for a
	// driver that needs a step of its own there (SQLite renames a database from
	// before hookinbox's migration 003); most return nil.
	BeforeMigration(ctx context.Context, tx MigrationConn, line MigrationLine, m Migration) error
}

// sqlAppliedVersion reads the newest version of a version table, the quoted name for
// %s: standard SQL, the same in every driver's database.
const sqlAppliedVersion = `SELECT coalesce(max(version), 0) FROM %s`

// MigrateLine applies the migrations of line not yet applied, each followed by its row
// in the line's version table, all in one transaction under m's lock for the line: a
// concurrent MigrateLine of the line waits for it and then finds nothing left to do,
// and a failed migration leaves the schema as it was (the DDL of both drivers'
// databases is transactional). It is safe to run twice.
func MigrateLine(ctx context.Context, m Migrator, line MigrationLine) error {
	if line.Table == "" {
		return errors.New("migration line has no version table")
	}
	table, d := quoteIdentifier(line.Table), m.Dialect()
	tx, err := m.BeginMigration(ctx, line)
	if err != nil {
		return fmt.Errorf("error beginning %s migrations: %w", line.Name, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after commit
	if err := tx.Exec(ctx, fmt.Sprintf(d.CreateVersionTable, table)); err != nil {
		return fmt.Errorf("error creating the migration table: %w", err)
	}
	applied, err := tx.QueryInt(ctx, fmt.Sprintf(sqlAppliedVersion, table))
	if err != nil {
		return fmt.Errorf("error reading applied migrations: %w", err)
	}
	for _, mig := range line.Migrations {
		if mig.Version <= applied {
			continue
		}
		if err := m.BeforeMigration(ctx, tx, line, mig); err != nil {
			return fmt.Errorf("error preparing %s migration %03d_%s: %w", line.Name, mig.Version, mig.Name, err)
		}
		if err := tx.Exec(ctx, mig.SQL); err != nil {
			return fmt.Errorf("error applying %s migration %03d_%s: %w", line.Name, mig.Version, mig.Name, err)
		}
		if err := tx.Exec(ctx, fmt.Sprintf(d.RecordVersion, table), mig.Version, mig.Name); err != nil {
			return fmt.Errorf("error recording %s migration %03d_%s: %w", line.Name, mig.Version, mig.Name, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("error committing %s migrations: %w", line.Name, err)
	}
	return nil
}

// LineVersion returns the newest applied migration of line (0 when none, or when its
// version table does not exist) and the newest one line has. It takes no lock.
func LineVersion(ctx context.Context, m Migrator, line MigrationLine) (applied, latest int, err error) {
	latest = line.Latest()
	exists, err := m.QueryInt(ctx, m.Dialect().VersionTableExists, line.Table)
	if err != nil {
		return 0, latest, fmt.Errorf("error reading schema version: %w", err)
	}
	if exists == 0 {
		return 0, latest, nil
	}
	if applied, err = m.QueryInt(ctx, fmt.Sprintf(sqlAppliedVersion, quoteIdentifier(line.Table))); err != nil {
		return 0, latest, fmt.Errorf("error reading schema version: %w", err)
	}
	return applied, latest, nil
}

// WriteMigrations writes the migrations of line newer than version from as one plain
// SQL script in dialect d, for teams that run migrations with their own tool (goose,
// golang-migrate, Atlas): each migration under a header naming its version, followed
// by the statement that records it in the line's version table, so that hookinbox
// (its readiness check, a later Migrate) sees the schema as current. Apply each
// migration in one transaction.
//
// Where the driver's Migrator takes a step of its own before a migration, the script
// says in comments, before that migration, which statements it runs and when.
func WriteMigrations(w io.Writer, d MigrationDialect, line MigrationLine, from int) error {
	table := quoteIdentifier(line.Table)
	if _, err := fmt.Fprintf(w, "-- %s migrations for %s, after version %d. Version table: %s.\n%s;\n",
		line.Name, d.Database, from, line.Table, fmt.Sprintf(d.CreateVersionTable, table)); err != nil {
		return err
	}
	for _, m := range line.Migrations {
		if m.Version <= from {
			continue
		}
		note := ""
		if d.BeforeMigrationNote != nil {
			note = d.BeforeMigrationNote(line, m)
		}
		_, err := fmt.Fprintf(w, "\n-- %s migration %03d_%s\n%s%s\nINSERT INTO %s (version, name) VALUES (%d, '%s') ON CONFLICT DO NOTHING;\n",
			line.Name, m.Version, m.Name, note, m.SQL, table, m.Version, m.Name)
		if err != nil {
			return err
		}
	}
	return nil
}

// quoteIdentifier quotes a version table's name. The names are constants of the code,
// never input; quoting makes any of them valid SQL in both drivers' databases.
func quoteIdentifier(name string) string {
	return `"` + strings.ReplaceAll(strings.ReplaceAll(name, "\x00", ""), `"`, `""`) + `"`
}
