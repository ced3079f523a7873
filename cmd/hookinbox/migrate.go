package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/server"
)

func (a *app) migrateCommand() *cobra.Command {
	var f dbFlags
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Create or update the database schema",
		Long: `Apply every schema migration this binary knows that the database lacks: the inbox
(webhook_inbox), the outbox and the billing tables. Migrations are forward-only and
run in one transaction under a lock, so running migrate twice, or from several
machines at once, is safe.

The database is --database-url, else $HOOKINBOX_DATABASE_URL, else database_url in
the config file, else the SQLite file sqlite_path (default ./hookinbox.db), which
migrate creates if needed. serve migrates a SQLite file by itself; a PostgreSQL
database is migrated only by this command, as an explicit step of a deploy.`,
		Example: `  hookinbox migrate --database-url postgres://postgres@127.0.0.1:5432/postgres
  hookinbox migrate --config examples/hookinbox.yaml
  hookinbox migrate --database-url sqlite:/var/lib/hookinbox/hookinbox.db`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withBackend(cmd.Context(), &f, false, func(_ *config.Config, b *server.Backend) error {
				before, after, err := b.Migrate(cmd.Context())
				if err != nil {
					return err
				}
				if after == before {
					fmt.Fprintf(a.stdout, "schema already current (version %d) in %s\n", after, b.Database)
				} else {
					fmt.Fprintf(a.stdout, "schema migrated from version %d to %d in %s\n", before, after, b.Database)
				}
				return nil
			})
		},
	}
	f.register(cmd)
	return cmd
}
