package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/server"
)

// envConfig names the config file when --config is not given.
const envConfig = "HOOKINBOX_CONFIG"

// dbFlags are the flags of every command that touches the database.
type dbFlags struct {
	configPath  string
	databaseURL string
}

func (f *dbFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.configPath, "config", "c", "", "config file (default $"+envConfig+")")
	cmd.Flags().StringVar(&f.databaseURL, "database-url", "",
		"postgres://user@host:5432/db or sqlite:PATH (overrides $"+config.EnvDatabaseURL+", database_url and sqlite_path; default ./hookinbox.db)")
}

// loadConfig reads the config file named by --config or HOOKINBOX_CONFIG, or returns
// the defaults when there is none and required is false. Secrets are read only when
// resolveSecrets is set: operator commands never need them.
func (a *app) loadConfig(f *dbFlags, required, resolveSecrets bool) (*config.Config, error) {
	path := f.configPath
	if path == "" {
		path, _ = a.lookupEnv(envConfig)
	}
	opts := config.Options{ResolveSecrets: resolveSecrets, LookupEnv: a.lookupEnv}
	if path == "" {
		if required {
			return nil, usagef("no config file: pass --config FILE or set %s (see examples/hookinbox.yaml)", envConfig)
		}
		return config.Default(opts)
	}
	return config.Load(path, opts)
}

// database returns the store by precedence: --database-url, then
// HOOKINBOX_DATABASE_URL, then the config's database_url, then its sqlite_path, then
// ./hookinbox.db (config.Load resolved all but the flag already).
func (a *app) database(f *dbFlags, cfg *config.Config) (config.Database, error) {
	if f.databaseURL == "" {
		return cfg.Database, nil
	}
	db, err := config.ParseDatabaseURL(f.databaseURL, config.SourceFlag)
	if err != nil {
		return db, usagef("--database-url: %v", err)
	}
	return db, nil
}

// describeSource says where db came from, for messages.
func describeSource(db config.Database, cfg *config.Config) string {
	switch db.Source {
	case config.SourceDefault:
		return "the default without a database URL"
	case config.SourceURLKey, config.SourceSQLiteKey:
		return db.Source + " in " + cfg.Path
	default:
		return db.Source
	}
}

// openBackend opens the database for an operator command. With checkSchema it
// refuses a schema older than the binary, so a command does not fail later on a
// missing table, and a SQLite file that does not exist: opening it would create an
// empty database beside the one serve uses (a command run in another directory, or
// without serve's --config), and report an empty inbox as if all were well.
func (a *app) openBackend(ctx context.Context, f *dbFlags, cfg *config.Config, checkSchema bool) (*server.Backend, error) {
	db, err := a.database(f, cfg)
	if err != nil {
		return nil, err
	}
	if db.Driver == config.DriverSQLite && checkSchema {
		if _, err := os.Stat(db.Path); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("no SQLite database at %s (%s): hookinbox serve creates it; run this command in serve's directory or with its --config, or name the database with --database-url",
				db.Path, describeSource(db, cfg))
		}
	}
	// Operator commands run no workers and serve no requests: the inbox logs nothing.
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	b, err := server.Open(ctx, db, cfg, server.OpenOptions{Logger: logger})
	if err != nil {
		if errors.Is(err, server.ErrUnsupportedDatabase) {
			return nil, &usageError{err}
		}
		return nil, err
	}
	if checkSchema {
		if err := b.CheckSchema(ctx); err != nil {
			b.Close()
			return nil, err
		}
	}
	return b, nil
}

// withBackend runs fn with the config (secrets not read) and an open database, for an
// operator command, and closes the database afterwards.
func (a *app) withBackend(ctx context.Context, f *dbFlags, checkSchema bool, fn func(*config.Config, *server.Backend) error) error {
	cfg, err := a.loadConfig(f, false, false)
	if err != nil {
		return err
	}
	b, err := a.openBackend(ctx, f, cfg, checkSchema)
	if err != nil {
		return err
	}
	defer b.Close()
	return fn(cfg, b)
}
