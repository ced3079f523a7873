package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/server"
	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/driver/sqlitedriver"
	"github.com/hookinbox/hookinbox/examples/billing"
)

func (a *app) migrateCommand() *cobra.Command {
	var (
		f          dbFlags
		printSQL   bool
		from       int
		line       string
		driverName string
	)
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Create or update the database schema, or print it as SQL",
		Long: `Apply every schema migration this binary knows that the database lacks: hookinbox's
own tables (hookinbox_inbox, hookinbox_outbox, hookinbox_effect, versions in
hookinbox_migration) and, when an endpoint of the config uses handler: billing, the
billing domain's (invoices, ledger_entries, billing_anomalies, versions in
billing_migration). hookinbox creates no other table. Migrations are forward-only
and run in one transaction under a lock, so running migrate twice, or from several
machines at once, is safe. A database from before schema version 3 (webhook_inbox,
outbox, effects) is renamed in place, with its rows.

The database is --database-url, else $HOOKINBOX_DATABASE_URL, else database_url in
the config file, else the SQLite file sqlite_path (default ./hookinbox.db), which
migrate creates if needed. serve migrates a SQLite file by itself; a PostgreSQL
database is migrated only by this command, as an explicit step of a deploy.

With --print, migrate connects to nothing and prints the migrations as one plain SQL
script instead, for teams that apply migrations with their own tool (goose,
golang-migrate, Atlas): each migration under a header with its version, followed by
the INSERT that records it in the version table, so that serve's readiness check
sees the schema as current. Apply each migration in its own transaction.`,
		Example: `  hookinbox migrate --database-url postgres://postgres@127.0.0.1:5432/postgres
  hookinbox migrate --config examples/hookinbox.yaml
  hookinbox migrate --database-url sqlite:/var/lib/hookinbox/hookinbox.db
  hookinbox migrate --print > hookinbox.sql
  hookinbox migrate --print --line billing --from 0
  hookinbox migrate --print --from 2     # only what a database at version 2 lacks`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if printSQL {
				return a.printMigrations(line, driverName, from)
			}
			if cmd.Flags().Changed("from") || cmd.Flags().Changed("line") || cmd.Flags().Changed("driver") {
				return usagef("--from, --line and --driver go with --print")
			}
			return a.withBackend(cmd.Context(), &f, false, func(_ *config.Config, b *server.Backend) error {
				done, err := b.Migrate(cmd.Context())
				for _, m := range done {
					what := "schema"
					if m.Line != "hookinbox" {
						what = m.Line + " schema"
					}
					if m.To == m.From {
						fmt.Fprintf(a.stdout, "%s already current (version %d) in %s\n", what, m.To, b.Database)
					} else {
						fmt.Fprintf(a.stdout, "%s migrated from version %d to %d in %s\n", what, m.From, m.To, b.Database)
					}
				}
				return err
			})
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&printSQL, "print", false, "print the migrations as SQL instead of applying them")
	cmd.Flags().IntVar(&from, "from", 0, "with --print: only the migrations after this version")
	cmd.Flags().StringVar(&line, "line", "hookinbox", "with --print: whose migrations, hookinbox or billing")
	cmd.Flags().StringVar(&driverName, "driver", "postgres", "with --print: the SQL dialect, postgres or sqlite")
	return cmd
}

func (a *app) printMigrations(line, driverName string, from int) error {
	if from < 0 {
		return usagef("--from must not be negative")
	}
	var (
		l   driver.MigrationLine
		err error
	)
	switch {
	case line == "hookinbox" && driverName == "postgres":
		l, err = pgxdriver.Migrations()
	case line == "hookinbox" && driverName == "sqlite":
		l, err = sqlitedriver.Migrations()
	case line == "billing" && (driverName == "postgres" || driverName == "sqlite"):
		l, err = billing.Migrations(driverName)
	case line != "hookinbox" && line != "billing":
		return usagef("--line is hookinbox or billing, not %q", line)
	default:
		return usagef("--driver is postgres or sqlite, not %q", driverName)
	}
	if err != nil {
		return err
	}
	dialect := pgxdriver.MigrationDialect()
	if driverName == "sqlite" {
		dialect = sqlitedriver.MigrationDialect()
	}
	return driver.WriteMigrations(a.stdout, dialect, l, from)
}
