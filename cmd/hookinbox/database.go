package main

import (
	"context"
	"errors"
	"io"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/server"
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
	cmd.Flags().StringVar(&f.databaseURL, "database-url", "", "PostgreSQL URL, e.g. postgres://user@host:5432/db (overrides $"+config.EnvDatabaseURL+" and database_url)")
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

// databaseURL returns the URL by precedence: --database-url, then
// HOOKINBOX_DATABASE_URL, then the config's database_url (config.Load applied the
// environment variable over the file already).
func (a *app) databaseURL(f *dbFlags, cfg *config.Config) (string, error) {
	if f.databaseURL != "" {
		return f.databaseURL, nil
	}
	if cfg.DatabaseURL != "" {
		return cfg.DatabaseURL, nil
	}
	// DESIGN.md: an embedded SQLite database will be the default here.
	return "", usagef("no database URL: pass --database-url, set %s, or set database_url in the config file", config.EnvDatabaseURL)
}

// openBackend opens the database for an operator command. With checkSchema it
// refuses a schema older than the binary, so a command does not fail later on a
// missing table.
func (a *app) openBackend(ctx context.Context, f *dbFlags, cfg *config.Config, checkSchema bool) (*server.Backend, error) {
	url, err := a.databaseURL(f, cfg)
	if err != nil {
		return nil, err
	}
	// Operator commands run no workers and serve no requests: the inbox logs nothing.
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	b, err := server.Open(ctx, url, cfg, server.OpenOptions{Logger: logger})
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
