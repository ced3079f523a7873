package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/testdb"
)

// openTestBackend opens a backend without endpoints on a fresh PostgreSQL schema or,
// for config.DriverSQLite, a fresh SQLite file.
func openTestBackend(t *testing.T, drv config.DatabaseDriver) *Backend {
	t.Helper()
	target := config.Database{Driver: config.DriverSQLite, Path: filepath.Join(t.TempDir(), "hookinbox.db")}
	if drv == config.DriverPostgres {
		target = schemaDatabase(t, testdb.New(t))
	}
	cfg, err := config.Default(config.Options{LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(context.Background(), target, cfg, OpenOptions{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// schemaDatabase is the test server's database with db's schema as search_path.
func schemaDatabase(t *testing.T, db *testdb.DB) config.Database {
	t.Helper()
	u, err := url.Parse(testdb.URL())
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", db.Schema)
	u.RawQuery = q.Encode()
	return config.Database{Driver: config.DriverPostgres, URL: u.String()}
}

func readyz(t *testing.T, b *Backend) (int, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	(&readiness{backend: b, logger: discardLogger()}).ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("/readyz body %q: %v", rec.Body, err)
	}
	return rec.Code, body
}

func TestReadyz_NotReadyUntilMigrated(t *testing.T) {
	t.Parallel()
	for _, drv := range []config.DatabaseDriver{config.DriverPostgres, config.DriverSQLite} {
		t.Run(string(drv), func(t *testing.T) {
			t.Parallel()
			b := openTestBackend(t, drv)

			code, body := readyz(t, b)
			if code != 503 || body["status"] != "schema_not_current" {
				t.Errorf("/readyz before migrate = %d %v, want 503 schema_not_current", code, body)
			}
			if err := b.CheckSchema(context.Background()); !errors.Is(err, ErrSchemaNotCurrent) {
				t.Errorf("CheckSchema before migrate = %v", err)
			}

			done, err := b.Migrate(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(done) == 0 || done[0].Line != "hookinbox" || done[0].From != 0 || done[0].To == 0 {
				t.Errorf("Migrate = %+v, want hookinbox's from 0 to the latest version", done)
			}
			after := done[0].To
			code, body = readyz(t, b)
			if code != 200 || body["status"] != "ready" || body["schema_version"] != body["schema_latest"] {
				t.Errorf("/readyz after migrate = %d %v, want 200 ready", code, body)
			}
			if err := b.CheckSchema(context.Background()); err != nil {
				t.Errorf("CheckSchema after migrate = %v", err)
			}
			if again, err := b.Migrate(context.Background()); err != nil || again[0].From != after || again[0].To != after {
				t.Errorf("Migrate again = %+v, %v, want %d to %d", again, err, after, after)
			}
		})
	}
}

// A SQLite path that cannot be opened fails Open at once: unlike a server that is
// down, no wait fixes a wrong path or a permission.
func TestOpen_SQLitePathThatCannotBeOpenedFails(t *testing.T) {
	t.Parallel()
	cfg, _ := config.Default(config.Options{LookupEnv: func(string) (string, bool) { return "", false }})
	dir := t.TempDir()
	path := filepath.Join(dir, "hookinbox.db")
	if err := os.Mkdir(path, 0o700); err != nil { // a directory where the file should be
		t.Fatal(err)
	}
	_, err := Open(context.Background(), config.Database{Driver: config.DriverSQLite, Path: path}, cfg, OpenOptions{Logger: discardLogger()})
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open on a directory = %v, want an error naming %s", err, path)
	}
}

func TestHealthz_AnswersWithoutTheDatabase(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	healthz(rec, httptest.NewRequest("GET", "/healthz", nil))
	if rec.Code != 200 {
		t.Errorf("/healthz = %d", rec.Code)
	}
}

func TestOpen_RefusesAURLPgxCannotParse(t *testing.T) {
	t.Parallel()
	cfg, _ := config.Default(config.Options{LookupEnv: func(string) (string, bool) { return "", false }})
	db := config.Database{Driver: config.DriverPostgres, URL: "postgres://127.0.0.1/db?pool_max_conns=many"}
	if _, err := Open(context.Background(), db, cfg, OpenOptions{Logger: discardLogger()}); !errors.Is(err, ErrUnsupportedDatabase) {
		t.Errorf("Open(%s) = %v, want ErrUnsupportedDatabase", db, err)
	}
}
