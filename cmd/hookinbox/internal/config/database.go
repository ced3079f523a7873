package config

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// DatabaseDriver names the store a Database is kept in.
type DatabaseDriver string

const (
	// DriverPostgres is a PostgreSQL server: the production store.
	DriverPostgres DatabaseDriver = "postgres"
	// DriverSQLite is a SQLite file opened in the process: the embedded store, so that
	// the binary runs on a machine with no database server.
	DriverSQLite DatabaseDriver = "sqlite"
)

// DefaultSQLitePath is the SQLite file used when no database URL is given and the
// config has no sqlite_path: hookinbox.db in the working directory, where a newcomer
// runs the binary (and where the repository's .gitignore ignores it).
const DefaultSQLitePath = "./hookinbox.db"

// Where a Database came from, in Database.Source.
const (
	SourceFlag      = "--database-url"
	SourceEnv       = EnvDatabaseURL
	SourceURLKey    = "database_url"
	SourceSQLiteKey = "sqlite_path"
	SourceDefault   = "default"
)

// Database is the store the binary uses: a PostgreSQL URL or a SQLite file.
type Database struct {
	Driver DatabaseDriver

	// URL is the PostgreSQL URL (DriverPostgres). It may hold a password: print
	// String instead.
	URL string

	// Path is the SQLite file (DriverSQLite). A relative path is relative to the
	// working directory of the process (Load has already resolved one written in a
	// config file against the file's directory).
	Path string

	// Source says where the value came from: SourceFlag, SourceEnv, SourceURLKey,
	// SourceSQLiteKey or SourceDefault.
	Source string
}

// String describes the database for logs and messages, without a password.
func (d Database) String() string {
	if d.Driver == DriverSQLite {
		return "sqlite:" + d.Path
	}
	if u, err := url.Parse(d.URL); err == nil {
		return u.Redacted()
	}
	return string(d.Driver)
}

// ErrUnsupportedDatabase is wrapped by ParseDatabaseURL's errors.
var ErrUnsupportedDatabase = errors.New("unsupported database URL")

// wantDatabaseURL ends every refusal, so that the message says what is accepted.
const wantDatabaseURL = "want postgres://, postgresql:// or sqlite:PATH"

// ParseDatabaseURL reads a database URL:
//
//   - postgres://... or postgresql://... is a PostgreSQL server; pgx's URL parameters
//     apply (pool_max_conns, search_path, sslmode, ...).
//   - sqlite:PATH is a SQLite file. PATH is taken literally, relative to the working
//     directory unless absolute: sqlite:hookinbox.db, sqlite:/var/lib/hookinbox/hookinbox.db.
//
// sqlite://PATH is refused rather than guessed at: tools disagree on whether
// sqlite:///x is absolute or relative. So are parameters after a SQLite path: the
// driver sets journal_mode, synchronous and busy_timeout itself, and a parameter that
// weakened them (synchronous=OFF) would break "a 2xx only after the receipt is
// durable". Every error wraps ErrUnsupportedDatabase and never quotes the URL, which
// may hold a password.
func ParseDatabaseURL(raw, source string) (Database, error) {
	if rest, ok := strings.CutPrefix(raw, "sqlite:"); ok {
		switch {
		case strings.HasPrefix(rest, "//"):
			return Database{}, fmt.Errorf("%w: write sqlite:PATH, not sqlite://PATH (e.g. sqlite:hookinbox.db or sqlite:/var/lib/hookinbox/hookinbox.db)", ErrUnsupportedDatabase)
		case rest == "":
			return Database{}, fmt.Errorf("%w: sqlite: needs a file path (e.g. sqlite:hookinbox.db)", ErrUnsupportedDatabase)
		case strings.Contains(rest, "?"):
			return Database{}, fmt.Errorf("%w: sqlite:PATH takes no parameters (hookinbox sets the journal mode, synchronous and busy timeout itself)", ErrUnsupportedDatabase)
		}
		return Database{Driver: DriverSQLite, Path: rest, Source: source}, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url's error quotes the URL, which may hold a password.
		return Database{}, fmt.Errorf("%w: cannot parse it (%s)", ErrUnsupportedDatabase, wantDatabaseURL)
	}
	switch strings.ToLower(u.Scheme) {
	case "postgres", "postgresql":
		return Database{Driver: DriverPostgres, URL: raw, Source: source}, nil
	case "":
		return Database{}, fmt.Errorf("%w: no scheme (%s)", ErrUnsupportedDatabase, wantDatabaseURL)
	default:
		return Database{}, fmt.Errorf("%w: scheme %q (%s)", ErrUnsupportedDatabase, u.Scheme, wantDatabaseURL)
	}
}

// database sets cfg.Database from the file and the environment (cfg.DatabaseURL
// already holds HOOKINBOX_DATABASE_URL when it is set).
//
// A relative SQLite path written in the config file (sqlite_path, or database_url:
// sqlite:PATH) is relative to the file, like secrets_file: serve under a service
// manager and an operator's status in another directory must open the same file, not
// create a second, empty one. The default and the environment variable are relative
// to the working directory, like any path given on a command line.
func (v *validator) database(cfg *Config, fc *fileConfig) error {
	if fc.DatabaseURL != "" && fc.SQLitePath != "" {
		// One key, one meaning: a file with both would leave its reader guessing which
		// database the events are in.
		return v.keyError("sqlite_path", "give database_url or sqlite_path, not both")
	}
	cfg.Database = Database{Driver: DriverSQLite, Path: DefaultSQLitePath, Source: SourceDefault}
	if p := fc.SQLitePath; p != "" {
		if strings.TrimSpace(p) != p {
			return v.keyError("sqlite_path", "%q has leading or trailing spaces", p)
		}
		cfg.Database = Database{Driver: DriverSQLite, Path: v.relativeToFile(p), Source: SourceSQLiteKey}
	}
	if cfg.DatabaseURL == "" {
		return nil
	}
	key := SourceURLKey
	if cfg.DatabaseURL != fc.DatabaseURL {
		key = SourceEnv
	}
	db, err := ParseDatabaseURL(cfg.DatabaseURL, key)
	if err != nil {
		return v.keyError(key, "%v", err)
	}
	if db.Driver == DriverSQLite && key == SourceURLKey {
		db.Path = v.relativeToFile(db.Path)
	}
	cfg.Database = db
	return nil
}

// relativeToFile resolves a relative path written in the config file against the
// file's directory.
func (v *validator) relativeToFile(p string) string {
	if filepath.IsAbs(p) || v.file == "" {
		return p
	}
	return filepath.Join(filepath.Dir(v.file), p)
}

// listener sets cfg.ListenerDatabaseURL from the file and the environment, after
// cfg.Database: only a PostgreSQL URL, and not with worker.poll_only, which turns the
// listener off.
func (v *validator) listener(cfg *Config, fc *fileConfig) error {
	key := "listener_database_url"
	cfg.ListenerDatabaseURL = fc.ListenerURL
	if env, ok := v.opts.LookupEnv(EnvListenerURL); ok && env != "" {
		cfg.ListenerDatabaseURL, key = env, EnvListenerURL
	}
	if cfg.ListenerDatabaseURL == "" {
		return nil
	}
	db, err := ParseDatabaseURL(cfg.ListenerDatabaseURL, key)
	if err != nil {
		return v.keyError(key, "%v", err)
	}
	if db.Driver != DriverPostgres {
		return v.keyError(key, "the listener is PostgreSQL's LISTEN: want postgres:// or postgresql://")
	}
	if fc.Worker.PollOnly {
		return v.keyError(key, "worker.poll_only turns the listener off: give one or the other")
	}
	return nil
}
