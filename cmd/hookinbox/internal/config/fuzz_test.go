package config_test

import (
	"bytes"
	"errors"
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
)

// FuzzParse checks that any config file is either refused with an *Error that names
// no password of the environment's database URL, or yields a configuration whose
// safety rules hold: a listen address, the read timeouts in order, a retention no
// shorter than the providers' retry windows, exact endpoint paths off the reserved
// routes. Secrets are not resolved, so that a fuzzed secrets_file is never read.
func FuzzParse(f *testing.F) {
	f.Add([]byte(validYAML), "")
	f.Add([]byte("listen: 127.0.0.1:0\nhttp: {read_header_timeout: 1s, read_timeout: 2s, max_connections: 10}\n"), "")
	f.Add([]byte("endpoints:\n  - {name: a, path: /a, provider: github, secrets_env: X, handler: none}\n"), "postgres://u:fuzzpassword@h/db")
	f.Add([]byte("endpoints:\n  - {name: a, path: /a, provider: hmac, secrets_env: X, handler: none, options: {header: X-Sig}}\n"), "")
	f.Add([]byte("retention: {processed: 1h}\nendpoints: [{name: b, path: /b, provider: stripe, secrets_env: S, handler: billing}]\n"), "")
	f.Add([]byte("a: &a [*a]\n"), "")
	f.Add([]byte("---\n---\n"), "sqlite:x.db")
	f.Add([]byte("database_url: 5\n"), "mysql://u:fuzzpassword@h/db")
	f.Fuzz(func(t *testing.T, data []byte, envURL string) {
		lookup := func(k string) (string, bool) {
			if k == config.EnvDatabaseURL && envURL != "" {
				return envURL, true
			}
			return "", false
		}
		cfg, err := config.Parse("/fuzz/hookinbox.yaml", data, config.Options{LookupEnv: lookup})
		if err != nil {
			var cerr *config.Error
			if !errors.As(err, &cerr) || cerr.Reason == "" {
				t.Fatalf("error %v is not an *Error with a reason", err)
			}
			pw := password(envURL)
			if pw != "" && !bytes.Contains(data, []byte(pw)) && strings.Contains(err.Error(), pw) {
				// Unless the message says it whatever the password is.
				_, err2 := config.Parse("/fuzz/hookinbox.yaml", data, config.Options{LookupEnv: func(k string) (string, bool) {
					v, ok := lookup(k)
					return strings.Replace(v, pw, strings.Repeat("z", len(pw)), 1), ok
				}})
				if err2 == nil || !strings.Contains(err2.Error(), pw) {
					t.Fatalf("error %q holds the database password", err)
				}
			}
			return
		}
		if _, _, err := net.SplitHostPort(cfg.Listen); err != nil {
			t.Fatalf("listen %q accepted", cfg.Listen)
		}
		if h := cfg.HTTP; h.ReadTimeout < h.ReadHeaderTimeout || h.MaxConnections < 1 || h.MaxHeaderBytes < 16<<10 {
			t.Fatalf("http %+v accepted", h)
		}
		if window, _ := cfg.MaxRetryWindow(); cfg.Retention < window {
			t.Fatalf("retention %s under the retry window %s accepted", cfg.Retention, window)
		}
		for _, ep := range cfg.Endpoints {
			if !strings.HasPrefix(ep.Path, "/") || strings.HasSuffix(ep.Path, "/") || ep.Path == "/healthz" || ep.Verifier == nil {
				t.Fatalf("endpoint %+v accepted", ep)
			}
		}
		if pw := password(envURL); pw != "" && strings.Contains(cfg.Database.String(), pw) {
			t.Fatalf("Database.String() %q holds the password", cfg.Database.String())
		}
	})
}

// FuzzParseDatabaseURL checks that a database URL's password never reaches an error
// or the URL's description, and that what is accepted is PostgreSQL or a SQLite path.
func FuzzParseDatabaseURL(f *testing.F) {
	for _, seed := range []string{
		"postgres://postgres@127.0.0.1:5432/test", "postgresql://u:fuzzpassword@h:5432/db?sslmode=disable",
		"POSTGRES://u:fuzzpassword@h/db", "sqlite:hookinbox.db", "sqlite:/var/lib/x.db", "sqlite://x.db",
		"sqlite:x.db?_pragma=synchronous(OFF)", "sqlite:", "mysql://u:fuzzpassword@h/db",
		"postgres://u:fuzz%20password@h/db", "://u:fuzzpassword@", "h:5432", "",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		db, err := config.ParseDatabaseURL(raw, config.SourceFlag)
		pw := password(raw)
		if err != nil {
			if !errors.Is(err, config.ErrUnsupportedDatabase) {
				t.Fatalf("error %v does not wrap ErrUnsupportedDatabase", err)
			}
			if pw != "" && strings.Contains(err.Error(), pw) {
				// Unless the message says it whatever the password is.
				_, err2 := config.ParseDatabaseURL(strings.Replace(raw, pw, strings.Repeat("z", len(pw)), 1), config.SourceFlag)
				if err2 == nil || !strings.Contains(err2.Error(), pw) {
					t.Fatalf("error %q holds the password", err)
				}
			}
			return
		}
		switch db.Driver {
		case config.DriverSQLite:
			if !strings.HasPrefix(raw, "sqlite:") || db.Path == "" || strings.Contains(db.Path, "?") {
				t.Fatalf("%q accepted as SQLite %+v", raw, db)
			}
		case config.DriverPostgres:
			if db.URL != raw {
				t.Fatalf("%q accepted as PostgreSQL %+v", raw, db)
			}
			if pw != "" && strings.Contains(db.String(), pw) {
				t.Fatalf("String() %q holds the password", db.String())
			}
		default:
			t.Fatalf("%q accepted with driver %q", raw, db.Driver)
		}
	})
}

// password returns the password of raw when it is a URL with one long enough to
// be told from the rest of a message (six bytes), written literally and once, so
// that replacing it by as many z's leaves the URL's shape alone.
func password(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return ""
	}
	pw, ok := u.User.Password()
	if !ok || len(pw) < 6 || strings.Count(raw, pw) != 1 || strings.Trim(pw, "z") == "" ||
		strings.Contains("xxxxx", pw) {
		return ""
	}
	return pw
}
