package sqlitedriver

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"strings"

	"github.com/hookinbox/hookinbox/driver"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// MigrationTable is the version table of hookinbox's own migrations.
const MigrationTable = "hookinbox_migration"

// Migrations returns hookinbox's SQLite migrations, oldest first: what Migrate applies,
// for teams that apply migrations with their own tool (see driver.WriteMigrations with
// MigrationDialect).
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
// (see driver.MigrateLine). The transaction begins IMMEDIATE (with Open's settings, or
// DSN's _txlock=immediate) and so holds the database's write lock from the start: a
// concurrent MigrateLine, from this process or another, waits at BEGIN and then finds
// nothing left to do. It is safe to run twice.
//
// For hookinbox's own line, a database created before schema version 3 has its tables
// renamed to hookinbox's names in the same transaction, just before migration 003 (a
// script of driver.WriteMigrations names the statements).
func (d *Driver) MigrateLine(ctx context.Context, line driver.MigrationLine) error {
	return translate(driver.MigrateLine(ctx, d.migrator(), line))
}

// LineVersion returns the newest applied migration of line (0 when none) and the newest
// one it has.
func (d *Driver) LineVersion(ctx context.Context, line driver.MigrationLine) (applied, latest int, err error) {
	applied, latest, err = driver.LineVersion(ctx, d.migrator(), line)
	return applied, latest, translate(err)
}

// MigrationDialect returns SQLite's SQL for the migration runner, for
// driver.WriteMigrations (hookinbox migrate --print --driver sqlite).
func MigrationDialect() driver.MigrationDialect {
	return driver.MigrationDialect{
		Database:            "SQLite",
		CreateVersionTable:  sqlMigrationTable,
		RecordVersion:       sqlMigrationRecord,
		VersionTableExists:  sqlTableExists,
		BeforeMigrationNote: legacyRenameNote,
	}
}

// legacyRenameNote gives, before hookinbox's migration 003, the rename step that
// BeforeMigration takes there.
func legacyRenameNote(line driver.MigrationLine, m driver.Migration) string {
	if !isLegacyRenameStep(line, m.Version) {
		return ""
	}
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

// migrator is the dialect on the driver's database.
type migrator struct {
	migrationConn
	db *sql.DB
}

func (d *Driver) migrator() migrator {
	return migrator{migrationConn: migrationConn{d.db}, db: d.db}
}

func (migrator) Dialect() driver.MigrationDialect { return MigrationDialect() }

// BeginMigration begins a transaction, IMMEDIATE with Open's settings: it holds the
// write lock, which every other writer waits for.
func (m migrator) BeginMigration(ctx context.Context, _ driver.MigrationLine) (driver.MigrationTx, error) {
	tx, err := m.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	return migrationTx{migrationConn{tx}, tx}, nil
}

// BeforeMigration renames a database from before hookinbox's migration 003 (see
// legacyRename).
func (migrator) BeforeMigration(ctx context.Context, tx driver.MigrationConn, line driver.MigrationLine, m driver.Migration) error {
	if !isLegacyRenameStep(line, m.Version) {
		return nil
	}
	if err := legacyRename(ctx, tx); err != nil {
		return fmt.Errorf("error renaming the tables of a database from before version %d: %w", legacyRenameVersion, err)
	}
	return nil
}

// migrationConn runs the runner's statements on the database or a transaction.
type migrationConn struct{ db dbtx }

func (c migrationConn) Exec(ctx context.Context, query string, args ...any) error {
	_, err := c.db.ExecContext(ctx, query, args...)
	return err
}

func (c migrationConn) QueryInt(ctx context.Context, query string, args ...any) (int, error) {
	var n int
	err := c.db.QueryRowContext(ctx, query, args...).Scan(&n)
	return n, err
}

type migrationTx struct {
	migrationConn
	tx *sql.Tx
}

func (t migrationTx) Commit(context.Context) error   { return t.tx.Commit() }
func (t migrationTx) Rollback(context.Context) error { return t.tx.Rollback() }

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
func legacyRename(ctx context.Context, tx driver.MigrationConn) error {
	old, err := tx.QueryInt(ctx, sqlTableExists, "webhook_inbox")
	if err != nil {
		return err
	}
	current, err := tx.QueryInt(ctx, sqlTableExists, "hookinbox_inbox")
	if err != nil || old == 0 || current != 0 {
		return err
	}
	for _, q := range sqlLegacyRename {
		if err := tx.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}
