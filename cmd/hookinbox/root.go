package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// app holds what every command writes to and reads from, so tests can run commands
// in-process.
type app struct {
	stdout, stderr io.Writer
	lookupEnv      func(string) (string, bool)
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "hookinbox",
		Short: "Make incoming webhooks take effect exactly once",
		Long: `hookinbox receives webhooks, verifies their signatures, records each event once in
its database together with its effect (a transactional inbox), and answers 2xx only
after commit: never lost, never applied twice.

The database is PostgreSQL (--database-url postgres://..., HOOKINBOX_DATABASE_URL or
database_url) or, without a database URL, the SQLite file ./hookinbox.db (sqlite_path),
which serve creates and migrates: nothing to install for a first run. PostgreSQL is
the production store.

Configuration is a YAML file (--config, or HOOKINBOX_CONFIG) with environment
overrides (HOOKINBOX_DATABASE_URL, HOOKINBOX_LISTEN, HOOKINBOX_NATS_URL); signing
secrets come only from environment variables or files. See docs/OPERATIONS.md.

Exit codes: 0 success, 1 failure, 2 usage or configuration error.`,
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
		// Unknown commands are usage errors (exit 2), not help with exit 0.
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			msg := fmt.Sprintf("unknown command %q", args[0])
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, ", "))
			}
			return usagef("%s; see hookinbox --help", msg)
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usagef("%v; see %s --help", err, cmd.CommandPath())
	})
	root.CompletionOptions.HiddenDefaultCmd = true
	root.AddCommand(
		a.serveCommand(),
		a.migrateCommand(),
		a.statusCommand(),
		a.eventsCommand(),
		a.outboxCommand(),
		a.endpointsCommand(),
		a.cleanupCommand(),
		a.sendCommand(),
		a.benchCommand(),
		a.backfillCommand(),
		a.reconcileCommand(),
		a.probeCommand(),
		a.versionCommand(),
	)
	return root
}

// args wraps a cobra argument check so that its failure is a usage error.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return usagef("%v; see %s --help", err, cmd.CommandPath())
		}
		return nil
	}
}
